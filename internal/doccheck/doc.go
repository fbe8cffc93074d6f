// Package doccheck 只有测试：它从 README.md 与 docs/*.md 中取出每一段 ```go 代码，按本模块当前的
// 公开 API 做类型检查，让文档里的示例与代码一起演进——一个改了签名却没改文档的提交在 CI 里变红。
//
// 文档片段通常引用周围正文里的变量（ctx、ep、feats……）而不声明它们，所以检查忽略两类错误：
// 小写的未声明名字（片段的自由变量；go/types 对它们不再报告后续错误）与“声明/导入了但未使用”。
// 其余一切——函数参数个数、不存在的导出名、字段名、类型不符——都是失败。片段缺少的 import 按
// 包名自动补上（本模块的公开包、常用标准库包，以及团队用例常用的 openai-go v3 的 openai 与 option）。
//
// 同样只读源码与文档的另外三项检查也在这里：
//   - TestPackageTableImports：docs/packages.md 包表的“导入（本模块）”一列与 go list 一致，
//     每个公开包都有一行；
//   - TestAPIConventions：公开 API 的三种配置形状与命名（docs/packages.md“API 的写法”）；
//   - TestFunctionLength：没有超过 150 行的函数。
package doccheck

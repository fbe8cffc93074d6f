// Package yamlstrict 是 cibench 读取用户所写 YAML 的唯一严格解码器（矩阵与场景、
// 性能档位、providers.yaml、功能与精度配置，以及各示例程序的 --config）。
//
// yaml.v3 的 KnownFields 只报告未知字段，错误是 "yaml: line 4: …"，没有文件名、
// 没有列、没有字段路径，类型不符时还会把 "true" 悄悄塞进整数字段。这里在 yaml.Node
// 上逐字段解码：未知字段、重复键、类型不符、整数越界、负时长、多文档都是错误，
// 每条都是 "文件:行:列: 字段路径: 原因 (got "值")"，并且继续解码其余部分，一次报告
// 尽可能多的问题；别名展开有节点数上限，任意输入都能快速结束（见 matrix 的模糊测试
// 与本包的 FuzzUnmarshal）。
package yamlstrict

// Package pycompat 复刻 simple-evals 评分路径上依赖的 Python 3.11 行为，
// 让 Go 对同一段模型回复给出与 Python 逐字节相同的抽取结果与分数文件：
//
//   - 字符类：str.isspace（\s）、Nd 十进制数字（\d）、\w（字母/数字/下划线），
//     以及把 Python 正则里的 \s \d \w 翻译成 RE2 的 TranslateRegex；
//   - 字符串：strip、无参 split、lower（含 İ 与词尾 Σ 的特殊规则）；
//   - 数字：float(str) 的解析（Unicode 数字、下划线、inf/nan），
//     float 的 repr（最短表示、e-05 风格指数），numpy 风格的 round；
//   - json.dumps(dict, indent=2)（ensure_ascii、NaN/Infinity）。
//
// Go 的 RE2 中 \s \d \w \b 只认 ASCII，strings.TrimSpace 的空白集合也与
// Python 不同（Python 把 \x1c-\x1f 视为空白），这些细小差异会改变答案抽取，
// 因此集中在这里实现并用 python3 交叉验证。
package pycompat

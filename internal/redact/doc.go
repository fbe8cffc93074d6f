// Package redact 把日志与产物中的敏感信息（URL 凭据、API Key、Bearer Token、
// kubeconfig 密钥以及运行时登记的显式密钥值）替换为占位符。
//
// 需求 §8（docs/requirements.md）要求"日志脱敏：屏蔽 URL/API Key/Token 等敏感信息"；CI 产物会被
// 上传并保留 14～30 天，任何一处泄露都无法撤回，所以脱敏在写出之前完成，
// 而不是事后清理。
//
// 用法（给发出请求、写出服务端文本的包）：整次运行共用一个 *Redactor；
// 在第一次发出请求之前登记本次运行的每个密钥，之后凡是来自服务端或含请求内容的
// 文本都经它写出（String/Bytes，或把文件包成 NewWriter）。
//
//	red := redact.New()
//	red.Add(apiKey)                  // API Key / bearer token：原文及 URL、JSON、HTML 编码形态
//	red.AddBasicAuth(user, password) // 口令与实际发送的 base64("user:pass")
//	w := red.NewWriter(csvFile)      // 逐请求 CSV、JSONL、日志
//	msg := red.String(serverError)   // 单条错误信息
//
// 未登记的凭据只能靠内置规则（Authorization 头的各种回显写法、sk-…、JWT、
// api_key=… 等）识别，因此"知道密钥就登记"是调用方的责任。
package redact

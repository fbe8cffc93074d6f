// Package redact 把日志与产物中的敏感信息（URL 凭据、API Key、Bearer Token、
// kubeconfig 密钥以及运行时登记的显式密钥值）替换为占位符。
//
// 规格第 8 节要求"日志脱敏：屏蔽 URL/API Key/Token 等敏感信息"；CI 产物会被
// 上传并保留 14～30 天，任何一处泄露都无法撤回，所以脱敏在写出之前完成，
// 而不是事后清理。
package redact

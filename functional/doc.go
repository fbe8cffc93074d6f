// Package functional 是 OpenAI 兼容接口的功能用例目录及其执行器。
//
// 执行器先探测服务能力，对服务不支持的参数跳过而非判失败；每个用例有
// 超时与重试，结果以 Report 汇总，跳过不计为失败。
package functional

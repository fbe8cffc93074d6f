// Package emulator 是 deploy/emulator（emulator.Server）的引擎：确定性文本生成、按 JSON Schema
// 生成合法值、正则样例生成、采样参数校验、流式 chunk 的手写 JSON 编码、
// Prometheus 指标、故障注入、嵌入向量与 rerank 打分，以及性能模型：KVCache（vLLM 的
// BlockPool + 自动前缀缓存：链式块哈希、引用计数、LRU 驱逐）与 Perf（FCFS 调度、
// max_num_seqs、KV 分配失败时抢占最近调度的请求）、BatchScale（批倍数公式）。
//
// 它不处理 HTTP 路由与线上格式的整体拼装（那部分在 deploy 包的 emulator_*.go
// 中，以便缺陷开关 deploy/emulator 的 Defects 直接作用于线上行为），只提供纯函数
// 与小型、并发安全的状态对象，便于单独测试与基准测试。
package emulator

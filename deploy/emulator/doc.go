// Package emulator 是进程内的、线上行为与 vLLM OpenAI 兼容服务一致的模拟服务器：
// examples/ci 的默认被测对象，也是各包与用户测试使用的替身（类似 net/http/httptest）。
//
// 在测试里用 Start 一行拿到一个健康的服务，测试结束时自动关闭：
//
//	srv, ep := emulator.Start(t, emulator.Config{Model: "m", TTFT: 5 * time.Millisecond})
//	// ep.BaseURL() 形如 http://127.0.0.1:PORT/v1；srv.Update 可在运行中打开缺陷开关。
//
// 在测试之外（驱动、命令行工具）用 New 构造 Server，它实现 deploy.Deployer，
// Deploy 返回的 deploy.Deployment 负责日志归档与 Teardown；也可以把 Handler
// 挂在自己的 http.Server 上。
//
// 性能模型（前缀缓存、KV 容量与抢占、批相关时序）由 Config 中 EnablePrefixCaching
// 起的字段打开，默认全关、时序不变；NewPD 启动 PD 分离的一对实例与它们前面的代理
// （OmniInfer 1P1D 的形状，代理语义同 vLLM 的 disaggregated serving 示例）。
//
// 本包只依赖 deploy（Endpoint、Deployer、Deployment、ErrNotReady）与
// internal/emulator（确定性生成、调度、故障注入、指标与访问日志的引擎）；
// deploy 不依赖本包，因此只要 External/Local 的使用者不会引入模拟器。
// 线上格式与不模拟的部分见 docs/emulator.md。
package emulator

// Package hostile 是一个故意作恶的 OpenAI 兼容服务（仅监听回环地址），用来证明
// cibench 的每个工具在服务端出故障时不会卡住、不会把故障算成成功、内存有界、
// 也不会把密钥写进任何输出（issue 14 "Reliability"）。
//
// 故障按路径前缀选择，确定且互不干扰：
//
//	http://127.0.0.1:PORT/v1/...                 健康（FaultNone）
//	http://127.0.0.1:PORT/f/stall/v1/...         每个生成请求都先发两个 chunk 再卡住
//	http://127.0.0.1:PORT/f/stall~1/v1/...       第一个生成请求健康（例如压测的探测请求），之后才出故障
//
// 工具把 "/v1" 之前的部分当作服务根，所以 /f/<fault>/health、/f/<fault>/tokenize、
// /f/<fault>/metrics 也落在同一个前缀下；Pushgateway 的 /f/<fault>/metrics/job/... 同理。
// 除 FaultTokenizeSilent 与 FaultMetricsSilent 外，故障只作用于生成接口
// （/v1/chat/completions 与 /v1/completions）与 Pushgateway（仅 FaultEchoAuth），
// 其余接口照常应答，让工具走到出故障的那一步。
//
// 它说的 vLLM 协议只够工具走到故障处：/health、/version、/v1/models、/tokenize、
// /metrics、流式与非流式的 chat 与 completions（role 首块、内容块、finish_reason、
// include_usage 与 continuous_usage_stats、[DONE]）。不模拟的：n>1、logprobs、
// 工具调用、推理字段、结构化输出与参数校验——需要这些的请见 deploy/emulator。
//
// 大载荷（FaultBig、FaultHuge）边生成边写，从不在内存中拼出整个事件或响应体；
// 客户端按上限断开后写入立即失败，所以 1 GiB 的故障只花掉客户端愿意读的那部分。
package hostile

// Package explain 回答性能门禁变红之后的下一个问题：时间花到哪里去了。
//
// 它有两半：
//
//   - [Breakdown] 是一个压测分组（一个组合的一轮）的阶段分解：客户端看到的平均 TTFT
//     拆成“客户端与网络”（客户端 TTFT − 服务端 TTFT）、“服务端前端”（服务端 TTFT −
//     排队 − prefill：API server 的解析、分词等）、“排队”（vllm:request_queue_time_seconds）
//     与“prefill”（vllm:request_prefill_time_seconds）；解码时间按每 token
//     （vllm:inter_token_latency_seconds / time_per_output_token_seconds）与每请求
//     （vllm:request_decode_time_seconds）给出；旁边是同一窗口里的前缀缓存命中率、抢占次数与
//     KV-cache 占用峰值。多实例（多个 base_urls）与 PD 分离时每个实例另有一份（Instances），
//     PD 下 decode 实例上远程 prefill 请求的“prefill”阶段就是 KV 传输。
//   - [Compare] 比较两份分解（基线与当前），给出 [Explanation]：变化是否显著（客户端逐请求
//     TTFT/E2E 的均值差及其 Welch 区间），显著时每个阶段承担了多少（增量与占比），点名
//     承担变化的阶段，并列出缓存、抢占、KV 的前后值与实例间的不均衡。
//
// 为什么用均值：直方图的 _sum/_count 在任意窗口里都是精确的，而且各阶段的均值可以相加
// （排队 + prefill + 前端 + 客户端 = 客户端 TTFT，逐请求成立，均值也成立）；分位数不可加，
// 而且 vLLM 的阶段直方图用的是 E2E 的桶（第一个桶就是 (0, 0.3] 秒），毫秒级的排队与
// prefill 全落在一个桶里，分位数无从分辨。Dist 的分位数只在桶分得开时给出，否则写明
// 桶给不出（Resolution）。门禁比较的是 P99，解释用的是均值：两者方向一致时解释成立，
// 文本里会同时写出两者。
//
// 诚实的边界：服务端不导出阶段直方图（非 vLLM 服务、网关）时 Breakdown.HasPhases 为 false，
// Compare 给出“not attributable: the server exports no phase metrics”，从不猜测；客户端
// 那一部分（客户端 TTFT 与它的区间，以及客户端自己能分的“到响应头 / 响应头之后”两段）照常
// 给出。各阶段按“每个完成的请求”的平均贡献计（Sum / 服务端完成的请求数），不按直方图自己的
// 样本数：有的兼容服务只为真正排过队的请求记排队；这类与 vLLM 口径不同的地方写进 Caveats。区间只来自客户端逐请求的样本方差——服务端
// 直方图没有逐请求的方差——所以阶段增量的不确定度按“与总变化同一区间”报告（Uncertainty），
// 文档与文本都这样写明。
//
// 本包只依赖标准库：gate、report 与 metrics 都可以引用它而不互相依赖；Breakdown 由 loadgen
// 从 /metrics 抓取换算而来（loadgen.Summary.Phases），团队也可以从自己的数据源填写。
package explain

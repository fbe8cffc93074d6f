// Package loadgen 是与 acs-bench 参数与产物兼容的负载生成器与时延测量器。
//
// 一次 Run 按 Profile 执行全部分组（输入长度 × 输出长度 × 并发 × 轮次），
// 每组返回一行 Summary（与需求 §5（docs/requirements.md）的 CSV 表头一一对应）。它：
//
//   - 以流式请求调用 OpenAI 兼容的 /v1/chat/completions（openai-chat）或
//     /v1/completions（openai），请求 continuous_usage_stats 得到逐 chunk 的
//     精确 token 数，服务端拒绝（400）时自动降级；
//   - 从"意图发送时刻"量起全部时延（开环时是到达时刻，闭环时是槽位空出时刻），
//     排队时间因此不会被隐藏（SlotWait 单独报告）；
//   - 首 token 是第一个携带正文、推理或工具调用的 chunk，而不是空的角色 chunk；
//   - HTTP 错误、流内 {"error":…} 事件、[DONE] 之前断开、没有 token 的 200、超时
//     都计为失败；
//   - 用 HDR 直方图（按 CPU 分片，结束时合并）统计分位数，逐请求记录通过
//     Observer.OnRecord 流式交出、从不保留，所以内存与请求数无关；
//   - 明文 http:// 目标（无代理、无自定义 Client）的生成请求走专用的 HTTP/1.1 传输
//     （loadgen/internal/h1：worker 自己一次 write 发请求、就地解析 chunked 分帧，没有
//     net/http 的读写 goroutine 与头部 map），其余情况走 net/http，两者的记录完全相同；
//     chunk 由 loadgen/internal/chunk 的单遍扫描器解析；
//   - 在每组前后抓取服务端 /metrics（loadgen/servermetrics），用直方图差值给出服务端
//     TTFT/TPOT/E2E 分位数与推测解码接受率（没有时为 -1）；
//   - 服务端没有 /tokenize 时，可用 loadgen/tokenizer 读入的 tokenizer.json 校准数据集长度
//     （Target.Tokenizer）；
//   - 数据集与 prompt 池在 loadgen/dataset（不导入本包；Profile 直接用它的 Prompt、TraceRequest
//     与各配置块）：random / custom、Mooncake / Azure 轨迹按时刻表回放（发出滞后报告为
//     Workload.DispatchLag）、shared_prefix 与 prefix_repetition 集合、ShareGPT；本包的 pool.go
//     在每组开始前按数据集类型建池。多轮会话（Profile.MultiTurn：服务端的实时回答进入下一轮的
//     历史，X-Session-ID）与每组的服务端缓存真相（前缀缓存命中率、抢占、KV 占用峰值，
//     Summary.Workload.Cache）是运行逻辑，在本包；新列由 metrics.WorkloadWriter /
//     metrics.SessionWriter 写进新文件，acs-bench 的 CSV 不变；
//   - 分片：本包按全局序号取模执行一片（Shard、RunShard，逐组的原始测量 ShardGroup /
//     GroupStats，MergeShardGroups 合并一组）；打包、交回、合并与本机分片、逐请求记录的重放在
//     loadgen/shard（本包从不导入它）。
//
// 运行中的事件（逐请求记录、分组开始/结束、时间线、进度、扫描结论）交给一个 *Observer：
// 一个由可选钩子组成的结构体（形状同 httptrace.ClientTrace），多个出口用 Tee 组合，
// 没有任何能力靠类型断言发现，包一层也不会丢事件。metrics 包提供 acs-bench 格式的
// CSV 写入器（metrics.RecordWriter、metrics.SummaryWriter、metrics.ArtifactSink，
// 后者的 Observer 方法给出全部钩子）。列的精确定义见 docs/loadgen.md。
//
// 被测服务：Target 嵌入 endpoint.Endpoint（与 functional、accuracy 同一约定，见
// endpoint 包文档），部署得到的端点原样放进 Target{Endpoint: ep}；本包不依赖 deploy。
package loadgen

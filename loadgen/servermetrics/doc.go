// Package servermetrics 抓取被测服务端（vLLM）的 Prometheus /metrics，求出 loadgen 汇总里
// "服务端自己报告的"那部分：TTFT/TPOT/E2E 直方图、推测解码接受与草稿计数、调度状态
// （running、waiting、抢占）、KV-cache 占用与前缀缓存命中计数。
//
// 为什么单独成包：这些是服务端视角的测量，与客户端的请求计时无关；它只依赖 HTTP 客户端与
// Prometheus 的文本解析，可以单独测试，也可以被别的工具（例如只想在一段时间前后看服务端
// 直方图差值的脚本）使用。它不依赖 loadgen：loadgen 的汇总类型（Latency、ServerCache）在
// loadgen 里由 Snapshot 换算而来（loadgen/server.go）。
//
// 用法：NewScraper 由各实例的 base URL 推出 /metrics 地址；Scrape 抓取全部实例并求和，任一
// 实例失败时返回 nil（服务端指标记为不可得，而不是偏小）；Settled 等服务端把已完成的请求计入
// 直方图再返回；两次快照之差由 Histogram.Delta 求出，分位数按 Prometheus histogram_quantile
// 的规则计算（Histogram.Quantile），因此与 Grafana 上同一区间的值一致。StartPeak 在一个分组
// 期间定时采样 KV-cache 占用的峰值。每次抓取都有期限（NewScraper 的 timeout）与响应体上限
// （maxBody）。
package servermetrics

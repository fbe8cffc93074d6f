// Package metrics 把压测结果导出为外部系统可读的形式：acs-bench 兼容的 CSV、
// 符合 Prometheus 命名规范的指标族（NewPerfCollector、NewRunInfoCollector），把任意
// prometheus.Gatherer 推送到 Pushgateway，从 Prometheus 或上一次的汇总 CSV 读取
// PR 性能门禁的基线，并生成 "vLLM CI Bench" Grafana 看板。
//
// 每个阶段的结果由它自己的 prometheus.Collector 导出：功能与精度在
// metrics/functionalmetrics 与 metrics/accuracymetrics（各自只导入自己的阶段），
// 所以只导出压测的程序不链接 functional、accuracy 或 openai-go；新阶段用 Builder
// 按同一套命名规则写自己的 Collector，不必修改本包。
//
// 指标名一律小写加下划线并以单位结尾（时间统一为秒，ms 列先换算），分位数字段
// 合成一个带 quantile 标签的 summary 族，运行内累计的计数以 _total 结尾，比率以
// _ratio 结尾；前缀可配置，为空则不加。不可测的字段（CSV 中的 -1）不产生序列。
//
// 身份标签 model、quant、scenario、run_type 是 Pushgateway 的分组键，所以每日推送
// 替换昨天的同一组；commit、branch、run_id 每天都变，只出现在 run_info 序列上。
// Pusher 不按运行类型取舍："仅每日推送"是驱动程序的策略。详见 docs/metrics.md。
//
// 库代码不读环境变量、不写 stderr；凭据由调用方传入，从不出现在错误或日志里。
// Collector、Pusher、PromBaseline、CSVBaseline、Dashboard 构造后只读，可并发使用。
package metrics

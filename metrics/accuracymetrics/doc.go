// Package accuracymetrics 把精度阶段的结果（[]accuracy.EvalResult）导出为 Prometheus 指标：
// 一个 prometheus.Collector，与 metrics 包的压测导出并列注册或推送。
//
// 它是一个单独的小包而不在 metrics 里，是为了让导出跟着用户的需要走：只导出压测结果的
// 程序不链接 accuracy 与 openai-go；metrics 也因此不是一个引入所有阶段的枢纽。
// 指标名与标签见 docs/metrics.md。
package accuracymetrics

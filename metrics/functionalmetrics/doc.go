// Package functionalmetrics 把功能测试阶段的结果（*functional.Report）导出为 Prometheus 指标：
// 一个 prometheus.Collector，与 metrics 包的压测导出并列注册或推送。
//
// 它是一个单独的小包而不在 metrics 里，是为了让导出跟着用户的需要走：只导出压测结果的
// 程序不链接 functional（及其依赖）；metrics 也因此不是一个引入所有阶段的枢纽，新阶段
// 照这个包的样子用 metrics.Builder 写自己的导出器即可。指标名与标签见 docs/metrics.md。
package functionalmetrics

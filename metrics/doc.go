// Package metrics 把各阶段的结果导出为外部系统可读的形式：acs-bench 兼容的
// CSV、符合 Prometheus 命名规范的指标族，以及（仅每日运行时）推送到
// Pushgateway。
//
// 指标名一律小写加下划线并以单位结尾（时间统一为秒），分位数用
// quantile 标签表示；标签保持低基数，绝不放入 URL 或错误文本。
package metrics

// Package loadgen 是与 acs-bench 参数与产物兼容的负载生成器与时延测量器。
//
// 它以 HDR 直方图（每个 worker 一个，结束时合并）统计 TTFT、TPOT、E2E 等
// 指标，内存不随请求数增长；逐请求记录通过 RecordSink 流式交给调用方
// （metrics 包提供 acs-bench 格式的 CSV 写入器）。
package loadgen

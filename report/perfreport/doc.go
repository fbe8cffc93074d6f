// Package perfreport 把性能阶段的结果接进 report：汇总行（loadgen.Summary，summary.json 的
// "perf" 键、<scenario>/perf/summary.json）、容量扫描结论（loadgen.SweepResult，"capacity"、
// perf/capacity.json）、实时时间线（loadgen.Timeline，只写 perf/timeline.json）与有界的逐请求样本
// （SampleCollector 采集，只写 perf/samples.json）。它们渲染成 HTML（时延/吞吐-并发曲线、
// 时间线、容量图表与汇总表）、性能门禁的输入（汇总行与样本）以及"结果是否残缺"的判断
// （分片合并缺了分片的行让整个运行 complete=false）。
//
// 它只导入 loadgen、report 与 gate；report 本身不认识压测。
//
//	coll := perfreport.NewSampleCollector(backend, ctrl, 0)
//	rows, err := loadgen.Run(ctx, target, prof, loadgen.Tee(csv.Observer(), coll.Observer()))
//	_ = perfreport.RecordRows(run, "emu", rows)
//	_ = perfreport.RecordSamples(run, "emu", coll.Samples())
//	rows, _ = perfreport.Rows(sc) // 读回 Go 值
package perfreport

// Package report 汇总一次 CI 运行的产物与结论：产物目录树、日志脱敏、
// JUnit XML、JSON 摘要、自包含的 HTML 报告，以及门禁（功能用例、精度阈值、
// 相对最近一次每日基线的性能回归）与进程退出码。
//
// 典型用法（驱动 examples/ci 的调用顺序）：
//
//	secrets := report.NewSecrets(os.Getenv("OPENAI_API_KEY")) // 运行时读到的每个密钥
//	logw := secrets.Writer(os.Stderr)                          // 驱动日志同样脱敏
//	run, _ := report.NewRun(root, report.RunTypePR, report.RunID(runID), time.Now(), report.WithSecrets(secrets))
//	_ = run.AddScenario(report.ScenarioInfo{Name: "emu", Model: "m"})
//	logs, _ := run.ScenarioDir("emu", report.StageLogs) // 交给 Deployment.ArchiveLogs
//	_ = run.RecordFunctional("emu", rep)
//	_ = run.RecordPerf("emu", rows)
//	_ = run.RecordAccuracy("emu", report.Accuracy{Result: r, Threshold: &t})
//	_ = run.RecordError("emu", report.StagePerf, err) // 失败继续
//	src, _ := report.ArtifactBaselines(os.DirFS(root)) // 或 metrics.NewPromBaseline(...)（gate.Source）
//	gates, _ := gate.Evaluate(ctx, run.Result().GateInputs(), gate.Thresholds{}, src)
//	code, _ := run.Finish(ctx, gates, time.Now())
//
// 产物目录为 root/<run_type>/<run_id>/<scenario>/{functional,perf,accuracy,logs}；
// 每次记录立即以"临时文件 + 重命名"的方式落盘，崩溃不会丢失已记录的内容，
// 同一 run_id 可被重新打开（分阶段的 CI job 依赖这一点）。写出的一切都先经
// Secrets（运行时登记的密钥加内置规则）脱敏，Finish 还会对其他包直接写入目录的
// 文件做一遍脱敏；驱动用同一个 Secrets 的 Writer 包装自己的日志。
//
// 门禁只根据已有数据下结论：没有基线时明确记为 no_baseline，不会凭空构造，
// 也不算通过的比较。退出码：0 没有门禁失败，1 至少一个门禁失败（见 ExitCode）。
package report

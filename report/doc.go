// Package report 汇总一次 CI 运行的产物与结论：产物目录树、日志脱敏、
// JUnit XML、JSON 摘要、自包含的 HTML 报告、保留期，以及门禁结论写出后的进程退出码。
//
// report 不认识任何阶段（不导入 functional、loadgen、accuracy）。一个阶段的结果是场景里的
// 一个"分节"（Section：summary.json 场景对象上的键与场景目录下的文件），report 只保存它的
// JSON 原文；把分节渲染进 JUnit、HTML、门禁输入与完整性判断的是调用方交进来的 Renderer。
// 内置阶段的记录函数、读取函数与 Renderer 在子包 functionalreport、perfreport、accuracyreport
// 里，各自只导入自己的阶段；团队的新阶段照同样的方式接入，不必修改本包。
//
// 典型用法（驱动 examples/ci 的调用顺序）：
//
//	secrets := report.NewSecrets(os.Getenv("OPENAI_API_KEY")) // 运行时读到的每个密钥
//	logw := secrets.Writer(os.Stderr)                          // 驱动日志同样脱敏
//	run, _ := report.NewRun(root, runtype.PR, report.RunID(runID), time.Now(), report.WithSecrets(secrets),
//		report.WithRenderers(functionalreport.Renderer(), perfreport.Renderer(), accuracyreport.Renderer()))
//	_ = run.AddScenario(report.ScenarioInfo{Name: "emu", Model: "m"})
//	logs, _ := run.ScenarioDir("emu", report.StageLogs) // 交给 Deployment.ArchiveLogs
//	_ = functionalreport.Record(run, "emu", rep)
//	_ = perfreport.RecordRows(run, "emu", rows)
//	_ = accuracyreport.Record(run, "emu", accuracyreport.Result{Result: r, Threshold: &t})
//	_ = run.RecordSection("emu", teamSection, teamResult) // 任何别的阶段：自己的分节、自己的 Renderer
//	_ = run.RecordError("emu", report.StagePerf, err)     // 失败继续
//	src, _ := report.ArtifactBaselines(os.DirFS(root), run.Renderers()...) // 或 metrics.NewPromBaseline(...)（gate.Source）
//	in, _ := run.Result().GateInputs(run.Renderers()...)
//	gates, _ := gate.Evaluate(ctx, in, gate.Thresholds{}, src)
//	code, _ := run.Finish(ctx, gates, time.Now())
//
// 产物目录为 root/<run_type>/<run_id>/<scenario>/{functional,perf,accuracy,logs,…}；
// 每次记录立即以"临时文件 + 重命名"的方式落盘，崩溃不会丢失已记录的内容，
// 同一 run_id 可被重新打开（分阶段的 CI job 依赖这一点；Load 经各场景的分节索引
// section-<key>.json 找回分节，不需要知道它们的类型）。写出的一切都先经
// Secrets（运行时登记的密钥加内置规则）脱敏，Finish 还会对其他包直接写入目录的
// 文件做一遍脱敏；驱动用同一个 Secrets 的 Writer 包装自己的日志。
//
// 门禁只根据已有数据下结论（规则在 gate 包）：没有基线时明确记为 no_baseline，不会凭空
// 构造，也不算通过的比较。退出码：0 没有门禁失败，1 至少一个门禁失败（见 gate.ExitCode）；
// 某个 Renderer 报告结果残缺（例如分片合并缺了分片）时运行不完整，门禁都通过也以
// gate.ExitError 结束。
package report

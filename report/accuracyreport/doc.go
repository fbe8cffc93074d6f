// Package accuracyreport 把精度评测的结果（accuracy.EvalResult 加门禁设置）接进 report：
// 记录为场景的 "accuracy" 分节（summary.json 的 "accuracy" 键、<scenario>/accuracy/results.json），
// 渲染成 HTML（分数对阈值的柱状图、逐数据集的结论与数据来源）与精度门禁的输入——判定只走
// accuracy.Gate（把判定交给精度门禁规则的唯一实现 gate.JudgeAccuracy），报告、驱动与门禁不另写一套比较。
//
// 它只导入 accuracy、report 与 gate；report 本身不认识精度评测。
//
//	_ = accuracyreport.Record(run, "emu", accuracyreport.Result{Result: r, Threshold: &t})
//	rs, _ := accuracyreport.Results(sc) // 读回 Go 值
package accuracyreport

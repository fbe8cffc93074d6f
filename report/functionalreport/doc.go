// Package functionalreport 把功能测试的结果（functional.Report）接进 report：记录为场景的
// "functional" 分节（summary.json 的 "functional" 键、<scenario>/functional/result.json），
// 渲染成 JUnit（每个场景×套件一个 testsuite）、HTML（套件表、失败用例、全部用例）与
// 功能门禁的输入（逐用例结论，选择范围由 functional.Matches 判断）。
//
// 它只导入 functional、report 与 gate；report 本身不认识功能测试。
//
//	run, _ := report.NewRun(root, runtype.PR, id, now, report.WithRenderers(functionalreport.Renderer()))
//	_ = functionalreport.Record(run, "emu", rep)
//	rep, _ := functionalreport.Report(run.Result().Scenarios[0]) // 读回 Go 值
package functionalreport

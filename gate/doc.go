// Package gate 是 cibench 全部门禁的唯一所在：阈值（Thresholds）、基线（Baseline 与
// 基线来源 Source）、每一类门禁（阶段失败、功能用例与 pass → skip 漂移、精度、性能
// 回归与失败率）、门禁统计（自助法置信区间、显著性模式、样本支撑）与每日趋势的变点检测，
// 以及由门禁结论得到的进程退出码。
//
// 本包只依赖标准库与 explain（阶段分解与归因，同样只依赖标准库），不导入任何阶段包（functional、loadgen、accuracy）或 report、metrics：
// 各阶段的结果经本包定义的小值类型（Scenario、Case、Accuracy、PerfRow、Samples）交进来，
// 由消费方（report 的 Result.GateInputs、metrics 的基线读取器、团队自己的程序）适配。
// 于是新增一个阶段既不用改 report 也不用改本包：把它的结论写成 Scenario 的输入，或在
// Evaluate 之后追加自己的 Gate 即可。
//
// 典型用法：
//
//	base, _ := report.ArtifactBaselines(os.DirFS(root)) // 最近一次已完成的每日运行
//	gates, _ := gate.Evaluate(ctx, run.Result().GateInputs(), gate.Thresholds{}, base)
//	code := gate.ExitCode(gates)
//
// 门禁只根据已有数据下结论：没有基线时明确记为 no_baseline，不会凭空构造，也不算通过
// 的比较。基线的选取规则只有一条，由 Select 实现：同一场景、同一组合最近一次"已完成"的
// 每日运行；被中断或只跑了部分阶段的运行从不作为基线。
package gate

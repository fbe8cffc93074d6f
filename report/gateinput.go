package report

import (
	"sort"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/loadgen"
)

// 本文件把 report 记录的各阶段结果适配成 gate 包的输入值：gate 不认识任何阶段包，
// 门禁的判定、基线的选取与趋势分析全在 gate 里，report 只负责"读出来、交过去"。

// GateInputs 返回交给 gate.Evaluate 的各场景输入（顺序同 Scenarios）：
//
//	gates, err := gate.Evaluate(ctx, run.Result().GateInputs(), th, baselines)
func (r Result) GateInputs() []gate.Scenario {
	out := make([]gate.Scenario, len(r.Scenarios))
	for i, sc := range r.Scenarios {
		out[i] = sc.GateInput()
	}
	return out
}

// GateRun 返回这次运行作为基线候选与趋势点的输入（gate.Select、gate.DailyTrend 用）。
func (r Result) GateRun() gate.Run {
	return gate.Run{RunID: r.RunID, Daily: r.RunType == RunTypeDaily, Complete: r.Complete, Started: r.Started, Scenarios: r.GateInputs()}
}

// GateInput 把一个场景的阶段结果适配成 gate.Scenario：功能报告变成逐用例结论（选择范围
// 由 functional.Matches 判断），精度结果经 accuracy.Gate 得出阶段判定，压测汇总行与
// 逐请求样本逐字段转换。
func (sc Scenario) GateInput() gate.Scenario {
	in := gate.Scenario{Name: sc.Name, Model: sc.Model, Quant: sc.Quant, Backend: sc.Backend, Perf: perfRows(sc.Perf)}
	for _, e := range sc.Errors {
		in.Errors = append(in.Errors, gate.StageError{Stage: string(e.Stage), Message: e.Message, Interrupted: e.Interrupted})
	}
	if sc.Functional != nil {
		fn := &gate.Functional{Cases: make([]gate.Case, len(sc.Functional.Results))}
		for i, r := range sc.Functional.Results {
			fn.Cases[i] = gate.Case{ID: r.CaseID, Suite: r.Suite, Status: gate.CaseStatus(r.Status), PassedAfterRetry: r.PassedAfterRetry()}
		}
		sel := sc.Functional.Selection
		fn.InScope = func(id, suite string) bool { return functional.Matches(sel, id, suite) }
		in.Functional = fn
	}
	for _, a := range sc.Accuracy {
		in.Accuracy = append(in.Accuracy, accuracyInput(a))
	}
	in.Samples = append(in.Samples, sc.PerfSamples...) // PerfSamples 是 gate.Samples 的别名
	return in
}

// accuracyInput 用精度门禁唯一的判定函数 accuracy.Gate 得出结论，再交给 gate。
func accuracyInput(a Accuracy) gate.Accuracy {
	v := accuracy.Gate(a.Spec(), a.Result)
	return gate.Accuracy{Dataset: a.Result.Dataset, Metric: v.Metric, Value: v.Value, Threshold: a.Threshold,
		Pass: v.Pass, ScoreGated: v.ScoreGated, Reason: v.Reason,
		Partial: a.Result.Partial, Examples: a.Result.Examples, Planned: a.Result.Planned}
}

// perfRows 把压测汇总行转换为门禁用的行。
func perfRows(rows []loadgen.Summary) []gate.PerfRow {
	out := make([]gate.PerfRow, len(rows))
	for i, s := range rows {
		out[i] = gate.PerfRow{Backend: s.Backend, ControlMethod: s.ControlMethod, InputLength: s.InputLength,
			OutputLength: s.OutputLength, Concurrency: s.Concurrency, TTFT: latency(s.TTFT), E2E: latency(s.E2E),
			QPS: s.QPS, FailRate: s.FailRate, Succeeded: int64(s.Succeeded), Time: s.ExecutionTime}
	}
	return out
}

// latency 逐字段转换时延摘要。
func latency(l loadgen.Latency) gate.Latency {
	return gate.Latency{Count: l.Count, P50: l.P50, P75: l.P75, P90: l.P90, P95: l.P95, P99: l.P99, Min: l.Min, Max: l.Max, Avg: l.Avg}
}

// rowBackend 返回压测行的后端：行没写时用场景的后端（与基线键同一口径）。
func rowBackend(sc Scenario, r loadgen.Summary) string {
	if r.Backend != "" {
		return r.Backend
	}
	return sc.Backend
}

// median 返回 xs 的中位数（偶数个取中间两者均值）；会重排 xs。
func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

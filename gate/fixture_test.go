package gate_test

import (
	"time"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/accuracyreport"
	"github.com/vllm-cibench/cibench/report/functionalreport"
	"github.com/vllm-cibench/cibench/report/perfreport"
)

// t0 是测试使用的固定时钟起点。
var t0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

// lat 构造一个只关心 P99 的时延摘要（其余分位按比例填充）。
func lat(p99 time.Duration) loadgen.Latency {
	return loadgen.Latency{Count: 16, P50: p99 / 2, P75: p99 * 6 / 10, P90: p99 * 8 / 10, P95: p99 * 9 / 10, P99: p99, Min: p99 / 4, Max: p99 * 11 / 10, Avg: p99 / 2}
}

// funcReport 构造一个功能报告：passes 个通过、fails 个失败、1 个跳过。
func funcReport(passes, fails int) functional.Report {
	rep := functional.Report{Model: "m", Started: t0, Duration: time.Second}
	for i := range passes {
		rep.Results = append(rep.Results, functional.Result{CaseID: "chat_basic_" + string(rune('a'+i)), Suite: "chat", Status: functional.StatusPass, Duration: 12 * time.Millisecond})
	}
	for i := range fails {
		rep.Results = append(rep.Results, functional.Result{CaseID: "tools_call_" + string(rune('a'+i)), Suite: "tools", Status: functional.StatusFail,
			Reason: "tool_calls missing", Request: `{"model":"m","messages":[]}`, Response: `{"choices":[]}`, Duration: 30 * time.Millisecond})
	}
	rep.Results = append(rep.Results, functional.Result{CaseID: "reasoning_effort", Suite: "reasoning", Status: functional.StatusSkip, Reason: "capability reasoning not supported"})
	return rep
}

// acc 构造一项精度结果。
func acc(dataset string, score float64, threshold *float64) accuracyreport.Result {
	return accuracyreport.Result{Result: accuracy.EvalResult{Dataset: dataset, Model: "m", Score: score, Examples: 8, Metrics: map[string]float64{"score": score}}, Threshold: threshold}
}

// ptr 返回 v 的指针。
func ptr[T any](v T) *T { return &v }

// tScenario 是测试用的场景：内置阶段的 Go 值。门禁的输入经 report 的分节与各阶段的渲染器
// 生成（GateInputs），与参考驱动同一条路径，gate 的测试因此覆盖"报告 → 门禁"的适配。
type tScenario struct {
	Name        string
	Backend     string
	Functional  *functional.Report
	Perf        []loadgen.Summary
	PerfSamples []perfreport.Samples
	Accuracy    []accuracyreport.Result
	Errors      []report.StageError
}

// tResult 是测试用的一次运行。
type tResult struct {
	RunID     string
	Scenarios []tScenario
}

// renderers 返回内置三个阶段的渲染器。
func renderers() []report.Renderer {
	return []report.Renderer{functionalreport.Renderer(), perfreport.Renderer(), accuracyreport.Renderer()}
}

// result 把测试用的运行装成 report.Result（各阶段结果记为分节）；编码失败即测试夹具有误，直接 panic。
func (r tResult) result() report.Result {
	out := report.Result{RunID: r.RunID}
	for _, s := range r.Scenarios {
		sc := report.Scenario{Name: s.Name, Backend: s.Backend, Errors: s.Errors}
		must := func(err error) {
			if err != nil {
				panic(err)
			}
		}
		if s.Functional != nil {
			must(functionalreport.Set(&sc, *s.Functional))
		}
		must(perfreport.Set(&sc, s.Perf, s.PerfSamples))
		if s.Accuracy != nil {
			must(accuracyreport.Set(&sc, s.Accuracy))
		}
		out.Scenarios = append(out.Scenarios, sc)
	}
	return out
}

// GateInputs 返回交给 gate.Evaluate 的输入（经内置渲染器）；读不出分节即夹具有误，直接 panic。
func (r tResult) GateInputs() []gate.Scenario {
	in, err := r.result().GateInputs(renderers()...)
	if err != nil {
		panic(err)
	}
	return in
}

// GateRun 返回这次运行作为基线候选的输入。
func (r tResult) GateRun() gate.Run {
	run, err := r.result().GateRun(renderers()...)
	if err != nil {
		panic(err)
	}
	return run
}

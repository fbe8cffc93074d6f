package report_test

import (
	"errors"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/accuracyreport"
	"github.com/vllm-cibench/cibench/report/functionalreport"
	"github.com/vllm-cibench/cibench/report/perfreport"
	"github.com/vllm-cibench/cibench/runtype"
)

// t0 是测试使用的固定时钟起点。
var t0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

// lat 构造一个只关心 P99 的时延摘要（其余分位按比例填充）。
func lat(p99 time.Duration) loadgen.Latency {
	return loadgen.Latency{Count: 16, P50: p99 / 2, P75: p99 * 6 / 10, P90: p99 * 8 / 10, P95: p99 * 9 / 10, P99: p99, Min: p99 / 4, Max: p99 * 11 / 10, Avg: p99 / 2}
}

// perfRows 构造一个场景的 PR 档压测行：TTFT/E2E 随并发与长度增长，
// slow 为时延倍数（用于模拟回归）。
func perfRows(slow float64, rounds int) []loadgen.Summary {
	var out []loadgen.Summary
	for _, in := range []int{128, 2048} {
		for _, outLen := range []int{128, 1024} {
			for _, c := range []int{1, 2, 4} {
				for r := 1; r <= rounds; r++ {
					ttft := time.Duration(float64(20*time.Millisecond+time.Duration(in)*10*time.Microsecond+time.Duration(c)*2*time.Millisecond) * slow)
					e2e := ttft + time.Duration(float64(time.Duration(outLen)*time.Millisecond)*slow)
					qps := float64(c) / e2e.Seconds()
					out = append(out, loadgen.Summary{
						ExecutionTime: t0, InputLength: in, OutputLength: outLen, Concurrency: c, Round: r,
						Provider: "emulator", Backend: "openai-chat", ControlMethod: "climb", ConcurrencyBackend: "threading-pool", DatasetType: "random",
						NumPrompts: c * 16, Succeeded: c * 16, TotalTime: time.Duration(float64(c*16) / qps * float64(time.Second)),
						QPS: qps, OutputTokenThroughput: qps * float64(outLen), TotalTokenThroughput: qps * float64(in+outLen),
						TTFT: lat(ttft), E2E: lat(e2e), TPOT: lat(time.Millisecond), Goodput: -1, ClientLag: lat(400 * time.Microsecond),
					})
				}
			}
		}
	}
	return out
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

// gateByName 在门禁列表中按场景与名字找一项，找不到时让测试失败。
func gateByName(t *testing.T, gates []gate.Gate, scenario, name string) gate.Gate {
	t.Helper()
	for _, g := range gates {
		if g.Scenario == scenario && g.Name == name {
			return g
		}
	}
	t.Fatalf("gate %s/%s not found in %d gates", scenario, name, len(gates))
	return gate.Gate{}
}

// oneRow 构造一个组合的一行汇总。
func oneRow(c int, ttft, e2e time.Duration, qps, failRate float64) loadgen.Summary {
	return loadgen.Summary{InputLength: 128, OutputLength: 128, Concurrency: c, Round: 1, Backend: "openai-chat", ControlMethod: "climb",
		TTFT: lat(ttft), E2E: lat(e2e), QPS: qps, FailRate: failRate, NumPrompts: 16}
}

// renderers 返回内置三个阶段的渲染器（与参考驱动同一组、同一顺序）。
func renderers() []report.Renderer {
	return []report.Renderer{functionalreport.Renderer(), perfreport.Renderer(), accuracyreport.Renderer()}
}

// newRun 是带内置渲染器的 report.NewRun。
func newRun(root string, rt runtype.Type, id report.RunID, now time.Time, opts ...report.Option) (*report.Run, error) {
	return report.NewRun(root, rt, id, now, append(opts, report.WithRenderers(renderers()...))...)
}

// gateInputs 用内置渲染器生成门禁输入；分节读不出来时让测试失败。
func gateInputs(t *testing.T, res report.Result) []gate.Scenario {
	t.Helper()
	in, err := res.GateInputs(renderers()...)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// gateRun 用内置渲染器生成基线候选。
func gateRun(t *testing.T, res report.Result) gate.Run {
	t.Helper()
	r, err := res.GateRun(renderers()...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// stageScenario 是测试用的场景视图：report.Scenario 加上内置阶段分节解码出的 Go 值。
type stageScenario struct {
	report.Scenario
	Functional  *functional.Report
	Perf        []loadgen.Summary
	PerfSamples []perfreport.Samples
	Timeline    []loadgen.Timeline
	Capacity    []loadgen.SweepResult
	Accuracy    []accuracyreport.Result
}

// view 解码场景中内置阶段的分节；读不出来时让测试失败。
func view(t *testing.T, sc report.Scenario) stageScenario {
	t.Helper()
	v := stageScenario{Scenario: sc}
	var errs [6]error
	v.Functional, errs[0] = functionalreport.Report(sc)
	v.Perf, errs[1] = perfreport.Rows(sc)
	v.PerfSamples, errs[2] = perfreport.SamplesOf(sc)
	v.Timeline, errs[3] = perfreport.Timeline(sc)
	v.Capacity, errs[4] = perfreport.Capacity(sc)
	v.Accuracy, errs[5] = accuracyreport.Results(sc)
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatal(err)
	}
	return v
}

// scenarioOf 在内存中组装一个场景：名字、模型与内置阶段的结果（nil 的不写分节）。
func scenarioOf(t *testing.T, v stageScenario) report.Scenario {
	t.Helper()
	sc := v.Scenario
	if v.Functional != nil {
		if err := functionalreport.Set(&sc, *v.Functional); err != nil {
			t.Fatal(err)
		}
	}
	if err := perfreport.Set(&sc, v.Perf, v.PerfSamples); err != nil {
		t.Fatal(err)
	}
	if v.Accuracy != nil {
		if err := accuracyreport.Set(&sc, v.Accuracy); err != nil {
			t.Fatal(err)
		}
	}
	return sc
}

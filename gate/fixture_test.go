package gate_test

import (
	"time"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
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
func acc(dataset string, score float64, threshold *float64) report.Accuracy {
	return report.Accuracy{Result: accuracy.EvalResult{Dataset: dataset, Model: "m", Score: score, Examples: 8, Metrics: map[string]float64{"score": score}}, Threshold: threshold}
}

// ptr 返回 v 的指针。
func ptr[T any](v T) *T { return &v }

package pipeline

import (
	"testing"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/report/accuracyreport"
)

// TestAccuracyRedFollowsGate 钉住：决定 on_failure 是否生效的"精度阶段为红"与报告里的
// 精度门禁（accuracy.Gate）是同一个判断。此前驱动自己比较 Score < Threshold：指标为
// f1_score（drop）时比错了数，失败请求超过 max_error_rate 时也不算红，on_failure: abort
// 因此不会中止后续场景。
func TestAccuracyRedFollowsGate(t *testing.T) {
	th := 0.5
	cases := []struct {
		name string
		a    accuracyreport.Result
		red  bool
	}{
		{"score above threshold", accuracyreport.Result{Threshold: &th, Result: accuracy.EvalResult{Dataset: "mmlu", Score: 0.6, Examples: 10, Planned: 10, Requests: 10}}, false},
		{"score below threshold", accuracyreport.Result{Threshold: &th, Result: accuracy.EvalResult{Dataset: "mmlu", Score: 0.4, Examples: 10, Planned: 10, Requests: 10}}, true},
		{"error rate above max", accuracyreport.Result{Threshold: &th, MaxErrorRate: 0.1, Result: accuracy.EvalResult{Dataset: "mmlu", Score: 0.9, Examples: 10, Planned: 10, Requests: 10, Errors: 5, ErrorClasses: map[string]int{"http_500": 5}}}, true},
		{"gated metric below threshold", accuracyreport.Result{Threshold: &th, Metric: "f1_score", Result: accuracy.EvalResult{Dataset: "drop", Score: 0.9, Metrics: map[string]float64{"f1_score": 0.3}, Examples: 10, Planned: 10, Requests: 10}}, true},
		{"partial run", accuracyreport.Result{Threshold: &th, Result: accuracy.EvalResult{Dataset: "mmlu", Score: 0.9, Examples: 3, Planned: 10, Partial: true, Requests: 3}}, true},
		{"report only", accuracyreport.Result{Result: accuracy.EvalResult{Dataset: "mmlu", Score: 0.1, Examples: 10, Planned: 10, Requests: 10}}, false},
	}
	for _, c := range cases {
		if got := accuracyRed([]accuracyreport.Result{c.a}); got != c.red {
			t.Errorf("%s: accuracyRed = %v, want %v (gate: %+v)", c.name, got, c.red, accuracy.Gate(c.a.Spec(), c.a.Result))
		}
	}
}

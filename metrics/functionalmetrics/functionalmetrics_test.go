package functionalmetrics_test

import (
	"errors"
	"github.com/vllm-cibench/cibench/field"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/metrics"
	"github.com/vllm-cibench/cibench/metrics/functionalmetrics"
)

// report 是一份小的功能测试报告：一个通过、一个失败、一个因缺能力跳过。
func report() *functional.Report {
	ratio := 0.5
	return &functional.Report{Duration: 8 * time.Second, Results: []functional.Result{
		{CaseID: "chat.basic", Suite: "chat", Status: functional.StatusPass, Duration: 120 * time.Millisecond},
		{CaseID: "chat.multi_turn", Suite: "chat", Status: functional.StatusFail, Duration: 340 * time.Millisecond},
		{CaseID: "tools.parallel", Suite: "function_call", Status: functional.StatusSkip},
	}, Suites: []functional.SuiteSummary{
		{Suite: "chat", Total: 2, Passed: 1, Failed: 1, Ran: 2, PassRatio: &ratio},
		{Suite: "function_call", Total: 1, Skipped: 1},
	}}
}

// TestCollectorValues 逐值核对：套件通过率（无执行用例的套件为 NaN）、逐用例 0|1（跳过的用例没有序列）、
// 阶段耗时；前缀与常量标签按 Options 加上。
func TestCollectorValues(t *testing.T) {
	c, err := functionalmetrics.NewCollector(report(), metrics.Options{Prefix: "cibench", ConstLabels: prometheus.Labels{"scenario": "s"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `
# HELP cibench_functional_pass_ratio Passed / cases run (total - skipped - unsupported) of the suite; NaN when no case ran
# TYPE cibench_functional_pass_ratio gauge
cibench_functional_pass_ratio{scenario="s",suite="chat"} 0.5
cibench_functional_pass_ratio{scenario="s",suite="function_call"} NaN
# HELP cibench_functional_case_pass 1 when the case passed, 0 when it failed (skipped cases are absent)
# TYPE cibench_functional_case_pass gauge
cibench_functional_case_pass{case_id="chat.basic",scenario="s",suite="chat"} 1
cibench_functional_case_pass{case_id="chat.multi_turn",scenario="s",suite="chat"} 0
# HELP cibench_functional_duration_seconds Wall time of the whole functional stage
# TYPE cibench_functional_duration_seconds gauge
cibench_functional_duration_seconds{scenario="s"} 8
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "cibench_functional_pass_ratio", "cibench_functional_case_pass", "cibench_functional_duration_seconds"); err != nil {
		t.Error(err)
	}
	// 没有套件汇总时按用例现算，口径与 functional.Summarize 一致。
	r := report()
	r.Suites = nil
	c, err = functionalmetrics.NewCollector(r, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "functional_pass_ratio"); n != 2 {
		t.Errorf("computed suites: %d pass_ratio series, want 2", n)
	}
	// 阶段未运行：没有序列。
	c, err = functionalmetrics.NewCollector(nil, metrics.Options{})
	if err != nil || testutil.CollectAndCount(c) != 0 {
		t.Fatalf("nil report: %v, %d series", err, testutil.CollectAndCount(c))
	}
}

// TestCollectorRejects 非法输入是点名字段的 *field.Error。
func TestCollectorRejects(t *testing.T) {
	for _, tc := range []struct {
		edit  func(*functional.Report, *metrics.Options)
		field string
	}{
		{func(r *functional.Report, _ *metrics.Options) { r.Results[0].CaseID = "" }, "Functional.Results[0]"},
		{func(r *functional.Report, _ *metrics.Options) { r.Results = append(r.Results, r.Results[0]) }, "Functional.Results[3]"},
		{func(r *functional.Report, _ *metrics.Options) { r.Suites[0].Suite = "a\nb" }, "Functional.Suites.Suite"},
		{func(_ *functional.Report, o *metrics.Options) { o.Prefix = "Bad-Prefix" }, "Options.Prefix"},
		{func(_ *functional.Report, o *metrics.Options) { o.ConstLabels = prometheus.Labels{"scenario": "a\nb"} }, "Options.ConstLabels.scenario"},
		{func(_ *functional.Report, o *metrics.Options) { o.ConstLabels = prometheus.Labels{"bad-name": "x"} }, "Options.ConstLabels"},
	} {
		r, o := report(), metrics.Options{}
		tc.edit(r, &o)
		_, err := functionalmetrics.NewCollector(r, o)
		var fe *field.Error
		if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, metrics.ErrInvalid) {
			t.Errorf("%s: got %v", tc.field, err)
		}
	}
}

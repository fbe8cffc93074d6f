package functionalmetrics_test

import (
	"fmt"
	"os"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/metrics"
	"github.com/vllm-cibench/cibench/metrics/functionalmetrics"
)

// Example 只导出一个功能测试用例的结果：功能阶段自己的 Collector 注册进注册表，写成文本暴露格式。
func Example() {
	rep := &functional.Report{Results: []functional.Result{{CaseID: "chat.basic", Suite: "chat", Status: functional.StatusPass}}}
	c, err := functionalmetrics.NewCollector(rep, metrics.Options{Prefix: "team"})
	if err != nil {
		fmt.Println(err)
		return
	}
	reg, err := metrics.NewRegistry(c)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := metrics.WriteText(os.Stdout, reg); err != nil {
		fmt.Println(err)
	}
	// Output:
	// # HELP team_functional_case_duration_seconds Wall time of the case
	// # TYPE team_functional_case_duration_seconds gauge
	// team_functional_case_duration_seconds{case_id="chat.basic",suite="chat"} 0
	// # HELP team_functional_case_pass 1 when the case passed, 0 when it failed (skipped cases are absent)
	// # TYPE team_functional_case_pass gauge
	// team_functional_case_pass{case_id="chat.basic",suite="chat"} 1
	// # HELP team_functional_cases_failed Failed cases in the suite
	// # TYPE team_functional_cases_failed gauge
	// team_functional_cases_failed{suite="chat"} 0
	// # HELP team_functional_cases_passed Passed cases in the suite
	// # TYPE team_functional_cases_passed gauge
	// team_functional_cases_passed{suite="chat"} 1
	// # HELP team_functional_cases_skipped Cases skipped because the server lacks a required capability
	// # TYPE team_functional_cases_skipped gauge
	// team_functional_cases_skipped{suite="chat"} 0
	// # HELP team_functional_cases_total Cases in the suite, skipped ones included
	// # TYPE team_functional_cases_total counter
	// team_functional_cases_total{suite="chat"} 1
	// # HELP team_functional_pass_ratio Passed / cases run (total - skipped - unsupported) of the suite; NaN when no case ran
	// # TYPE team_functional_pass_ratio gauge
	// team_functional_pass_ratio{suite="chat"} 1
}

package functionalreport_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/functionalreport"
	"github.com/vllm-cibench/cibench/runtype"
)

// Example 记录一份功能报告：它进入 summary.json 的 "functional" 键、junit.xml 的套件与功能门禁。
func Example() {
	root, _ := os.MkdirTemp("", "artifacts")
	defer os.RemoveAll(root)
	now := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	run, _ := report.NewRun(root, runtype.PR, "1", now, report.WithRenderers(functionalreport.Renderer()))
	rep := functional.Report{Model: "m", Started: now, Results: []functional.Result{
		{CaseID: "chat/basic", Suite: "chat", Status: functional.StatusPass},
		{CaseID: "chat/stop", Suite: "chat", Status: functional.StatusFail, Reason: "stop sequence ignored"},
	}}
	_ = functionalreport.Record(run, "emu", rep)

	in, _ := run.Result().GateInputs(run.Renderers()...)
	gates, _ := gate.Evaluate(context.Background(), in, gate.Thresholds{}, nil)
	code, _ := run.Finish(context.Background(), gates, now.Add(time.Minute))
	junit, _ := os.ReadFile(filepath.Join(run.Dir(), "junit.xml"))
	back, _ := functionalreport.Report(run.Result().Scenarios[0])
	fmt.Println(gates[0].Name, gates[0].Verdict, "exit", code)
	fmt.Println(strings.Contains(string(junit), `name="emu/functional/chat"`), back.Count(functional.StatusFail))
	// Output:
	// functional fail exit 1
	// true 1
}

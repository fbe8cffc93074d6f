package report_test

import (
	"context"
	"os"
	"testing"

	"github.com/vllm-cibench/cibench/report"
)

func TestSmokeHTML(t *testing.T) {
	out := os.Getenv("SMOKE_OUT")
	if out == "" {
		t.Skip()
	}
	base := report.Result{RunID: "d1", Scenarios: []report.Scenario{{Name: "emu", Model: "m", Perf: perfRows(1, 3)}}}
	res := report.Result{RunType: "pr", RunID: "p1", Started: t0, Finished: t0, Complete: true, Scenarios: []report.Scenario{
		{Name: "emu", Model: "m", Quant: "none", Deploy: "emulator", Functional: ptr(funcReport(5, 2)), Perf: perfRows(1.2, 1),
			Accuracy: []report.Accuracy{acc("gpqa", 0.4, ptr(0.3)), acc("mmlu", 0.5, ptr(0.6))}},
	}}
	gates, err := report.Evaluate(context.Background(), res, report.Thresholds{}, report.BaselinesFromResult(base))
	if err != nil {
		t.Fatal(err)
	}
	res.Gates = gates
	res.ExitCode = report.ExitCode(gates)
	f, _ := os.Create(out)
	defer f.Close()
	if err := report.WriteHTML(f, res); err != nil {
		t.Fatal(err)
	}
}

package report_test

import (
	"bytes"
	"context"
	"errors"
	"github.com/vllm-cibench/cibench/gate"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/accuracyreport"
	"github.com/vllm-cibench/cibench/report/functionalreport"
)

// TestInterruptedIsItsOwnOutcome：被中断的阶段不是失败。RecordInterrupted 记下的
// 阶段得到 interrupted 门禁（不是 fail），没有功能报告的功能门禁、只评了部分样本的
// 精度门禁也记为 interrupted；没有真正失败的门禁时退出码为 130，summary.json 的
// verdict 为 interrupted，JUnit 里没有 <failure>；阶段状态写进 summary.json 并能被 Load 读回。
func TestInterruptedIsItsOwnOutcome(t *testing.T) {
	root := t.TempDir()
	run, err := newRun(root, "pr", "int1", t0)
	if err != nil {
		t.Fatal(err)
	}
	// 场景 a：功能阶段中途被中断（没有报告）；场景 b：功能通过，精度评了一半被中断。
	if err := run.RecordInterrupted("a", report.StageFunctional, errors.New("functional: context canceled (interrupted by signal terminated)")); err != nil {
		t.Fatal(err)
	}
	if err := functionalreport.Record(run, "b", functional.Report{Results: []functional.Result{{Suite: "chat_core", CaseID: "x", Status: functional.StatusPass}}}); err != nil {
		t.Fatal(err)
	}
	th := 0.9
	if err := accuracyreport.Record(run, "b", accuracyreport.Result{Result: accuracy.EvalResult{Dataset: "gpqa", Score: 0.1, Examples: 3, Planned: 10, Partial: true}, Threshold: &th}); err != nil {
		t.Fatal(err)
	}
	if err := run.RecordInterrupted("b", report.StageAccuracy, errors.New("accuracy: cancelled after 3/10 examples")); err != nil {
		t.Fatal(err)
	}
	for _, s := range []report.StageResult{
		{Stage: report.StageDeploy, Status: report.StageOK},
		{Stage: report.StageFunctional, Status: report.StageInterrupted, Reason: "interrupted by signal terminated"},
		{Stage: report.StagePerf, Status: report.StageSkipped, Reason: "not run: interrupted"},
	} {
		if err := run.RecordStage("a", s); err != nil {
			t.Fatal(err)
		}
	}
	gates, err := gate.Evaluate(context.Background(), gateInputs(t, run.Result()), gate.Thresholds{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gates {
		if g.Verdict == gate.VerdictFail {
			t.Errorf("invented failure: %+v", g)
		}
	}
	if g := gateByName(t, gates, "a", "stage/functional"); g.Verdict != gate.VerdictInterrupted || !strings.Contains(g.Reason, "interrupted") {
		t.Errorf("stage gate = %+v", g)
	}
	if g := gateByName(t, gates, "a", "functional"); g.Verdict != gate.VerdictInterrupted {
		t.Errorf("functional gate without report = %+v", g)
	}
	if g := gateByName(t, gates, "b", "accuracy/gpqa"); g.Verdict != gate.VerdictInterrupted || !strings.Contains(g.Reason, "3 of 10") {
		t.Errorf("partial accuracy gate = %+v", g)
	}
	if got := gate.ExitCode(gates); got != gate.ExitInterrupted {
		t.Fatalf("ExitCode = %d, want 130", got)
	}
	code, err := run.FinishIncomplete(context.Background(), gates, t0.Add(time.Minute), true)
	if err != nil || code != gate.ExitInterrupted {
		t.Fatalf("FinishIncomplete = %d, %v", code, err)
	}
	var sum report.Result
	readJSONFile(t, filepath.Join(run.Dir(), "summary.json"), &sum)
	if sum.Verdict != gate.VerdictInterrupted || sum.ExitCode != 130 {
		t.Errorf("summary.json verdict %q exit %d", sum.Verdict, sum.ExitCode)
	}
	a := sum.Scenarios[0]
	if a.Name != "a" || len(a.Stages) != 3 || a.Stages[1].Status != report.StageInterrupted || a.Stages[2].Status != report.StageSkipped {
		t.Errorf("summary.json stage statuses of a: %+v", a.Stages)
	}
	if len(a.Errors) != 1 || !a.Errors[0].Interrupted {
		t.Errorf("summary.json errors of a: %+v", a.Errors)
	}
	junit, err := os.ReadFile(filepath.Join(run.Dir(), "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(junit, []byte("<failure")) || !bytes.Contains(junit, []byte(`interrupted: `)) {
		t.Errorf("junit.xml:\n%s", junit)
	}
	loaded, err := report.Load(os.DirFS(run.Dir()))
	if err != nil {
		t.Fatal(err)
	}
	if la := loaded.Scenarios[0]; len(la.Stages) != 3 || la.Stages[1].Status != report.StageInterrupted || !la.Errors[0].Interrupted {
		t.Errorf("Load lost stage statuses: %+v %+v", la.Stages, la.Errors)
	}

	// 真正的失败优先于中断：同样的中断加一个失败的阶段，退出码 1。
	res := run.Result()
	res.Scenarios = append(res.Scenarios, report.Scenario{Name: "c", Errors: []report.StageError{{Stage: report.StageDeploy, Message: "image pull failed"}}})
	gates, _ = gate.Evaluate(context.Background(), gateInputs(t, res), gate.Thresholds{}, nil)
	if got := gate.ExitCode(gates); got != gate.ExitGateFailed {
		t.Fatalf("ExitCode with a real failure = %d, want 1", got)
	}
	if err := run.RecordStage("a", report.StageResult{Stage: "bad stage", Status: report.StageOK}); err == nil {
		t.Error("RecordStage accepted an invalid stage name")
	}
}

// TestCancelledCasesInterruptedVersusTimedOut：功能用例被取消时，信号中断（功能阶段
// 记为 interrupted）让功能门禁成为 interrupted；同样的取消若来自作业超时（阶段失败）
// 仍是失败——取消不是跳过。
func TestCancelledCasesInterruptedVersusTimedOut(t *testing.T) {
	rep := &functional.Report{Results: []functional.Result{
		{Suite: "chat_core", CaseID: "a", Status: functional.StatusPass},
		{Suite: "chat_core", CaseID: "b", Status: functional.StatusCancelled},
	}}
	for _, tc := range []struct {
		interrupted bool
		want        gate.Verdict
	}{{true, gate.VerdictInterrupted}, {false, gate.VerdictFail}} {
		sc := scenarioOf(t, stageScenario{Scenario: report.Scenario{Name: "s", Errors: []report.StageError{{Stage: report.StageFunctional, Message: "cancelled", Interrupted: tc.interrupted}}}, Functional: rep})
		gates, err := gate.Evaluate(context.Background(), gateInputs(t, report.Result{Scenarios: []report.Scenario{sc}}), gate.Thresholds{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if g := gateByName(t, gates, "s", "functional"); g.Verdict != tc.want || !strings.Contains(g.Reason, "cancelled") {
			t.Errorf("interrupted=%v: functional gate %+v, want %s", tc.interrupted, g, tc.want)
		}
	}
}

package gate_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/runtype"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/functionalreport"
)

// statuses 构造一个报告：ids 与 sts 一一对应，套件取 ID 的第一段。
func statuses(pairs ...string) functional.Report {
	rep := functional.Report{Model: "m", Started: t0}
	for i := 0; i+1 < len(pairs); i += 2 {
		suite, _, _ := strings.Cut(pairs[i], "/")
		rep.Results = append(rep.Results, functional.Result{CaseID: pairs[i], Suite: suite, Status: functional.Status(pairs[i+1]), Reason: "r"})
	}
	rep.Suites = functional.Summarize(rep.Results)
	return rep
}

// TestFunctionalGateCancelledIsNotSkipped 复现问题：作业超时取消了用例时门禁仍然通过
// （"1 passed, 95 skipped"）。cancelled 必须让门禁失败；unsupported 不失败但被单独列出。
func TestFunctionalGateCancelledIsNotSkipped(t *testing.T) {
	res := tResult{Scenarios: []tScenario{
		{Name: "cut", Functional: ptr(statuses("chat/a", "pass", "chat/b", "cancelled", "chat/c", "cancelled"))},
		{Name: "probe", Functional: ptr(statuses("chat/a", "pass", "params/top_p=0", "unsupported", "guided/x", "skip"))},
	}}
	gates, err := gate.Evaluate(context.Background(), res.GateInputs(), gate.Thresholds{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := gateByName(t, gates, "cut", "functional"); g.Verdict != gate.VerdictFail || !strings.Contains(g.Reason, "2 cancelled") || g.Current != 2 {
		t.Errorf("cancelled run: %s %q current %v, want fail naming 2 cancelled", g.Verdict, g.Reason, g.Current)
	}
	if g := gateByName(t, gates, "probe", "functional"); g.Verdict != gate.VerdictPass || !strings.Contains(g.Reason, "1 passed, 1 skipped, 1 unsupported") {
		t.Errorf("probe run: %s %q", g.Verdict, g.Reason)
	}
}

// TestFunctionalGatePassToSkipDrift 证明在最近一次每日运行中通过、现在被跳过、判为不支持
// 或消失的用例让门禁失败，并按用例 ID 列出；不在本次选择范围内的用例不算消失。
func TestFunctionalGatePassToSkipDrift(t *testing.T) {
	root := t.TempDir()
	daily := func(id string, started time.Time, rep functional.Report, finish bool) {
		run, err := report.NewRun(root, runtype.Daily, report.RunID(id), started, report.WithRenderers(renderers()...))
		if err != nil {
			t.Fatal(err)
		}
		if err := functionalreport.Record(run, "s", rep); err != nil {
			t.Fatal(err)
		}
		if finish {
			if _, err := run.Finish(context.Background(), nil, started.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
	}
	daily("d1", t0, statuses("chat/a", "pass", "chat/b", "skip", "chat/c", "skip", "other/x", "skip"), true)
	daily("d2", t0.Add(24*time.Hour), statuses("chat/a", "pass", "chat/b", "pass", "chat/c", "pass", "chat/d", "skip", "other/x", "pass"), true)
	daily("d3-interrupted", t0.Add(48*time.Hour), statuses("chat/a", "skip"), false)
	arts, err := report.ArtifactBaselines(os.DirFS(root), renderers()...)
	if err != nil {
		t.Fatal(err)
	}
	fb := arts.Functional
	if b, ok := fb["s"]; !ok || b.RunID != "d2" || b.Statuses["chat/b"] != gate.CasePass {
		t.Fatalf("functional baseline = %+v %v, want the newest complete daily run d2", b, ok)
	}
	src := gate.WithFunctional(gate.Static{}, fb)

	cur := statuses("chat/a", "pass", "chat/b", "skip", "chat/d", "skip", "other/x", "unsupported")
	res := tResult{Scenarios: []tScenario{{Name: "s", Functional: &cur}}}
	gates, err := gate.Evaluate(context.Background(), res.GateInputs(), gate.Thresholds{}, src)
	if err != nil {
		t.Fatal(err)
	}
	g := gateByName(t, gates, "s", "functional")
	if g.Verdict != gate.VerdictFail || g.BaselineRun != "d2" {
		t.Fatalf("drift: %s %q baseline %q, want fail against d2", g.Verdict, g.Reason, g.BaselineRun)
	}
	for _, want := range []string{"3 cases passed in daily run d2", "chat/b (now skip)", "chat/c (now missing)", "other/x (now unsupported)"} {
		if !strings.Contains(g.Reason, want) {
			t.Errorf("reason %q lacks %q", g.Reason, want)
		}
	}
	if strings.Contains(g.Reason, "chat/d") || strings.Contains(g.Reason, "chat/a") {
		t.Errorf("reason lists a case that did not drift: %q", g.Reason)
	}

	// 只选了 chat 套件：other/x 不在范围内，不算消失；chat/b、chat/c 仍然漂移。
	cur = statuses("chat/a", "pass", "chat/b", "pass", "chat/c", "pass")
	cur.Selection = []string{"chat"}
	res = tResult{Scenarios: []tScenario{{Name: "s", Functional: &cur}}}
	if gates, err = gate.Evaluate(context.Background(), res.GateInputs(), gate.Thresholds{}, src); err != nil {
		t.Fatal(err)
	}
	if g := gateByName(t, gates, "s", "functional"); g.Verdict != gate.VerdictPass {
		t.Errorf("subset run: %s %q, want pass (other/x is outside the selection)", g.Verdict, g.Reason)
	}
}

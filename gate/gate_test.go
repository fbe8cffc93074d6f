package gate_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/gate"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/accuracyreport"
	"gopkg.in/yaml.v3"
)

// oneRow 构造一个组合的一行汇总。
func oneRow(c int, ttft, e2e time.Duration, qps, failRate float64) loadgen.Summary {
	return loadgen.Summary{InputLength: 128, OutputLength: 128, Concurrency: c, Round: 1, Backend: "openai-chat", ControlMethod: "climb",
		TTFT: lat(ttft), E2E: lat(e2e), QPS: qps, FailRate: failRate, NumPrompts: 16}
}

// gateByName 返回名为 name 的门禁，找不到时终止测试。
func gateByName(t *testing.T, gates []gate.Gate, scenario, name string) gate.Gate {
	t.Helper()
	for _, g := range gates {
		if g.Scenario == scenario && g.Name == name {
			return g
		}
	}
	t.Fatalf("gate %s/%s not found among %d gates", scenario, name, len(gates))
	return gate.Gate{}
}

// TestPerfGateBoundaries 逐项检查需求阈值的边界：恰好 10%/5% 通过，超过即失败。
func TestPerfGateBoundaries(t *testing.T) {
	base := oneRow(1, 100*time.Millisecond, time.Second, 10, 0)
	cases := []struct {
		name   string
		cur    loadgen.Summary
		metric string
		want   gate.Verdict
		delta  float64
	}{
		{"ttft +10% exactly", oneRow(1, 110*time.Millisecond, time.Second, 10, 0), gate.MetricTTFTP99, gate.VerdictPass, 10},
		{"ttft +10.5%", oneRow(1, 110500*time.Microsecond, time.Second, 10, 0), gate.MetricTTFTP99, gate.VerdictFail, 10.5},
		{"ttft faster", oneRow(1, 50*time.Millisecond, time.Second, 10, 0), gate.MetricTTFTP99, gate.VerdictPass, -50},
		{"e2e +10% exactly", oneRow(1, 100*time.Millisecond, 1100*time.Millisecond, 10, 0), gate.MetricE2EP99, gate.VerdictPass, 10},
		{"e2e +20%", oneRow(1, 100*time.Millisecond, 1200*time.Millisecond, 10, 0), gate.MetricE2EP99, gate.VerdictFail, 20},
		{"qps -5% exactly", oneRow(1, 100*time.Millisecond, time.Second, 9.5, 0), gate.MetricQPS, gate.VerdictPass, -5},
		{"qps -6%", oneRow(1, 100*time.Millisecond, time.Second, 9.4, 0), gate.MetricQPS, gate.VerdictFail, -6},
		{"qps up", oneRow(1, 100*time.Millisecond, time.Second, 20, 0), gate.MetricQPS, gate.VerdictPass, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := tResult{Scenarios: []tScenario{{Name: "s", Perf: []loadgen.Summary{c.cur}}}}
			src := gate.FromRun(tResult{RunID: "daily-7", Scenarios: []tScenario{{Name: "s", Perf: []loadgen.Summary{base}}}}.GateRun())
			gates, err := gate.Evaluate(context.Background(), res.GateInputs(), gate.Thresholds{}, src)
			if err != nil {
				t.Fatal(err)
			}
			g := gateByName(t, gates, "s", "perf/in128-out128-c1-openai-chat/"+c.metric)
			if g.Verdict != c.want {
				t.Fatalf("verdict %s want %s (%s)", g.Verdict, c.want, g.Reason)
			}
			if g.DeltaPct == nil || math.Abs(*g.DeltaPct-c.delta) > 1e-6 {
				t.Fatalf("delta %v want %v", g.DeltaPct, c.delta)
			}
			if g.BaselineRun != "daily-7" || g.Key == nil || g.Key.Concurrency != 1 {
				t.Fatalf("baseline run %q key %+v", g.BaselineRun, g.Key)
			}
			if c.want == gate.VerdictFail && !strings.Contains(g.Reason, c.metric) {
				t.Fatalf("reason %q does not name %s", g.Reason, c.metric)
			}
		})
	}
}

// TestFailRateAndNoBaseline 检查失败率门禁不依赖基线，且无基线时不凭空判定。
func TestFailRateAndNoBaseline(t *testing.T) {
	res := tResult{Scenarios: []tScenario{{Name: "s", Perf: []loadgen.Summary{
		oneRow(1, 100*time.Millisecond, time.Second, 10, 0.05),
		oneRow(2, 100*time.Millisecond, time.Second, 10, 0.0625),
	}}}}
	gates, err := gate.Evaluate(context.Background(), res.GateInputs(), gate.Thresholds{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(gates) != 1+8 { // functional(skipped) + 2 组合 × 4
		t.Fatalf("%d gates", len(gates))
	}
	if g := gateByName(t, gates, "s", "perf/in128-out128-c1-openai-chat/fail_rate"); g.Verdict != gate.VerdictPass {
		t.Fatalf("5%% exactly: %s", g.Verdict)
	}
	if g := gateByName(t, gates, "s", "perf/in128-out128-c2-openai-chat/fail_rate"); g.Verdict != gate.VerdictFail || !strings.Contains(g.Reason, "6.25%") {
		t.Fatalf("6.25%%: %s %q", g.Verdict, g.Reason)
	}
	for _, m := range []string{gate.MetricTTFTP99, gate.MetricE2EP99, gate.MetricQPS} {
		g := gateByName(t, gates, "s", "perf/in128-out128-c1-openai-chat/"+m)
		if g.Verdict != gate.VerdictNoBaseline || g.Baseline != nil || g.DeltaPct != nil || !strings.Contains(g.Reason, "no daily baseline") {
			t.Fatalf("%s: %+v", m, g)
		}
	}
	if code := gate.ExitCode(gates); code != gate.ExitGateFailed {
		t.Fatalf("exit %d", code)
	}
	// RequireBaseline：无基线变为失败。
	gates, _ = gate.Evaluate(context.Background(), res.GateInputs(), gate.Thresholds{RequireBaseline: true, MaxFailRate: 0.5}, gate.Static{})
	if g := gateByName(t, gates, "s", "perf/in128-out128-c1-openai-chat/qps"); g.Verdict != gate.VerdictFail {
		t.Fatalf("require baseline: %s", g.Verdict)
	}
	if g := gateByName(t, gates, "s", "perf/in128-out128-c2-openai-chat/fail_rate"); g.Verdict != gate.VerdictPass {
		t.Fatalf("custom max fail rate: %s", g.Verdict)
	}
	// 负阈值关闭检查。
	gates, _ = gate.Evaluate(context.Background(), res.GateInputs(), gate.Thresholds{MaxFailRate: -1, QPSDrop: -1}, nil)
	for _, n := range []string{"fail_rate", "qps"} {
		if g := gateByName(t, gates, "s", "perf/in128-out128-c2-openai-chat/"+n); g.Verdict != gate.VerdictSkipped {
			t.Fatalf("disabled %s: %s", n, g.Verdict)
		}
	}
	if gate.ExitCode(gates) != gate.ExitOK {
		t.Fatal("no_baseline/skipped must not fail the run")
	}
}

// TestBaselineLookupError 检查基线查询失败时门禁给出原因而不是通过或失败。
func TestBaselineLookupError(t *testing.T) {
	src := gate.SourceFunc(func(ctx context.Context, k gate.Key) (gate.Baseline, bool, error) {
		return gate.Baseline{}, false, errors.New("prometheus: connection refused")
	})
	res := tResult{Scenarios: []tScenario{{Name: "s", Perf: []loadgen.Summary{oneRow(1, time.Millisecond, time.Second, 1, 0)}}}}
	gates, err := gate.Evaluate(context.Background(), res.GateInputs(), gate.DefaultThresholds(), src)
	if err != nil {
		t.Fatal(err)
	}
	g := gateByName(t, gates, "s", "perf/in128-out128-c1-openai-chat/ttft_p99_seconds")
	if g.Verdict != gate.VerdictNoBaseline || !strings.Contains(g.Reason, "connection refused") {
		t.Fatalf("%+v", g)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := gate.Evaluate(ctx, res.GateInputs(), gate.Thresholds{}, src); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
}

// TestUnmeasurableCurrent 检查全部请求失败（时延不可测）时时延门禁失败而非通过。
func TestUnmeasurableCurrent(t *testing.T) {
	cur := oneRow(1, 0, 0, 0, 1)
	cur.TTFT, cur.E2E = loadgen.Latency{}, loadgen.Latency{}
	base := gate.Static{{Scenario: "s", InputLength: 128, OutputLength: 128, Concurrency: 1}: {RunID: "d", TTFTP99: time.Millisecond, E2EP99: time.Second, QPS: 5}}
	gates, _ := gate.Evaluate(context.Background(), tResult{Scenarios: []tScenario{{Name: "s", Perf: []loadgen.Summary{cur}}}}.GateInputs(), gate.Thresholds{}, base)
	for _, m := range []string{"ttft_p99_seconds", "e2e_p99_seconds", "qps", "fail_rate"} {
		if g := gateByName(t, gates, "s", "perf/in128-out128-c1-openai-chat/"+m); g.Verdict != gate.VerdictFail {
			t.Errorf("%s: %s (%s)", m, g.Verdict, g.Reason)
		}
	}
	// 基线缺某项时该项为 no_baseline。
	base = gate.Static{{Scenario: "s", InputLength: 128, OutputLength: 128, Concurrency: 1}: {RunID: "d", QPS: 5}}
	gates, _ = gate.Evaluate(context.Background(), tResult{Scenarios: []tScenario{{Name: "s", Perf: []loadgen.Summary{oneRow(1, time.Millisecond, time.Second, 5, 0)}}}}.GateInputs(), gate.Thresholds{}, base)
	if g := gateByName(t, gates, "s", "perf/in128-out128-c1-openai-chat/ttft_p99_seconds"); g.Verdict != gate.VerdictNoBaseline || !strings.Contains(g.Reason, "baseline d has no") {
		t.Fatalf("%+v", g)
	}
}

// TestFunctionalAccuracyStageGates 检查功能、精度与阶段错误门禁。
func TestFunctionalAccuracyStageGates(t *testing.T) {
	res := tResult{Scenarios: []tScenario{
		{Name: "ok", Functional: ptr(funcReport(4, 0)), Accuracy: []accuracyreport.Result{acc("gpqa", 0.3, ptr(0.3)), acc("mmlu", 0.7, nil)}},
		{Name: "bad", Functional: ptr(funcReport(2, 12)), Accuracy: []accuracyreport.Result{acc("gpqa", 0.29, ptr(0.3))}},
		{Name: "down", Errors: []report.StageError{{Stage: report.StageDeploy, Message: "not ready after 20m"}}},
		{Name: "notrun"},
	}}
	gates, err := gate.Evaluate(context.Background(), res.GateInputs(), gate.Thresholds{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	check := func(sc, name string, want gate.Verdict, reasonPart string) {
		t.Helper()
		g := gateByName(t, gates, sc, name)
		if g.Verdict != want || !strings.Contains(g.Reason, reasonPart) {
			t.Errorf("%s/%s = %s %q, want %s containing %q", sc, name, g.Verdict, g.Reason, want, reasonPart)
		}
	}
	check("ok", "functional", gate.VerdictPass, "4 passed, 1 skipped")
	check("ok", "accuracy/gpqa", gate.VerdictPass, "score 0.3000 >= threshold 0.3000")
	check("ok", "accuracy/mmlu", gate.VerdictSkipped, "not gated")
	check("bad", "functional", gate.VerdictFail, "12 of 15 cases failed: tools/tools_call_a")
	check("bad", "functional", gate.VerdictFail, "… 2 more")
	check("bad", "accuracy/gpqa", gate.VerdictFail, "score 0.2900 < threshold 0.3000")
	check("down", "stage/deploy", gate.VerdictFail, "not ready after 20m")
	check("down", "functional", gate.VerdictFail, "deploy stage failed")
	check("notrun", "functional", gate.VerdictSkipped, "no report")
	g := gateByName(t, gates, "bad", "accuracy/gpqa")
	if g.DeltaPct == nil || math.Abs(*g.DeltaPct-(-10.0/3)) > 1e-6 || g.Current != 0.29 {
		t.Fatalf("accuracy delta %v current %v", g.DeltaPct, g.Current)
	}
}

// TestAggregateMedian 检查多轮取中位数且忽略不可测轮次。
func TestAggregateMedian(t *testing.T) {
	row := func(ttft, e2e time.Duration, qps, failRate float64) gate.PerfRow {
		return gate.PerfRow{InputLength: 128, OutputLength: 128, Concurrency: 1, TTFT: gate.Latency{Count: 16, P99: ttft},
			E2E: gate.Latency{Count: 16, P99: e2e}, QPS: qps, FailRate: failRate}
	}
	rows := []gate.PerfRow{
		row(10*time.Millisecond, time.Second, 3, 0),
		row(30*time.Millisecond, 3*time.Second, 1, 0.5),
		row(20*time.Millisecond, 2*time.Second, 2, 0),
	}
	b := gate.Aggregate(rows)
	if b.TTFTP99 != 20*time.Millisecond || b.E2EP99 != 2*time.Second || b.QPS != 2 || b.FailRate != 0 {
		t.Fatalf("%+v", b)
	}
	rows[2].TTFT = gate.Latency{}
	if b := gate.Aggregate(rows); b.TTFTP99 != 20*time.Millisecond {
		t.Fatalf("even median: %v", b.TTFTP99)
	}
	if b := gate.Aggregate(nil); b.QPS != -1 || b.TTFTP99 != 0 {
		t.Fatalf("empty: %+v", b)
	}
}

// TestThresholdsYAML 检查阈值可从 YAML 读取，省略的键取默认值。
func TestThresholdsYAML(t *testing.T) {
	var th gate.Thresholds
	if err := yaml.Unmarshal([]byte("ttft_p99_regression: 0.2\nqps_drop: -1\nrequire_baseline: true\n"), &th); err != nil {
		t.Fatal(err)
	}
	if th.TTFTP99Regression != 0.2 || th.QPSDrop != -1 || !th.RequireBaseline || th.E2EP99Regression != 0 {
		t.Fatalf("%+v", th)
	}
	base := gate.Static{{Scenario: "s", InputLength: 128, OutputLength: 128, Concurrency: 1}: {RunID: "d", TTFTP99: 100 * time.Millisecond, E2EP99: time.Second, QPS: 10}}
	cur := oneRow(1, 115*time.Millisecond, 1150*time.Millisecond, 1, 0)
	gates, _ := gate.Evaluate(context.Background(), tResult{Scenarios: []tScenario{{Name: "s", Perf: []loadgen.Summary{cur}}}}.GateInputs(), th, base)
	want := map[string]gate.Verdict{"ttft_p99_seconds": gate.VerdictPass, "e2e_p99_seconds": gate.VerdictFail, "qps": gate.VerdictSkipped, "fail_rate": gate.VerdictPass}
	for m, v := range want {
		if g := gateByName(t, gates, "s", "perf/in128-out128-c1-openai-chat/"+m); g.Verdict != v {
			t.Errorf("%s = %s want %s (%s)", m, g.Verdict, v, g.Reason)
		}
	}
}

// TestAccuracyGateIsAccuracyGate 钉住"只有一个精度门禁函数"：旧的 report 门禁放过了部分运行
// 与全部失败的请求（accuracy.Gate 不放过），并在按 f1_score 判定时要求驱动改写分数。
// 现在 report 的判定与 accuracy.Gate 逐项相同。
func TestAccuracyGateIsAccuracyGate(t *testing.T) {
	th := ptr(0.3)
	partial := acc("gpqa", 0.9, th)
	partial.Result.Planned, partial.Result.Examples, partial.Result.Partial = 10, 4, true
	failed := acc("mmlu", 0.9, th)
	failed.Result.Requests, failed.Result.Errors, failed.Result.ErrorClasses = 8, 8, map[string]int{"http_500": 8}
	allowed := acc("mgsm", 0.9, th)
	allowed.Result.Requests, allowed.Result.Errors, allowed.MaxErrorRate = 8, 1, 0.2
	f1 := acc("drop", 0.4, ptr(60.0))
	f1.Metric, f1.Result.Metrics = "f1_score", map[string]float64{"f1_score": 70}
	res := tResult{Scenarios: []tScenario{{Name: "s", Accuracy: []accuracyreport.Result{partial, failed, allowed, f1}}}}
	gates, err := gate.Evaluate(context.Background(), res.GateInputs(), gate.Thresholds{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		want gate.Verdict
		part string
	}{
		{"accuracy/gpqa", gate.VerdictFail, "partial run: 4 of 10"},
		{"accuracy/mmlu", gate.VerdictFail, "8 of 8 requests failed (http_500: 8)"},
		{"accuracy/mgsm", gate.VerdictPass, "score 0.9000 >= threshold"},
		{"accuracy/drop", gate.VerdictPass, "f1_score 70.0000 >= threshold 60.0000"},
	} {
		g := gateByName(t, gates, "s", c.name)
		if g.Verdict != c.want || !strings.Contains(g.Reason, c.part) {
			t.Errorf("%s = %s %q, want %s containing %q", c.name, g.Verdict, g.Reason, c.want, c.part)
		}
	}
	for _, a := range res.Scenarios[0].Accuracy {
		v := accuracy.Gate(a.Spec(), a.Result)
		g := gateByName(t, gates, "s", "accuracy/"+a.Result.Dataset)
		if v.Pass != (g.Verdict != gate.VerdictFail) || v.Reason != g.Reason {
			t.Errorf("%s: report %s %q, accuracy.Gate %v %q", a.Result.Dataset, g.Verdict, g.Reason, v.Pass, v.Reason)
		}
	}
	if f1.Result.Score != 0.4 || gateByName(t, gates, "s", "accuracy/drop").Current != 70 {
		t.Error("gating on f1_score changed the recorded score")
	}
}

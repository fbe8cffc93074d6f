package report_test

import (
	"bytes"
	"context"
	"errors"
	"github.com/vllm-cibench/cibench/accuracy"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/metrics"
	"github.com/vllm-cibench/cibench/report"
	"gopkg.in/yaml.v3"
)

// oneRow 构造一个组合的一行汇总。
func oneRow(c int, ttft, e2e time.Duration, qps, failRate float64) loadgen.Summary {
	return loadgen.Summary{InputLength: 128, OutputLength: 128, Concurrency: c, Round: 1, Backend: "openai-chat", ControlMethod: "climb",
		TTFT: lat(ttft), E2E: lat(e2e), QPS: qps, FailRate: failRate, NumPrompts: 16}
}

// gateByName 返回名为 name 的门禁，找不到时终止测试。
func gateByName(t *testing.T, gates []report.Gate, scenario, name string) report.Gate {
	t.Helper()
	for _, g := range gates {
		if g.Scenario == scenario && g.Name == name {
			return g
		}
	}
	t.Fatalf("gate %s/%s not found among %d gates", scenario, name, len(gates))
	return report.Gate{}
}

// TestPerfGateBoundaries 逐项检查规格阈值的边界：恰好 10%/5% 通过，超过即失败。
func TestPerfGateBoundaries(t *testing.T) {
	base := oneRow(1, 100*time.Millisecond, time.Second, 10, 0)
	cases := []struct {
		name   string
		cur    loadgen.Summary
		metric string
		want   report.Verdict
		delta  float64
	}{
		{"ttft +10% exactly", oneRow(1, 110*time.Millisecond, time.Second, 10, 0), report.MetricTTFTP99, report.VerdictPass, 10},
		{"ttft +10.5%", oneRow(1, 110500*time.Microsecond, time.Second, 10, 0), report.MetricTTFTP99, report.VerdictFail, 10.5},
		{"ttft faster", oneRow(1, 50*time.Millisecond, time.Second, 10, 0), report.MetricTTFTP99, report.VerdictPass, -50},
		{"e2e +10% exactly", oneRow(1, 100*time.Millisecond, 1100*time.Millisecond, 10, 0), report.MetricE2EP99, report.VerdictPass, 10},
		{"e2e +20%", oneRow(1, 100*time.Millisecond, 1200*time.Millisecond, 10, 0), report.MetricE2EP99, report.VerdictFail, 20},
		{"qps -5% exactly", oneRow(1, 100*time.Millisecond, time.Second, 9.5, 0), report.MetricQPS, report.VerdictPass, -5},
		{"qps -6%", oneRow(1, 100*time.Millisecond, time.Second, 9.4, 0), report.MetricQPS, report.VerdictFail, -6},
		{"qps up", oneRow(1, 100*time.Millisecond, time.Second, 20, 0), report.MetricQPS, report.VerdictPass, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := report.Result{Scenarios: []report.Scenario{{Name: "s", Perf: []loadgen.Summary{c.cur}}}}
			src := report.BaselinesFromResult(report.Result{RunID: "daily-7", Scenarios: []report.Scenario{{Name: "s", Perf: []loadgen.Summary{base}}}})
			gates, err := report.Evaluate(context.Background(), res, report.Thresholds{}, src)
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
			if c.want == report.VerdictFail && !strings.Contains(g.Reason, c.metric) {
				t.Fatalf("reason %q does not name %s", g.Reason, c.metric)
			}
		})
	}
}

// TestFailRateAndNoBaseline 检查失败率门禁不依赖基线，且无基线时不凭空判定。
func TestFailRateAndNoBaseline(t *testing.T) {
	res := report.Result{Scenarios: []report.Scenario{{Name: "s", Perf: []loadgen.Summary{
		oneRow(1, 100*time.Millisecond, time.Second, 10, 0.05),
		oneRow(2, 100*time.Millisecond, time.Second, 10, 0.0625),
	}}}}
	gates, err := report.Evaluate(context.Background(), res, report.Thresholds{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(gates) != 1+8 { // functional(skipped) + 2 组合 × 4
		t.Fatalf("%d gates", len(gates))
	}
	if g := gateByName(t, gates, "s", "perf/in128-out128-c1-openai-chat/fail_rate"); g.Verdict != report.VerdictPass {
		t.Fatalf("5%% exactly: %s", g.Verdict)
	}
	if g := gateByName(t, gates, "s", "perf/in128-out128-c2-openai-chat/fail_rate"); g.Verdict != report.VerdictFail || !strings.Contains(g.Reason, "6.25%") {
		t.Fatalf("6.25%%: %s %q", g.Verdict, g.Reason)
	}
	for _, m := range []string{report.MetricTTFTP99, report.MetricE2EP99, report.MetricQPS} {
		g := gateByName(t, gates, "s", "perf/in128-out128-c1-openai-chat/"+m)
		if g.Verdict != report.VerdictNoBaseline || g.Baseline != nil || g.DeltaPct != nil || !strings.Contains(g.Reason, "no daily baseline") {
			t.Fatalf("%s: %+v", m, g)
		}
	}
	if code := report.ExitCode(gates); code != report.ExitGateFailed {
		t.Fatalf("exit %d", code)
	}
	// RequireBaseline：无基线变为失败。
	gates, _ = report.Evaluate(context.Background(), res, report.Thresholds{RequireBaseline: true, MaxFailRate: 0.5}, report.StaticBaselines{})
	if g := gateByName(t, gates, "s", "perf/in128-out128-c1-openai-chat/qps"); g.Verdict != report.VerdictFail {
		t.Fatalf("require baseline: %s", g.Verdict)
	}
	if g := gateByName(t, gates, "s", "perf/in128-out128-c2-openai-chat/fail_rate"); g.Verdict != report.VerdictPass {
		t.Fatalf("custom max fail rate: %s", g.Verdict)
	}
	// 负阈值关闭检查。
	gates, _ = report.Evaluate(context.Background(), res, report.Thresholds{MaxFailRate: -1, QPSDrop: -1}, nil)
	for _, n := range []string{"fail_rate", "qps"} {
		if g := gateByName(t, gates, "s", "perf/in128-out128-c2-openai-chat/"+n); g.Verdict != report.VerdictSkipped {
			t.Fatalf("disabled %s: %s", n, g.Verdict)
		}
	}
	if report.ExitCode(gates) != report.ExitOK {
		t.Fatal("no_baseline/skipped must not fail the run")
	}
}

// TestBaselineLookupError 检查基线查询失败时门禁给出原因而不是通过或失败。
func TestBaselineLookupError(t *testing.T) {
	src := report.BaselineFunc(func(ctx context.Context, k report.BaselineKey) (report.Baseline, bool, error) {
		return report.Baseline{}, false, errors.New("prometheus: connection refused")
	})
	res := report.Result{Scenarios: []report.Scenario{{Name: "s", Perf: []loadgen.Summary{oneRow(1, time.Millisecond, time.Second, 1, 0)}}}}
	gates, err := report.Evaluate(context.Background(), res, report.DefaultThresholds(), src)
	if err != nil {
		t.Fatal(err)
	}
	g := gateByName(t, gates, "s", "perf/in128-out128-c1-openai-chat/ttft_p99_seconds")
	if g.Verdict != report.VerdictNoBaseline || !strings.Contains(g.Reason, "connection refused") {
		t.Fatalf("%+v", g)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := report.Evaluate(ctx, res, report.Thresholds{}, src); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
}

// TestUnmeasurableCurrent 检查全部请求失败（时延不可测）时时延门禁失败而非通过。
func TestUnmeasurableCurrent(t *testing.T) {
	cur := oneRow(1, 0, 0, 0, 1)
	cur.TTFT, cur.E2E = loadgen.Latency{}, loadgen.Latency{}
	base := report.StaticBaselines{{Scenario: "s", InputLength: 128, OutputLength: 128, Concurrency: 1}: {RunID: "d", TTFTP99: time.Millisecond, E2EP99: time.Second, QPS: 5}}
	gates, _ := report.Evaluate(context.Background(), report.Result{Scenarios: []report.Scenario{{Name: "s", Perf: []loadgen.Summary{cur}}}}, report.Thresholds{}, base)
	for _, m := range []string{"ttft_p99_seconds", "e2e_p99_seconds", "qps", "fail_rate"} {
		if g := gateByName(t, gates, "s", "perf/in128-out128-c1-openai-chat/"+m); g.Verdict != report.VerdictFail {
			t.Errorf("%s: %s (%s)", m, g.Verdict, g.Reason)
		}
	}
	// 基线缺某项时该项为 no_baseline。
	base = report.StaticBaselines{{Scenario: "s", InputLength: 128, OutputLength: 128, Concurrency: 1}: {RunID: "d", QPS: 5}}
	gates, _ = report.Evaluate(context.Background(), report.Result{Scenarios: []report.Scenario{{Name: "s", Perf: []loadgen.Summary{oneRow(1, time.Millisecond, time.Second, 5, 0)}}}}, report.Thresholds{}, base)
	if g := gateByName(t, gates, "s", "perf/in128-out128-c1-openai-chat/ttft_p99_seconds"); g.Verdict != report.VerdictNoBaseline || !strings.Contains(g.Reason, "baseline d has no") {
		t.Fatalf("%+v", g)
	}
}

// TestFunctionalAccuracyStageGates 检查功能、精度与阶段错误门禁。
func TestFunctionalAccuracyStageGates(t *testing.T) {
	res := report.Result{Scenarios: []report.Scenario{
		{Name: "ok", Functional: ptr(funcReport(4, 0)), Accuracy: []report.Accuracy{acc("gpqa", 0.3, ptr(0.3)), acc("mmlu", 0.7, nil)}},
		{Name: "bad", Functional: ptr(funcReport(2, 12)), Accuracy: []report.Accuracy{acc("gpqa", 0.29, ptr(0.3))}},
		{Name: "down", Errors: []report.StageError{{Stage: report.StageDeploy, Message: "not ready after 20m"}}},
		{Name: "notrun"},
	}}
	gates, err := report.Evaluate(context.Background(), res, report.Thresholds{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	check := func(sc, name string, want report.Verdict, reasonPart string) {
		t.Helper()
		g := gateByName(t, gates, sc, name)
		if g.Verdict != want || !strings.Contains(g.Reason, reasonPart) {
			t.Errorf("%s/%s = %s %q, want %s containing %q", sc, name, g.Verdict, g.Reason, want, reasonPart)
		}
	}
	check("ok", "functional", report.VerdictPass, "4 passed, 1 skipped")
	check("ok", "accuracy/gpqa", report.VerdictPass, "score 0.3000 >= threshold 0.3000")
	check("ok", "accuracy/mmlu", report.VerdictSkipped, "not gated")
	check("bad", "functional", report.VerdictFail, "12 of 15 cases failed: tools/tools_call_a")
	check("bad", "functional", report.VerdictFail, "… 2 more")
	check("bad", "accuracy/gpqa", report.VerdictFail, "score 0.2900 < threshold 0.3000")
	check("down", "stage/deploy", report.VerdictFail, "not ready after 20m")
	check("down", "functional", report.VerdictFail, "deploy stage failed")
	check("notrun", "functional", report.VerdictSkipped, "no report")
	g := gateByName(t, gates, "bad", "accuracy/gpqa")
	if g.DeltaPct == nil || math.Abs(*g.DeltaPct-(-10.0/3)) > 1e-6 || g.Current != 0.29 {
		t.Fatalf("accuracy delta %v current %v", g.DeltaPct, g.Current)
	}
}

// TestAggregateMedian 检查多轮取中位数且忽略不可测轮次。
func TestAggregateMedian(t *testing.T) {
	rows := []loadgen.Summary{
		oneRow(1, 10*time.Millisecond, time.Second, 3, 0),
		oneRow(1, 30*time.Millisecond, 3*time.Second, 1, 0.5),
		oneRow(1, 20*time.Millisecond, 2*time.Second, 2, 0),
	}
	b := report.Aggregate(rows)
	if b.TTFTP99 != 20*time.Millisecond || b.E2EP99 != 2*time.Second || b.QPS != 2 || b.FailRate != 0 {
		t.Fatalf("%+v", b)
	}
	rows[2].TTFT = loadgen.Latency{}
	if b := report.Aggregate(rows); b.TTFTP99 != 20*time.Millisecond {
		t.Fatalf("even median: %v", b.TTFTP99)
	}
	if b := report.Aggregate(nil); b.QPS != -1 || b.TTFTP99 != 0 {
		t.Fatalf("empty: %+v", b)
	}
}

// TestArtifactBaselines 检查从产物目录选取最近一次已完成的每日运行。
func TestArtifactBaselines(t *testing.T) {
	root := t.TempDir()
	write := func(id string, started time.Time, ttft time.Duration, finish bool) {
		run, err := report.NewRun(root, report.RunTypeDaily, report.RunID(id), started)
		if err != nil {
			t.Fatal(err)
		}
		if err := run.AddScenario(report.ScenarioInfo{Name: "s", Model: "m", Quant: "none"}); err != nil {
			t.Fatal(err)
		}
		if err := run.RecordPerf("s", []loadgen.Summary{oneRow(1, ttft, time.Second, 1, 0)}); err != nil {
			t.Fatal(err)
		}
		if finish {
			if _, err := run.Finish(context.Background(), nil, started.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("b-newer", t0.Add(24*time.Hour), 20*time.Millisecond, true)
	write("a-older", t0, 10*time.Millisecond, true)
	write("c-cancelled", t0.Add(48*time.Hour), 99*time.Millisecond, false)
	if _, err := report.NewRun(root, report.RunTypePR, "pr1", t0); err != nil {
		t.Fatal(err)
	}
	src, err := report.ArtifactBaselines(os.DirFS(root))
	if err != nil {
		t.Fatal(err)
	}
	b, ok, err := src.Lookup(context.Background(), report.BaselineKey{Scenario: "s", Model: "m", InputLength: 128, OutputLength: 128, Concurrency: 1})
	if err != nil || !ok || b.RunID != "b-newer" || b.TTFTP99 != 20*time.Millisecond {
		t.Fatalf("lookup = %+v %v %v", b, ok, err)
	}
	if _, ok, _ := src.Lookup(context.Background(), report.BaselineKey{Scenario: "s", Model: "other", InputLength: 128, OutputLength: 128, Concurrency: 1}); ok {
		t.Fatal("matched another model")
	}
	if _, ok, _ := src.Lookup(context.Background(), report.BaselineKey{Scenario: "s", InputLength: 128, OutputLength: 128, Concurrency: 2}); ok {
		t.Fatal("matched another concurrency")
	}
	empty, err := report.ArtifactBaselines(os.DirFS(t.TempDir()))
	if err != nil || len(empty) != 0 {
		t.Fatalf("empty root: %v %v", empty, err)
	}
}

// TestMetricsBaselines 用 metrics 包真实的 CSV 写出与读回作为基线来源。
func TestMetricsBaselines(t *testing.T) {
	var buf bytes.Buffer
	w := metrics.NewSummaryWriter(&buf)
	rows := []loadgen.Summary{oneRow(4, 40*time.Millisecond, 2*time.Second, 8, 0), oneRow(4, 60*time.Millisecond, 2*time.Second, 8, 0), oneRow(1, time.Millisecond, time.Second, 1, 0)}
	for i := range rows {
		rows[i].ExecutionTime = t0
		rows[i].Round = i + 1
		if err := w.Write(rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	csvSrc, err := metrics.NewCSVBaseline(&buf, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	src := report.MetricsBaselines(csvSrc.Baseline)
	key := report.BaselineKey{Scenario: "s", Model: "m", Backend: "openai-chat", ControlMethod: "climb", InputLength: 128, OutputLength: 128, Concurrency: 4}
	b, ok, err := src.Lookup(context.Background(), key)
	if err != nil || !ok {
		t.Fatalf("lookup: %v %v", ok, err)
	}
	if math.Abs(b.TTFTP99.Seconds()-0.05) > 1e-6 || b.QPS != 8 {
		t.Fatalf("aggregated %+v", b)
	}
	key.Concurrency = 16
	if _, ok, err := src.Lookup(context.Background(), key); ok || err != nil {
		t.Fatalf("missing combo: %v %v", ok, err)
	}
	emptySrc, err := metrics.NewCSVBaseline(strings.NewReader(metrics.SummaryHeader+"\n"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := report.MetricsBaselines(emptySrc.Baseline).Lookup(context.Background(), key); ok || err != nil {
		t.Fatalf("no rows must be 'no baseline', got %v %v", ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := report.MetricsBaselines(csvSrc.Baseline).Lookup(ctx, key); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// TestThresholdsYAML 检查阈值可从 YAML 读取，省略的键取默认值。
func TestThresholdsYAML(t *testing.T) {
	var th report.Thresholds
	if err := yaml.Unmarshal([]byte("ttft_p99_regression: 0.2\nqps_drop: -1\nrequire_baseline: true\n"), &th); err != nil {
		t.Fatal(err)
	}
	if th.TTFTP99Regression != 0.2 || th.QPSDrop != -1 || !th.RequireBaseline || th.E2EP99Regression != 0 {
		t.Fatalf("%+v", th)
	}
	base := report.StaticBaselines{{Scenario: "s", InputLength: 128, OutputLength: 128, Concurrency: 1}: {RunID: "d", TTFTP99: 100 * time.Millisecond, E2EP99: time.Second, QPS: 10}}
	cur := oneRow(1, 115*time.Millisecond, 1150*time.Millisecond, 1, 0)
	gates, _ := report.Evaluate(context.Background(), report.Result{Scenarios: []report.Scenario{{Name: "s", Perf: []loadgen.Summary{cur}}}}, th, base)
	want := map[string]report.Verdict{"ttft_p99_seconds": report.VerdictPass, "e2e_p99_seconds": report.VerdictFail, "qps": report.VerdictSkipped, "fail_rate": report.VerdictPass}
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
	res := report.Result{Scenarios: []report.Scenario{{Name: "s", Accuracy: []report.Accuracy{partial, failed, allowed, f1}}}}
	gates, err := report.Evaluate(context.Background(), res, report.Thresholds{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		want report.Verdict
		part string
	}{
		{"accuracy/gpqa", report.VerdictFail, "partial run: 4 of 10"},
		{"accuracy/mmlu", report.VerdictFail, "8 of 8 requests failed (http_500: 8)"},
		{"accuracy/mgsm", report.VerdictPass, "score 0.9000 >= threshold"},
		{"accuracy/drop", report.VerdictPass, "f1_score 70.0000 >= threshold 60.0000"},
	} {
		g := gateByName(t, gates, "s", c.name)
		if g.Verdict != c.want || !strings.Contains(g.Reason, c.part) {
			t.Errorf("%s = %s %q, want %s containing %q", c.name, g.Verdict, g.Reason, c.want, c.part)
		}
	}
	for _, a := range res.Scenarios[0].Accuracy {
		v := accuracy.Gate(a.Spec(), a.Result)
		g := gateByName(t, gates, "s", "accuracy/"+a.Result.Dataset)
		if v.Pass != (g.Verdict != report.VerdictFail) || v.Reason != g.Reason {
			t.Errorf("%s: report %s %q, accuracy.Gate %v %q", a.Result.Dataset, g.Verdict, g.Reason, v.Pass, v.Reason)
		}
	}
	if f1.Result.Score != 0.4 || gateByName(t, gates, "s", "accuracy/drop").Current != 70 {
		t.Error("gating on f1_score changed the recorded score")
	}
}

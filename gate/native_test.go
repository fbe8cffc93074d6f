package gate_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/explain"
	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/gate"
)

// 本文件只用 gate 自己的输入类型（不经 report、不导入任何阶段包），验证一个新阶段或一个
// 团队程序直接使用 gate 时每条接缝的行为。

// row 构造一个组合一轮的压测行（TTFT/E2E 带分位与计数）。
func row(c int, ttft time.Duration, qps float64) gate.PerfRow {
	l := gate.Latency{Count: 200, P50: ttft / 2, P75: ttft * 3 / 4, P90: ttft * 9 / 10, P95: ttft * 19 / 20, P99: ttft}
	return gate.PerfRow{Backend: "openai-chat", ControlMethod: "normal", InputLength: 128, OutputLength: 64, Concurrency: c,
		TTFT: l, E2E: l, QPS: qps, Succeeded: 200}
}

// dailyRun 构造一次每日运行（一个场景，一个组合）。
func dailyRun(id string, at time.Time, ttft time.Duration, qps float64, complete bool) gate.Run {
	return gate.Run{RunID: id, Daily: true, Complete: complete, Started: at,
		Scenarios: []gate.Scenario{{Name: "emu", Model: "m", Perf: []gate.PerfRow{row(4, ttft, qps)},
			Functional: &gate.Functional{Cases: []gate.Case{{ID: "chat/a", Suite: "chat", Status: gate.CasePass}}}}}}
}

// TestSelectLastCompletedDaily 证明选取规则：每个组合取最近一次已完成的每日运行；
// 更晚但未完成的每日运行与 PR 运行都不算基线；功能基线同样如此。
func TestSelectLastCompletedDaily(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	pr := dailyRun("pr-9", t0.Add(72*time.Hour), 9*time.Second, 1, true)
	pr.Daily = false
	runs := []gate.Run{
		dailyRun("d2", t0.Add(24*time.Hour), 200*time.Millisecond, 10, true),
		dailyRun("d1", t0, 100*time.Millisecond, 11, true),
		dailyRun("d3-cancelled", t0.Add(48*time.Hour), 900*time.Millisecond, 1, false),
		pr,
	}
	b := gate.Select(runs)
	key := gate.Key{Scenario: "emu", Model: "m", Backend: "openai-chat", ControlMethod: "normal", InputLength: 128, OutputLength: 64, Concurrency: 4}
	got, ok, err := b.Lookup(context.Background(), key)
	if err != nil || !ok || got.RunID != "d2" || got.TTFTP99 != 200*time.Millisecond || got.QPS != 10 || got.TTFT.Count != 200 {
		t.Fatalf("Lookup = %+v %v %v, want d2 (newest complete daily)", got, ok, err)
	}
	if !got.Time.Equal(t0.Add(24 * time.Hour)) {
		t.Errorf("baseline time %v, want the run's start when rows carry none", got.Time)
	}
	fb, ok, err := b.FunctionalBaseline(context.Background(), "emu")
	if err != nil || !ok || fb.RunID != "d2" || fb.Statuses["chat/a"] != gate.CasePass {
		t.Fatalf("functional baseline %+v %v %v", fb, ok, err)
	}
	if _, ok, _ := b.FunctionalBaseline(context.Background(), "other"); ok {
		t.Error("functional baseline for an unknown scenario")
	}
	if e := gate.Select(nil); len(e.Perf) != 0 || len(e.Functional) != 0 {
		t.Errorf("Select(nil) = %+v", e)
	}
}

// TestPerScenarioCachesAndFilters 证明 PerScenario 每个场景只读一次、按组合挑行并聚合、
// "没有"不是错误、读取错误带场景名、取消的查询不进缓存；并发安全（-race）。
func TestPerScenarioCachesAndFilters(t *testing.T) {
	var mu sync.Mutex
	reads := map[gate.ScenarioID]int{}
	fail := errors.New("prometheus down")
	src := gate.PerScenario(func(ctx context.Context, id gate.ScenarioID) (gate.DailyRows, bool, error) {
		mu.Lock()
		reads[id]++
		mu.Unlock()
		if err := ctx.Err(); err != nil {
			return gate.DailyRows{}, false, err
		}
		switch id.Scenario {
		case "none":
			return gate.DailyRows{}, false, nil
		case "broken":
			return gate.DailyRows{}, false, fail
		}
		return gate.DailyRows{RunID: "daily-7", Rows: []gate.PerfRow{row(4, 100*time.Millisecond, 9), row(4, 300*time.Millisecond, 11), row(4, 200*time.Millisecond, 10), row(8, time.Second, 1)}}, true, nil
	})
	key := gate.Key{Scenario: "s", Model: "m", InputLength: 128, OutputLength: 64, Concurrency: 4}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, ok, err := src.Lookup(context.Background(), key)
			if err != nil || !ok || b.RunID != "daily-7" || b.TTFTP99 != 200*time.Millisecond || b.QPS != 10 {
				t.Errorf("Lookup = %+v %v %v, want the median of the three c=4 rounds", b, ok, err)
			}
		}()
	}
	wg.Wait()
	if n := reads[gate.ScenarioID{Model: "m", Scenario: "s"}]; n < 1 || n > 8 {
		t.Fatalf("reads = %d", n)
	}
	before := reads[gate.ScenarioID{Model: "m", Scenario: "s"}]
	other := key
	other.Concurrency = 16
	if _, ok, err := src.Lookup(context.Background(), other); ok || err != nil {
		t.Errorf("missing combination: %v %v, want not found", ok, err)
	}
	if reads[gate.ScenarioID{Model: "m", Scenario: "s"}] != before {
		t.Error("a second combination of the same scenario read again (cache miss)")
	}
	if _, ok, err := src.Lookup(context.Background(), gate.Key{Scenario: "none"}); ok || err != nil {
		t.Errorf("no daily result: %v %v", ok, err)
	}
	if _, _, err := src.Lookup(context.Background(), gate.Key{Scenario: "broken"}); !errors.Is(err, fail) || !strings.Contains(err.Error(), "gate: baseline broken") {
		t.Errorf("read error: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := src.Lookup(ctx, gate.Key{Scenario: "later"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, ok, err := src.Lookup(context.Background(), gate.Key{Scenario: "later", InputLength: 128, OutputLength: 64, Concurrency: 4}); !ok || err != nil {
		t.Errorf("after a cancelled lookup: %v %v (must not be cached)", ok, err)
	}
}

// TestWithFunctionalAndSourceFunc 证明 WithFunctional 把性能与功能查询分开交给两个来源，
// 性能来源为 nil 时没有性能基线；SourceFunc 让函数满足 Source。
func TestWithFunctionalAndSourceFunc(t *testing.T) {
	fb := gate.FunctionalBaselines{"emu": {RunID: "d1", Statuses: map[string]gate.CaseStatus{"chat/a": gate.CasePass}}}
	calls := 0
	perf := gate.SourceFunc(func(_ context.Context, k gate.Key) (gate.Baseline, bool, error) {
		calls++
		return gate.Baseline{RunID: "prom", QPS: 5}, k.Scenario == "emu", nil
	})
	src := gate.WithFunctional(perf, fb)
	if b, ok, err := src.Lookup(context.Background(), gate.Key{Scenario: "emu"}); !ok || err != nil || b.RunID != "prom" || calls != 1 {
		t.Fatalf("perf lookup %+v %v %v calls=%d", b, ok, err, calls)
	}
	fs, ok := src.(gate.FunctionalSource)
	if !ok {
		t.Fatal("WithFunctional must be a FunctionalSource")
	}
	if b, ok, err := fs.FunctionalBaseline(context.Background(), "emu"); !ok || err != nil || b.RunID != "d1" {
		t.Fatalf("functional lookup %+v %v %v", b, ok, err)
	}
	if _, ok, err := gate.WithFunctional(nil, fb).Lookup(context.Background(), gate.Key{Scenario: "emu"}); ok || err != nil {
		t.Errorf("nil perf source: %v %v", ok, err)
	}
}

// TestDriftAgainstOwnStage 证明一个不属于内置阶段的结果（团队自己的用例、自己的阶段错误）
// 只要写成 gate 的输入就得到与内置阶段同样的门禁：pass → skip 漂移、不在选择范围内的消失
// 不算漂移、被中断的阶段记为 interrupted。
func TestDriftAgainstOwnStage(t *testing.T) {
	base := gate.FunctionalBaselines{"team": {RunID: "d9", Statuses: map[string]gate.CaseStatus{
		"vendor/a": gate.CasePass, "vendor/b": gate.CasePass, "other/c": gate.CasePass, "vendor/d": gate.CaseSkip}}}
	sc := gate.Scenario{Name: "team", Functional: &gate.Functional{
		Cases:   []gate.Case{{ID: "vendor/a", Suite: "vendor", Status: gate.CaseUnsupported}, {ID: "d", Suite: "vendor", Status: gate.CaseSkip}},
		InScope: func(_, suite string) bool { return suite == "vendor" },
	}, Errors: []gate.StageError{{Stage: "vendor-stage", Message: "signal", Interrupted: true}}}
	gates, err := gate.Evaluate(context.Background(), []gate.Scenario{sc}, gate.Thresholds{}, gate.WithFunctional(nil, base))
	if err != nil {
		t.Fatal(err)
	}
	if len(gates) != 2 {
		t.Fatalf("%d gates: %+v", len(gates), gates)
	}
	st, fn := gates[0], gates[1]
	if st.Kind != gate.KindStage || st.Name != "stage/vendor-stage" || st.Verdict != gate.VerdictInterrupted || st.Current != 0 {
		t.Errorf("stage gate %+v", st)
	}
	if fn.Verdict != gate.VerdictFail || fn.BaselineRun != "d9" || fn.Current != 2 ||
		!strings.Contains(fn.Reason, "vendor/a (now unsupported)") || !strings.Contains(fn.Reason, "vendor/b (now missing)") || strings.Contains(fn.Reason, "other/c") {
		t.Errorf("functional gate %+v", fn)
	}
	if g := gate.StageGate("s", gate.StageError{Stage: "deploy", Message: "boom"}); g.Verdict != gate.VerdictFail || g.Current != 1 || g.Reason != "deploy stage failed: boom" {
		t.Errorf("StageGate = %+v", g)
	}
}

// TestAccuracyGateKinds 证明精度阶段的判定经同一个 Gate 形状表达：通过、失败、不设门禁、
// 被中断的部分结果。
func TestAccuracyGateKinds(t *testing.T) {
	th := 0.5
	sc := gate.Scenario{Name: "s"}
	for _, tc := range []struct {
		a    gate.Accuracy
		want gate.Verdict
	}{
		{gate.Accuracy{Dataset: "gpqa", Metric: "score", Value: 0.6, Threshold: &th, Pass: true, ScoreGated: true}, gate.VerdictPass},
		{gate.Accuracy{Dataset: "gpqa", Metric: "score", Value: 0.4, Threshold: &th, Pass: false, ScoreGated: true}, gate.VerdictFail},
		{gate.Accuracy{Dataset: "sample", Metric: "score", Value: 0.4, Pass: true}, gate.VerdictSkipped},
	} {
		g := gate.AccuracyGate(sc, tc.a)
		if g.Verdict != tc.want || g.Kind != gate.KindAccuracy || g.Name != "accuracy/"+tc.a.Dataset {
			t.Errorf("%+v: %+v", tc.a, g)
		}
		if tc.a.Threshold != nil && (g.DeltaPct == nil || g.Baseline == nil || *g.Baseline != th) {
			t.Errorf("threshold evidence missing: %+v", g)
		}
	}
	sc.Errors = []gate.StageError{{Stage: gate.StageAccuracy, Message: "signal", Interrupted: true}}
	g := gate.AccuracyGate(sc, gate.Accuracy{Dataset: "gpqa", Metric: "score", Value: 0.1, Threshold: &th, Partial: true, Examples: 3, Planned: 10})
	if g.Verdict != gate.VerdictInterrupted || !strings.Contains(g.Reason, "3 of 10") {
		t.Errorf("partial interrupted: %+v", g)
	}
}

// TestDailyTrendInMemory 在内存里的每日序列上检查变点：第 15 天起 TTFT P99 变慢 25% 的序列
// 在第 15 天报出变点（含今天时才检测得到则标 New），QPS 没有变化不报；未完成的运行不参与；
// 非法选项是错误。
func TestDailyTrendInMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	start := time.Date(2025, 5, 1, 2, 0, 0, 0, time.UTC)
	noise := func() float64 { return 1 + 0.03*rng.NormFloat64() }
	var runs []gate.Run
	for d := range 20 {
		ttft := 200.0
		if d >= 15 {
			ttft = 250
		}
		runs = append(runs, dailyRun(fmt.Sprintf("day%02d", d), start.Add(time.Duration(d)*24*time.Hour),
			time.Duration(ttft*noise()*float64(time.Millisecond)), 10*noise(), true))
	}
	runs = append(runs, dailyRun("day99-cancelled", start.Add(100*24*time.Hour), 9*time.Second, 1, false))
	tr, err := gate.DailyTrend(runs[:19], runs[19], gate.TrendOptions{Permutations: 199})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Runs != 20 || tr.Series != 3 || tr.Window != gate.DefaultTrendWindow {
		t.Fatalf("trend %+v", tr)
	}
	// row 让 TTFT 与 E2E 同步变化：两条时延序列各一个变点，QPS 序列没有。
	var lat []gate.ChangePoint
	for _, c := range tr.ChangePoints {
		if c.Metric == gate.MetricQPS {
			t.Errorf("change point on an unchanged series: %+v", c)
			continue
		}
		lat = append(lat, c)
	}
	if len(lat) != 2 {
		t.Fatalf("latency change points %+v", lat)
	}
	for _, c := range lat {
		if c.RunID != "day15" || c.DeltaPct < 15 || c.DeltaPct > 35 || c.Key == nil {
			t.Errorf("change point %+v, want day15 at about +25%%", c)
		}
	}
	if tr.NewChangePoints() != nil && tr.NewChangePoints()[0].RunID != "day15" {
		t.Errorf("new change points %+v", tr.NewChangePoints())
	}
	// 今天之后的运行（重新汇总旧运行时）与未完成的运行都不参与。
	tr2, err := gate.DailyTrend(runs, runs[10], gate.TrendOptions{Permutations: 99, Window: 8, MinSegment: 2})
	if err != nil || tr2.Runs != 8 {
		t.Fatalf("windowed trend %+v %v", tr2, err)
	}
	if _, err := gate.DailyTrend(runs, runs[19], gate.TrendOptions{MinSegment: 1}); !errors.Is(err, gate.ErrInvalidThresholds) {
		t.Errorf("bad options: %v", err)
	}
	var nilTrend *gate.Trend
	if nilTrend.NewChangePoints() != nil {
		t.Error("nil trend has change points")
	}
}

// TestEvidenceAndQuantileNames 固定报告与 JUnit 共用的证据文本。
func TestEvidenceAndQuantileNames(t *testing.T) {
	g := gate.Gate{Interval: &gate.Interval{LoPct: -2.5, HiPct: 12, Level: 0.95}, Quantile: 0.95,
		Samples: &gate.SampleSizes{Current: 80, Baseline: 90, Needed: 20}, Support: gate.SupportInsufficient}
	iv, ss := g.Evidence()
	// 给人读的文字，不是枚举值（issue 37 §7：单元格里曾出现 insufficient_samples）。
	if iv != "[−2.5%, +12.0%] @95%" || ss != "80 / 90 (P95 needs 20; too few samples)" {
		t.Errorf("Evidence = %q, %q", iv, ss)
	}
	if iv, ss := (gate.Gate{}).Evidence(); iv != "—" || ss != "—" {
		t.Errorf("empty Evidence = %q, %q", iv, ss)
	}
	for q, want := range map[float64]string{0.99: "P99", 0.9: "P90", 0.75: "P75", 0: "rate"} {
		if got := gate.QuantileName(q); got != want {
			t.Errorf("QuantileName(%v) = %q, want %q", q, got, want)
		}
	}
}

// TestLowerQuantileAndRateSamples 用每轮只有 30 个样本的行（P99 需要 100 个）检查
// lower_quantile 改用 P95，以及 QPS 与 E2E 门禁用逐请求样本给出置信区间。
func TestLowerQuantileAndRateSamples(t *testing.T) {
	mk := func(ttft time.Duration, qps float64) gate.Scenario {
		r := row(4, ttft, qps)
		r.TTFT.Count, r.E2E.Count, r.Succeeded = 30, 30, 30
		us := make([]int64, 30)
		for i := range us {
			us[i] = int64(ttft/time.Microsecond) * int64(20+i) / 50
		}
		return gate.Scenario{Name: "s", Perf: []gate.PerfRow{r}, Samples: []gate.Samples{{Backend: "openai-chat", ControlMethod: "normal",
			InputLength: 128, OutputLength: 64, Concurrency: 4, Seen: 30, TTFTMicros: us, E2EMicros: us, GapMicros: us}}}
	}
	base := gate.FromRun(gate.Run{RunID: "d", Scenarios: []gate.Scenario{mk(100*time.Millisecond, 10)}})
	th := gate.Thresholds{OnInsufficient: gate.InsufficientLowerQuantile, Resamples: 200}
	gates, err := gate.Evaluate(context.Background(), []gate.Scenario{mk(104*time.Millisecond, 10)}, th, base)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, g := range gates {
		seen[g.Metric] = true
		switch g.Metric {
		case gate.MetricTTFTP99, gate.MetricE2EP99:
			if g.Quantile != 0.95 || g.Support != gate.SupportOK || g.Verdict != gate.VerdictPass || g.Interval == nil {
				t.Errorf("%s: %+v, want P95 with an interval", g.Metric, g)
			}
		case gate.MetricQPS:
			if g.Interval == nil || g.Verdict != gate.VerdictPass {
				t.Errorf("qps: %+v, want an interval from the gaps", g)
			}
		}
	}
	if len(seen) != 5 {
		t.Errorf("gates %v", seen)
	}
}

// TestThresholdsErrorsAreFieldErrors 证明门禁配置的每条错误都是 *field.Error（字段、取值），
// 与其他配置加载器同一个类型。
func TestThresholdsErrorsAreFieldErrors(t *testing.T) {
	err := gate.Thresholds{Mode: "strict", Confidence: 2, PerGate: gate.PerGateOptions{QPS: gate.PerfGateOptions{OnInsufficient: "drop"}}}.Validate()
	fes := field.All(err)
	if !errors.Is(err, gate.ErrInvalidThresholds) || len(fes) != 3 {
		t.Fatalf("err = %v (%d field errors)", err, len(fes))
	}
	want := map[string]string{"mode": "strict", "per_gate.qps.on_insufficient": "drop", "confidence": "2"}
	for _, fe := range fes {
		if want[fe.Field] != fe.Value {
			t.Errorf("field error %+v", fe)
		}
	}
}

// ExampleEvaluate 展示一个团队的程序不经 report、不导入任何阶段包直接使用门禁：
// 自己的阶段结果写成 gate.Scenario，基线来自内存表。
func ExampleEvaluate() {
	base := gate.Static{
		{Scenario: "team", InputLength: 128, OutputLength: 64, Concurrency: 4}: {RunID: "daily-1121", TTFTP99: 50 * time.Millisecond, QPS: 10},
	}
	sc := gate.Scenario{Name: "team",
		Functional: &gate.Functional{Cases: []gate.Case{{ID: "vendor/x", Suite: "vendor", Status: gate.CasePass}}},
		Perf: []gate.PerfRow{{InputLength: 128, OutputLength: 64, Concurrency: 4,
			TTFT: gate.Latency{Count: 500, P99: 60 * time.Millisecond}, QPS: 10}}}
	gates, _ := gate.Evaluate(context.Background(), []gate.Scenario{sc}, gate.DefaultThresholds(), base)
	for _, g := range gates {
		fmt.Printf("%-40s %-11s %s\n", g.Name, g.Verdict, g.Reason)
	}
	fmt.Println("exit", gate.ExitCode(gates))
	// Output:
	// functional                               pass        1 passed, 0 skipped
	// perf/in128-out64-c4/ttft_p99_seconds     fail        ttft_p99_seconds regressed +20.0% vs baseline (limit +10%)
	// perf/in128-out64-c4/e2e_p99_seconds      no_baseline baseline daily-1121 has no e2e_p99_seconds
	// perf/in128-out64-c4/qps                  pass        qps 0.0% vs baseline
	// perf/in128-out64-c4/fail_rate            pass        fail rate 0.00% ≤ 5.00%
	// exit 1
}

// TestDailyTrendAttribution：每日运行带阶段分解时，变点带着归因：变点前最后一次与变点后第一次
// 运行的比较，TTFT 的变化归到排队。
func TestDailyTrendAttribution(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	start := time.Date(2025, 5, 1, 2, 0, 0, 0, time.UTC)
	bd := func(queue float64) *explain.Breakdown {
		d := func(m float64) *explain.Dist { return &explain.Dist{Count: 200, Sum: 200 * m} }
		return &explain.Breakdown{ClientTTFT: explain.Moments{N: 200, Mean: 0.2 + queue, Var: 1e-5},
			ClientE2E:  explain.Moments{N: 200, Mean: 1 + queue, Var: 1e-5},
			ServerTTFT: d(0.199 + queue), Queue: d(queue), Prefill: d(0.199), Decode: d(0.8), ServerE2E: d(0.999 + queue)}
	}
	var runs []gate.Run
	for d := range 12 {
		ttft, queue := 200.0, 0.001
		if d >= 8 {
			ttft, queue = 250, 0.051
		}
		noise := 1 + 0.02*rng.NormFloat64()
		r := dailyRun(fmt.Sprintf("day%02d", d), start.Add(time.Duration(d)*24*time.Hour), time.Duration(ttft*noise*float64(time.Millisecond)), 10, true)
		r.Scenarios[0].Perf[0].Phases = bd(queue)
		runs = append(runs, r)
	}
	tr, err := gate.DailyTrend(runs[:11], runs[11], gate.TrendOptions{Permutations: 199})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range tr.ChangePoints {
		if c.Metric != gate.MetricTTFTP99 {
			continue
		}
		found = true
		if c.RunID != "day08" || c.Explain == nil || c.Explain.TTFT.Verdict != explain.VerdictAttributed ||
			c.Explain.TTFT.Named[0] != explain.PhaseQueue || !strings.Contains(c.Attribution, "queue +50.0 ms") {
			t.Errorf("change point %+v attribution %q", c, c.Attribution)
		}
	}
	if !found {
		t.Fatalf("no TTFT change point: %+v", tr.ChangePoints)
	}
}

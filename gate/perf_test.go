package gate_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/gate"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report/perfreport"
)

// simRun 是一次模拟的压测运行：一个组合的逐请求 TTFT 样本（秒），由对数正态分布抽取——
// 时延的右偏长尾正是 P99 在小样本下抖动的原因。shift 是乘性的真实变化（1.2 即 +20%）。
func simRun(rng *rand.Rand, n int, shift float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = 0.2 * math.Exp(0.35*rng.NormFloat64()) * shift
	}
	return xs
}

// q7 是第 7 型分位数（与 report 的自助法一致），用来从样本构造汇总行的分位。
func q7(xs []float64, q float64) time.Duration {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	h := float64(len(s)-1) * q
	lo := int(h)
	v := s[lo]
	if lo+1 < len(s) {
		v += (h - float64(lo)) * (s[lo+1] - s[lo])
	}
	return time.Duration(v * float64(time.Second))
}

// simScenario 把样本装成一个场景：汇总行（与 loadgen 同口径的分位）加逐请求样本。
// E2E 与 QPS 门禁在这些测试里关闭，只看 TTFT。
func simScenario(ttft []float64) tScenario {
	l := loadgen.Latency{Count: int64(len(ttft)), P50: q7(ttft, 0.5), P75: q7(ttft, 0.75), P90: q7(ttft, 0.9), P95: q7(ttft, 0.95), P99: q7(ttft, 0.99)}
	row := loadgen.Summary{InputLength: 128, OutputLength: 128, Concurrency: 4, Round: 1, Backend: "openai-chat", ControlMethod: "normal",
		TTFT: l, E2E: l, QPS: 10, Succeeded: len(ttft), NumPrompts: len(ttft)}
	us := make([]int64, len(ttft))
	for i, v := range ttft {
		us[i] = int64(math.Round(v * 1e6))
	}
	return tScenario{Name: "s", Perf: []loadgen.Summary{row}, PerfSamples: []perfreport.Samples{{Backend: "openai-chat", ControlMethod: "normal",
		InputLength: 128, OutputLength: 128, Concurrency: 4, Seen: int64(len(ttft)), TTFTMicros: us, E2EMicros: us}}}
}

// ttftGate 对一对模拟运行求 TTFT 门禁。
func ttftGate(tb testing.TB, cur, base []float64, th gate.Thresholds) gate.Gate {
	tb.Helper()
	th.E2EP99Regression, th.QPSDrop, th.MaxFailRate = -1, -1, -1
	src := gate.FromRun(tResult{RunID: "daily", Scenarios: []tScenario{simScenario(base)}}.GateRun())
	gates, err := gate.Evaluate(context.Background(), tResult{Scenarios: []tScenario{simScenario(cur)}}.GateInputs(), th, src)
	if err != nil {
		tb.Fatal(err)
	}
	for _, g := range gates {
		if g.Metric == gate.MetricTTFTP99 {
			return g
		}
	}
	tb.Fatal("no ttft gate")
	return gate.Gate{}
}

// alarmRates 在 reps 次带种子的重复中统计门禁失败的比例。
func alarmRates(tb testing.TB, seed uint64, reps, n int, shift float64, th gate.Thresholds) float64 {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	fails := 0
	for range reps {
		base := simRun(rng, n, 1)
		cur := simRun(rng, n, shift)
		if ttftGate(tb, cur, base, th).Verdict == gate.VerdictFail {
			fails++
		}
	}
	return float64(fails) / float64(reps)
}

// TestGateNoRegressionVsRealShift 是议题要求的两组对照：同一分布的两次运行（没有回归）与
// TTFT 真实变慢 20% 的两次运行，各 30 次带种子的重复，每次运行 400 个请求（足以支撑 P99）。
// 需求模式对 P99 的抽样抖动报警（误报），显著性模式几乎不误报；代价是显著性模式要求
// 整个区间越过 +10%，400 个样本的 P99 区间约 ±18%，检出 +20% 的能力明显弱于需求模式，
// 到 2048 个样本（蓄水池上限）才过半。完整的数表由 BenchmarkGateFalseAlarmAndDetection 打印。
func TestGateNoRegressionVsRealShift(t *testing.T) {
	const reps, n = 30, 400
	spec := gate.Thresholds{Resamples: 200}
	sig := gate.Thresholds{Resamples: 200, Mode: gate.ModeSignificant}
	specFA := alarmRates(t, 1, reps, n, 1, spec)
	sigFA := alarmRates(t, 1, reps, n, 1, sig)
	specDet := alarmRates(t, 2, reps, n, 1.2, spec)
	sigDet := alarmRates(t, 2, reps, n, 1.2, sig)
	bigDet := alarmRates(t, 3, 10, perfreport.DefaultMaxSamples, 1.2, sig)
	t.Logf("n=%d: false alarms spec %.0f%% significant %.0f%%; detection spec %.0f%% significant %.0f%% (n=%d: %.0f%%)",
		n, specFA*100, sigFA*100, specDet*100, sigDet*100, perfreport.DefaultMaxSamples, bigDet*100)
	if sigFA > 0.05 {
		t.Errorf("significant mode false-alarm rate %.0f%% > 5%%", sigFA*100)
	}
	if specFA <= sigFA || specFA < 0.08 {
		t.Errorf("spec mode false-alarm rate %.0f%% should clearly exceed significant mode's %.0f%% (P99 of 400 samples jitters past +10%%)", specFA*100, sigFA*100)
	}
	if specDet < 0.75 {
		t.Errorf("spec mode detection of +20%% = %.0f%%, want >= 75%%", specDet*100)
	}
	if sigDet >= specDet {
		t.Errorf("significant mode detection %.0f%% should be below spec mode's %.0f%% at n=%d", sigDet*100, specDet*100, n)
	}
	if bigDet < 0.4 {
		t.Errorf("significant mode detection of +20%% with %d samples = %.0f%%, want >= 40%%", perfreport.DefaultMaxSamples, bigDet*100)
	}

	// 一对具体的运行：区间、样本量与结论都写在门禁里，并且可复现。
	rng := rand.New(rand.NewPCG(9, 9))
	base, same, shifted := simRun(rng, n, 1), simRun(rng, n, 1), simRun(rng, n, 1.2)
	g := ttftGate(t, same, base, sig)
	if g.Interval == nil || g.Interval.LoPct > 0 || g.Interval.HiPct < 0 || g.Verdict != gate.VerdictPass {
		t.Errorf("same distribution: interval %+v verdict %s (%s)", g.Interval, g.Verdict, g.Reason)
	}
	g = ttftGate(t, shifted, base, sig)
	if g.Interval == nil || g.Interval.LoPct <= 0 || g.Interval.Level != 0.95 || g.Interval.Resamples != 200 {
		t.Fatalf("+20%% shift: interval %+v", g.Interval)
	}
	if g.Samples == nil || g.Samples.Current != n || g.Samples.Baseline != n || g.Samples.Needed != 100 || g.Support != gate.SupportOK || g.Mode != gate.ModeSignificant {
		t.Errorf("+20%% shift: samples %+v support %q mode %q", g.Samples, g.Support, g.Mode)
	}
	if d := *g.DeltaPct; d < g.Interval.LoPct-5 || d > g.Interval.HiPct+5 {
		t.Errorf("point delta %+.1f%% far outside its interval %+v", d, g.Interval)
	}
	again := ttftGate(t, shifted, base, sig)
	if !reflect.DeepEqual(again.Interval, g.Interval) {
		t.Errorf("same samples and seed gave different intervals: %+v vs %+v", again.Interval, g.Interval)
	}
	other := sig
	other.Seed = 7
	if o := ttftGate(t, shifted, base, other); *o.Interval == *g.Interval || o.Interval.Seed != 7 {
		t.Errorf("a different seed gave the identical interval %+v", o.Interval)
	}
}

// TestGateInsufficientSamples 检查 16 个样本的 P99（即最大值）被标为 insufficient_samples，
// 以及 on_insufficient 的四种取值各自的结论与实际比较的分位。
func TestGateInsufficientSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	base, cur := simRun(rng, 16, 1), simRun(rng, 16, 1.5)
	for _, tc := range []struct {
		on       string
		verdict  gate.Verdict
		quantile float64
		support  string
	}{
		{"", gate.VerdictFail, 0.99, gate.SupportInsufficient},
		{gate.InsufficientFail, gate.VerdictFail, 0.99, gate.SupportInsufficient},
		{gate.InsufficientWarn, gate.VerdictWarn, 0.99, gate.SupportInsufficient},
		{gate.InsufficientLowerQuantile, gate.VerdictFail, 0.90, gate.SupportOK},
	} {
		g := ttftGate(t, cur, base, gate.Thresholds{OnInsufficient: tc.on, Resamples: 200})
		if g.Verdict != tc.verdict || g.Quantile != tc.quantile || g.Support != tc.support || g.Samples == nil || g.Samples.Current != 16 {
			t.Errorf("on_insufficient=%q: verdict %s quantile %v support %q samples %+v (%s)", tc.on, g.Verdict, g.Quantile, g.Support, g.Samples, g.Reason)
		}
		if tc.quantile == 0.90 {
			want := (q7(cur, 0.9).Seconds() - q7(base, 0.9).Seconds()) / q7(base, 0.9).Seconds() * 100
			if math.Abs(*g.DeltaPct-want) > 1e-6 || g.Samples.Needed != 10 {
				t.Errorf("lower_quantile: delta %.3f want %.3f (P90), needed %d", *g.DeltaPct, want, g.Samples.Needed)
			}
		}
	}
	// 同一个慢了 50% 的小样本：warn 模式下变化不超限时仍是 warn（样本不足本身就是要看见的事实）。
	g := ttftGate(t, base, base, gate.Thresholds{OnInsufficient: gate.InsufficientWarn})
	if g.Verdict != gate.VerdictWarn || gate.ExitCode([]gate.Gate{g}) != gate.ExitOK {
		t.Errorf("warn gate: verdict %s exit %d", g.Verdict, gate.ExitCode([]gate.Gate{g}))
	}
	// 每门禁覆盖全局设置。
	g = ttftGate(t, cur, base, gate.Thresholds{OnInsufficient: gate.InsufficientFail,
		PerGate: gate.PerGateOptions{TTFTP99: gate.PerfGateOptions{OnInsufficient: gate.InsufficientWarn}}})
	if g.Verdict != gate.VerdictWarn {
		t.Errorf("per-gate override: verdict %s", g.Verdict)
	}
	// 基线没有逐请求样本（例如来自 Prometheus）时没有区间，显著性模式退回需求规则并说明。
	src := gate.Static{}
	for k, b := range gate.FromRun(tResult{Scenarios: []tScenario{simScenario(simRun(rng, 400, 1))}}.GateRun()) {
		b.Samples = nil
		src[k] = b
	}
	th := gate.Thresholds{Mode: gate.ModeSignificant, E2EP99Regression: -1, QPSDrop: -1}
	gates, err := gate.Evaluate(context.Background(), tResult{Scenarios: []tScenario{simScenario(simRun(rng, 400, 1.5))}}.GateInputs(), th, src)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gates {
		if g.Metric == gate.MetricTTFTP99 && (g.Interval != nil || g.Verdict != gate.VerdictFail) {
			t.Errorf("no baseline samples: interval %+v verdict %s (%s)", g.Interval, g.Verdict, g.Reason)
		}
	}
}

// TestThresholdsValidate 检查非法的模式、处理方式与数值被点名拒绝。
func TestThresholdsValidate(t *testing.T) {
	for _, th := range []gate.Thresholds{
		{Mode: "strict"}, {OnInsufficient: "ignore"}, {Confidence: 1.2}, {Resamples: 5},
		{PerGate: gate.PerGateOptions{QPS: gate.PerfGateOptions{Mode: "x"}}},
		{PerGate: gate.PerGateOptions{E2EP99: gate.PerfGateOptions{OnInsufficient: "x"}}},
	} {
		if err := th.Validate(); !errors.Is(err, gate.ErrInvalidThresholds) {
			t.Errorf("%+v: err = %v", th, err)
		}
	}
	ok := gate.Thresholds{Mode: gate.ModeSignificant, OnInsufficient: gate.InsufficientLowerQuantile, Confidence: 0.9, Resamples: 1000}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid thresholds: %v", err)
	}
}

// BenchmarkGateFalseAlarmAndDetection 打印需求模式与显著性模式（以及显著性 + lower_quantile）
// 在"同分布"与"TTFT +20%"两种情况下、不同样本量时的报警率：前者是误报率，后者是检出率。
// 数值写进 docs/report.md。运行：go test -run '^$' -bench GateFalseAlarm -benchtime 1x ./report/
func BenchmarkGateFalseAlarmAndDetection(b *testing.B) {
	const reps = 200
	modes := []struct {
		name string
		th   gate.Thresholds
	}{
		{"spec", gate.Thresholds{Resamples: 500}},
		{"significant", gate.Thresholds{Resamples: 500, Mode: gate.ModeSignificant}},
		{"significant+lower_quantile", gate.Thresholds{Resamples: 500, Mode: gate.ModeSignificant, OnInsufficient: gate.InsufficientLowerQuantile}},
	}
	for range b.N {
		for _, n := range []int{16, 64, 256, 1024} {
			for _, m := range modes {
				fa := alarmRates(b, 11, reps, n, 1, m.th)
				det := alarmRates(b, 12, reps, n, 1.2, m.th)
				b.Logf("n=%-5d %-28s false alarms %5.1f%%   detection of +20%% TTFT %5.1f%%", n, m.name, fa*100, det*100)
				b.ReportMetric(fa*100, fmt.Sprintf("fa%%/n%d-%s", n, m.name))
				b.ReportMetric(det*100, fmt.Sprintf("det%%/n%d-%s", n, m.name))
			}
		}
	}
}

package perfreport_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/perfreport"
	"github.com/vllm-cibench/cibench/runtype"
)

// t0 是测试使用的固定时钟起点。
var t0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

// lat 构造一个只关心 P99 的时延摘要（其余分位按比例填充）。
func lat(p99 time.Duration) loadgen.Latency {
	return loadgen.Latency{Count: 16, P50: p99 / 2, P75: p99 * 6 / 10, P90: p99 * 8 / 10, P95: p99 * 9 / 10, P99: p99, Min: p99 / 4, Max: p99 * 11 / 10, Avg: p99 / 2}
}

// perfRows 构造一个场景的 PR 档压测行：TTFT/E2E 随并发与长度增长，
// slow 为时延倍数（用于模拟回归）。
func perfRows(slow float64, rounds int) []loadgen.Summary {
	var out []loadgen.Summary
	for _, in := range []int{128, 2048} {
		for _, outLen := range []int{128, 1024} {
			for _, c := range []int{1, 2, 4} {
				for r := 1; r <= rounds; r++ {
					ttft := time.Duration(float64(20*time.Millisecond+time.Duration(in)*10*time.Microsecond+time.Duration(c)*2*time.Millisecond) * slow)
					e2e := ttft + time.Duration(float64(time.Duration(outLen)*time.Millisecond)*slow)
					qps := float64(c) / e2e.Seconds()
					out = append(out, loadgen.Summary{
						ExecutionTime: t0, InputLength: in, OutputLength: outLen, Concurrency: c, Round: r,
						Provider: "emulator", Backend: "openai-chat", ControlMethod: "climb", ConcurrencyBackend: "threading-pool", DatasetType: "random",
						NumPrompts: c * 16, Succeeded: c * 16, TotalTime: time.Duration(float64(c*16) / qps * float64(time.Second)),
						QPS: qps, OutputTokenThroughput: qps * float64(outLen), TotalTokenThroughput: qps * float64(in+outLen),
						TTFT: lat(ttft), E2E: lat(e2e), TPOT: lat(time.Millisecond), Goodput: -1, ClientLag: lat(400 * time.Microsecond),
					})
				}
			}
		}
	}
	return out
}

// renderers 返回本包测试用的渲染器：只有性能阶段（report 不需要认识别的阶段）。
func renderers() []report.Renderer { return []report.Renderer{perfreport.Renderer()} }

// newRun 是带性能渲染器的 report.NewRun。
func newRun(root string, rt runtype.Type, id report.RunID, now time.Time, opts ...report.Option) (*report.Run, error) {
	return report.NewRun(root, rt, id, now, append(opts, report.WithRenderers(renderers()...))...)
}

// gateInputs 用性能渲染器生成门禁输入；分节读不出来时让测试失败。
func gateInputs(t *testing.T, res report.Result) []gate.Scenario {
	t.Helper()
	in, err := res.GateInputs(renderers()...)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// stageScenario 是测试用的场景视图：report.Scenario 加上性能分节解码出的 Go 值。
type stageScenario struct {
	report.Scenario
	Perf        []loadgen.Summary
	PerfSamples []perfreport.Samples
	Timeline    []loadgen.Timeline
	Capacity    []loadgen.SweepResult
}

// view 解码场景中的性能分节；读不出来时让测试失败。
func view(t *testing.T, sc report.Scenario) stageScenario {
	t.Helper()
	v := stageScenario{Scenario: sc}
	var errs [4]error
	v.Perf, errs[0] = perfreport.Rows(sc)
	v.PerfSamples, errs[1] = perfreport.SamplesOf(sc)
	v.Timeline, errs[2] = perfreport.Timeline(sc)
	v.Capacity, errs[3] = perfreport.Capacity(sc)
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatal(err)
	}
	return v
}

// simRun 是一次模拟的压测运行：一个组合的逐请求 TTFT 样本（秒），由对数正态分布抽取——
// 时延的右偏长尾正是 P99 在小样本下抖动的原因。shift 是乘性的真实变化（1.2 即 +20%）。
func simRun(rng *rand.Rand, n int, shift float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = 0.2 * math.Exp(0.35*rng.NormFloat64()) * shift
	}
	return xs
}

// q7 是第 7 型分位数（与门禁的自助法一致），用来从样本构造汇总行的分位。
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
func simScenario(t *testing.T, ttft []float64) report.Scenario {
	t.Helper()
	l := loadgen.Latency{Count: int64(len(ttft)), P50: q7(ttft, 0.5), P75: q7(ttft, 0.75), P90: q7(ttft, 0.9), P95: q7(ttft, 0.95), P99: q7(ttft, 0.99)}
	row := loadgen.Summary{InputLength: 128, OutputLength: 128, Concurrency: 4, Round: 1, Backend: "openai-chat", ControlMethod: "normal",
		TTFT: l, E2E: l, QPS: 10, Succeeded: len(ttft), NumPrompts: len(ttft)}
	us := make([]int64, len(ttft))
	for i, v := range ttft {
		us[i] = int64(math.Round(v * 1e6))
	}
	sc := report.Scenario{Name: "s"}
	err := perfreport.Set(&sc, []loadgen.Summary{row}, []perfreport.Samples{{Backend: "openai-chat", ControlMethod: "normal",
		InputLength: 128, OutputLength: 128, Concurrency: 4, Seen: int64(len(ttft)), TTFTMicros: us, E2EMicros: us}})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

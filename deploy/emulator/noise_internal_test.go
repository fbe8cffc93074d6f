package emulator

import (
	"math"
	"sort"
	"testing"
	"time"
)

// TestSampledLatencyIsLogNormal 检验 TTFTSigma 与 ITLSigma 的抽样本身（issue 38）：以前的测试量的是
// 客户端看到的墙钟 TTFT，在繁忙的机器上（负载约 10）σ=0 也测出 P90/P50 = 3.42——量到的是调度器，
// 不是模拟器。这里检查模拟器选择的时延：中位数是注入值，P90/P50 ≈ exp(1.2816σ)，σ=0 时每个请求
// 恰好是注入值；抽样由 Seed 决定，可复现。与机器忙不忙无关。
func TestSampledLatencyIsLogNormal(t *testing.T) {
	sample := func(cfg Config, n int) (ttft, itl []float64) {
		srv, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := srv.Config()
		for range n {
			run := &emuRun{cfg: &c}
			srv.sampleLatency(run)
			ttft = append(ttft, run.ttft.Seconds())
			itl = append(itl, run.itl.Seconds())
		}
		return ttft, itl
	}
	quant := func(xs []float64, q float64) float64 {
		s := append([]float64(nil), xs...)
		sort.Float64s(s)
		return s[int(q*float64(len(s)-1))]
	}
	cfg := Config{TTFT: 40 * time.Millisecond, ITL: time.Millisecond, TTFTSigma: 0.35, ITLSigma: 0.2, Seed: 7}
	ttft, itl := sample(cfg, 4000)
	if p50 := quant(ttft, 0.5); math.Abs(p50/0.040-1) > 0.05 {
		t.Errorf("sigma 0.35: median TTFT %.2f ms, want 40 ± 5%%", p50*1000)
	}
	for _, c := range []struct {
		name  string
		xs    []float64
		sigma float64
	}{{"ttft", ttft, 0.35}, {"itl", itl, 0.2}} {
		r, want := quant(c.xs, 0.9)/quant(c.xs, 0.5), math.Exp(1.2816*c.sigma)
		if math.Abs(r/want-1) > 0.06 {
			t.Errorf("%s sigma %.2f: P90/P50 = %.3f, want %.3f ± 6%%", c.name, c.sigma, r, want)
		}
	}
	again, _ := sample(cfg, 4000)
	for i := range ttft {
		if ttft[i] != again[i] {
			t.Fatalf("sample %d differs between two servers with the same seed: %v vs %v", i, ttft[i], again[i])
		}
	}
	flat, flatITL := sample(Config{TTFT: 40 * time.Millisecond, ITL: time.Millisecond, Seed: 7}, 100)
	for i := range flat {
		if flat[i] != 0.040 || flatITL[i] != 0.001 {
			t.Fatalf("sigma 0: sample %d is %v / %v, want exactly 40 ms / 1 ms", i, flat[i], flatITL[i])
		}
	}
}

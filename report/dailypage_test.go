package report_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/internal/pagecheck"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/perfreport"
)

// dailyResult 构造一次每日档大小的运行（需求的每日档：4 输入 × 3 输出 × 5 并发 = 60 个组合，
// 每个组合 400 个逐请求样本）与它所比较的上一次每日运行；slowC16 倍数让并发 16 的组合变慢
// （1.3 即慢 30%），门禁因此有红有绿。
func dailyResult(t *testing.T, slowC16 float64) report.Result {
	t.Helper()
	build := func(id report.RunID, slow16 float64, seed uint64) report.Result {
		rng := rand.New(rand.NewPCG(seed, 1))
		var rows []loadgen.Summary
		var samples []perfreport.Samples
		for _, in := range []int{128, 512, 2048, 4096} {
			for _, out := range []int{128, 1024, 4096} {
				for _, c := range []int{1, 2, 4, 8, 16} {
					slow := 1.0
					if c == 16 {
						slow = slow16
					}
					s := perfreport.Samples{InputLength: in, OutputLength: out, Concurrency: c, Backend: "openai-chat", Seen: 400}
					for range 400 {
						ttft := (20_000 + float64(in)*8 + float64(c)*1500) * slow * (0.9 + 0.2*rng.Float64())
						s.TTFTMicros = append(s.TTFTMicros, int64(ttft))
						s.E2EMicros = append(s.E2EMicros, int64(ttft+float64(out)*20*slow*(0.95+0.1*rng.Float64())))
						s.GapMicros = append(s.GapMicros, int64(1e6/float64(c)*(0.5+rng.Float64())))
					}
					samples = append(samples, s)
					q := func(xs []int64, p float64) time.Duration {
						return time.Duration(gate.Quantile(micros(xs), p) * float64(time.Microsecond))
					}
					l := func(xs []int64) loadgen.Latency {
						return loadgen.Latency{Count: 400, P50: q(xs, 0.5), P75: q(xs, 0.75), P90: q(xs, 0.9), P95: q(xs, 0.95), P99: q(xs, 0.99),
							Min: q(xs, 0), Max: q(xs, 1), Avg: q(xs, 0.5)}
					}
					e2e := l(s.E2EMicros)
					qps := float64(c) / e2e.Avg.Seconds()
					rows = append(rows, loadgen.Summary{ExecutionTime: t0, InputLength: in, OutputLength: out, Concurrency: c, Round: 1, Epochs: 1,
						Provider: "emulator", Backend: "openai-chat", ControlMethod: "climb", DatasetType: "random",
						NumPrompts: 400, Succeeded: 400, QPS: qps, OutputTokenThroughput: qps * float64(out),
						TTFT: l(s.TTFTMicros), E2E: e2e, TPOT: lat(20 * time.Millisecond), TPOTSec: lat(20 * time.Millisecond), Goodput: -1,
						ClientLag: lat(300 * time.Microsecond)})
				}
			}
		}
		return report.Result{RunType: "daily", RunID: string(id), Complete: true,
			Scenarios: []report.Scenario{scenarioOf(t, stageScenario{Scenario: report.Scenario{Name: "emulator", Model: "m", Hardware: "emulator (CPU)"}, Perf: rows, PerfSamples: samples})}}
	}
	base := build("daily-1", 1, 1)
	cur := build("daily-2", slowC16, 2)
	gates, err := gate.Evaluate(context.Background(), gateInputs(t, cur), gate.Thresholds{}, gate.FromRun(gateRun(t, base)))
	if err != nil {
		t.Fatal(err)
	}
	cur.Gates = gates
	return cur
}

// micros 把微秒样本转成秒。
func micros(xs []int64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x) / 1e6
	}
	return out
}

// TestDailyPageInChromium 在 Chromium 里打开每日档大小（60 个组合、每个 400 个样本、并发 16 慢 30%）
// 的报告，做与红色 PR 页相同的检查：结论在先、没有重复的文字块、没有落在区间外的数、每张图的基线
// 可分辨，且每张比较图都画了基线。
func TestDailyPageInChromium(t *testing.T) {
	bin := chromiumPath(t)
	res := dailyResult(t, 1.3)
	var buf bytes.Buffer
	if err := report.WriteHTML(&buf, res, renderers()...); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := pagecheck.Probe(context.Background(), bin, file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.FirstText, "FAIL") || !strings.Contains(p.Text[:min(400, len(p.Text))], "gates failed — emulator in") {
		t.Errorf("first text %q", p.FirstText)
	}
	if d := p.Duplicates(40); len(d) > 0 {
		t.Errorf("text blocks shown more than once:\n  %s", strings.Join(d, "\n  "))
	}
	if c := p.Contradictions(); len(c) > 0 {
		t.Errorf("numbers outside their interval:\n  %s", strings.Join(c, "\n  "))
	}
	if u := p.Undistinguished(); len(u) > 0 {
		t.Errorf("solid baselines: %s", strings.Join(u, "; "))
	}
	// 按输出长度分的 3 组曲线图（每组 4 张）加 60 个组合各两张分布图：每张都画了基线。
	if len(p.Charts) != 3*4+60*2 {
		t.Errorf("%d charts, want %d", len(p.Charts), 3*4+60*2)
	}
	for _, c := range p.Charts {
		if c.Baseline == 0 {
			t.Errorf("chart %q draws no baseline", c.Title)
		}
	}
}

// BenchmarkDailyPage 量出每日档大小（60 个组合）的报告渲染时间与页面大小（report.WriteHTML）。
func BenchmarkDailyPage(b *testing.B) {
	res := dailyResult(&testing.T{}, 1.3)
	var size int
	for b.Loop() {
		var buf bytes.Buffer
		if err := report.WriteHTML(&buf, res, renderers()...); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size)/1e6, "MB/page")
}

// BenchmarkDailyPageChromium 量出同一页在无头 Chromium 里从导航开始到可读（解析、脚本、布局完成，
// 探针运行）的毫秒数。目标是 1 秒以内（issue 37 "Done when"）。
func BenchmarkDailyPageChromium(b *testing.B) {
	bin, err := pagecheck.Lookup()
	if err != nil {
		b.Skip(err)
	}
	res := dailyResult(&testing.T{}, 1.3)
	var buf bytes.Buffer
	if err := report.WriteHTML(&buf, res, renderers()...); err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(b.TempDir(), "report.html")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	var total float64
	n := 0
	for b.Loop() {
		p, err := pagecheck.Probe(context.Background(), bin, file)
		if err != nil {
			b.Fatal(err)
		}
		total += p.Elapsed
		n++
	}
	b.ReportMetric(total/float64(n), "ms-readable")
}

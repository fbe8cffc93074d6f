package perfreport_test

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/runtype"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/perfreport"
)

// TestSampleCollector 检查采样器：只收成功、非预热的请求；相邻完成间隔之和等于首末完成的
// 跨度（QPS 的自助法因此与 完成数/跨度 一致）；蓄水池把样本数限制在上限内；它只接 OnRecord。
func TestSampleCollector(t *testing.T) {
	c := perfreport.NewSampleCollector("openai-chat", "normal", 50)
	if o := c.Observer(); o.OnRecord == nil || o.OnGroupStart != nil || o.OnGroupEnd != nil || o.OnTimeline != nil || o.OnProgress != nil || o.OnSweepEnd != nil {
		t.Fatalf("observer hooks %+v, want OnRecord only", o)
	}
	t0 := time.Unix(1000, 0)
	g := loadgen.Group{Index: 0, InputLength: 8, OutputLength: 4, Concurrency: 2, Round: 1}
	_ = c.WriteRecord(&loadgen.Record{Group: g, Warmup: true, OK: true, TTFT: time.Second, E2E: time.Second, Intended: t0})
	_ = c.WriteRecord(&loadgen.Record{Group: g, OK: false, ErrorClass: loadgen.ErrClassHTTP, Intended: t0})
	// 三个成功请求，完成于 t0+1s、t0+1.5s、t0+3s（记录顺序 1.5s 先到）。
	for _, r := range []struct{ at, e2e time.Duration }{{500 * time.Millisecond, time.Second}, {0, time.Second}, {time.Second, 2 * time.Second}} {
		_ = c.WriteRecord(&loadgen.Record{Group: g, OK: true, Intended: t0.Add(r.at), TTFT: 100 * time.Millisecond, E2E: r.e2e})
	}
	s := c.Samples()
	if len(s) != 1 || s[0].Seen != 3 || len(s[0].TTFTMicros) != 3 || s[0].TTFTMicros[0] != 100000 {
		t.Fatalf("samples %+v", s)
	}
	var sum int64
	for _, v := range s[0].GapMicros {
		sum += v
	}
	// 首个完成 1.5s（记录顺序）→ 1s 的记录不前进（间隔 0）→ 3s：间隔之和 1.5s = 3s − 1.5s。
	if len(s[0].GapMicros) != 2 || sum != 1_500_000 {
		t.Errorf("gaps %v (sum %d)", s[0].GapMicros, sum)
	}
	// 蓄水池：1000 个请求只保留 50 个，且都来自输入。
	c = perfreport.NewSampleCollector("openai-chat", "normal", 50)
	for i := range 1000 {
		_ = c.WriteRecord(&loadgen.Record{Group: g, OK: true, Intended: t0, TTFT: time.Duration(i+1) * time.Microsecond, E2E: time.Second})
	}
	s = c.Samples()
	if s[0].Seen != 1000 || len(s[0].TTFTMicros) != 50 || len(s[0].E2EMicros) != 50 || len(s[0].GapMicros) != 50 {
		t.Fatalf("reservoir: seen %d kept %d/%d/%d", s[0].Seen, len(s[0].TTFTMicros), len(s[0].E2EMicros), len(s[0].GapMicros))
	}
	late := 0
	for _, v := range s[0].TTFTMicros {
		if v < 1 || v > 1000 {
			t.Fatalf("reservoir value %d not from the input", v)
		}
		if v > 500 {
			late++
		}
	}
	if late < 10 || late > 40 {
		t.Errorf("reservoir kept %d of 50 from the second half: not a uniform sample", late)
	}
}

// TestSamplesArtifactsRoundTrip 检查样本写入 perf/samples.json（不进 summary.json），能被 Load
// 与 ArtifactBaselines 读回，从而 PR 运行的门禁对每日基线给出置信区间。
func TestSamplesArtifactsRoundTrip(t *testing.T) {
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	daily := view(t, simScenario(t, simRun(rng, 300, 1)))
	run, err := newRun(root, runtype.Daily, "d1", time.Unix(100, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := perfreport.RecordRows(run, "s", daily.Perf); err != nil {
		t.Fatal(err)
	}
	if err := perfreport.RecordSamples(run, "s", daily.PerfSamples); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Finish(context.Background(), nil, time.Unix(200, 0)); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "daily", "d1", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sum, []byte("ttft_us")) {
		t.Error("summary.json carries the per-request samples")
	}
	loaded, err := report.Load(os.DirFS(filepath.Join(root, "daily", "d1")))
	if err != nil {
		t.Fatal(err)
	}
	if got := view(t, loaded.Scenarios[0]).PerfSamples; len(got) != 1 || len(got[0].TTFTMicros) != 300 || got[0].TTFTMicros[7] != daily.PerfSamples[0].TTFTMicros[7] {
		t.Fatalf("loaded samples %d", len(got))
	}
	base, err := report.ArtifactBaselines(os.DirFS(root), renderers()...)
	if err != nil {
		t.Fatal(err)
	}
	pr := simScenario(t, simRun(rng, 300, 1.3))
	gates, err := gate.Evaluate(context.Background(), gateInputs(t, report.Result{Scenarios: []report.Scenario{pr}}), gate.Thresholds{Resamples: 200}, base)
	if err != nil {
		t.Fatal(err)
	}
	var ttft gate.Gate
	for _, g := range gates {
		if g.Metric == gate.MetricTTFTP99 {
			ttft = g
		}
	}
	if ttft.Interval == nil || ttft.BaselineRun != "d1" || ttft.Interval.LoPct <= 0 {
		t.Fatalf("gate against artifact baseline: %+v", ttft)
	}
	// JUnit 与 HTML 都写出区间与样本量。
	var j, h bytes.Buffer
	res := report.Result{RunType: "pr", RunID: "p1", Scenarios: []report.Scenario{pr}, Gates: gates}
	if err := report.WriteJUnit(&j, res, renderers()...); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteHTML(&h, res, renderers()...); err != nil {
		t.Fatal(err)
	}
	iv := ttft.Interval
	wantJ := "interval=[" + signed(iv.LoPct) + "%," + signed(iv.HiPct) + "%]@95% samples=300/300 mode=spec"
	if !strings.Contains(j.String(), wantJ) {
		t.Errorf("junit lacks %q:\n%s", wantJ, j.String())
	}
	wantH := "[" + signed(iv.LoPct) + "%, " + signed(iv.HiPct) + "%] @95%"
	if hs := html.UnescapeString(h.String()); !strings.Contains(hs, wantH) || !strings.Contains(hs, "300 / 300 (P99 needs 100)") {
		t.Errorf("html lacks the interval %q or the sample counts", wantH)
	}
}

// signed 按报告的 %+.1f 格式化。
func signed(v float64) string { return fmt.Sprintf("%+.1f", v) }

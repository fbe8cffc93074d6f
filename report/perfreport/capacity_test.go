package perfreport_test

import (
	"context"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/perfreport"
	"github.com/vllm-cibench/cibench/runtype"
)

// sweepFixture 是一次三级的扫描：15 与 18.75 请求/秒满足 SLO，22.5 不满足。
func sweepFixture() loadgen.SweepResult {
	step := func(rate, good float64, p99 time.Duration, pass bool) loadgen.SweepStep {
		return loadgen.SweepStep{OfferedRate: rate, Pass: pass, Attainment: good / rate, Summary: loadgen.Summary{NumPrompts: 20, QPS: rate * 0.9, Goodput: good,
			TTFT: loadgen.Latency{Count: 20, P99: p99 / 2}, E2E: loadgen.Latency{Count: 20, P99: p99}}}
	}
	return loadgen.SweepResult{InputLength: 16, OutputLength: 3, SLO: "e2e:240", Target: 0.9, MaxSustainableRate: 18.75, MaxGoodput: 16.3, KneeRate: 18.75,
		Stop: loadgen.SweepStopConverged, Elapsed: 8 * time.Second,
		Steps: []loadgen.SweepStep{step(15, 13.4, 220*time.Millisecond, true), step(22.5, 6.7, 335*time.Millisecond, false), step(18.75, 16.3, 226*time.Millisecond, true)}}
}

// TestRecordCapacity 检查容量结论写进 perf/capacity.json 与 summary.json、被 Load 读回，
// HTML 画出"时延 / goodput 对到达速率"的两张图（类别按速率升序）并列出最大可持续速率。
func TestRecordCapacity(t *testing.T) {
	root := t.TempDir()
	run, err := newRun(root, runtype.PR, "c1", time.Unix(100, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := perfreport.RecordCapacity(run, "emu", []loadgen.SweepResult{sweepFixture()}); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Finish(context.Background(), nil, time.Unix(200, 0)); err != nil {
		t.Fatal(err)
	}
	res, err := report.Load(os.DirFS(filepath.Join(root, "pr", "c1")))
	if err != nil {
		t.Fatal(err)
	}
	if c := view(t, res.Scenarios[0]).Capacity; len(c) != 1 || c[0].MaxSustainableRate != 18.75 || len(c[0].Steps) != 3 {
		t.Fatalf("loaded capacity %+v", c)
	}
	b, err := os.ReadFile(filepath.Join(root, "pr", "c1", "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	h := html.UnescapeString(string(b))
	for _, want := range []string{"Latency vs offered rate", "Goodput vs offered rate", "18.75 req/s", "e2e:240 (≥90%)", ">15<", ">18.75<", ">22.5<"} {
		if !strings.Contains(h, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Index(h, ">18.75<") > strings.Index(h, ">22.5<") {
		t.Error("offered rates are not in ascending order on the x axis")
	}
}

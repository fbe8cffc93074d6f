package report_test

import (
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

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/functionalreport"
	"github.com/vllm-cibench/cibench/report/perfreport"
)

// dailyRun 写出一次完成的每日运行，其 TTFT P99 为 ttft、QPS 为 qps。
func dailyRun(t *testing.T, root, id string, at time.Time, ttft time.Duration, qps float64) {
	t.Helper()
	run, err := newRun(root, runtype.Daily, report.RunID(id), at)
	if err != nil {
		t.Fatal(err)
	}
	row := loadgen.Summary{InputLength: 128, OutputLength: 64, Concurrency: 4, Round: 1, Backend: "openai-chat", ControlMethod: "normal",
		TTFT: loadgen.Latency{Count: 64, P99: ttft}, E2E: loadgen.Latency{Count: 64, P99: ttft + time.Second}, QPS: qps, Succeeded: 64}
	if err := perfreport.RecordRows(run, "emu", []loadgen.Summary{row}); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Finish(context.Background(), nil, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
}

// TestDailyTrendChangePoints 在合成的每日序列上检查变点检测：第 15 天起 TTFT P99 变慢 25%
// （噪声约 3%）的序列必须在第 15 天报出变点，前后均值正确；QPS 与 E2E 没有变化的序列不得报出
// 任何变点。变化只在含"今天"的历史上才检测得到时标为 new。
func TestDailyTrendChangePoints(t *testing.T) {
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(4, 4))
	start := time.Date(2025, 5, 1, 2, 0, 0, 0, time.UTC)
	const days, change = 20, 15
	noise := func() float64 { return 1 + 0.03*rng.NormFloat64() }
	var last report.Result
	for d := range days {
		ttft := 200.0
		if d >= change {
			ttft = 250
		}
		id := fmt.Sprintf("day%02d", d)
		dailyRun(t, root, id, start.Add(time.Duration(d)*24*time.Hour), time.Duration(ttft*noise()*float64(time.Millisecond)), 10*noise())
		if d == days-1 {
			var err error
			if last, err = report.Load(os.DirFS(filepath.Join(root, "daily", id))); err != nil {
				t.Fatal(err)
			}
		}
	}
	tr, err := report.DailyTrend(os.DirFS(root), last, gate.TrendOptions{Permutations: 199}, renderers()...)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Runs != days || tr.Series != 3 {
		t.Fatalf("runs %d series %d", tr.Runs, tr.Series)
	}
	if len(tr.ChangePoints) != 2 {
		t.Fatalf("change points %+v, want one in TTFT and one in E2E", tr.ChangePoints)
	}
	cp := tr.ChangePoints[1]
	if cp.Metric != gate.MetricTTFTP99 || cp.RunID != fmt.Sprintf("day%02d", change) || cp.PValue > 0.01 {
		t.Fatalf("change point %+v", cp)
	}
	if cp.Before < 0.19 || cp.Before > 0.21 || cp.After < 0.24 || cp.After > 0.26 || cp.DeltaPct < 20 || cp.DeltaPct > 30 {
		t.Errorf("before %.3f after %.3f delta %.1f%%", cp.Before, cp.After, cp.DeltaPct)
	}
	// 变化已持续 5 天：去掉今天也检测得到，所以不是"新"的。
	if cp.New {
		t.Errorf("a change already visible yesterday is marked new")
	}
	// 窗口只含变化后的 4 天（MinSegment 4）时，第 4 天是它第一次能被检测到的那天：new。
	tr, err = report.DailyTrend(os.DirFS(root), mustLoad(t, root, "day18"), gate.TrendOptions{Permutations: 499, Window: 16}, renderers()...)
	if err != nil {
		t.Fatal(err)
	}
	if n := tr.NewChangePoints(); len(n) != 2 || n[1].RunID != fmt.Sprintf("day%02d", change) || n[1].Metric != gate.MetricTTFTP99 {
		t.Errorf("new change points on day 18: %+v", n)
	}
	// 报告列出新变点。
	res := last
	res.Trend = tr
	var b strings.Builder
	if err := report.WriteHTML(&b, res, renderers()...); err != nil {
		t.Fatal(err)
	}
	if h := html.UnescapeString(b.String()); !strings.Contains(h, "Daily trend: 2 new change point(s)") || !strings.Contains(h, "emu/in128-out64-c4-openai-chat/ttft_p99_seconds") {
		t.Errorf("html lacks the trend section")
	}
}

// mustLoad 读回一次运行。
func mustLoad(t *testing.T, root, id string) report.Result {
	t.Helper()
	r, err := report.Load(os.DirFS(filepath.Join(root, "daily", id)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDailyTrendNoChange 检查平稳的序列（同分布噪声 5%）在 30 天窗口里不报任何变点。
func TestDailyTrendNoChange(t *testing.T) {
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(8, 8))
	start := time.Date(2025, 5, 1, 2, 0, 0, 0, time.UTC)
	for d := range 30 {
		n := 1 + 0.05*rng.NormFloat64()
		dailyRun(t, root, fmt.Sprintf("day%02d", d), start.Add(time.Duration(d)*24*time.Hour), time.Duration(200*n*float64(time.Millisecond)), 10*n)
	}
	tr, err := report.DailyTrend(os.DirFS(root), mustLoad(t, root, "day29"), gate.TrendOptions{Permutations: 199}, renderers()...)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Runs != 30 || len(tr.ChangePoints) != 0 {
		t.Errorf("stationary series: runs %d change points %+v", tr.Runs, tr.ChangePoints)
	}
	if _, err := report.DailyTrend(os.DirFS(root), report.Result{}, gate.TrendOptions{MinSegment: 1}, renderers()...); err == nil {
		t.Error("MinSegment 1 accepted")
	}
}

// TestDailyTrendCountsPassedAfterRetry：重试后才通过的功能用例是一项发现，每日趋势逐次列出
// 它们（运行、场景、计数、用例），干净通过的运行不列；HTML 的趋势节、JUnit 的 system-out
// 与用例表都写明 "after retry"。
func TestDailyTrendCountsPassedAfterRetry(t *testing.T) {
	root := t.TempDir()
	start := time.Date(2025, 5, 1, 2, 0, 0, 0, time.UTC)
	var last report.Result
	for d, retried := range []int{0, 2, 0} {
		id := fmt.Sprintf("day%02d", d)
		at := start.Add(time.Duration(d) * 24 * time.Hour)
		run, err := newRun(root, runtype.Daily, report.RunID(id), at)
		if err != nil {
			t.Fatal(err)
		}
		fr := functional.Report{Model: "m", Started: at, Results: []functional.Result{
			{CaseID: "chat_core/usage", Suite: "chat_core", Status: functional.StatusPass, Retried: retried, RetryReasons: []string{"POST /v1/chat/completions: HTTP 503", "POST /v1/chat/completions: HTTP 503"}[:retried]},
			{CaseID: "chat_core/ids_object", Suite: "chat_core", Status: functional.StatusPass}}}
		if err := functionalreport.Record(run, "emu", fr); err != nil {
			t.Fatal(err)
		}
		if _, err = run.Finish(context.Background(), nil, at.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		last = mustLoad(t, root, id)
	}
	tr, err := report.DailyTrend(os.DirFS(root), last, gate.TrendOptions{}, renderers()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Retried) != 1 || tr.Retried[0].RunID != "day01" || tr.Retried[0].Scenario != "emu" || tr.Retried[0].PassedAfterRetry != 1 ||
		len(tr.Retried[0].Cases) != 1 || tr.Retried[0].Cases[0] != "chat_core/usage" {
		t.Fatalf("retried %+v", tr.Retried)
	}
	flaky := mustLoad(t, root, "day01")
	flaky.Trend = tr
	var h, j strings.Builder
	if err := report.WriteHTML(&h, flaky, renderers()...); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJUnit(&j, flaky, renderers()...); err != nil {
		t.Fatal(err)
	}
	hs := html.UnescapeString(h.String())
	for _, want := range []string{"functional cases passed after retry", "pass (after retry)", "2 (1 after retry)",
		"passed after retry: 2 retried attempt(s): POST /v1/chat/completions: HTTP 503; POST /v1/chat/completions: HTTP 503"} {
		if !strings.Contains(hs, want) {
			t.Errorf("html lacks %q", want)
		}
	}
	if !strings.Contains(j.String(), "passed after retry: 2 retried attempt(s)") {
		t.Errorf("junit lacks the retry note:\n%s", j.String())
	}
}

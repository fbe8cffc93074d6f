package metrics_test

import (
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/metrics"
)

// TestTimelineFileNameAndRows 验证时间线文件与汇总文件同一命名规则、首行到来才创建、
// 每行的值（秒、整数、-1）与表头对齐。
func TestTimelineFileNameAndRows(t *testing.T) {
	files := memFiles{}
	ts := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
	sink, err := metrics.NewArtifactSink(metrics.ArtifactNames{Provider: "ascend/vllm", ControlMethod: "climb", Time: ts}, files.create)
	if err != nil {
		t.Fatal(err)
	}
	g := loadgen.Group{Concurrency: 8, InputLength: 128, OutputLength: 256, Round: 2}
	rows := []loadgen.Timeline{
		{Group: g, Time: time.Unix(1700000000, 250_000_000), Elapsed: 500 * time.Millisecond, Interval: 500 * time.Millisecond,
			TargetConcurrency: 4, InFlight: 3, Started: 7, Completed: 5, Failed: 1, OutputTokens: 1024, OutputTokenThroughput: 2048,
			TTFTP50: 12500 * time.Microsecond, TTFTP99: 40 * time.Millisecond, ITLP50: 2 * time.Millisecond, ITLP99: 9 * time.Millisecond,
			ServerRunning: 3, ServerWaiting: 0, ServerKVCacheUsage: 0.125, ServerPreemptions: 2},
		{Group: g, Time: time.Unix(1700000000, 400_000_000), Elapsed: 650 * time.Millisecond, Interval: 150 * time.Millisecond,
			TargetConcurrency: 4, TTFTP50: -1, TTFTP99: -1, ITLP50: -1, ITLP99: -1,
			ServerRunning: -1, ServerWaiting: -1, ServerKVCacheUsage: -1, ServerPreemptions: -1},
	}
	for _, r := range rows {
		if err := sink.WriteTimeline(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	name := "timeline_ascend-vllm_climb_threading-pool_20261122010203.csv"
	if got := sink.Files(); len(got) != 1 || got[0] != name {
		t.Fatalf("files %v, want [%s]", got, name)
	}
	recs, err := csv.NewReader(files[name]).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		metrics.TimelineColumns(),
		{"1700000000.250000", "128", "256", "8", "2", "0.500000", "0.500000", "4", "3", "7", "5", "1", "1024", "2048.0000",
			"0.012500", "0.040000", "0.002000", "0.009000", "3.0000", "0.0000", "0.1250", "2.0000"},
		{"1700000000.400000", "128", "256", "8", "2", "0.650000", "0.150000", "4", "0", "0", "0", "0", "0", "0.0000",
			"-1", "-1", "-1", "-1", "-1", "-1", "-1", "-1"},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d rows, want %d", len(recs), len(want))
	}
	for i := range want {
		if strings.Join(recs[i], ",") != strings.Join(want[i], ",") {
			t.Errorf("row %d:\n got %s\nwant %s", i, strings.Join(recs[i], ","), strings.Join(want[i], ","))
		}
	}
}

// TestTimelineWriterIOError 验证写失败带前缀地上报，而不是静默丢行。
func TestTimelineWriterIOError(t *testing.T) {
	w := metrics.NewTimelineWriter(&failWriter{})
	if err := w.WriteTimeline(loadgen.Timeline{}); err == nil || !strings.HasPrefix(err.Error(), "metrics: write timeline") {
		t.Fatalf("err = %v", err)
	}
}

package perfreport

import (
	"math"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
)

// TestWorkloadCells 验证压测表的真实负载列：服务端缓存按比例写百分数，-1 写 n/a，
// 多轮会话写各轮的 TTFT P50。
func TestWorkloadCells(t *testing.T) {
	if got := ratioOrNA(0.375, "%.1f%%", 100); got != "37.5%" {
		t.Fatalf("hit rate cell %q", got)
	}
	if got := ratioOrNA(-1, "%.0f", 1); got != "n/a" {
		t.Fatalf("unmeasured cell %q", got)
	}
	ts := []loadgen.TurnSummary{
		{Turn: 1, TTFT: loadgen.Latency{Count: 3, P50: 12300 * time.Microsecond}},
		{Turn: 2, TTFT: loadgen.Latency{}},
		{Turn: 3, TTFT: loadgen.Latency{Count: 3, P50: 8 * time.Millisecond}},
	}
	if got := turnsText(ts); got != "1: 12.3 ms, 3: 8.0 ms" {
		t.Fatalf("turns cell %q", got)
	}
}

// TestThinKeepsEnds 验证时间线抽稀：多于 n 行时等间隔抽到 n 行且保留首末行，不多于 n 行时原样返回。
func TestThinKeepsEnds(t *testing.T) {
	rows := make([]loadgen.Timeline, 1000)
	for i := range rows {
		rows[i].Elapsed = time.Duration(i) * time.Second
	}
	got := thin(rows, maxTimelinePoints)
	if len(got) != maxTimelinePoints || got[0].Elapsed != 0 || got[len(got)-1].Elapsed != 999*time.Second {
		t.Fatalf("thin: %d rows, first %v last %v", len(got), got[0].Elapsed, got[len(got)-1].Elapsed)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Elapsed <= got[i-1].Elapsed {
			t.Fatalf("row %d not increasing", i)
		}
	}
	if short := thin(rows[:5], maxTimelinePoints); len(short) != 5 {
		t.Fatalf("short series thinned to %d", len(short))
	}
	if rate(0) != "—" || rate(2.5) != "2.50 req/s" || !math.IsNaN(latOrNaN(loadgen.Latency{}, 1)) {
		t.Error("capacity cell formatting")
	}
}

// TestGrouped 检查千位分隔（issue 37 §7：大数没有分隔符）。
func TestGrouped(t *testing.T) {
	for v, want := range map[float64]string{0: "0.0", 999.94: "999.9", 1234.5: "1,234.5", 1234567.25: "1,234,567.2", -1000: "−1,000.0"} {
		if got := grouped(v); got != want {
			t.Errorf("grouped(%v) = %q, want %q", v, got, want)
		}
	}
}

package perfreport

import (
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
	if got := turnsText(ts); got != "1: 12.3ms, 3: 8.0ms" {
		t.Fatalf("turns cell %q", got)
	}
}

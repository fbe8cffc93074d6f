package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/loadgen"
)

// rowSink 收下 OnGroupEnd 的汇总行。
type rowSink struct{ rows []loadgen.Summary }

// EndGroup 保存汇总行。
func (s *rowSink) EndGroup(r loadgen.Summary) error { s.rows = append(s.rows, r); return nil }

// TestRunShardedPerf 以 3 片对模拟器跑一个四组的档位（两个并发档各两轮）：合并后的行数、
// 请求数、成功数与输出 token 数与档位一致，没有一组因开始时刻相差过大被拒绝（组间有屏障），
// 且每行都交给了汇总 CSV 的接收方。第一组的请求按 1.2 秒的首 token 延迟分得不均（分片 0 两个、
// 其余一个），没有屏障时第二组的开始相差约 1.2 秒，超过合并的默认界 1 秒。
func TestRunShardedPerf(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", TTFT: 1200 * time.Millisecond})
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: ep.BaseURLs, Model: "m"}, Provider: "emu"}
	prof := loadgen.Profile{Concurrency: []int{3, 6}, InputLength: []int{16}, OutputLength: []int{2}, NumRequests: []int{4, 6}, Epochs: 2}
	sink := &rowSink{}
	rows, err := runShardedPerf(context.Background(), tgt, prof, 3, &loadgen.Observer{OnGroupEnd: sink.EndGroup})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || len(sink.rows) != 4 {
		t.Fatalf("rows %d, sink %d", len(rows), len(sink.rows))
	}
	for i, want := range []struct{ n, c, round int }{{4, 3, 1}, {4, 3, 2}, {6, 6, 1}, {6, 6, 2}} {
		r := rows[i]
		if r.NumPrompts != want.n || r.Succeeded != want.n || r.CompletionTokens.Avg != 2 || r.Incomplete || r.Concurrency != want.c || r.Round != want.round {
			t.Errorf("group %d: %+v", i, r)
		}
	}
}

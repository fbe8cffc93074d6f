package driver

import (
	"context"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/loadgen"
)

// rowSink 收下 EndGroup 的汇总行。
type rowSink struct{ rows []loadgen.Summary }

// BeginGroup 不做事。
func (s *rowSink) BeginGroup(loadgen.Group) error { return nil }

// EndGroup 保存汇总行。
func (s *rowSink) EndGroup(r loadgen.Summary) error { s.rows = append(s.rows, r); return nil }

// TestRunShardedPerf 以 3 片对模拟器跑一个两组的档位：合并后的行数、请求数、成功数与
// 输出 token 数与档位一致，且每行都交给了汇总 CSV 的接收方。
func TestRunShardedPerf(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", TTFT: time.Millisecond})
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: ep.BaseURLs, Model: "m"}, Provider: "emu"}
	prof := loadgen.Profile{Concurrency: []int{3, 6}, InputLength: []int{16}, OutputLength: []int{8}, NumRequests: []int{10, 20}}
	sink := &rowSink{}
	rows, err := runShardedPerf(context.Background(), tgt, prof, 3, sink)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || len(sink.rows) != 2 {
		t.Fatalf("rows %d, sink %d", len(rows), len(sink.rows))
	}
	for i, want := range []int{10, 20} {
		r := rows[i]
		if r.NumPrompts != want || r.Succeeded != want || r.CompletionTokens.Avg != 8 || r.Incomplete || r.Concurrency != prof.Concurrency[i] {
			t.Errorf("group %d: %+v", i, r)
		}
	}
}

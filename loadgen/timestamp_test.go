package loadgen_test

import (
	"context"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/loadgen"
)

// TestKernelTimestampsAndClientLag 检查 Run 自建的连接用内核接收时间戳计时：Linux 上
// 每个成功请求都有 ClientLag（≥0），汇总里有同样多的样本；TTFT 不小于注入值，
// chunk 时刻单调不减且不晚于 E2E。自带 Target.HTTPClient 时拿不到时间戳，ClientLag 为 -1、
// 汇总样本数为 0，其余测量照常；timestamps: read 也一样。
func TestKernelTimestampsAndClientLag(t *testing.T) {
	const ttft = 20 * time.Millisecond
	_, tgt := startEmulator(t, emulator.Config{Model: "m", TTFT: ttft, ITL: 2 * time.Millisecond})
	p := loadgen.Profile{Concurrency: []int{2}, InputLength: []int{16}, OutputLength: []int{8}, NumRequests: []int{10}}
	for _, mode := range []string{"kernel", "own client", string(loadgen.TimestampsRead)} {
		tg, pp := tgt, p
		own := mode != "kernel"
		switch mode {
		case "own client":
			tg.HTTPClient = &http.Client{}
		case string(loadgen.TimestampsRead):
			pp.Timestamps = loadgen.TimestampsRead
		}
		sink := &collect{}
		sums, err := loadgen.Run(context.Background(), tg, pp, sink.observer())
		if err != nil {
			t.Fatal(err)
		}
		stamped := runtime.GOOS == "linux" && !own
		for _, r := range sink.recs {
			if !r.OK || r.TTFT < ttft || r.TTFT > r.E2E {
				t.Fatalf("own=%v record %+v", own, r)
			}
			for i := 1; i < len(r.ChunkTimes); i++ {
				if r.ChunkTimes[i] < r.ChunkTimes[i-1] || r.ChunkTimes[i] > r.E2E {
					t.Fatalf("own=%v chunk times not ordered: %v (E2E %v)", own, r.ChunkTimes, r.E2E)
				}
			}
			if stamped != (r.ClientLag >= 0) {
				t.Fatalf("own=%v: ClientLag %v, kernel timestamps expected %v", own, r.ClientLag, stamped)
			}
			if r.ClientLag > r.E2E {
				t.Fatalf("own=%v: ClientLag %v > E2E %v", own, r.ClientLag, r.E2E)
			}
		}
		want := int64(0)
		if stamped {
			want = 10
		}
		if got := sums[0].ClientLag.Count; got != want {
			t.Fatalf("own=%v: summary ClientLag samples %d, want %d", own, got, want)
		}
	}
}

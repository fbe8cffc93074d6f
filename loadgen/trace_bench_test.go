package loadgen_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/dataset"
)

// BenchmarkTraceDispatchLag 回放一个 500 req/s、每个请求 64 token 输入 / 2 token 输出的 Mooncake
// 轨迹（每 2ms 一个到达，5 秒 2500 个请求，相邻请求共享前两块）到进程内模拟器，报告发出滞后
// （实际发出 − 时刻表）的 p50 / p90 / p99 与最大值（微秒）。完成条件要求 p50 ≤ 1ms：
//
//	go test ./loadgen -run '^$' -bench TraceDispatchLag -benchtime 1x
//
// 这是测量而不是断言：忙机器上的数字写进报告与 docs/loadgen.md，不做定时单测。
func BenchmarkTraceDispatchLag(b *testing.B) {
	_, tgt := startEmulator(b, emulator.Config{Model: "m", CoalesceZeroLatency: true})
	const n, gapMS = 2500, 2
	var sb strings.Builder
	for i := range n {
		fmt.Fprintf(&sb, `{"timestamp": %d, "input_length": 64, "output_length": 2, "hash_ids": [1, 2, 3, %d]}`+"\n", i*gapMS, 10+i)
	}
	trace, err := dataset.ReadMooncakeTrace(strings.NewReader(sb.String()), "bench.jsonl", 16)
	if err != nil {
		b.Fatal(err)
	}
	p := loadgen.Profile{DatasetType: loadgen.DatasetMooncakeTrace, TraceRequests: trace, Backend: loadgen.BackendCompletion,
		Trace: dataset.TraceConfig{BlockSize: 16}}
	for b.Loop() {
		sums, err := loadgen.Run(context.Background(), tgt, p, nil)
		if err != nil {
			b.Fatal(err)
		}
		lag := sums[0].Workload.DispatchLag
		if sums[0].Succeeded != n {
			b.Fatalf("%d of %d succeeded", sums[0].Succeeded, n)
		}
		b.ReportMetric(float64(lag.P50.Microseconds()), "p50-lag-µs")
		b.ReportMetric(float64(lag.P90.Microseconds()), "p90-lag-µs")
		b.ReportMetric(float64(lag.P99.Microseconds()), "p99-lag-µs")
		b.ReportMetric(float64(lag.Max.Microseconds()), "max-lag-µs")
		b.ReportMetric(sums[0].QPS, "req/s")
	}
}

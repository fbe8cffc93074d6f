package loadgen_test

import (
	"context"
	"testing"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/loadgen"
)

// BenchmarkRunZeroLatency 测量零时延模拟器下的端到端吞吐（请求/秒与 chunk/秒）。
func BenchmarkRunZeroLatency(b *testing.B) {
	_, tgt := startEmulator(b, deploy.EmulatorConfig{Model: "m"})
	p := loadgen.Profile{Concurrency: []int{64}, InputLength: []int{32}, OutputLength: []int{40}, NumRequests: []int{b.N}}
	b.ResetTimer()
	sums, err := loadgen.Run(context.Background(), tgt, p, nil)
	if err != nil {
		b.Fatal(err)
	}
	s := sums[0]
	b.ReportMetric(s.QPS, "req/s")
	b.ReportMetric(s.OutputTokenThroughput, "chunks/s")
	b.ReportMetric(s.FailRate, "failrate")
}

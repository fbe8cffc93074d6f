package metrics_test

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/metrics"
)

// ExampleSummaryWriter 单独使用 acs-bench 汇总 CSV 写入器（不需要跑 loadgen）。
func ExampleSummaryWriter() {
	var buf bytes.Buffer
	w := metrics.NewSummaryWriter(&buf)
	_ = w.Write(loadgen.Summary{
		ExecutionTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), InputLength: 128, OutputLength: 128, Concurrency: 4,
		TTFT:             loadgen.Latency{Count: 1, P75: 50 * time.Millisecond},
		CompletionTokens: loadgen.Unmeasured(), SpecAcceptRate: loadgen.Unmeasured(),
	})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	fmt.Println(strings.Join(strings.Split(lines[0], ",")[:7], ","))
	fmt.Println(strings.Join(strings.Split(lines[1], ",")[:7], ","))
	fmt.Println(strings.HasSuffix(lines[1], ",-1,-1,-1,-1,-1,-1"))
	// Output:
	// Execution_Time,Input_Length,Output_Length,Concurrency,Total_Token_Throughput(tokens/s),Output_Token_Throughput(tokens/s),TP75_TTFT(s)
	// 2026-01-02 03:04:05,128,128,4,0.0000,0.0000,0.050000
	// true
}

package loadgen_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/loadgen"
)

// BenchmarkRunZeroLatency 测量零时延模拟器下的端到端吞吐（请求/秒与 chunk/秒）。
// 模拟器用 CoalesceZeroLatency 合并写出 chunk（文档中的纯吞吐模式），否则模拟器逐 chunk
// 的 write 系统调用占一半以上 CPU，测到的是模拟器而不是客户端；客户端仍逐事件解析。
func BenchmarkRunZeroLatency(b *testing.B) {
	_, tgt := startEmulator(b, deploy.EmulatorConfig{Model: "m", CoalesceZeroLatency: true})
	p := loadgen.Profile{Concurrency: []int{64}, InputLength: []int{32}, OutputLength: []int{40}, NumRequests: []int{b.N}}
	b.ResetTimer()
	cpu0 := cpuTime()
	sums, err := loadgen.Run(context.Background(), tgt, p, nil)
	cpu := cpuTime() - cpu0
	if err != nil {
		b.Fatal(err)
	}
	s := sums[0]
	b.ReportMetric(s.QPS, "req/s")
	b.ReportMetric(s.OutputTokenThroughput, "chunks/s")
	b.ReportMetric(s.FailRate, "failrate")
	b.ReportMetric(cpu.Seconds()*1e6/float64(b.N), "cpu-us/op")
}

// cpuTime 返回本进程累计的用户态 + 内核态 CPU 时间（客户端与同进程模拟器之和）。
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package loadgen_test

import (
	"context"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/internal/procstat"
	"github.com/vllm-cibench/cibench/loadgen"
)

// BenchmarkRunZeroLatency 测量零时延模拟器下的端到端吞吐（请求/秒与 chunk/秒）。
// 模拟器用 CoalesceZeroLatency 合并写出 chunk（文档中的纯吞吐模式），否则模拟器逐 chunk
// 的 write 系统调用占一半以上 CPU，测到的是模拟器而不是客户端；客户端仍逐事件解析。
func BenchmarkRunZeroLatency(b *testing.B) {
	_, tgt := startEmulator(b, emulator.Config{Model: "m", CoalesceZeroLatency: true})
	p := loadgen.Profile{Concurrency: []int{64}, InputLength: []int{32}, OutputLength: []int{40}, NumRequests: []int{b.N}}
	b.ResetTimer()
	cpu0 := procstat.CPUTime()
	sums, err := loadgen.Run(context.Background(), tgt, p, nil)
	cpu := procstat.CPUTime() - cpu0
	if err != nil {
		b.Fatal(err)
	}
	s := sums[0]
	b.ReportMetric(s.QPS, "req/s")
	b.ReportMetric(s.OutputTokenThroughput, "chunks/s")
	b.ReportMetric(s.FailRate, "failrate")
	b.ReportMetric(cpu.Seconds()*1e6/float64(b.N), "cpu-us/op")
}

// benchFidelity 在模拟器注入 TTFT 50ms、ITL 10ms 时以并发 conc 跑 b.N 个请求（至少 4 轮），
// 报告中位 TTFT / TPOT 相对注入值的偏差，以及客户端自身的读取滞后（不计入 TTFT）。
// 这是报告数字的基准，不是断言：共享机器繁忙时偏差会变大。
func benchFidelity(b *testing.B, conc int) {
	const ttft, itl = 50 * time.Millisecond, 10 * time.Millisecond
	_, tgt := startEmulator(b, emulator.Config{Model: "m", TTFT: ttft, ITL: itl})
	n := max(b.N, 4*conc)
	p := loadgen.Profile{Concurrency: []int{conc}, InputLength: []int{32}, OutputLength: []int{64}, NumRequests: []int{n}}
	b.ResetTimer()
	sums, err := loadgen.Run(context.Background(), tgt, p, nil)
	if err != nil {
		b.Fatal(err)
	}
	s := sums[0]
	if s.Failed > 0 {
		b.Fatalf("%d of %d requests failed", s.Failed, s.NumPrompts)
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(s.TTFT.P50-ttft), "ttft-p50-err-ms")
	b.ReportMetric(ms(s.TPOT.P50-itl), "tpot-p50-err-ms")
	if s.ClientLag.Valid() {
		b.ReportMetric(ms(s.ClientLag.P50), "client-lag-p50-ms")
	}
}

// BenchmarkFidelityC1 并发 1 时的时延保真度。
func BenchmarkFidelityC1(b *testing.B) { benchFidelity(b, 1) }

// BenchmarkFidelityC64 并发 64 时的时延保真度。
func BenchmarkFidelityC64(b *testing.B) { benchFidelity(b, 64) }

// BenchmarkFidelityC256 并发 256 时的时延保真度。
func BenchmarkFidelityC256(b *testing.B) { benchFidelity(b, 256) }

// firstSent 记下全部记录中最早的实际发送时刻（Run 串行调用，无需加锁）。
type firstSent struct{ t time.Time }

// observer 返回只带 OnRecord 的钩子。
func (f *firstSent) observer() *loadgen.Observer { return &loadgen.Observer{OnRecord: f.WriteRecord} }

// WriteRecord 更新最早发送时刻。
func (f *firstSent) WriteRecord(r *loadgen.Record) error {
	if f.t.IsZero() || r.Sent.Before(f.t) {
		f.t = r.Sent
	}
	return nil
}

// BenchmarkStartup 测量 issue 13 的启动时间：并发 256、1024 个请求（prompt 池因此是
// 1024 条，每条经模拟器的 POST /tokenize 校准长度），从调用 Run 到第一个请求发出的时长，
// 以 startup-ms 报告（目标 < 300ms）。
func BenchmarkStartup(b *testing.B) {
	_, tgt := startEmulator(b, emulator.Config{Model: "m", CoalesceZeroLatency: true})
	p := loadgen.Profile{Concurrency: []int{256}, InputLength: []int{64}, OutputLength: []int{32}, NumRequests: []int{1024}}
	var total time.Duration
	for b.Loop() {
		f := &firstSent{}
		start := time.Now()
		if _, err := loadgen.Run(context.Background(), tgt, p, f.observer()); err != nil {
			b.Fatal(err)
		}
		total += f.t.Sub(start)
	}
	b.ReportMetric(float64(total)/float64(b.N)/1e6, "startup-ms")
}

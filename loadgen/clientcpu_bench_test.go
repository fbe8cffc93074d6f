package loadgen_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/internal/procstat"
	"github.com/vllm-cibench/cibench/loadgen"
)

// emuChildEnv 让测试二进制在子进程里只运行模拟器（见 TestEmulatorChildProcess）。
const emuChildEnv = "CIBENCH_BENCH_EMULATOR_CHILD"

// TestEmulatorChildProcess 不是测试：BenchmarkClientCPU 以 emuChildEnv 重新执行测试二进制时，
// 它在子进程里启动零时延模拟器（逐 chunk 刷新，和 vLLM 一样），把地址写到 stdout，
// 直到 stdin 关闭。平时直接跳过。
func TestEmulatorChildProcess(t *testing.T) {
	if os.Getenv(emuChildEnv) == "" {
		t.Skip("helper process for BenchmarkClientCPU")
	}
	_, ep := emulator.Start(t, emulator.Config{Model: "m"})
	fmt.Println("URL", ep.BaseURLs[0])
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // 父进程关闭 stdin 时返回；随后 Start 登记的清理关闭模拟器
}

// startChildEmulator 在子进程中启动模拟器，返回它的 base URL；测试结束时关闭它。
// 设置了 CIBENCH_BENCH_URL 时直接用那个地址（例如在 strace 下只跟踪压测进程）。
func startChildEmulator(b *testing.B) string {
	if u := os.Getenv("CIBENCH_BENCH_URL"); u != "" {
		return u
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEmulatorChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), emuChildEnv+"=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = in.Close(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "URL "); ok {
			go func() { // 继续读走子进程输出，避免它写满管道后阻塞
				for sc.Scan() {
				}
			}()
			return u
		}
	}
	b.Fatalf("emulator child exited without an address: %v", sc.Err())
	return ""
}

// clientRun 跑一组并返回本进程（只有压测客户端）的 CPU 时间、堆分配次数与启动时长
// （调用 Run → 第一个请求发出）。
func clientRun(b *testing.B, tgt loadgen.Target, n int) (cpu time.Duration, mallocs uint64, startup time.Duration) {
	p := loadgen.Profile{Concurrency: []int{256}, InputLength: []int{64}, OutputLength: []int{32}, NumRequests: []int{n}}
	f := &firstSent{}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0, t0 := procstat.CPUTime(), time.Now()
	sums, err := loadgen.Run(context.Background(), tgt, p, f.observer())
	cpu = procstat.CPUTime() - c0
	runtime.ReadMemStats(&m1)
	if err != nil {
		b.Fatal(err)
	}
	if s := sums[0]; s.Failed > 0 || s.NumPrompts != n {
		b.Fatalf("%d of %d requests failed", s.Failed, s.NumPrompts)
	}
	return cpu, m1.Mallocs - m0.Mallocs, f.t.Sub(t0)
}

// BenchmarkClientCPU 是 issue 13 的性能目标：零时延模拟器（独立子进程，逐 chunk 刷新）、
// 并发 256、输入 64、输出 32 个 token（32 个内容 chunk）。模拟器不在本进程，所以 CPU 时间只属于
// 压测客户端。每次迭代跑 1,000 与 5,000 个请求两组：
//
//	client-cpu-ms/req     5,000 个请求的全部 CPU / 5,000（含启动、/tokenize 建池、/metrics 抓取）
//	marginal-cpu-ms/req   (CPU(5000) − CPU(1000)) / 4000：每多一个请求的 CPU（目标 ≤ 0.10ms）
//	startup-ms            调用 Run → 第一个请求发出（目标 < 300ms）
//	allocs/req            每个请求的堆分配次数（边际）
func BenchmarkClientCPU(b *testing.B) {
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{startChildEmulator(b)}, Model: "m"}, Provider: "emu"}
	const n1, n2 = 1000, 5000
	var all, marg, start time.Duration
	var allocs float64
	for b.Loop() {
		c1, m1, _ := clientRun(b, tgt, n1)
		c2, m2, s2 := clientRun(b, tgt, n2)
		all += c2 / n2
		marg += (c2 - c1) / (n2 - n1)
		start += s2
		allocs += (float64(m2) - float64(m1)) / (n2 - n1)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / 1e6 }
	b.ReportMetric(ms(all), "client-cpu-ms/req")
	b.ReportMetric(ms(marg), "marginal-cpu-ms/req")
	b.ReportMetric(ms(start), "startup-ms")
	b.ReportMetric(allocs/float64(b.N), "allocs/req")
}

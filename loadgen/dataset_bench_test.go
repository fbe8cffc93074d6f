package loadgen

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/internal/procstat"
)

// BenchmarkBuildPoolTokenize 测量启动阶段的主要开销：用模拟器的 POST /tokenize 校准
// 1024 条 64-token prompt。报告每次建池的墙钟时间（pool-ms）与本进程（客户端加进程内
// 模拟器）的 CPU 时间（pool-cpu-ms）：共享机器繁忙时墙钟时间波动大，CPU 时间更稳定。
func BenchmarkBuildPoolTokenize(b *testing.B) {
	_, ep := emulator.Start(b, emulator.Config{Model: "m"})
	base := strings.TrimSuffix(ep.BaseURLs[0], "/v1")
	c := &serverCounter{client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}, url: base + "/tokenize", model: "m", maxBody: 1 << 20}
	p := Profile{InputLength: []int{64}}.WithDefaults()
	var wall, cpu time.Duration
	for b.Loop() {
		t0, c0 := time.Now(), procstat.CPUTime()
		pool, err := buildPool(context.Background(), &p, 64, 1024, c)
		wall += time.Since(t0)
		cpu += procstat.CPUTime() - c0
		if err != nil || len(pool.Quoted) != 1024 {
			b.Fatalf("pool: %v", err)
		}
	}
	b.ReportMetric(float64(wall)/float64(b.N)/1e6, "pool-ms")
	b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "pool-cpu-ms")
}

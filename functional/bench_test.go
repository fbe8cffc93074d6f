package functional_test

import (
	"context"
	"testing"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/internal/procstat"
)

// BenchmarkCatalog 测量整个默认目录（全部能力开启）对模拟器跑一遍的耗时；
// 目标是 < 10 s/op（DESIGN.md 的性能目标）。
func BenchmarkCatalog(b *testing.B) {
	_, target := startEmulator(b, fullEmulator())
	r, err := functional.NewRunner(target, functional.Options{})
	if err != nil {
		b.Fatal(err)
	}
	cases := functional.DefaultCatalog().Cases()
	b.ReportMetric(float64(len(cases)), "cases/op")
	cpu0 := procstat.CPUTime()
	for b.Loop() {
		rep, err := r.Run(context.Background(), cases)
		if err != nil {
			b.Fatal(err)
		}
		if f := rep.Failed(); len(f) > 0 {
			b.Fatalf("failures: %v", f)
		}
	}
	// 机器被其他进程占满时墙钟时间会膨胀；进程 CPU 时间（客户端 + 进程内模拟器）
	// 是不受负载影响的成本指标。
	b.ReportMetric(float64((procstat.CPUTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
}

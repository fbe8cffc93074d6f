package functional_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/functional"
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
	cpu0 := cpuTime()
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
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// cpuTime 返回本进程累计的用户态 + 内核态 CPU 时间。
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

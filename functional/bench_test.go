package functional_test

import (
	"context"
	"testing"

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
	for b.Loop() {
		rep, err := r.Run(context.Background(), cases)
		if err != nil {
			b.Fatal(err)
		}
		if f := rep.Failed(); len(f) > 0 {
			b.Fatalf("failures: %v", f)
		}
	}
}

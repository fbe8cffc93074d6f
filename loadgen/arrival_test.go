package loadgen

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGammaMeanAndVariance 用均值与方差检验 gamma 抽样（决定开环到达间隔）。
func TestGammaMeanAndVariance(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, shape := range []float64{0.5, 1, 4} {
		const n, scale = 200000, 0.01
		sum, sq := 0.0, 0.0
		for range n {
			v := gammaSample(r, shape, scale)
			if v < 0 {
				t.Fatal("negative gap")
			}
			sum += v
			sq += v * v
		}
		mean := sum / n
		variance := sq/n - mean*mean
		if math.Abs(mean-shape*scale)/(shape*scale) > 0.02 {
			t.Errorf("shape %v: mean %v, want %v", shape, mean, shape*scale)
		}
		if want := shape * scale * scale; math.Abs(variance-want)/want > 0.05 {
			t.Errorf("shape %v: variance %v, want %v", shape, variance, want)
		}
	}
}

// TestStartOffsetClimb 验证 static / linear 爬坡中每个 worker 的启动时刻。
func TestStartOffsetClimb(t *testing.T) {
	r := &runner{p: Profile{ControlMethod: ControlClimb, GrowthRate: 2, GrowthInterval: 1000, ClimbMode: ClimbStatic}}
	got := []int64{}
	for i := range 7 {
		got = append(got, int64(r.startOffset(i, 1)))
	}
	if want := []int64{0, 1000, 1000, 2000, 2000, 3000, 3000}; !equalInts(got, want) {
		t.Fatalf("static offsets %v, want %v", got, want)
	}
	r.p.ClimbMode = ClimbLinear
	got = got[:0]
	for i := range 5 {
		got = append(got, int64(r.startOffset(i, 1)))
	}
	if want := []int64{0, 500, 1000, 1500, 2000}; !equalInts(got, want) {
		t.Fatalf("linear offsets %v, want %v", got, want)
	}
	r.p.GrowthRate = 0
	if r.startOffset(3, 2) != -1 || r.startOffset(1, 2) != 0 {
		t.Fatal("growth 0 must keep init concurrency")
	}
	r.p.ControlMethod = ControlNormal
	if r.startOffset(5, 1) != 0 {
		t.Fatal("normal mode must start all workers at once")
	}
}

// equalInts 比较两个整数切片。
func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

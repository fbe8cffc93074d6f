package loadgen_test

import (
	"context"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/loadgen"
)

// TestEstimateSpecProfilesAtRealisticSpeed 用需求自己的档位与 issue 29 的速度（TTFT 200 ms，
// 30 ms/token）重现问题里的数字：PR 档约 56 分钟、每日档约 84 小时；每日档加了预算后时长
// 落在预算附近，且不会低于"每组每个 worker 一个请求"的下限。
func TestEstimateSpecProfilesAtRealisticSpeed(t *testing.T) {
	speed := loadgen.Speed{TTFT: 200 * time.Millisecond, ITL: 30 * time.Millisecond}
	pr := loadgen.Profile{Concurrency: []int{1, 2, 4}, InputLength: []int{128, 2048}, OutputLength: []int{128, 1024},
		RequestsPerConcurrency: 16, Warmup: 1, Epochs: 1, ControlMethod: loadgen.ControlClimb, InitConcurrency: []int{1}, GrowthRate: 2, GrowthInterval: time.Second}
	e, err := loadgen.EstimateProfile(pr, speed)
	if err != nil {
		t.Fatal(err)
	}
	if m := e.Unbudgeted.Minutes(); m < 50 || m > 62 {
		t.Errorf("PR profile at 30 ms/token: %.1f min, issue measured about 56", m)
	}
	daily := pr
	daily.Concurrency, daily.InputLength, daily.OutputLength = []int{1, 2, 4, 8, 16}, []int{128, 512, 2048, 4096}, []int{128, 1024, 4096}
	daily.RequestsPerConcurrency, daily.Warmup, daily.Epochs, daily.GrowthInterval = 32, 2, 3, 5*time.Second
	e, err = loadgen.EstimateProfile(daily, speed)
	if err != nil {
		t.Fatal(err)
	}
	if h := e.Unbudgeted.Hours(); h < 80 || h > 90 {
		t.Errorf("daily profile at 30 ms/token: %.1f h, issue measured about 84", h)
	}
	// 需求的每日档（3 轮）即使加了 3 小时预算也放不下：每组每个 worker 至少一个请求，
	// 180 组里 60 组输出 4096（每个 123 s），下限就超过 4 小时。
	daily.MaxDuration = 3 * time.Hour
	e, err = loadgen.EstimateProfile(daily, speed)
	if err != nil {
		t.Fatal(err)
	}
	if e.Floor < 4*time.Hour || e.Duration < e.Floor {
		t.Errorf("spec daily with a 3h budget: %v, floor %v; want a floor above 4h", e.Duration, e.Floor)
	}
	// 出厂的每日档（configs/tests/perf/profiles/daily.yaml：1 轮、预算 2h20m）放得进放宽后的
	// 性能阶段超时 3h30m（configs/matrix.yaml），出厂的 PR 档（预算 35m）放得进 60 分钟的作业。
	daily.Epochs, daily.MaxDuration = 1, 2*time.Hour+20*time.Minute
	e, err = loadgen.EstimateProfile(daily, speed)
	if err != nil {
		t.Fatal(err)
	}
	if e.Floor > daily.MaxDuration || e.Duration > 3*time.Hour+30*time.Minute {
		t.Errorf("shipped daily: %v (floor %v) for a %v budget, perf timeout 3h30m", e.Duration, e.Floor, daily.MaxDuration)
	}
	pr.MaxDuration = 35 * time.Minute
	if e, _ := loadgen.EstimateProfile(pr, speed); e.Duration > 40*time.Minute {
		t.Errorf("shipped PR: %v for a 35m budget", e.Duration)
	} else {
		t.Logf("shipped PR with a 35m budget: %v", e.Duration.Round(time.Second))
	}
	limited := 0
	for _, g := range e.Groups {
		if g.BudgetLimited {
			limited++
		}
		if g.Requests < g.Concurrency {
			t.Errorf("group %+v: %d requests, fewer than its %d workers", g.Group, g.Requests, g.Concurrency)
		}
	}
	t.Logf("shipped daily with a 2h20m budget: %v (floor %v), %d of %d groups budget-limited", e.Duration.Round(time.Minute), e.Floor.Round(time.Minute), limited, len(e.Groups))
	if _, err := loadgen.EstimateProfile(loadgen.Profile{Concurrency: []int{1}, InputLength: []int{8}, OutputLength: []int{8}, RequestRate: 5}, speed); err == nil {
		t.Error("open-loop profile estimated")
	}
}

// TestEstimateMatchesARun 检验估算与真实运行的时长一致（模拟器的速度已知）。
//
// 下界（不少于估算的八成）负载破坏不了：机器再忙也不会更快。上界用本次运行实际达到的速度：忙的机器上
// 每个请求都更慢，按模拟器配置的速度估算的时长就会偏短，所以再按各组实测的平均 E2E 估算一次，真实时长
// 不超过两者中较大的一个的 1.5 倍加 300 ms——检验的是估算的结构（分组、爬坡、worker 取请求），不是机器的快慢。
func TestEstimateMatchesARun(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m", TTFT: 20 * time.Millisecond, ITL: 2 * time.Millisecond})
	p := loadgen.Profile{Concurrency: []int{1, 3}, InputLength: []int{16}, OutputLength: []int{10, 40}, RequestsPerConcurrency: 6,
		ControlMethod: loadgen.ControlClimb, InitConcurrency: []int{1}, GrowthRate: 1, GrowthInterval: 50 * time.Millisecond}
	e, err := loadgen.EstimateProfile(p, loadgen.Speed{TTFT: 20 * time.Millisecond, ITL: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rows, err := loadgen.Run(context.Background(), tgt, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	type combo struct{ in, out, c int }
	measured := map[combo]time.Duration{}
	for _, r := range rows {
		measured[combo{r.InputLength, r.OutputLength, r.Concurrency}] = r.E2E.Avg
	}
	delivered, err := loadgen.EstimateProfile(p, loadgen.Speed{E2E: func(in, out, c int) time.Duration { return measured[combo{in, out, c}] }})
	if err != nil {
		t.Fatal(err)
	}
	upper := max(e.Duration, delivered.Duration)*3/2 + 300*time.Millisecond
	if took < e.Duration*8/10 || took > upper {
		t.Errorf("run took %v, estimate %v (%v at the speed this run delivered), want within [%v, %v]", took, e.Duration, delivered.Duration, e.Duration*8/10, upper)
	}
	t.Logf("run %v, estimate %v, at the delivered speed %v", took, e.Duration, delivered.Duration)
}

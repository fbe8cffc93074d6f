package loadgen_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/loadgen"
)

// TestMaxDurationBudget 检验 Profile.MaxDuration：每组分到剩余预算的一份，到点后不再发出新请求
// （每个 worker 至少一个，组合的并发不变），汇总行标明计划数与是否被截短；能在自己那份预算内做完的组
// 不受影响；整个档位的时长不超过预算加一个请求的时间（加上组间的 /metrics 抓取）。
//
// 时间上的断言都用本次运行实际量到的时刻，负载改变不了它们的真假：以前断言"短组（10 × 9 ms）一定装得进
// 200 ms"，冷启动的测试运行里这 10 个请求用了 200 ms 以上、被如实截短（19/20），测试因此失败。现在由观察器
// 记下每组的开始与结束：被截短的组从开始到结束一定用满了它那份预算的下界 (起跑时刻 + 预算 − 组开始) / 剩余组数
// （Run 在起跑之后才定截止时刻，真实的份额只会更大）；在这个下界以内结束的组一定没被截短。
func TestMaxDurationBudget(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m", TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	p := loadgen.Profile{
		Concurrency:            []int{1, 2},
		InputLength:            []int{16},
		OutputLength:           []int{4, 60}, // E2E ≈ 8 ms 与 ≈ 65 ms
		RequestsPerConcurrency: 10,
		Epochs:                 2,
		MaxDuration:            1600 * time.Millisecond,
	}
	var mu sync.Mutex
	starts := map[int]time.Time{} // 组序号 → 开始时刻
	ends := map[int]time.Time{}   // 组序号 → OnGroupEnd 的时刻（晚于组内最后一次预算检查）
	current := -1
	obs := &loadgen.Observer{
		OnGroupStart: func(g loadgen.Group) error {
			mu.Lock()
			defer mu.Unlock()
			starts[g.Index], current = g.Start, g.Index
			return nil
		},
		OnGroupEnd: func(loadgen.Summary) error {
			mu.Lock()
			defer mu.Unlock()
			ends[current] = time.Now()
			return nil
		},
	}
	start := time.Now()
	rows, err := loadgen.Run(context.Background(), tgt, p, obs)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 || len(starts) != 8 || len(ends) != 8 {
		t.Fatalf("%d rows, %d group starts, %d group ends, want 8", len(rows), len(starts), len(ends))
	}
	limited, shortFit := 0, 0
	var longest time.Duration // 最慢的一个请求（档位时长的上界里"一个请求的时间"）
	for i, r := range rows {
		longest = max(longest, r.E2E.Max)
		// 本组那份预算的下界与本组实际用的时间。
		floor := start.Add(p.MaxDuration).Sub(starts[i]) / time.Duration(len(rows)-i)
		used := ends[i].Sub(starts[i])
		if r.BudgetLimited && used < floor {
			t.Errorf("group %d (out %d c %d): budget-limited after %v, before its share of the budget (at least %v) ran out", i, r.OutputLength, r.Concurrency, used, floor)
		}
		if r.OutputLength == 4 && !r.BudgetLimited {
			shortFit++
		}
		if r.Planned != r.Concurrency*10 || r.Epochs != 2 {
			t.Errorf("row %+v: Planned %d Epochs %d", r.OutputLength, r.Planned, r.Epochs)
		}
		if r.NumPrompts < r.Concurrency {
			t.Errorf("out %d c %d: %d requests, want at least one per worker", r.OutputLength, r.Concurrency, r.NumPrompts)
		}
		if r.BudgetLimited {
			limited++
			if r.NumPrompts >= r.Planned {
				t.Errorf("out %d c %d: budget-limited with all %d requests", r.OutputLength, r.Concurrency, r.NumPrompts)
			}
		} else if r.NumPrompts != r.Planned {
			t.Errorf("out %d c %d: %d of %d requests without BudgetLimited", r.OutputLength, r.Concurrency, r.NumPrompts, r.Planned)
		}
	}
	if limited == 0 {
		t.Error("no group was limited: 10 requests of 65 ms cannot fit a 200 ms slice")
	}
	// 一个请求的时间取本次量到的最慢请求；组间开销（/metrics 抓取、起停 worker）给 1 s。
	if bound := p.MaxDuration + longest + time.Second; took > bound {
		t.Errorf("profile took %v with a %v budget, over the bound %v (budget + slowest request %v + 1s)", took, p.MaxDuration, bound, longest)
	}
	t.Logf("took %v; %d of %d groups budget-limited; %d of 4 short groups fit their share", took, limited, len(rows), shortFit)

	// 不设预算时行为不变。
	p.MaxDuration = 0
	p.OutputLength = []int{4}
	rows, err = loadgen.Run(context.Background(), tgt, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.BudgetLimited || r.NumPrompts != r.Planned {
			t.Errorf("without a budget: %+v", r)
		}
	}
	// 校验。
	p.MaxDuration = -time.Second
	if err := p.Validate(); err == nil {
		t.Error("negative max_duration accepted")
	}
}

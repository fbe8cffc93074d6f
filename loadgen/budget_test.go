package loadgen_test

import (
	"context"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/loadgen"
)

// TestMaxDurationBudget 检验 Profile.MaxDuration：每组分到剩余预算的一份，到点后不再发出新请求
// （每个 worker 至少一个，组合的并发不变），汇总行标明计划数与是否被截短；能在预算内做完的组
// 不受影响；整个档位的时长不超过预算加一个请求的时间（加上组间的 /metrics 抓取）。
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
	start := time.Now()
	rows, err := loadgen.Run(context.Background(), tgt, p, nil)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 {
		t.Fatalf("%d rows, want 8", len(rows))
	}
	limited := 0
	for _, r := range rows {
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
		if r.OutputLength == 4 && r.BudgetLimited {
			t.Errorf("short group (10 × 9 ms fits its 200 ms slice) was limited: %d of %d", r.NumPrompts, r.Planned)
		}
	}
	if limited == 0 {
		t.Error("no group was limited: 10 requests of 65 ms cannot fit a 200 ms slice")
	}
	if took > p.MaxDuration+time.Second {
		t.Errorf("profile took %v with a %v budget", took, p.MaxDuration)
	}
	t.Logf("took %v; %d of %d groups budget-limited", took, limited, len(rows))

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

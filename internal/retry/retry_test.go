package retry

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

// TestCount 固定三处共用的 Retries 语义：0 取默认，负数不重试，正数原样。
func TestCount(t *testing.T) {
	for _, c := range []struct{ n, def, want int }{{0, 2, 2}, {0, 3, 3}, {-1, 2, 0}, {-7, 3, 0}, {1, 2, 1}, {5, 3, 5}, {0, -1, 0}} {
		if got := Count(c.n, c.def); got != c.want {
			t.Errorf("Count(%d, %d) = %d, want %d", c.n, c.def, got, c.want)
		}
	}
}

// TestDelay 检查线性与翻倍两种退避的序列，以及翻倍不会溢出成负数。
func TestDelay(t *testing.T) {
	lin := Policy{Backoff: 200 * time.Millisecond, Linear: true}
	exp := Policy{Backoff: time.Second}
	var gotLin, gotExp []time.Duration
	for k := 0; k <= 4; k++ {
		gotLin = append(gotLin, lin.Delay(k))
		gotExp = append(gotExp, exp.Delay(k))
	}
	if want := []time.Duration{0, 200 * time.Millisecond, 400 * time.Millisecond, 600 * time.Millisecond, 800 * time.Millisecond}; !slices.Equal(gotLin, want) {
		t.Errorf("linear = %v, want %v", gotLin, want)
	}
	if want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}; !slices.Equal(gotExp, want) {
		t.Errorf("exponential = %v, want %v", gotExp, want)
	}
	if d := exp.Delay(200); d <= 0 || d < math.MaxInt64/2 {
		t.Errorf("Delay(200) = %v, want a huge positive duration", d)
	}
	if d := (Policy{}).Delay(3); d != 0 {
		t.Errorf("zero backoff: %v", d)
	}
}

// TestDoCountsAndLast 检查次数上限、last 标志与 Stop 立即结束。
func TestDoCountsAndLast(t *testing.T) {
	var lasts []bool
	n, err := Do(context.Background(), Policy{Retries: 2}, func(attempt int, last bool) Verdict {
		lasts = append(lasts, last)
		return Again()
	})
	if n != 3 || err != nil || !slices.Equal(lasts, []bool{false, false, true}) {
		t.Errorf("always-again: n=%d err=%v lasts=%v", n, err, lasts)
	}
	n, err = Do(context.Background(), Policy{Retries: 5}, func(attempt int, last bool) Verdict {
		if attempt == 1 {
			return Stop
		}
		return Again()
	})
	if n != 2 || err != nil {
		t.Errorf("stop on second: n=%d err=%v", n, err)
	}
	n, _ = Do(context.Background(), Policy{Retries: -3}, func(int, bool) Verdict { return Again() })
	if n != 1 {
		t.Errorf("negative retries: n=%d, want 1", n)
	}
}

// TestDoAfterOverridesBackoff 检查 After 的等待代替策略的退避（After(0) 立即重试，
// 即使策略的退避长达一小时）。
func TestDoAfterOverridesBackoff(t *testing.T) {
	n, err := Do(context.Background(), Policy{Retries: 3, Backoff: time.Hour}, func(attempt int, last bool) Verdict {
		if attempt < 3 {
			return After(0)
		}
		return Stop
	})
	if n != 4 || err != nil {
		t.Errorf("n=%d err=%v", n, err)
	}
}

// TestDoCancelDuringWait 检查等待中 ctx 结束时立即返回 ctx.Err()，不再调用 op。
func TestDoCancelDuringWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n, err := Do(ctx, Policy{Retries: 3, Backoff: time.Hour}, func(int, bool) Verdict {
		cancel()
		return Again()
	})
	if n != 1 || !errors.Is(err, context.Canceled) {
		t.Errorf("n=%d err=%v", n, err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	n, err = Do(ctx, Policy{Retries: 3}, func(int, bool) Verdict {
		cancel()
		return Again()
	})
	if n != 1 || !errors.Is(err, context.Canceled) {
		t.Errorf("zero wait: n=%d err=%v", n, err)
	}
}

package loadgen

import (
	"testing"
	"time"
)

// TestTimelineTargetClimbSteps 验证时间线的目标并发与爬坡计划一致：初始 2、每 100ms 加 2、
// 上限 8，台阶落在间隔边界上；开环不限并发时为 -1。
func TestTimelineTargetClimbSteps(t *testing.T) {
	r := &runner{p: Profile{ControlMethod: ControlClimb, GrowthRate: 2, GrowthInterval: 100 * time.Millisecond, ClimbMode: ClimbStatic}}
	tl := &timeline{r: r, conc: 8, initC: 2}
	for _, c := range []struct {
		el   time.Duration
		want int
	}{{0, 2}, {99 * time.Millisecond, 2}, {100 * time.Millisecond, 4}, {250 * time.Millisecond, 6}, {300 * time.Millisecond, 8}, {time.Hour, 8}} {
		if got := tl.target(c.el); got != c.want {
			t.Errorf("target(%v) = %d, want %d", c.el, got, c.want)
		}
	}
	if got := (&timeline{r: r, conc: 0, rate: 5}).target(time.Second); got != -1 {
		t.Errorf("unlimited open loop target = %d, want -1", got)
	}
}

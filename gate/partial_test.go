package gate

import (
	"context"
	"testing"
	"time"
)

// TestSelectTakesCompleteCombosOfATimedOutDaily 检验 issue 29 第 4 部分：一次在时间内只做完部分
// 组合的每日运行（complete=false）仍为它做完的组合提供基线；做了一半的组合（缺一轮或有一轮被
// 截断）与没做的组合缺失（no_baseline），不会当作通过；旧数据（没有计划轮数）的未完成运行
// 仍然从不作为基线；已完成的运行里被截断的组合也不作为基线。
func TestSelectTakesCompleteCombosOfATimedOutDaily(t *testing.T) {
	row := func(c, round, epochs int, incomplete bool) PerfRow {
		l := Latency{Count: 40, P99: 100 * time.Millisecond}
		return PerfRow{InputLength: 128, OutputLength: 128, Concurrency: c, TTFT: l, E2E: l, QPS: 10, Succeeded: 40,
			Round: round, Epochs: epochs, Incomplete: incomplete}
	}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	timedOut := Run{RunID: "timed-out", Daily: true, Complete: false, Started: t0, Scenarios: []Scenario{{Name: "s", Perf: []PerfRow{
		row(1, 1, 2, false), row(1, 2, 2, false), // c=1：两轮都在
		row(2, 1, 2, false), row(2, 2, 2, true), // c=2：第二轮被截断
		row(4, 1, 2, false), // c=4：缺第二轮
	}}}}
	old := Run{RunID: "old-incomplete", Daily: true, Complete: false, Started: t0.Add(-24 * time.Hour), Scenarios: []Scenario{{Name: "s", Perf: []PerfRow{
		row(8, 1, 0, false)}}}}
	cut := Run{RunID: "complete-but-cut", Daily: true, Complete: true, Started: t0.Add(-48 * time.Hour), Scenarios: []Scenario{{Name: "s", Perf: []PerfRow{
		row(16, 1, 1, true)}}}}
	b := Select([]Run{timedOut, old, cut})
	look := func(c int) (Baseline, bool) {
		got, ok, _ := b.Lookup(context.Background(), Key{Scenario: "s", InputLength: 128, OutputLength: 128, Concurrency: c})
		return got, ok
	}
	if got, ok := look(1); !ok || got.RunID != "timed-out" {
		t.Errorf("c=1 complete in the timed-out daily: %v %+v", ok, got)
	}
	for _, c := range []int{2, 4, 8, 16} {
		if got, ok := look(c); ok {
			t.Errorf("c=%d should have no baseline, got %s", c, got.RunID)
		}
	}
	// PR 门禁：c=1 有基线被比较，c=2 为 no_baseline。
	gates, _ := Evaluate(context.Background(), []Scenario{{Name: "s", Perf: []PerfRow{row(1, 1, 1, false), row(2, 1, 1, false)}}}, DefaultThresholds(), b)
	verdicts := map[string]Verdict{}
	for _, g := range gates {
		if g.Metric == MetricTTFTP99 {
			verdicts[g.Key.String()] = g.Verdict
		}
	}
	if verdicts["in128-out128-c1"] != VerdictPass || verdicts["in128-out128-c2"] != VerdictNoBaseline {
		t.Errorf("verdicts %v", verdicts)
	}
}

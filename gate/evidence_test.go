package gate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/gate"
)

// TestEvidenceNeverContradictsItself 复现 issue 37 §3 的两处：99.8% 的区间被印成 "@100%"；P99 的变化
// 列旁边印的是几何均值位移的区间，于是点估计落在“自己的”区间外（c4：变化 −1.0%，区间 [−0.3%, +0.7%]）。
// 现在置信水平按实际精度印出，位移的区间写明它是哪个量、点估计是多少。
func TestEvidenceNeverContradictsItself(t *testing.T) {
	p99 := gate.Gate{Interval: &gate.Interval{LoPct: 12.3, HiPct: 40.1, Level: 0.998}, Statistic: "p99"}
	if iv, _ := p99.Evidence(); iv != "[+12.3%, +40.1%] @99.8%" {
		t.Errorf("p99 interval %q", iv)
	}
	delta := -1.0
	shift := gate.Gate{DeltaPct: &delta, Statistic: gate.StatisticShift,
		Interval: &gate.Interval{LoPct: -0.3, HiPct: 0.7, Level: 0.998},
		Shift:    &gate.Shift{ChangePct: 0.2, LoPct: -0.3, HiPct: 0.7, Level: 0.998}}
	iv, _ := shift.Evidence()
	if !strings.HasPrefix(iv, "geomean shift +0.2% [−0.3%, +0.7%] @99.8%") {
		t.Errorf("shift interval %q: must name its statistic and point estimate", iv)
	}
	if iv95, _ := (gate.Gate{Interval: &gate.Interval{LoPct: -2, HiPct: 3, Level: 0.95}}).Evidence(); iv95 != "[−2.0%, +3.0%] @95%" {
		t.Errorf("95%% interval %q", iv95)
	}
}

// TestNoNumberContradictsItsInterval 复现 issue 37 §3：门禁的变化是需求口径（各轮 P99 的中位数），
// 自助法区间却属于全部轮次合并样本的 P99。两者不一致时，表格里 "−1.0% | [+9.5%, +41.9%]" 这样的
// 一行让数字落在自己旁边的区间外。现在区间带上它自己的统计量与点估计，原因里的括注同样如此。
func TestNoNumberContradictsItsInterval(t *testing.T) {
	key := gate.Key{Scenario: "s", InputLength: 128, OutputLength: 128, Concurrency: 4}
	// 每轮汇总行的 P99 相同（变化 0%），而逐请求样本整体慢了 25%。
	row := gate.PerfRow{InputLength: 128, OutputLength: 128, Concurrency: 4, QPS: 10, Succeeded: 400,
		TTFT: gate.Latency{Count: 400, P50: 50 * time.Millisecond, P99: 100 * time.Millisecond, Avg: 55 * time.Millisecond},
		E2E:  gate.Latency{Count: 400, P50: 500 * time.Millisecond, P99: time.Second, Avg: 550 * time.Millisecond}}
	samples := func(scale float64) gate.Samples {
		s := gate.Samples{InputLength: 128, OutputLength: 128, Concurrency: 4, Seen: 400}
		for i := range 400 {
			v := int64(float64(50_000+i*125) * scale)
			s.TTFTMicros = append(s.TTFTMicros, v)
			s.E2EMicros = append(s.E2EMicros, v*10)
			s.GapMicros = append(s.GapMicros, 100_000)
		}
		return s
	}
	base := gate.Aggregate([]gate.PerfRow{row})
	bs := samples(1)
	base.Samples = &bs
	base.RunID = "daily-1"
	cur := gate.Scenario{Name: "s", Perf: []gate.PerfRow{row, row, row}, Samples: []gate.Samples{samples(1.25)}}
	gates, err := gate.Evaluate(context.Background(), []gate.Scenario{cur}, gate.Thresholds{}, gate.Static{key: base})
	if err != nil {
		t.Fatal(err)
	}
	var g gate.Gate
	for _, x := range gates {
		if x.Metric == gate.MetricTTFTP99 {
			g = x
		}
	}
	if g.Interval == nil || g.DeltaPct == nil {
		t.Fatalf("TTFT gate without interval or delta: %+v", g)
	}
	if *g.DeltaPct != 0 || g.Interval.LoPct < 10 {
		t.Fatalf("fixture: delta %.1f%%, interval [%.1f%%, %.1f%%]; want 0%% beside an interval well above it", *g.DeltaPct, g.Interval.LoPct, g.Interval.HiPct)
	}
	iv, _ := g.Evidence()
	if !strings.HasPrefix(iv, "P99 of pooled samples +25.0% [+") {
		t.Errorf("evidence %q: an interval that excludes the delta must carry its own statistic and point", iv)
	}
	if !strings.Contains(g.Reason, "interval of the P99 of pooled samples, +25.0%:") {
		t.Errorf("reason %q: the interval note must name its statistic and point", g.Reason)
	}
	// 点在区间里时照旧只写区间（不多一个数字）。
	in := 20.0
	plain := gate.Gate{DeltaPct: &in, Quantile: 0.99, Interval: &gate.Interval{LoPct: 10, HiPct: 30, Level: 0.95, PointPct: &in}}
	if iv, _ := plain.Evidence(); iv != "[+10.0%, +30.0%] @95%" {
		t.Errorf("evidence %q for a delta inside its interval", iv)
	}
}

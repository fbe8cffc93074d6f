package gate_test

import (
	"strings"
	"testing"

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

package explain

import (
	"strings"
	"testing"
)

// TestTextHasNoNegativeZero 复现 issue 37 §7："-0%" 与 "-0.0 ms" 出现在归因文字里（例如
// "client -0.1 ms (-0%)"、"frontend -0.0 ms (-0%)"）。四舍五入到 0 的数不带符号。
func TestTextHasNoNegativeZero(t *testing.T) {
	c := Change{Metric: MetricTTFT, Verdict: VerdictAttributed, Delta: 0.1112, Pct: 219.6, Lo: 0.109, Hi: 0.113, Level: 0.95,
		Components: []Component{{Phase: PhaseQueue, Delta: 0.1111, Share: 0.999}, {Phase: PhaseFrontend, Delta: -0.00001, Share: -0.0001}}}
	text := c.Text()
	for _, bad := range []string{"-0%", "-0.0 ms", "+0.0 ms"} {
		if strings.Contains(text, bad) {
			t.Errorf("text %q contains %q", text, bad)
		}
	}
	if !strings.Contains(text, "frontend 0.0 ms (0%)") || !strings.Contains(text, "(+220%, 95% interval") {
		t.Errorf("text %q", text)
	}
}

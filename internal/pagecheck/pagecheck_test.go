package pagecheck_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/internal/pagecheck"
)

// chromium 返回浏览器路径；CIBENCH_REQUIRE_INTEGRATION=1 时找不到就失败，否则跳过。
func chromium(t *testing.T) string {
	t.Helper()
	bin, err := pagecheck.Lookup()
	if errors.Is(err, pagecheck.ErrNoChromium) {
		if os.Getenv("CIBENCH_REQUIRE_INTEGRATION") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return bin
}

// badPage 把探针要找的每一种缺陷都放进一页：第一段文字不是结论、一段文字出现两次（一次在折叠里）、
// 一个数落在它后面的区间外、一张图的基线是实心的。
const badPage = `<!DOCTYPE html><html><head><style>.hid{display:none}</style></head><body>
<p class="hid">invisible text is not the first thing a person reads</p>
<h1>cibench report</h1>
<p>FAIL 1 of 2 gates failed — emu in128-out128-c4 TTFT P99 +204.0% (limit +10%)</p>
<p>The same caveat paragraph that appears twice on this page, word for word.</p>
<details><summary>details</summary><p>The same caveat paragraph that appears twice on this page, word for word.</p></details>
<table><tr><td>ttft</td><td>−1.0%</td><td>≤ +10%</td><td>[+9.5%, +41.9%] @95%</td><td>the same reason in one table column is data, not repetition</td></tr>
<tr><td>e2e</td><td>+20.0%</td><td>≤ +10%</td><td>[+9.5%, +41.9%] @95%</td><td>the same reason in one table column is data, not repetition</td></tr></table>
<p>mean TTFT +111.2 ms (+219%, 95% interval +109.1 ms…+113.3 ms)</p>
<p>mean E2E +150.0 ms (95% interval +109.1 ms…+113.3 ms)</p>
<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="200" height="100"><title>solid baseline</title>
<circle cx="10" cy="10" r="4" fill="#0072B2"><title>in128 baseline @ 4: 12</title></circle>
<circle cx="20" cy="10" r="4" fill="#fff" stroke="#0072B2"><title>in128 baseline @ 8: 13</title></circle></svg>
<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="200" height="100"><title>good chart</title>
<path d="M0 0 L10 10" stroke="#000" stroke-dasharray="5 4"/>
<line x1="0" y1="0" x2="5" y2="5" stroke="#000" stroke-dasharray="5 4"><title>in128 baseline @ 4: 12</title></line>
<text class="legend">daily baseline (dashed, hollow)</text></svg>
</body></html>`

// TestProbeFindsWhatAPersonWouldSee 证明探针的每条规则都会失败：在一页里放进每种缺陷，
// 逐条读回。
func TestProbeFindsWhatAPersonWouldSee(t *testing.T) {
	bin := chromium(t)
	file := filepath.Join(t.TempDir(), "bad.html")
	if err := os.WriteFile(file, []byte(badPage), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := pagecheck.Probe(context.Background(), bin, file)
	if err != nil {
		t.Fatal(err)
	}
	if p.FirstText != "cibench report" {
		t.Errorf("first visible text %q, want the heading (hidden text is not visible)", p.FirstText)
	}
	if d := p.Duplicates(40); len(d) != 1 || !strings.HasPrefix(d[0], "The same caveat paragraph") {
		t.Errorf("duplicates %q, want the caveat once (the copy in the collapsed <details> counts)", d)
	}
	c := p.Contradictions()
	sort.Strings(c)
	if len(c) != 2 || !strings.HasPrefix(c[0], "+150.0ms") || !strings.HasPrefix(c[1], "−1.0%") {
		t.Errorf("contradictions %q, want −1.0%% outside [+9.5%%, +41.9%%] and +150.0 ms outside its interval, and nothing else", c)
	}
	if len(p.Charts) != 2 {
		t.Fatalf("%d charts, want 2", len(p.Charts))
	}
	if u := p.Undistinguished(); len(u) != 1 || !strings.HasPrefix(u[0], "solid baseline (1 of 2") {
		t.Errorf("undistinguished %q, want the solid baseline point of the first chart only", u)
	}
	good := p.Charts[1]
	if good.Baseline != 2 || good.Undistinguished != 0 || !good.Legend {
		t.Errorf("good chart read as %+v", good)
	}
	if !strings.Contains(p.Text, "FAIL 1 of 2 gates failed") || p.Elapsed <= 0 {
		t.Errorf("text or elapsed not read: %q, %.1f ms", p.Text[:min(80, len(p.Text))], p.Elapsed)
	}
	if _, err := pagecheck.Probe(context.Background(), bin, filepath.Join(t.TempDir(), "missing.html")); err == nil {
		t.Error("a missing page must be an error")
	}
}

// TestContradictions 逐条检查区间规则（不需要浏览器）：限值、水平与份额不与区间比较，
// 印出来的精度之内不算矛盾。
func TestContradictions(t *testing.T) {
	for _, tc := range []struct {
		text string
		bad  int
	}{
		{"TTFT P99 +204.0% (limit +10%) interval [+180.0%, +230.0%] @99.8%", 0},
		{"−1.0% | ≤ +10% | [−0.3%, +0.7%] @95%", 1},
		{"P99 of pooled samples +25.3% [+9.5%, +41.9%] @95%", 0},
		{"regressed +30.0% vs baseline (limit +10%) (95% interval +9.5%…+41.9%)", 0},
		{"regressed +3.0% vs baseline (limit +10%) (95% interval +9.5%…+41.9%)", 1},
		{"0.0% | [−0.04%, +0.04%]", 0},
		{"+0.7% [−0.3%, +0.65%]", 0},
		{"no interval here: +12% and −4 ms", 0},
		{"qps −49.7% [−50.9%, +109.0%]", 0},
		{"mean +1,234.5 ms (95% interval +1,200.0 ms…+1,300.0 ms)", 0},
	} {
		if got := pagecheck.Contradictions(tc.text); len(got) != tc.bad {
			t.Errorf("%q: %d contradictions %q, want %d", tc.text, len(got), got, tc.bad)
		}
	}
}

// TestLookupHonoursEnv 检查 CIBENCH_CHROMIUM 优先。
func TestLookupHonoursEnv(t *testing.T) {
	t.Setenv("CIBENCH_CHROMIUM", "/opt/x/chromium")
	if p, err := pagecheck.Lookup(); err != nil || p != "/opt/x/chromium" {
		t.Fatalf("Lookup = %q, %v", p, err)
	}
	t.Setenv("CIBENCH_CHROMIUM", "")
	t.Setenv("PATH", t.TempDir())
	if _, err := pagecheck.Lookup(); !errors.Is(err, pagecheck.ErrNoChromium) {
		t.Fatalf("Lookup with an empty PATH: %v", err)
	}
}

package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/report"
)

// firstText 在真实的 Chromium 中打开结果 res 的报告，返回页面可见文本的开头（页面脚本写进
// body 的 data-first-text：document.body.innerText 的前 300 个字符）。
func firstText(t *testing.T, bin string, res report.Result) string {
	t.Helper()
	var buf bytes.Buffer
	if err := report.WriteHTML(&buf, res, renderers()...); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := dumpDOM(t, bin, file)
	m := regexp.MustCompile(`data-first-text="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("page did not record its first text:\n%s", firstLines(dom, 20))
	}
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#39;", "'").Replace(m[1])
}

// countFailed 数出结果里失败的门禁。
func countFailed(res report.Result) int {
	n := 0
	for _, g := range res.Gates {
		if g.Verdict == gate.VerdictFail {
			n++
		}
	}
	return n
}

// TestVerdictIsTheFirstText 是 issue 37 §1 的浏览器测试：一个人读到的第一段文字是结论与第一个失败
// 门禁的一行原因。以前只跑了部分阶段（-stages perf，文档里“一个真实的红色门禁”的做法）的运行即使有
// 三个红色门禁也显示琥珀色的 INCOMPLETE，“exit code 1”只在灰色小字里。现在：有门禁失败，页面就是
// FAIL（红色），不完整另起一句说明原因与下一步；没有失败时 INCOMPLETE 说明为什么不完整。
func TestVerdictIsTheFirstText(t *testing.T) {
	bin := chromiumPath(t)
	red := sampleResult(t)
	text := firstText(t, bin, red)
	var first gate.Gate
	for _, g := range red.Gates {
		if g.Verdict == gate.VerdictFail {
			first = g
			break
		}
	}
	if want := "FAIL " + strconv.Itoa(countFailed(red)) + " of " + strconv.Itoa(len(red.Gates)) + " gates failed — " + report.Headline(first); !strings.HasPrefix(text, want) {
		t.Errorf("red complete run: first text %q, want it to start with %q", text, want)
	}
	// 性能门禁的一行：指标、变化、限值，从左往右读；没有方法、区间与注意事项。
	for _, g := range red.Gates {
		if g.Verdict == gate.VerdictFail && g.Metric == gate.MetricTTFTP99 {
			h := report.Headline(g)
			if !regexp.MustCompile(`^emu-qwen in\d+-out\d+-c\d+ TTFT P99 \+\d+(\.\d)?% \(limit \+10%\)$`).MatchString(h) {
				t.Errorf("TTFT gate headline %q", h)
			}
			break
		}
	}

	// 只跑了 perf 的作业：红色门禁仍让页面变红；不完整的原因写在后面，不盖过结论。
	partial := red
	partial.Complete = false
	partial.Scenarios = append([]report.Scenario(nil), red.Scenarios...)
	partial.Scenarios[0].Stages = []report.StageResult{{Stage: report.StageDeploy, Status: report.StageOK}, {Stage: report.StageFunctional, Status: report.StageSkipped, Reason: "not selected (-stages)"},
		{Stage: report.StagePerf, Status: report.StageOK}, {Stage: report.StageAccuracy, Status: report.StageSkipped, Reason: "not selected (-stages)"}}
	text = firstText(t, bin, partial)
	if !strings.HasPrefix(text, "FAIL") || !strings.Contains(text, "Incomplete: only perf ran in this job") {
		t.Errorf("red partial run: first text %q", text)
	}

	// 没有失败的部分运行：INCOMPLETE，说明原因与下一步（汇总作业），不是一个没有原因的琥珀色标签。
	green := partial
	green.Gates = nil
	text = firstText(t, bin, green)
	if !strings.HasPrefix(text, "INCOMPLETE") || !strings.Contains(text, "only perf ran in this job") || !strings.Contains(text, "-summarize") {
		t.Errorf("green partial run: first text %q", text)
	}

	// 被中断的运行说明它不会成为基线。
	stopped := green
	stopped.Interrupted = true
	if text = firstText(t, bin, stopped); !strings.HasPrefix(text, "INTERRUPTED") || !strings.Contains(text, "never used as a baseline") {
		t.Errorf("interrupted run: first text %q", text)
	}

	// 完整且全部通过。
	pass := green
	pass.Complete, pass.Interrupted = true, false
	if text = firstText(t, bin, pass); !strings.HasPrefix(text, "PASS") {
		t.Errorf("green complete run: first text %q", text)
	}
}

// TestPageShowsWhatVLLMUsersExpect 检查 issue 37 §6：vLLM bench serve 打印的 TTFT、TPOT、ITL、E2E 的
// 均值、中位数与 P99 都在页面上，硬件标签也在（记录了却没显示）；数字与单位之间有空格。
func TestPageShowsWhatVLLMUsersExpect(t *testing.T) {
	res := sampleResult(t)
	res.Scenarios[0].Hardware = "8x Ascend 910B"
	var buf bytes.Buffer
	if err := report.WriteHTML(&buf, res, renderers()...); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`<th colspan="3">TTFT</th>`, `<th colspan="3">TPOT</th>`, `ITL</th>`, `<th colspan="3">E2E</th>`,
		"<th>mean</th><th>median</th><th>P99</th>", "hardware 8x Ascend 910B", "<td>8x Ascend 910B</td>", "<td>not recorded</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// 单元格里没有枚举值（issue 37 §7），“只看失败”也藏起图表（§4）。
	for _, bad := range []string{">no_baseline<", ">insufficient_samples<"} {
		if strings.Contains(page, bad) {
			t.Errorf("page shows the raw value %q", bad)
		}
	}
	if !strings.Contains(page, ".only-fail .charts") {
		t.Error("show-only-failures does not hide the charts")
	}
	if regexp.MustCompile(`>\d+(\.\d+)?ms<`).MatchString(page) {
		t.Errorf("a latency without a space before its unit: %s", regexp.MustCompile(`>\d+(\.\d+)?ms<`).FindString(page))
	}
}

// TestBaselineDistinguishableAtOneConcurrency 复现 issue 37 §4：只有一个并发时，基线与当前是两个同色的
// 点，图例却说基线是虚线。现在基线的点是空心的（图例也画出空心点），与当前的实心点一眼可分。
func TestBaselineDistinguishableAtOneConcurrency(t *testing.T) {
	c := report.Chart{Title: "TTFT P99", Categories: []string{"4"}, Series: []report.Series{
		{Name: "in128-out128", Values: []float64{0.05}}, {Name: "in128-out128 baseline", Values: []float64{0.04}, Dashed: true}}}
	svg := string(c.SVG())
	if strings.Count(svg, `class="point baseline"`) != 1 || strings.Count(svg, `class="point"`) != 1 {
		t.Fatalf("one current and one baseline point expected:\n%s", svg)
	}
	if !regexp.MustCompile(`class="point baseline"[^>]*fill="#fff"`).MatchString(svg) || !strings.Contains(svg, "(dashed, hollow)</tspan>") {
		t.Errorf("baseline point is not hollow or the legend does not say so:\n%s", svg)
	}
}

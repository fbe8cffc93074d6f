package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/vllm-cibench/cibench/gate"
)

// pageVerdict 是页面最上面给人读的结论：一个词（FAIL、INTERRUPTED、INCOMPLETE、PASS）、它的颜色、
// 第一个失败门禁的一行原因，以及运行不完整时为什么、下一步做什么。
//
// 规则：有门禁失败，页面就是 FAIL——不管运行是否完整、是否被中断（一个只跑了 perf 的作业里的红色门禁
// 就是红色的）；不完整与中断另起一句，不盖过结论。
type pageVerdict struct {
	Word, Class string
	// Headline 是 "N of M gates failed — 第一个失败门禁的一行原因"（没有失败时为空）。
	Headline string
	// Partial 说明运行为什么不完整、接下来做什么（完整时为空）。
	Partial string
}

// verdictOf 按上面的规则为结果 res 得出页面结论；failed 是失败门禁（按页面顺序），total 是门禁总数。
func verdictOf(res Result, failed []gate.Gate, total int) pageVerdict {
	var v pageVerdict
	switch {
	case len(failed) > 0:
		v.Word, v.Class = "FAIL", "b-fail"
		v.Headline = fmt.Sprintf("%d of %d gates failed — %s", len(failed), total, Headline(failed[0]))
	case res.Interrupted:
		v.Word, v.Class = "INTERRUPTED", "b-partial"
	case !res.Complete:
		v.Word, v.Class = "INCOMPLETE", "b-partial"
	default:
		v.Word, v.Class = "PASS", "b-pass"
		// 绿色的页面同样一句话说清：多少门禁、没有一个失败（与比较页的 "PASS 0 of N combinations failed" 同一写法）。
		v.Headline = fmt.Sprintf("0 of %d gates failed", total)
	}
	v.Partial = partialReason(res)
	return v
}

// partialReason 说明一个没有完成的运行缺了什么、接下来做什么；完整的运行返回空。
func partialReason(res Result) string {
	switch {
	case res.Interrupted:
		return "Interrupted: the run was stopped (signal or job timeout) before it finished; the results measured so far are kept, and an interrupted run is never used as a baseline."
	case res.Complete:
		return ""
	}
	ran, missing := map[Stage]bool{}, map[Stage]bool{}
	for _, sc := range res.Scenarios {
		for _, st := range sc.Stages {
			switch {
			case st.Stage == StageDeploy || st.Stage == "teardown":
				// 部署与清理总是随场景运行，不是可以选择的阶段。
			case st.Status == StageSkipped && strings.HasPrefix(st.Reason, "not selected"):
				missing[st.Stage] = true
			case st.Status != StageSkipped:
				ran[st.Stage] = true
			}
		}
	}
	if len(missing) == 0 {
		return "Incomplete: the run has not been finished yet (no final summary was written)."
	}
	names := func(m map[Stage]bool) string {
		var out []string
		for s := range m {
			out = append(out, string(s))
		}
		sort.Strings(out)
		return strings.Join(out, ", ")
	}
	msg := fmt.Sprintf("Incomplete: only %s ran in this job (stages selected; %s not run here). The summary job finishes the run over the merged artifacts: go run ./examples/ci -summarize -run-id %s.",
		names(ran), names(missing), res.RunID)
	if res.RunType == "daily" {
		msg += " A daily run becomes a performance baseline only once it is complete."
	}
	return msg
}

// Headline 把一个门禁写成一行，从左往右读：对象、指标、变化、限值，然后是时间花在了哪里，例如
// "emu in128-out128-c4 TTFT P99 +204.0% (limit +10%) — queue +126.3 ms (100%)"。方法、区间、样本量与
// 注意事项不在这里（它们在门禁表的详情里）。没有结构化数字的门禁取原因的第一行。
func Headline(g gate.Gate) string {
	subject := g.Scenario
	if g.Key != nil {
		subject += fmt.Sprintf(" in%d-out%d-c%d", g.Key.InputLength, g.Key.OutputLength, g.Key.Concurrency)
	}
	first := g.Reason
	if i := strings.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	var what string
	switch g.Metric {
	case gate.MetricTTFTP99, gate.MetricE2EP99, gate.MetricQPS:
		name := map[string]string{gate.MetricTTFTP99: "TTFT P99", gate.MetricE2EP99: "E2E P99", gate.MetricQPS: "QPS"}[g.Metric]
		if g.DeltaPct == nil {
			return strings.TrimSpace(subject + " " + name + ": " + first)
		}
		what = fmt.Sprintf("%s %s (limit %s)", name, signedPct(*g.DeltaPct), signedPct(g.Limit))
	case gate.MetricFailRate:
		what = fmt.Sprintf("fail rate %s (limit %s)", pct(g.Current*100), pct(g.Limit*100))
	default:
		// 没有结构化数字的门禁（功能、精度、阶段错误、团队门禁）：场景、门禁名与原因的第一行。
		return strings.TrimSpace(g.Scenario + " " + g.Name + ": " + first)
	}
	if where := whereTheTimeWent(g); where != "" {
		what += " — " + where
	}
	return subject + " " + what
}

// whereTheTimeWent 是门禁归因的一行：承担变化的阶段与它们的增量、份额（没有点名阶段时为空）。
func whereTheTimeWent(g gate.Gate) string {
	if g.Explain == nil {
		return ""
	}
	ch := g.Explain.E2E
	if g.Metric == gate.MetricTTFTP99 {
		ch = g.Explain.TTFT
	}
	var parts []string
	for _, name := range ch.Named {
		for _, c := range ch.Components {
			if c.Phase == name {
				parts = append(parts, fmt.Sprintf("%s %s (%s)", name, signedMs(c.Delta), pct(c.Share*100)))
			}
		}
	}
	return strings.Join(parts, ", ")
}

// signedPct 把百分比写成 "+12.3%"、"−4.0%"；绝对值小于 0.05 时写 "0.0%"（不出现 "-0%"）。
func signedPct(p float64) string {
	switch {
	case math.Abs(p) < 0.05:
		return "0.0%"
	case p > 0:
		return fmt.Sprintf("+%s%%", trimPct(p))
	default:
		return fmt.Sprintf("−%s%%", trimPct(-p))
	}
}

// FormatDelta 把相对变化（百分比）写成报告各处共用的一种写法：一位小数、带符号，负号是 U+2212
// （"+204.0%"、"−1.0%"）；四舍五入到零时写 "0.0%"，不出现 "+0.0%" 或 "−0.0%"。门禁表、趋势表、
// 比较页与 JUnit 都用它，同一个变化在哪里读都是同一串字符。
func FormatDelta(p float64) string {
	s := strconv.FormatFloat(math.Abs(p), 'f', 1, 64)
	switch {
	case s == "0.0" || math.IsNaN(p):
		if math.IsNaN(p) {
			return "n/a"
		}
		return "0.0%"
	case p < 0:
		return "−" + s + "%"
	default:
		return "+" + s + "%"
	}
}

// pct 把非负百分比写成 "12.5%"。
func pct(p float64) string { return trimPct(p) + "%" }

// trimPct 保留一位小数，整数时去掉 ".0"（限值写成 "10%" 而不是 "10.0%"）。
func trimPct(p float64) string {
	s := fmt.Sprintf("%.1f", p)
	return strings.TrimSuffix(s, ".0")
}

// signedMs 把秒写成带符号的毫秒 "+126.3 ms"、"−0.4 ms"。
func signedMs(s float64) string {
	ms := s * 1000
	if ms < 0 {
		return fmt.Sprintf("−%.1f ms", -ms)
	}
	return fmt.Sprintf("+%.1f ms", ms)
}

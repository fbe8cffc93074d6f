package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/vllm-cibench/cibench/explain"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/report"
)

// interval 把一行的区间格式化为与报告门禁表相同的文字（"[+20.1%, +35.0%] @95%"，区间不含变化时
// 带上它自己的统计量与点估计，位移判定时写明 "geomean shift"）；没有时为 "—"。
func interval(r Row) string {
	text, _ := r.Gate().Evidence()
	return text
}

// value 格式化一个指标值；nil 为 "—"。
func value(metric string, v *float64) string {
	if v == nil {
		return "—"
	}
	return report.FormatMetric(metric, *v)
}

// delta 格式化相对变化；nil 为 "—"。
func delta(d *float64) string {
	if d == nil {
		return "—"
	}
	return report.FormatDelta(*d)
}

// WriteText 写出文本表：两侧的标注，每个组合每项指标一行（A、B、变化、区间、判定），
// 每个组合之后是时间花在哪里（TTFT 与 E2E 的归因与旁证）。
func (c *Comparison) WriteText(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n", c.Headline())
	fmt.Fprintf(&b, "cibench compare: B against A (A is the baseline): %s\n", c.Summary())
	fmt.Fprintf(&b, "gate settings: %s\n", c.ThresholdsFrom)
	for i, p := range c.Pairs {
		fmt.Fprintf(&b, "\npair %d\n  A: %s\n  B: %s\n", i+1, p.A.Label(), p.B.Label())
		if p.A.Dir != "" || p.B.Dir != "" {
			fmt.Fprintf(&b, "  A dir: %s\n  B dir: %s\n", p.A.Dir, p.B.Dir)
		}
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  combination\tmetric\tA\tB\tchange\tinterval\tverdict")
		var explained []Row
		for _, r := range c.Rows {
			if r.Pair != i {
				continue
			}
			bv := r.B
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Combination, r.Metric, value(r.Metric, r.A), value(r.Metric, &bv),
				delta(r.DeltaPct), interval(r), r.Verdict)
			if r.Metric == gate.MetricTTFTP99 && r.Explain != nil {
				explained = append(explained, r)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, r := range explained {
			fmt.Fprintf(&b, "\n  where the time went, %s:\n", r.Combination)
			for _, line := range strings.Split(r.Explain.Text(), "\n") {
				fmt.Fprintf(&b, "    %s\n", line)
			}
		}
	}
	for _, u := range c.Unmatched {
		fmt.Fprintf(&b, "\nnot compared (no counterpart): %s\n", u)
	}
	_, err := b.WriteTo(w)
	return err
}

// WriteJSON 写出机器可读的比较结果（缩进的 JSON）。
func (c *Comparison) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(c)
}

// htmlRow 是 HTML 表格的一行。
type htmlRow struct {
	Combination, Metric, A, B, Delta, Interval, Verdict string
	// VerdictText 是给人读的判定（"no baseline"，不是枚举值 "no_baseline"）；Verdict 只用作样式类。
	VerdictText string
	Fail        bool
}

// htmlMetric 把指标名写成人读的名字（表头里不出现 ttft_p99_seconds 这样的 Prometheus 名字）。
func htmlMetric(m string) string {
	switch m {
	case gate.MetricTTFTP99:
		return "TTFT P99"
	case gate.MetricE2EP99:
		return "E2E P99"
	case gate.MetricQPS:
		return "QPS"
	}
	return m
}

// htmlCombo 是一个组合的归因：两张堆叠图（TTFT、E2E）与说明文字。Changed 为假（没有指标越过阈值）
// 的组合收在折叠里，不占整幅。
type htmlCombo struct {
	Combination string
	Charts      []template.HTML
	Lines       []string
	Changed     bool
}

// htmlPair 是一对场景的全部内容。
type htmlPair struct {
	N      int // 1 起的序号
	A, B   Side
	Rows   []htmlRow
	Combos []htmlCombo
}

// WriteHTML 写出自包含的 HTML 报告（无脚本、无外部资源）：两侧标注、比较表、每个组合的
// 基线/当前阶段堆叠图与归因文字。
func (c *Comparison) WriteHTML(w io.Writer) error {
	var v struct {
		Summary   string
		Headline  string
		From      string
		Failed    bool
		Pairs     []htmlPair
		Unmatched []string
	}
	v.Unmatched, v.Summary, v.From, v.Headline = c.Unmatched, c.Summary(), c.ThresholdsFrom, c.Headline()
	// 整页的堆叠图共用一个满刻度：条的长短在图与图之间可以直接比较。
	pageMax := 0.0
	for _, r := range c.Rows {
		if r.Explain == nil {
			continue
		}
		for _, m := range []string{explain.MetricTTFT, explain.MetricE2E} {
			if ch, ok := report.PhaseChart("", *r.Explain, m); ok {
				pageMax = max(pageMax, ch.Total())
			}
		}
	}
	failedCombo := map[[2]string]bool{}
	for _, r := range c.Rows {
		if r.Verdict == gate.VerdictFail {
			failedCombo[[2]string{fmt.Sprint(r.Pair), r.Combination}] = true
			v.Failed = true
		}
	}
	for i, p := range c.Pairs {
		hp := htmlPair{N: i + 1, A: p.A, B: p.B}
		for _, r := range c.Rows {
			if r.Pair != i {
				continue
			}
			bv := r.B
			hp.Rows = append(hp.Rows, htmlRow{Combination: r.Combination, Metric: htmlMetric(r.Metric), A: value(r.Metric, r.A), B: value(r.Metric, &bv),
				Delta: delta(r.DeltaPct), Interval: interval(r), Verdict: string(r.Verdict), Fail: r.Verdict == gate.VerdictFail,
				VerdictText: strings.ReplaceAll(string(r.Verdict), "_", " ")})
			if r.Metric != gate.MetricTTFTP99 || r.Explain == nil {
				continue
			}
			hc := htmlCombo{Combination: r.Combination, Lines: strings.Split(r.Explain.Text(), "\n"), Changed: failedCombo[[2]string{fmt.Sprint(i), r.Combination}]}
			for _, m := range []struct{ metric, label string }{{explain.MetricTTFT, "mean TTFT"}, {explain.MetricE2E, "mean E2E"}} {
				if ch, ok := report.PhaseChart(m.label+" by phase (ms): A = baseline, B = current", *r.Explain, m.metric); ok {
					ch.Max = pageMax
					hc.Charts = append(hc.Charts, ch.SVG())
				}
			}
			hp.Combos = append(hp.Combos, hc)
		}
		v.Pairs = append(v.Pairs, hp)
	}
	t, err := template.New("compare").Parse(compareTemplate)
	if err != nil {
		return fmt.Errorf("compare: html template: %w", err)
	}
	var page bytes.Buffer
	if err := t.Execute(&page, v); err != nil {
		return fmt.Errorf("compare: html: %w", err)
	}
	_, err = page.WriteTo(w)
	return err
}

// compareTemplate 是比较报告的页面。
const compareTemplate = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>cibench compare</title>
<style>
body{font-family:system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:8px 0 16px}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;font-size:13px}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.row-fail td{background:#fde8e8}
td.v-fail{color:#cf222e;font-weight:bold}td.v-pass{color:#1a7f37}td.v-warn{color:#9a6700;font-weight:bold}
.charts{display:flex;flex-wrap:wrap;align-items:flex-start;gap:8px}
.summary{font-size:18px;font-weight:bold;padding:8px 12px;border-radius:4px}
.summary.red{background:#ffebe9;color:#cf222e}.summary.green{background:#dafbe1;color:#1a7f37}
.side{font-size:13px;margin:2px 0}
.note{color:#555;font-size:12px}
.why{margin:8px 0 24px}
</style></head><body>
<p class="summary {{if .Failed}}red{{else}}green{{end}}" id="summary">{{.Headline}}</p>
<p class="note">{{.Summary}}</p>
<h1>cibench compare: B against A</h1>
<p class="note">Gate settings (interval level, verdict mode): {{.From}}.</p>
<p class="note">A is the baseline. Change and interval: relative change of B against A with the interval the performance gates use;
verdict: the PR gate thresholds. "Where the time went" splits the client's mean TTFT and E2E into server phases from vLLM's histograms
(_sum/_count over each combination's windows); the interval is the client's mean difference (Welch).</p>
{{range $p := .Pairs}}
<h2>Pair {{$p.N}}</h2>
<p class="side"><b>A</b>: run {{$p.A.RunID}} ({{$p.A.RunType}}){{with $p.A.Commit}} commit {{.}}{{end}} — scenario <b>{{$p.A.Scenario}}</b>, model {{$p.A.Model}}, quant {{or $p.A.Quant "not recorded"}}, hardware {{or $p.A.Hardware "not recorded"}}, deploy {{$p.A.Deploy}}</p>
<p class="side"><b>B</b>: run {{$p.B.RunID}} ({{$p.B.RunType}}){{with $p.B.Commit}} commit {{.}}{{end}} — scenario <b>{{$p.B.Scenario}}</b>, model {{$p.B.Model}}, quant {{or $p.B.Quant "not recorded"}}, hardware {{or $p.B.Hardware "not recorded"}}, deploy {{$p.B.Deploy}}</p>
<table><tr><th>combination</th><th>metric</th><th>A</th><th>B</th><th>change</th><th>interval</th><th>verdict</th></tr>
{{range $p.Rows}}<tr class="{{if .Fail}}row-fail{{end}}"><td>{{.Combination}}</td><td>{{.Metric}}</td><td class="num">{{.A}}</td><td class="num">{{.B}}</td><td class="num">{{.Delta}}</td><td class="num">{{.Interval}}</td><td class="v-{{.Verdict}}">{{.VerdictText}}</td></tr>
{{end}}</table>
<p class="note">QPS intervals come from the gaps between consecutive completions (a bootstrap over 100–200 gaps per combination): they are wide (often ±40 %), so a QPS row fails only when the drop is both beyond the limit and clear of that noise; TTFT and E2E intervals are much tighter.</p>
{{range $p.Combos}}{{if .Changed}}<div class="why"><h3>Where the time went: {{.Combination}}</h3>
<div class="charts">{{range .Charts}}{{.}}{{end}}</div>
{{range .Lines}}<p class="note">{{.}}</p>{{end}}</div>
{{else}}<details class="why"><summary>Where the time went: {{.Combination}} (no metric crossed its limit)</summary>
<div class="charts">{{range .Charts}}{{.}}{{end}}</div>
{{range .Lines}}<p class="note">{{.}}</p>{{end}}</details>
{{end}}{{end}}{{end}}
{{range .Unmatched}}<p class="note">not compared (no counterpart): {{.}}</p>{{end}}
</body></html>
`

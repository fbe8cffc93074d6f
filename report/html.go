package report

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/explain"
	"github.com/vllm-cibench/cibench/gate"
)

// gateRow 是门禁表的一行（已格式化的文本）。
type gateRow struct {
	Scenario, Name, Kind, Current, Baseline, Delta, Limit, Reason string
	Verdict                                                       gate.Verdict
	// Interval 是相对变化的置信区间，Samples 是两侧样本量与支撑情况（性能门禁）。
	Interval, Samples string
	// Headline 是门禁的一行结论（Headline(g)）；Reason 的完整文字只在失败门禁表的详情里出现一次。
	Headline string
	// ShowWhy 为真时在失败门禁之后画出这一项的归因：同一场景、同一组合、同一段归因文字只画一次
	// （E2E 与 QPS 的归因是同一段）。
	ShowWhy bool
	// Attribution 与 Chart 是性能门禁的归因文字与基线/当前的阶段堆叠图（没有时为空）。
	Attribution string
	Chart       template.HTML
}

// scenarioView 是一个场景在 HTML 中需要的全部数据。
type scenarioView struct {
	Scenario
	Anchor     string
	Cells      []Cell          // 场景总览表中各阶段的单元格（顺序同 htmlView.Columns）
	Parts      []template.HTML // 各阶段的片段（顺序同渲染器）
	Gates      []gateRow
	GateFailed int
	Files      []string // 场景目录下的产物（相对运行目录的斜杠路径）
}

// htmlView 是整份报告的数据。
type htmlView struct {
	Res                                              Result
	Pass, Fail, NoBaseline, Skip, Interrupted, Total int
	Warn                                             int
	Trend                                            *gate.Trend
	Failed                                           []gateRow
	NoBase                                           []gateRow
	Scenarios                                        []scenarioView
	Generated                                        string
	// Columns 是场景总览表中各阶段的列名（渲染器的 Columns 依次相接）。
	Columns []string
	// Verdict 是页面最上面的结论（见 verdictOf）。
	Verdict pageVerdict
}

// WriteHTML 把结果渲染成自包含的 HTML 报告：内联 CSS、Go 生成的 SVG 图表、
// 少量内联脚本（只做"仅看失败"的筛选和渲染自检），不引用任何外部资源，
// 可以作为 CI 产物下载后离线打开。各阶段的表格与图表由 rs 中的渲染器给出
// （顺序即页面中的顺序），门禁、阶段错误与产物列表由 report 自己写。
func WriteHTML(w io.Writer, res Result, rs ...Renderer) error { return writeHTML(w, res, nil, rs) }

// writeHTML 是 WriteHTML 的实现；files 为各场景目录下的产物相对路径
// （Finish 时提供），报告据此列出可点击的相对链接，下载产物后离线可用。
// 某个渲染器出错时页面照常写出，该阶段的位置换成一行错误说明，错误（写明阶段与场景）在
// 写完之后返回：一个团队渲染器的缺陷不会让整份报告消失。页面只在模板完整执行后才写进 w。
func writeHTML(w io.Writer, res Result, files map[string][]string, rs []Renderer) error {
	v := htmlView{Res: res, Generated: res.Finished.Format(time.RFC3339), Trend: res.Trend}
	for _, rd := range rs {
		v.Columns = append(v.Columns, rd.Columns...)
	}
	if res.Finished.IsZero() {
		v.Generated = "in progress (run not finished)"
	}
	shownWhy := map[string]bool{}
	for _, g := range res.Gates {
		v.Total++
		r := toGateRow(g)
		switch g.Verdict {
		case gate.VerdictPass:
			v.Pass++
		case gate.VerdictFail:
			v.Fail++
			if r.Attribution != "" {
				key := g.Scenario + "\x00" + r.Attribution
				if g.Key != nil {
					key += "\x00" + g.Key.String()
				}
				r.ShowWhy = !shownWhy[key]
				shownWhy[key] = true
			}
			v.Failed = append(v.Failed, r)
		case gate.VerdictNoBaseline:
			v.NoBaseline++
			v.NoBase = append(v.NoBase, r)
		case gate.VerdictInterrupted:
			v.Interrupted++
		case gate.VerdictWarn:
			v.Warn++
		default:
			v.Skip++
		}
	}
	var failed []gate.Gate
	for _, g := range res.Gates {
		if g.Verdict == gate.VerdictFail {
			failed = append(failed, g)
		}
	}
	v.Verdict = verdictOf(res, failed, v.Total)
	var rerrs []error
	for i, sc := range res.Scenarios {
		sv, err := buildScenarioView(i, sc, res.Gates, rs)
		rerrs = append(rerrs, err)
		sv.Files = files[sc.Name]
		v.Scenarios = append(v.Scenarios, sv)
	}
	t, err := template.New("report").Funcs(template.FuncMap{
		"verdictClass": func(v gate.Verdict) string { return "v-" + string(v) },
		"delta":        FormatDelta,
		// 单元格里写给人读的判定（"no baseline"），不是枚举值（"no_baseline"）。
		"verdictText": func(v gate.Verdict) string { return strings.ReplaceAll(string(v), "_", " ") },
		"ts": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05 UTC")
		},
	}).Parse(htmlTemplate)
	if err != nil {
		return fmt.Errorf("report: html template: %w", err)
	}
	var page bytes.Buffer
	if err := t.Execute(&page, v); err != nil {
		return fmt.Errorf("report: html: %w", err)
	}
	if _, err := page.WriteTo(w); err != nil {
		return fmt.Errorf("report: html: %w", err)
	}
	return errors.Join(rerrs...)
}

// toGateRow 把门禁格式化为表格行。
func toGateRow(g gate.Gate) gateRow {
	r := gateRow{Scenario: g.Scenario, Name: g.Name, Kind: string(g.Kind), Verdict: g.Verdict, Reason: g.Reason, Headline: Headline(g),
		Current: FormatMetric(g.Metric, g.Current), Baseline: "—", Delta: "—", Limit: "—"}
	if g.Baseline != nil {
		r.Baseline = FormatMetric(g.Metric, *g.Baseline)
		if g.BaselineRun != "" {
			r.Baseline += " (" + g.BaselineRun + ")"
		}
	}
	if g.DeltaPct != nil {
		r.Delta = FormatDelta(*g.DeltaPct)
	}
	r.Interval, r.Samples = g.Evidence()
	if g.Explain != nil {
		r.Attribution = g.Attribution
		metric, label := explain.MetricE2E, "mean E2E"
		if g.Metric == gate.MetricTTFTP99 {
			metric, label = explain.MetricTTFT, "mean TTFT"
		}
		if ch, ok := PhaseChart(label+" by phase (ms)", *g.Explain, metric); ok {
			r.Chart = ch.SVG()
		}
	}
	switch g.Metric {
	case gate.MetricTTFTP99, gate.MetricE2EP99:
		r.Limit = "≤ " + signedPct(g.Limit)
	case gate.MetricQPS:
		r.Limit = "≥ " + signedPct(g.Limit)
	case gate.MetricFailRate:
		r.Limit = fmt.Sprintf("≤ %.1f%%", g.Limit*100)
	case gate.MetricScore:
		if g.Baseline != nil {
			r.Limit = "≥ " + FormatMetric(g.Metric, g.Limit)
		}
	case gate.MetricFailedCases:
		r.Limit = "0"
	}
	return r
}

// buildScenarioView 为一个场景收集各阶段的单元格与片段、门禁行。渲染器出错时该阶段的
// 单元格写 "error"、片段换成错误说明，错误一并返回。
func buildScenarioView(i int, sc Scenario, gates []gate.Gate, rs []Renderer) (scenarioView, error) {
	v := scenarioView{Scenario: sc, Anchor: "s" + strconv.Itoa(i)}
	var errs []error
	for _, rd := range rs {
		if len(rd.Columns) > 0 {
			var cells []Cell
			if rd.Cells != nil {
				var err error
				if cells, err = rd.Cells(sc); err != nil {
					errs = append(errs, fmt.Errorf("report: html: scenario %s: %s: %w", sc.Name, rd.Name, err))
					cells = []Cell{{Text: "error"}}
				}
			}
			// 单元格个数以列为准：少的补 "—"，多的截掉，表格不会错位。
			for j := range rd.Columns {
				c := Cell{Text: "—"}
				if j < len(cells) {
					c = cells[j]
				}
				v.Cells = append(v.Cells, c)
			}
		}
		if rd.HTML != nil {
			part, err := rd.HTML(sc, gates)
			if err != nil {
				err = fmt.Errorf("report: html: scenario %s: %s: %w", sc.Name, rd.Name, err)
				errs = append(errs, err)
				// 文本经 html.EscapeString 转义，标记只有这里写的两个元素。
				part = template.HTML(`<h3>` + html.EscapeString(rd.Name) + `</h3>` + "\n" + `<p class="note v-fail">cannot render this stage: ` + html.EscapeString(err.Error()) + `</p>` + "\n")
			}
			v.Parts = append(v.Parts, part)
		}
	}
	for _, g := range gates {
		if g.Scenario == sc.Name {
			v.Gates = append(v.Gates, toGateRow(g))
			if g.Verdict == gate.VerdictFail {
				v.GateFailed++
			}
		}
	}
	return v, errors.Join(errs...)
}

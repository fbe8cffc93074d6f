package report

import (
	"fmt"
	"github.com/vllm-cibench/cibench/gate"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
)

// gateRow 是门禁表的一行（已格式化的文本）。
type gateRow struct {
	Scenario, Name, Kind, Current, Baseline, Delta, Limit, Reason string
	Verdict                                                       gate.Verdict
	// Interval 是相对变化的置信区间，Samples 是两侧样本量与支撑情况（性能门禁）。
	Interval, Samples string
}

// perfRow 是压测表的一行。
type perfRow struct {
	In, Out, Conc, Round, Prompts, Failed   int
	TTFT, TPOT, E2E, QPS, OutTput, FailRate string
	// ClientLag 是压测端自身的读取滞后 P50（不计入 TTFT）；没有内核时间戳时为 n/a。
	ClientLag string
}

// accRow 是精度表的一行。
type accRow struct {
	Dataset, Model, Score, Threshold string
	Examples                         int
	Verdict                          gate.Verdict
	// Errors 是 "失败数 of 请求数" 加分类；Source 是数据来源种类与位置，Files 是读取的文件。
	Errors, Source string
	Files          []accFile
	Reason         string
}

// accFile 是精度结果读取的一个数据文件（报告里显示 sha256，分数因此可追溯到字节）。
type accFile struct{ Name, Location, SHA256 string }

// scenarioView 是一个场景在 HTML 中需要的全部数据。
type scenarioView struct {
	Scenario
	Anchor     string
	Suites     []functional.SuiteSummary
	Failed     []functional.Result
	All        []functional.Result
	Passed     int
	Skipped    int
	PerfRows   []perfRow
	Charts     []template.HTML
	CapCharts  []template.HTML
	CapRows    []capRow
	Timelines  []template.HTML // 每个分组两张：时延随时间、并发随时间
	TLGroups   int
	AccRows    []accRow
	AccChart   template.HTML
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
}

// WriteHTML 把结果渲染成自包含的 HTML 报告：内联 CSS、Go 生成的 SVG 图表、
// 少量内联脚本（只做"仅看失败"的筛选和渲染自检），不引用任何外部资源，
// 可以作为 CI 产物下载后离线打开。
func WriteHTML(w io.Writer, res Result) error { return writeHTML(w, res, nil) }

// writeHTML 是 WriteHTML 的实现；files 为各场景目录下的产物相对路径
// （Finish 时提供），报告据此列出可点击的相对链接，下载产物后离线可用。
func writeHTML(w io.Writer, res Result, files map[string][]string) error {
	v := htmlView{Res: res, Generated: res.Finished.Format(time.RFC3339), Trend: res.Trend}
	if res.Finished.IsZero() {
		v.Generated = "in progress (run not finished)"
	}
	for _, g := range res.Gates {
		v.Total++
		r := toGateRow(g)
		switch g.Verdict {
		case gate.VerdictPass:
			v.Pass++
		case gate.VerdictFail:
			v.Fail++
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
	for i, sc := range res.Scenarios {
		sv := buildScenarioView(i, sc, res.Gates)
		sv.Files = files[sc.Name]
		v.Scenarios = append(v.Scenarios, sv)
	}
	t, err := template.New("report").Funcs(template.FuncMap{
		"verdictClass": func(v gate.Verdict) string { return "v-" + string(v) },
		"statusClass":  func(s functional.Status) string { return "s-" + string(s) },
		"dur":          func(d time.Duration) string { return d.Round(time.Millisecond).String() },
		"pct":          func(f float64) string { return fmt.Sprintf("%.1f%%", f*100) },
		"ratio": func(f *float64) string {
			if f == nil {
				return "—"
			}
			return fmt.Sprintf("%.1f%%", *f*100)
		},
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
	if err := t.Execute(w, v); err != nil {
		return fmt.Errorf("report: html: %w", err)
	}
	return nil
}

// toGateRow 把门禁格式化为表格行。
func toGateRow(g gate.Gate) gateRow {
	r := gateRow{Scenario: g.Scenario, Name: g.Name, Kind: string(g.Kind), Verdict: g.Verdict, Reason: g.Reason,
		Current: formatMetric(g.Metric, g.Current), Baseline: "—", Delta: "—", Limit: "—"}
	if g.Baseline != nil {
		r.Baseline = formatMetric(g.Metric, *g.Baseline)
		if g.BaselineRun != "" {
			r.Baseline += " (" + g.BaselineRun + ")"
		}
	}
	if g.DeltaPct != nil {
		r.Delta = fmt.Sprintf("%+.1f%%", *g.DeltaPct)
	}
	r.Interval, r.Samples = g.Evidence()
	switch g.Metric {
	case gate.MetricTTFTP99, gate.MetricE2EP99:
		r.Limit = fmt.Sprintf("≤ %+.0f%%", g.Limit)
	case gate.MetricQPS:
		r.Limit = fmt.Sprintf("≥ %+.0f%%", g.Limit)
	case gate.MetricFailRate:
		r.Limit = fmt.Sprintf("≤ %.1f%%", g.Limit*100)
	case gate.MetricScore:
		if g.Baseline != nil {
			r.Limit = "≥ " + formatMetric(g.Metric, g.Limit)
		}
	case gate.MetricFailedCases:
		r.Limit = "0"
	}
	return r
}

// secs 把时延格式化为表格文本；不可测时为 "n/a"（对应 CSV 的 −1）。
func secs(l loadgen.Latency, d time.Duration) string {
	if !l.Valid() {
		return "n/a"
	}
	return formatMetric(gate.MetricTTFTP99, d.Seconds())
}

// buildScenarioView 为一个场景准备表格与图表。
func buildScenarioView(i int, sc Scenario, gates []gate.Gate) scenarioView {
	v := scenarioView{Scenario: sc, Anchor: "s" + strconv.Itoa(i)}
	v.CapCharts, v.CapRows = capacityView(sc)
	if f := sc.Functional; f != nil {
		v.All = f.Results
		v.Suites = f.Suites
		if len(v.Suites) == 0 {
			v.Suites = suiteSummaries(f.Results)
		}
		for _, r := range f.Results {
			switch {
			case r.Status.Failing():
				v.Failed = append(v.Failed, r)
			case r.Status.NotRun():
				v.Skipped++
			case r.Status == functional.StatusPass:
				v.Passed++
			}
		}
	}
	for _, r := range sc.Perf {
		v.PerfRows = append(v.PerfRows, perfRow{In: r.InputLength, Out: r.OutputLength, Conc: r.Concurrency, Round: r.Round,
			Prompts: r.NumPrompts, Failed: r.Failed,
			TTFT: secs(r.TTFT, r.TTFT.P99), TPOT: secs(r.TPOT, r.TPOT.Avg), E2E: secs(r.E2E, r.E2E.P99),
			QPS: fmt.Sprintf("%.2f", r.QPS), OutTput: fmt.Sprintf("%.1f", r.OutputTokenThroughput), FailRate: fmt.Sprintf("%.2f%%", r.FailRate*100),
			ClientLag: secs(r.ClientLag, r.ClientLag.P50)})
	}
	if len(sc.Perf) > 0 {
		v.Charts = perfCharts(sc, gates)
	}
	v.Timelines, v.TLGroups = timelineCharts(sc.Timeline)
	var cats []string
	var scores, thresholds []float64
	in := gate.Scenario{Name: sc.Name}
	for _, e := range sc.Errors {
		in.Errors = append(in.Errors, gate.StageError{Stage: string(e.Stage), Message: e.Message, Interrupted: e.Interrupted})
	}
	for _, a := range sc.Accuracy {
		g := gate.AccuracyGate(in, accuracyInput(a))
		row := accRow{Dataset: a.Result.Dataset, Model: a.Result.Model, Score: formatMetric(gate.MetricScore, a.Result.Score), Threshold: "—", Examples: a.Result.Examples, Verdict: g.Verdict,
			Errors: accErrors(a.Result), Source: "not recorded", Reason: g.Reason}
		if src := a.Result.Source; src != nil {
			row.Source = src.Kind + ": " + src.Location
			for _, f := range src.Files {
				row.Files = append(row.Files, accFile{Name: f.Name, Location: f.Location, SHA256: f.SHA256})
			}
		}
		th := math.NaN()
		if a.Threshold != nil {
			row.Threshold = formatMetric(gate.MetricScore, *a.Threshold)
			if a.Metric != "" && a.Metric != gate.MetricScore {
				row.Threshold = fmt.Sprintf("%s ≥ %g", a.Metric, *a.Threshold)
			}
			th = *a.Threshold
		}
		v.AccRows = append(v.AccRows, row)
		cats = append(cats, a.Result.Dataset)
		scores = append(scores, a.Result.Score)
		thresholds = append(thresholds, th)
	}
	if len(cats) > 0 {
		v.AccChart = template.HTML(chart{Title: "Accuracy score vs threshold", XLabel: "dataset", YLabel: "score", Categories: cats, Bars: true,
			Series: []series{{Name: "score", Values: scores}, {Name: "threshold", Values: thresholds, Color: "#D55E00", Dashed: true}}}.render())
	}
	for _, g := range gates {
		if g.Scenario == sc.Name {
			v.Gates = append(v.Gates, toGateRow(g))
			if g.Verdict == gate.VerdictFail {
				v.GateFailed++
			}
		}
	}
	return v
}

// suiteSummaries 在报告未带套件汇总时按结果计算，与 functional 包同一口径
// （没有执行任何用例的套件没有通过率）。
func suiteSummaries(results []functional.Result) []functional.SuiteSummary {
	return functional.Summarize(results)
}

// maxSeries 是一张图中最多的组合（实线）数；再多就按输出长度拆图。
const maxSeries = 4

// perfCharts 画出时延-并发曲线（每个输入/输出组合一条线，有基线时叠加虚线）
// 与吞吐柱状图。多轮结果按 gate.Aggregate 的中位数口径合并。
func perfCharts(sc Scenario, gates []gate.Gate) []template.HTML {
	// 同一场景可能跑多个 backend（openai-chat 与 openai）的档位：它们是不同的
	// 曲线，不能取中位数混在一起，所以 backend 也是曲线身份的一部分。
	type combo struct {
		in, out int
		backend string
	}
	var combos []combo
	backends := map[string]bool{}
	concSet := map[int]bool{}
	rows := map[combo]map[int][]loadgen.Summary{}
	for _, r := range sc.Perf {
		c := combo{r.InputLength, r.OutputLength, rowBackend(sc, r)}
		backends[c.backend] = true
		if rows[c] == nil {
			rows[c] = map[int][]loadgen.Summary{}
			combos = append(combos, c)
		}
		rows[c][r.Concurrency] = append(rows[c][r.Concurrency], r)
		concSet[r.Concurrency] = true
	}
	var concs []int
	for c := range concSet {
		concs = append(concs, c)
	}
	sort.Ints(concs)
	cats := make([]string, len(concs))
	for i, c := range concs {
		cats[i] = strconv.Itoa(c)
	}
	// 基线值来自门禁（它们记录了判定时用的基线），键为组合+并发+指标。
	type bkey struct {
		c      combo
		conc   int
		metric string
	}
	base := map[bkey]float64{}
	for _, g := range gates {
		if g.Scenario == sc.Name && g.Key != nil && g.Baseline != nil {
			base[bkey{combo{g.Key.InputLength, g.Key.OutputLength, g.Key.Backend}, g.Key.Concurrency, g.Metric}] = *g.Baseline
		}
	}
	name := func(c combo) string {
		if len(backends) > 1 {
			return fmt.Sprintf("in%d/out%d %s", c.in, c.out, c.backend)
		}
		return fmt.Sprintf("in%d/out%d", c.in, c.out)
	}
	build := func(group []combo, metric string, pick func(gate.Baseline) float64, scale float64) []series {
		var out []series
		for ci, c := range group {
			s := series{Name: name(c), Color: palette[ci%len(palette)]}
			bs := series{Name: name(c) + " baseline", Dashed: true, Color: palette[ci%len(palette)]}
			hasBase := false
			for _, conc := range concs {
				val := math.NaN()
				if rs := rows[c][conc]; len(rs) > 0 {
					if x := pick(gate.Aggregate(perfRows(rs))); x > 0 {
						val = x * scale
					}
				}
				s.Values = append(s.Values, val)
				bv := math.NaN()
				if b, ok := base[bkey{c, conc, metric}]; ok && metric != "" {
					bv, hasBase = b*scale, true
				}
				bs.Values = append(bs.Values, bv)
			}
			out = append(out, s)
			if hasBase {
				out = append(out, bs)
			}
		}
		return out
	}
	// 时延单位按图选择：该图全部 P99 都小于 1 秒时用毫秒，读起来更直观。
	unitOf := func(pick func(loadgen.Summary) time.Duration) (float64, string) {
		for _, r := range sc.Perf {
			if pick(r) >= time.Second {
				return 1, "s"
			}
		}
		return 1000, "ms"
	}
	ts, tu := unitOf(func(r loadgen.Summary) time.Duration { return r.TTFT.P99 })
	es, eu := unitOf(func(r loadgen.Summary) time.Duration { return r.E2E.P99 })
	// 组合多于 maxSeries 时（每日档 4 输入 × 3 输出 = 12 个组合）按输出长度
	// 分图，每张图的曲线与图例保持可读，颜色也不至于重复。
	groups := [][]combo{combos}
	split := len(combos) > maxSeries
	if split {
		idx := map[int]int{}
		groups = nil
		for _, c := range combos {
			i, ok := idx[c.out]
			if !ok {
				i = len(groups)
				idx[c.out] = i
				groups = append(groups, nil)
			}
			groups[i] = append(groups[i], c)
		}
	}
	out := make([]template.HTML, 0, 4*len(groups))
	for _, group := range groups {
		suffix := ""
		if split {
			suffix = fmt.Sprintf(" (output %d)", group[0].out)
		}
		ttft := chart{Title: "TTFT P99 vs concurrency" + suffix, XLabel: "concurrency", YLabel: "TTFT P99 (" + tu + ")", Categories: cats,
			Series: build(group, gate.MetricTTFTP99, func(b gate.Baseline) float64 { return b.TTFTP99.Seconds() }, ts)}
		e2e := chart{Title: "E2E P99 vs concurrency" + suffix, XLabel: "concurrency", YLabel: "E2E P99 (" + eu + ")", Categories: cats,
			Series: build(group, gate.MetricE2EP99, func(b gate.Baseline) float64 { return b.E2EP99.Seconds() }, es)}
		qps := chart{Title: "QPS vs concurrency" + suffix, XLabel: "concurrency", YLabel: "requests/s", Categories: cats,
			Series: build(group, gate.MetricQPS, func(b gate.Baseline) float64 { return b.QPS }, 1)}
		// 吞吐柱状图：输出 token 吞吐（各轮中位数）。
		var tput []series
		for ci, c := range group {
			s := series{Name: name(c), Color: palette[ci%len(palette)]}
			for _, conc := range concs {
				val := math.NaN()
				if rs := rows[c][conc]; len(rs) > 0 {
					xs := make([]float64, 0, len(rs))
					for _, r := range rs {
						xs = append(xs, r.OutputTokenThroughput)
					}
					val = median(xs)
				}
				s.Values = append(s.Values, val)
			}
			tput = append(tput, s)
		}
		thr := chart{Title: "Output token throughput vs concurrency" + suffix, XLabel: "concurrency", YLabel: "tokens/s", Categories: cats, Bars: true, Series: tput}
		for _, c := range []chart{ttft, e2e, thr, qps} {
			// render 只输出本包生成的标记，且所有文本都经过 esc 转义。
			out = append(out, template.HTML(c.render()))
		}
	}
	return out
}

// accErrors 把失败请求写成 "1 of 5 (bad_request: 1)"；没有失败时只写 "0 of N"。
func accErrors(r accuracy.EvalResult) string {
	s := fmt.Sprintf("%d of %d", r.Errors, r.Requests)
	if len(r.ErrorClasses) == 0 {
		return s
	}
	keys := make([]string, 0, len(r.ErrorClasses))
	for k := range r.ErrorClasses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, r.ErrorClasses[k])
	}
	return s + " (" + strings.Join(parts, ", ") + ")"
}

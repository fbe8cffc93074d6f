package perfreport

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
)

// perfRow 是压测表的一行。
type perfRow struct {
	In, Out, Conc, Round, Prompts, Failed   int
	TTFT, TPOT, E2E, QPS, OutTput, FailRate string
	// Missing 非空时该行是缺了分片的合并结果："shard 1 killed (signal: killed); …"。
	Missing string
	// ClientLag 是压测端自身的读取滞后 P50（不计入 TTFT）；没有内核时间戳时为 n/a。
	ClientLag string
	// HitRate、Preempt、PeakKV 是服务端报告的前缀缓存命中率、抢占次数与 KV 占用峰值，
	// DispatchLag 是轨迹回放的发出滞后 P50（loadgen.Summary.Workload）；不可得为 n/a。
	HitRate, Preempt, PeakKV, DispatchLag string
	// Turns 是多轮会话各轮的 "轮次: TTFT P50" 摘要（不是多轮会话时为空）。
	Turns string
	// Lat 是 vLLM bench serve 打印的那组时延：TTFT、TPOT、ITL（TPOT_SEC，全部请求合并的相邻 token
	// 间隔）与 E2E 各自的均值、中位数与 P99（已格式化，不可测为 n/a）。
	Lat [4][3]string
}

// perfView 是 HTML 片段的数据。
type perfView struct {
	Rows []perfRow
	// LatHeads 只用来让模板把 mean/median/P99 三列表头写四遍（TTFT、TPOT、ITL、E2E）。
	LatHeads  []int
	Charts    []template.HTML
	Timelines []template.HTML // 每个分组三张：TTFT 随时间、ITL 随时间、并发随时间
	TLGroups  int
	CapCharts []template.HTML
	CapRows   []capRow
	// SumHeads 与 SumRows 是汇总行表：可选列（客户端滞后、命中率、抢占、KV、发出滞后、多轮）在每一行
	// 都不可得时整列不画，Omitted 用一句话列出它们——"n/a" 只说一次，显示的列没有空白单元格。
	SumHeads []sumHead
	SumRows  []sumRow
	Omitted  string
	// Dists 是每个有两侧样本的组合的分布图（TTFT 与 E2E 按分位，当前实线、基线虚线空心点）；
	// 失败的组合展开，其余折叠。
	Dists []distView
}

// sumHead 是汇总行表的一个表头（Title 是悬停说明）。
type sumHead struct{ Name, Title string }

// sumCell 是汇总行表的一个单元格；Num 为真时右对齐。
type sumCell struct {
	Text string
	Num  bool
}

// sumRow 是汇总行表的一行（单元格与 SumHeads 一一对应）；Missing 非空时其后加一行 INCOMPLETE 说明。
type sumRow struct {
	Failed  int
	Missing string
	Cells   []sumCell
}

// sumCol 是汇总行表的一列：表头、取值，以及是否可选（可选列在每一行都不可得时不画）。
type sumCol struct {
	head     sumHead
	optional bool
	num      bool
	get      func(perfRow) string
}

// sumCols 是汇总行表的全部列，顺序即页面顺序。
var sumCols = []sumCol{
	{head: sumHead{Name: "input"}, num: true, get: func(r perfRow) string { return strconv.Itoa(r.In) }},
	{head: sumHead{Name: "output"}, num: true, get: func(r perfRow) string { return strconv.Itoa(r.Out) }},
	{head: sumHead{Name: "concurrency"}, num: true, get: func(r perfRow) string { return strconv.Itoa(r.Conc) }},
	{head: sumHead{Name: "round"}, num: true, get: func(r perfRow) string { return strconv.Itoa(r.Round) }},
	{head: sumHead{Name: "prompts"}, num: true, get: func(r perfRow) string { return strconv.Itoa(r.Prompts) }},
	{head: sumHead{Name: "failed"}, num: true, get: func(r perfRow) string { return strconv.Itoa(r.Failed) }},
	{head: sumHead{Name: "TTFT P99"}, num: true, get: func(r perfRow) string { return r.TTFT }},
	{head: sumHead{Name: "TPOT avg"}, num: true, get: func(r perfRow) string { return r.TPOT }},
	{head: sumHead{Name: "E2E P99"}, num: true, get: func(r perfRow) string { return r.E2E }},
	{head: sumHead{Name: "QPS"}, num: true, get: func(r perfRow) string { return r.QPS }},
	{head: sumHead{Name: "output tok/s"}, num: true, get: func(r perfRow) string { return r.OutTput }},
	{head: sumHead{Name: "fail rate"}, num: true, get: func(r perfRow) string { return r.FailRate }},
	{head: sumHead{Name: "client lag P50", Title: "load generator's own read lag, P50: first token in the socket to parsed; not part of TTFT"}, optional: true, num: true, get: func(r perfRow) string { return r.ClientLag }},
	{head: sumHead{Name: "prefix hit", Title: "server prefix cache hit rate in the group (vllm:prefix_cache_hits_total / queries)"}, optional: true, num: true, get: func(r perfRow) string { return r.HitRate }},
	{head: sumHead{Name: "preempt", Title: "server preemptions in the group"}, optional: true, num: true, get: func(r perfRow) string { return r.Preempt }},
	{head: sumHead{Name: "peak KV", Title: "highest vllm:kv_cache_usage_perc in the group"}, optional: true, num: true, get: func(r perfRow) string { return r.PeakKV }},
	{head: sumHead{Name: "dispatch lag P50", Title: "trace replay: actual send minus schedule, P50"}, optional: true, num: true, get: func(r perfRow) string { return r.DispatchLag }},
	{head: sumHead{Name: "TTFT by turn", Title: "multi-turn sessions: TTFT P50 by turn"}, optional: true, get: func(r perfRow) string { return r.Turns }},
}

// summaryTable 按 sumCols 排出汇总行表：可选列在每一行都是 "n/a" 或空时省去，并返回省去列的名字；
// 显示出来的列里，空值写 "n/a"，表中没有空白单元格。
func summaryTable(rows []perfRow) (heads []sumHead, out []sumRow, omitted string) {
	var keep []sumCol
	var dropped []string
	for _, c := range sumCols {
		seen := !c.optional
		for _, r := range rows {
			if v := c.get(r); v != "" && v != "n/a" {
				seen = true
				break
			}
		}
		if !seen {
			dropped = append(dropped, c.head.Name)
			continue
		}
		keep = append(keep, c)
		heads = append(heads, c.head)
	}
	for _, r := range rows {
		sr := sumRow{Failed: r.Failed, Missing: r.Missing}
		for _, c := range keep {
			v := c.get(r)
			if v == "" {
				v = "n/a"
			}
			sr.Cells = append(sr.Cells, sumCell{Text: v, Num: c.num})
		}
		out = append(out, sr)
	}
	return heads, out, strings.Join(dropped, ", ")
}

// distView 是一个组合的分布图：Combination 是组合名，Open 为真（该组合有门禁失败）时默认展开。
type distView struct {
	Combination string
	Open        bool
	Charts      []template.HTML
}

// page 是性能片段的模板（样式类与 report 的页面共用）。
var page = template.Must(template.New("perf").Parse(`<h3>Performance</h3>
{{if .Rows}}
<div class="charts">{{range .Charts}}{{.}}{{end}}</div>
{{range .Dists}}<details class="dist"{{if .Open}} open{{end}}><summary>{{.Combination}}: TTFT and E2E by percentile, current against the daily baseline{{if not .Open}} (no gate failed){{end}}</summary>
<div class="charts">{{range .Charts}}{{.}}{{end}}</div></details>
{{end}}{{if .Timelines}}<details class="timeline" open><summary>live timeline, {{.TLGroups}} groups (--bucket-interval)</summary>
<div class="charts">{{range .Timelines}}{{.}}{{end}}</div></details>{{end}}
<table class="perf lat"><tr><th rowspan="2">input</th><th rowspan="2">output</th><th rowspan="2">concurrency</th><th rowspan="2">round</th>
<th colspan="3">TTFT</th><th colspan="3">TPOT</th><th colspan="3" title="TPOT_SEC: gaps between consecutive output tokens, pooled over all requests (vLLM's ITL)">ITL</th><th colspan="3">E2E</th></tr>
<tr>{{range $i := .LatHeads}}<th>mean</th><th>median</th><th>P99</th>{{end}}</tr>
{{range .Rows}}<tr class="{{if .Failed}}row-fail{{else}}row-ok{{end}}"><td class="num">{{.In}}</td><td class="num">{{.Out}}</td><td class="num">{{.Conc}}</td><td class="num">{{.Round}}</td>{{range .Lat}}{{range .}}<td class="num">{{.}}</td>{{end}}{{end}}</tr>
{{end}}</table>
<details><summary>{{len .Rows}} summary rows</summary>
<table class="perf"><tr>{{range .SumHeads}}<th{{with .Title}} title="{{.}}"{{end}}>{{.Name}}</th>{{end}}</tr>
{{range .SumRows}}<tr class="{{if .Failed}}row-fail{{else}}row-ok{{end}}">{{range .Cells}}<td{{if .Num}} class="num"{{end}}>{{.Text}}</td>{{end}}</tr>
{{if .Missing}}<tr class="row-fail incomplete"><td colspan="{{len $.SumHeads}}">INCOMPLETE merge: missing {{.Missing}}</td></tr>{{end}}
{{end}}</table>{{with .Omitted}}<p class="note">Not measured in this run, so not shown: {{.}}.</p>{{end}}</details>
{{else}}<p class="note">No performance results.</p>{{end}}
{{if .CapRows}}<h3>Capacity</h3>
<div class="charts">{{range .CapCharts}}{{.}}{{end}}</div>
<table class="capacity"><tr><th>combination</th><th>goodput SLO</th><th>max sustainable rate</th><th>knee</th><th>max goodput</th><th>steps</th><th>stop</th><th>elapsed</th></tr>
{{range .CapRows}}<tr class="row-ok"><td>{{.Combo}}</td><td>{{.SLO}}</td><td class="num">{{.MaxRate}}</td><td class="num">{{.Knee}}</td><td class="num">{{.MaxGoodput}}</td><td class="num">{{.Steps}}</td><td>{{.Stop}}</td><td class="num">{{.Elapsed}}</td></tr>
{{end}}</table>{{end}}
`))

// html 渲染性能片段：曲线与吞吐图、时间线、汇总行表（缺分片的行标为 INCOMPLETE）与容量扫描。
func html(sc report.Scenario, gates []gate.Gate) (template.HTML, error) {
	perf, err := Rows(sc)
	if err != nil {
		return "", err
	}
	tl, err := Timeline(sc)
	if err != nil {
		return "", err
	}
	capacity, err := Capacity(sc)
	if err != nil {
		return "", err
	}
	v := perfView{LatHeads: []int{0, 1, 2, 3}}
	v.CapCharts, v.CapRows = capacityView(capacity)
	for _, r := range perf {
		var missing []string
		for _, l := range r.MissingShards {
			missing = append(missing, l.String())
		}
		cache := r.Workload.Cache
		if cache == (loadgen.ServerCache{}) {
			cache = loadgen.ServerCache{HitRate: -1, PrefixHits: -1, PrefixQueries: -1, Preemptions: -1, PeakKVUsage: -1} // 生产方没有填
		}
		v.Rows = append(v.Rows, perfRow{In: r.InputLength, Out: r.OutputLength, Conc: r.Concurrency, Round: r.Round,
			Prompts: r.NumPrompts, Failed: r.Failed,
			TTFT: secs(r.TTFT, r.TTFT.P99), TPOT: secs(r.TPOT, r.TPOT.Avg), E2E: secs(r.E2E, r.E2E.P99),
			QPS: fmt.Sprintf("%.2f", r.QPS), OutTput: grouped(r.OutputTokenThroughput), FailRate: fmt.Sprintf("%.2f%%", r.FailRate*100),
			ClientLag: secs(r.ClientLag, r.ClientLag.P50), Missing: strings.Join(missing, "; "),
			HitRate: ratioOrNA(cache.HitRate, "%.1f%%", 100), Preempt: ratioOrNA(cache.Preemptions, "%.0f", 1),
			PeakKV: ratioOrNA(cache.PeakKVUsage, "%.1f%%", 100), DispatchLag: secs(r.Workload.DispatchLag, r.Workload.DispatchLag.P50),
			Turns: turnsText(r.Workload.Turns), Lat: latTriples(r)})
	}
	if len(perf) > 0 {
		v.Charts = perfCharts(sc, perf, gates)
		v.SumHeads, v.SumRows, v.Omitted = summaryTable(v.Rows)
	}
	v.Timelines, v.TLGroups = timelineCharts(tl)
	v.Dists = distCharts(sc, gates)
	var b bytes.Buffer
	if err := page.Execute(&b, v); err != nil {
		return "", fmt.Errorf("perfreport: html: %w", err)
	}
	// 模板由 html/template 执行，所有数据都已转义；图表标记由 report.Chart 生成。
	return template.HTML(b.String()), nil
}

// latTriples 返回 TTFT、TPOT、ITL、E2E 的均值、中位数与 P99（vLLM bench serve 的口径）。
func latTriples(r loadgen.Summary) [4][3]string {
	var out [4][3]string
	for i, l := range []loadgen.Latency{r.TTFT, r.TPOT, r.TPOTSec, r.E2E} {
		out[i] = [3]string{secs(l, l.Avg), secs(l, l.P50), secs(l, l.P99)}
	}
	return out
}

// grouped 把非负数写成一位小数、千位分隔（"12,345.6"）；大吞吐一眼能读出数量级。
func grouped(v float64) string {
	s := fmt.Sprintf("%.1f", v)
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	out := b.String() + "." + frac
	if neg {
		out = "−" + out
	}
	return out
}

// secs 把时延格式化为表格文本；不可测时为 "n/a"（对应 CSV 的 −1）。
func secs(l loadgen.Latency, d time.Duration) string {
	if !l.Valid() {
		return "n/a"
	}
	return report.FormatMetric(gate.MetricTTFTP99, d.Seconds())
}

// metricThroughput 是吞吐图在基线表里的键：吞吐不是门禁指标，它的基线来自 QPS 门禁的
// Gate.BaselineOutputThroughput。
const metricThroughput = "output_token_throughput"

// maxSeries 是一张图中最多的组合（实线）数；再多就按输出长度拆图。
const maxSeries = 4

// perfCharts 画出时延-并发曲线（每个输入/输出组合一条线，有基线时叠加虚线）
// 与吞吐柱状图。多轮结果按 gate.Aggregate 的中位数口径合并。
func perfCharts(sc report.Scenario, perf []loadgen.Summary, gates []gate.Gate) []template.HTML {
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
	for _, r := range perf {
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
		if g.Scenario == sc.Name && g.Key != nil && g.BaselineOutputThroughput != nil {
			// 吞吐不是门禁，它的基线随 QPS 门禁而来（同一次基线运行、同一组合）。
			base[bkey{combo{g.Key.InputLength, g.Key.OutputLength, g.Key.Backend}, g.Key.Concurrency, metricThroughput}] = *g.BaselineOutputThroughput
		}
	}
	name := func(c combo) string {
		if len(backends) > 1 {
			return fmt.Sprintf("in%d/out%d %s", c.in, c.out, c.backend)
		}
		return fmt.Sprintf("in%d/out%d", c.in, c.out)
	}
	build := func(group []combo, metric string, pick func(gate.Baseline) float64, scale float64) []report.Series {
		var out []report.Series
		for ci, c := range group {
			s := report.Series{Name: name(c), Color: report.Color(ci)}
			bs := report.Series{Name: name(c) + " baseline", Dashed: true, Color: report.Color(ci)}
			hasBase := false
			for _, conc := range concs {
				val := math.NaN()
				if rs := rows[c][conc]; len(rs) > 0 {
					if x := pick(gate.Aggregate(gateRows(rs))); x > 0 {
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
		for _, r := range perf {
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
		ttft := report.Chart{Title: "TTFT P99 vs concurrency" + suffix, XLabel: "concurrency", YLabel: "TTFT P99 (" + tu + ")", Categories: cats,
			Series: build(group, gate.MetricTTFTP99, func(b gate.Baseline) float64 { return b.TTFTP99.Seconds() }, ts)}
		e2e := report.Chart{Title: "E2E P99 vs concurrency" + suffix, XLabel: "concurrency", YLabel: "E2E P99 (" + eu + ")", Categories: cats,
			Series: build(group, gate.MetricE2EP99, func(b gate.Baseline) float64 { return b.E2EP99.Seconds() }, es)}
		qps := report.Chart{Title: "QPS vs concurrency" + suffix, XLabel: "concurrency", YLabel: "requests/s", Categories: cats,
			Series: build(group, gate.MetricQPS, func(b gate.Baseline) float64 { return b.QPS }, 1)}
		// 吞吐柱状图：输出 token 吞吐（各轮中位数，gate.Aggregate 的口径），有基线时每根柱上一道虚线标记。
		thr := report.Chart{Title: "Output token throughput vs concurrency" + suffix, XLabel: "concurrency", YLabel: "tokens/s", Categories: cats, Bars: true,
			Series: build(group, metricThroughput, func(b gate.Baseline) float64 { return b.OutputThroughput }, 1)}
		for _, c := range []report.Chart{ttft, e2e, thr, qps} {
			out = append(out, c.SVG())
		}
	}
	return out
}

// ratioOrNA 把服务端缓存的一个值按 format 写出（乘以 scale）；-1（不可得）与生产方没有填的
// 零值 Workload 都写 n/a。
func ratioOrNA(v float64, format string, scale float64) string {
	if v < 0 {
		return "n/a"
	}
	return fmt.Sprintf(format, v*scale)
}

// turnsText 把多轮会话各轮的 TTFT P50 写成 "1: 12.3ms, 2: 8.1ms"，轮次越大越低说明前缀缓存接住了历史。
func turnsText(ts []loadgen.TurnSummary) string {
	var parts []string
	for _, t := range ts {
		if t.TTFT.Valid() {
			parts = append(parts, fmt.Sprintf("%d: %.1f ms", t.Turn, float64(t.TTFT.P50)/float64(time.Millisecond)))
		}
	}
	return strings.Join(parts, ", ")
}

// distCharts 为本场景每个带分布（gate.Gate.Distribution）的组合画两张图：TTFT 与 E2E 在
// P1…P99 上的分位数，当前实线、基线虚线空心点。整体平移时每个分位都分开，只有尾部变慢时
// 只有 P95、P99 分开——这是 P99 一个数字说不出来的。组合按门禁的顺序（c4、c8、c16）。
func distCharts(sc report.Scenario, gates []gate.Gate) []distView {
	var out []distView
	idx := map[string]int{}
	for _, g := range gates {
		if g.Scenario != sc.Name || g.Key == nil || g.Distribution == nil {
			continue
		}
		d := g.Distribution
		name := fmt.Sprintf("in%d-out%d-c%d", g.Key.InputLength, g.Key.OutputLength, g.Key.Concurrency)
		if g.Key.Backend != "" {
			name += " " + g.Key.Backend
		}
		i, ok := idx[name]
		if !ok {
			i = len(out)
			idx[name] = i
			out = append(out, distView{Combination: name})
		}
		label := map[string]string{gate.MetricTTFTP99: "TTFT", gate.MetricE2EP99: "E2E"}[g.Metric]
		scale, unit := 1000.0, "ms"
		for _, v := range append(append([]float64(nil), d.Current...), d.Baseline...) {
			if v >= 1 {
				scale, unit = 1, "s"
			}
		}
		cats := make([]string, len(d.Levels))
		for j, q := range d.Levels {
			cats[j] = gate.QuantileName(q)
		}
		mul := func(xs []float64) []float64 {
			ys := make([]float64, len(xs))
			for j, x := range xs {
				ys[j] = x * scale
			}
			return ys
		}
		ch := report.Chart{Title: label + " by percentile, " + name, XLabel: "percentile", YLabel: label + " (" + unit + ")", Categories: cats,
			Series: []report.Series{{Name: "this run", Color: report.Color(0), Values: mul(d.Current)},
				{Name: "daily baseline", Dashed: true, Color: report.Color(0), Values: mul(d.Baseline)}}}
		out[i].Charts = append(out[i].Charts, ch.SVG())
		if g.Verdict == gate.VerdictFail {
			out[i].Open = true
		}
	}
	return out
}

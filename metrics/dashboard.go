package metrics

import (
	"encoding/json"
	"fmt"
	"github.com/vllm-cibench/cibench/field"
	"io"
	"strings"
)

// 看板的默认值（需求 §7（docs/requirements.md））。
const (
	DefaultDashboardTitle = "vLLM CI Bench"
	DefaultDashboardUID   = "vllm-ci-bench"
	// DashboardDatasourceInput 是导入时要求用户选择 Prometheus 数据源的输入名，
	// 面板里以 ${DS_PROMETHEUS} 引用。
	DashboardDatasourceInput = "DS_PROMETHEUS"
)

// DashboardOptions 控制生成的 Grafana 看板。零值可用。
type DashboardOptions struct {
	// Prefix 是 metric_prefix 变量的默认值，应与推送时的 Options.Prefix 相同；空表示无前缀。
	Prefix string
	// Title 默认 DefaultDashboardTitle，UID 默认 DefaultDashboardUID。
	Title, UID string
}

// Dashboard 是生成好的 Grafana 看板（可导入的 JSON 模型）。
// 它只在 NewDashboard 中构造，之后只读。
type Dashboard struct {
	model   dashModel
	queries []DashboardQuery
}

// DashboardQuery 是看板中的一个 PromQL 表达式及其来源，供测试与 CI 逐条对真实
// Prometheus 求值（变量替换后）。Offset 是表达式里 offset 的时长（如 "1d"），空表示无。
type DashboardQuery struct {
	Panel  string // 面板标题，或 "variable:<name>"
	RefID  string // 面板内的 refId，变量为空
	Expr   string // 未替换变量的表达式；变量查询为 label_values(...) 中的选择器
	Label  string // 变量查询取值的标签名，面板查询为空
	Offset string
}

// 以下是 Grafana 看板 JSON 模型中本生成器用到的部分，字段名与 Grafana 一致，
// 由测试用 grafana-foundation-sdk 严格解析校验。

// dashModel 是看板顶层对象（含导入用的 __inputs/__requires）。
type dashModel struct {
	Inputs               []dashInput     `json:"__inputs"`
	Requires             []dashRequire   `json:"__requires"`
	Annotations          dashAnnotations `json:"annotations"`
	Description          string          `json:"description"`
	Editable             bool            `json:"editable"`
	FiscalYearStartMonth int             `json:"fiscalYearStartMonth"`
	GraphTooltip         int             `json:"graphTooltip"`
	Links                []struct{}      `json:"links"`
	Panels               []any           `json:"panels"`
	SchemaVersion        int             `json:"schemaVersion"`
	Tags                 []string        `json:"tags"`
	Templating           dashTemplating  `json:"templating"`
	Time                 dashTime        `json:"time"`
	Timepicker           struct{}        `json:"timepicker"`
	Timezone             string          `json:"timezone"`
	Title                string          `json:"title"`
	UID                  string          `json:"uid"`
	Version              int             `json:"version"`
}

// dashInput 声明导入时需要映射的数据源。
type dashInput struct {
	Name        string `json:"name"`
	Label       string `json:"label"`
	Description string `json:"description"`
	Type        string `json:"type"`
	PluginID    string `json:"pluginId"`
	PluginName  string `json:"pluginName"`
}

// dashRequire 声明看板依赖的 Grafana 版本、数据源与面板插件。
type dashRequire struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

// dashAnnotations 只含 Grafana 内置的注释查询。
type dashAnnotations struct {
	List []dashAnnotation `json:"list"`
}

// dashAnnotation 是一条注释查询。
type dashAnnotation struct {
	BuiltIn    int       `json:"builtIn"`
	Datasource dashDSRef `json:"datasource"`
	Enable     bool      `json:"enable"`
	Hide       bool      `json:"hide"`
	IconColor  string    `json:"iconColor"`
	Name       string    `json:"name"`
	Type       string    `json:"type"`
}

// dashDSRef 引用一个数据源。
type dashDSRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// dashTemplating 是变量列表。
type dashTemplating struct {
	List []dashVar `json:"list"`
}

// dashTime 是默认时间范围。
type dashTime struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// dashVar 是一个模板变量（query、custom 或 textbox）。
type dashVar struct {
	Type        string       `json:"type"`
	Name        string       `json:"name"`
	Label       string       `json:"label"`
	Description string       `json:"description,omitempty"`
	Datasource  *dashDSRef   `json:"datasource,omitempty"`
	Definition  string       `json:"definition,omitempty"`
	Query       any          `json:"query"`
	Current     *dashOption  `json:"current,omitempty"`
	Options     []dashOption `json:"options"`
	Multi       bool         `json:"multi"`
	IncludeAll  bool         `json:"includeAll"`
	AllValue    string       `json:"allValue,omitempty"`
	Refresh     int          `json:"refresh"`
	Sort        int          `json:"sort"`
	Hide        int          `json:"hide"`
	Regex       string       `json:"regex"`
}

// dashVarQuery 是 Prometheus 数据源的 label_values 变量查询对象。
type dashVarQuery struct {
	QryType int    `json:"qryType"`
	Query   string `json:"query"`
	RefID   string `json:"refId"`
}

// dashOption 是变量的一个取值。
type dashOption struct {
	Selected bool `json:"selected"`
	Text     any  `json:"text"`
	Value    any  `json:"value"`
}

// dashRow 是可折叠的行标题。
type dashRow struct {
	Type      string     `json:"type"`
	ID        int        `json:"id"`
	Title     string     `json:"title"`
	Collapsed bool       `json:"collapsed"`
	GridPos   dashGrid   `json:"gridPos"`
	Panels    []struct{} `json:"panels"`
}

// dashGrid 是面板在 24 列网格中的位置。
type dashGrid struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}

// dashPanel 是一个可视化面板。
type dashPanel struct {
	Type            string          `json:"type"`
	ID              int             `json:"id"`
	Title           string          `json:"title"`
	Description     string          `json:"description,omitempty"`
	Datasource      dashDSRef       `json:"datasource"`
	GridPos         dashGrid        `json:"gridPos"`
	Targets         []dashTarget    `json:"targets"`
	FieldConfig     dashFieldConfig `json:"fieldConfig"`
	Options         any             `json:"options"`
	Transformations []dashTransform `json:"transformations,omitempty"`
}

// dashTarget 是一个 Prometheus 查询。
type dashTarget struct {
	Datasource   dashDSRef `json:"datasource"`
	EditorMode   string    `json:"editorMode"`
	Expr         string    `json:"expr"`
	Format       string    `json:"format"`
	Instant      bool      `json:"instant"`
	Range        bool      `json:"range"`
	LegendFormat string    `json:"legendFormat"`
	RefID        string    `json:"refId"`
}

// dashFieldConfig 是字段配置（默认值与覆盖）。
type dashFieldConfig struct {
	Defaults  dashFieldDefaults `json:"defaults"`
	Overrides []dashOverride    `json:"overrides"`
}

// dashFieldDefaults 是字段默认配置。
type dashFieldDefaults struct {
	Unit       string         `json:"unit,omitempty"`
	Decimals   *float64       `json:"decimals,omitempty"`
	Min        *float64       `json:"min,omitempty"`
	Max        *float64       `json:"max,omitempty"`
	Mappings   []dashMapping  `json:"mappings"`
	Thresholds dashThresholds `json:"thresholds"`
	Color      dashFieldColor `json:"color"`
	Custom     map[string]any `json:"custom,omitempty"`
	NoValue    string         `json:"noValue,omitempty"`
}

// dashMapping 是值映射（1 → PASS 绿，0 → FAIL 红）。
type dashMapping struct {
	Type    string                      `json:"type"`
	Options map[string]dashMappingValue `json:"options"`
}

// dashMappingValue 是一个映射结果。
type dashMappingValue struct {
	Text  string `json:"text"`
	Color string `json:"color"`
	Index int    `json:"index"`
}

// dashThresholds 是阈值配置。
type dashThresholds struct {
	Mode  string          `json:"mode"`
	Steps []dashThreshold `json:"steps"`
}

// dashThreshold 是一个阈值步；Value 为 nil 表示基准（-Infinity）。
type dashThreshold struct {
	Color string   `json:"color"`
	Value *float64 `json:"value"`
}

// dashFieldColor 是字段配色方式。
type dashFieldColor struct {
	Mode string `json:"mode"`
}

// dashOverride 是按字段名的覆盖配置。
type dashOverride struct {
	Matcher    dashMatcher    `json:"matcher"`
	Properties []dashProperty `json:"properties"`
}

// dashMatcher 选择被覆盖的字段。
type dashMatcher struct {
	ID      string `json:"id"`
	Options string `json:"options"`
}

// dashProperty 是一个覆盖属性。
type dashProperty struct {
	ID    string `json:"id"`
	Value any    `json:"value"`
}

// dashTransform 是一个数据变换。
type dashTransform struct {
	ID      string `json:"id"`
	Options any    `json:"options"`
}

// f64 返回浮点数指针，用于可选的 min/max/阈值。
func f64(v float64) *float64 { return &v }

// genState 在生成过程中分配面板 id、网格位置并收集查询。
type genState struct {
	d      *Dashboard
	ds     dashDSRef
	nextID int
	y      int // 当前行的 y
	x      int // 当前行已占用的宽度
	rowH   int // 当前行中最高面板的高度
}

// id 分配下一个面板 id。
func (g *genState) id() int { g.nextID++; return g.nextID }

// place 在 24 列网格中按行放置宽 w 高 h 的面板。
func (g *genState) place(w, h int) dashGrid {
	if g.x+w > 24 {
		g.y += g.rowH
		g.x, g.rowH = 0, 0
	}
	pos := dashGrid{H: h, W: w, X: g.x, Y: g.y}
	g.x += w
	if h > g.rowH {
		g.rowH = h
	}
	return pos
}

// row 另起一行并放置一个行标题。
func (g *genState) row(title string) {
	if g.x > 0 {
		g.y += g.rowH
	}
	g.x, g.rowH = 0, 0
	g.d.model.Panels = append(g.d.model.Panels, dashRow{Type: "row", ID: g.id(), Title: title, GridPos: dashGrid{H: 1, W: 24, X: 0, Y: g.y}, Panels: []struct{}{}})
	g.y++
}

// target 生成一个查询并记录到 Queries 中。
func (g *genState) target(panel, ref, expr, legend, format string, instant bool, offset string) dashTarget {
	g.d.queries = append(g.d.queries, DashboardQuery{Panel: panel, RefID: ref, Expr: expr, Offset: offset})
	return dashTarget{Datasource: g.ds, EditorMode: "code", Expr: expr, Format: format, Instant: instant, Range: !instant,
		LegendFormat: legend, RefID: ref}
}

// 变量选择器片段。所有面板只看 run_type="daily"（需求 §7（docs/requirements.md））。
const (
	runSel  = `run_type="daily",model=~"$model",quant=~"$quant",scenario=~"$scenario"`
	perfSel = runSel + `,dataset=~"$dataset",backend=~"$backend",concurrency=~"$concurrency",input_len=~"$input_len",output_len=~"$output_len"`
	accSel  = runSel + `,dataset=~"$dataset"`
	// perfLegend 让每条曲线能分辨组合；比较曲线再加上 Today / -1d / -7d 后缀。
	perfLegend = "{{model}} {{quant}} {{scenario}} c={{concurrency}} {{input_len}}/{{output_len}}"
)

// comparisons 是 Today / −1d / −7d 三条对比曲线：PromQL offset 即逐查询的 time shift
// （Grafana 的面板 time shift 会整体平移面板内所有查询，无法在同一面板里对比）。
var comparisons = []struct{ ref, offset, suffix string }{
	{"A", "", "Today"}, {"B", "1d", "-1d"}, {"C", "7d", "-7d"},
}

// vec 生成 `${metric_prefix}name{sel}`，可选 offset。
func vec(name, sel, offset string) string {
	s := "${metric_prefix}" + name + "{" + sel + "}"
	if offset != "" {
		s += " offset " + offset
	}
	return s
}

// turnPanel 生成多轮会话按轮次的 TTFT 面板：每个轮次一条曲线（今天的 P90，多轮 round 取平均），
// 轮次越大 TTFT 越低说明服务端的前缀缓存接住了历史。
func (g *genState) turnPanel() {
	const title = "Multi-turn TTFT P90 by turn"
	p := dashPanel{Type: "timeseries", ID: g.id(), Title: title, Description: "Time to first token of multi-turn sessions by turn index " +
		"(turn k carries the k-1 earlier questions and answers)", Datasource: g.ds, GridPos: g.place(12, 8),
		FieldConfig: dashFieldConfig{Defaults: dashFieldDefaults{Unit: "s", Mappings: []dashMapping{},
			Thresholds: dashThresholds{Mode: "absolute", Steps: []dashThreshold{{Color: "green"}}},
			Color:      dashFieldColor{Mode: "palette-classic"}}, Overrides: []dashOverride{}},
		Options: timeseriesOptions()}
	expr := "avg without (round) (" + vec(NamePerfTurnTTFT, perfSel+`,quantile="0.9"`, "") + ")"
	p.Targets = append(p.Targets, g.target(title, "A", expr, perfLegend+" turn {{turn}}", "time_series", false, ""))
	g.d.model.Panels = append(g.d.model.Panels, p)
}

// timeseries 生成带 Today/−1d/−7d 三条曲线的性能面板；多轮（round）取平均。
func (g *genState) comparePanel(title, desc, name, extraSel, unit string) {
	p := dashPanel{Type: "timeseries", ID: g.id(), Title: title, Description: desc, Datasource: g.ds, GridPos: g.place(12, 8),
		FieldConfig: dashFieldConfig{Defaults: dashFieldDefaults{Unit: unit, Mappings: []dashMapping{},
			Thresholds: dashThresholds{Mode: "absolute", Steps: []dashThreshold{{Color: "green"}}},
			Color:      dashFieldColor{Mode: "palette-classic"}}, Overrides: []dashOverride{}},
		Options: timeseriesOptions()}
	sel := perfSel + extraSel
	for _, c := range comparisons {
		expr := "avg without (round) (" + vec(name, sel, c.offset) + ")"
		p.Targets = append(p.Targets, g.target(title, c.ref, expr, perfLegend+" "+c.suffix, "time_series", false, c.offset))
	}
	g.d.model.Panels = append(g.d.model.Panels, p)
}

// timeseriesOptions 是时序面板的图例与提示设置：表格图例显示最新值。
func timeseriesOptions() map[string]any {
	return map[string]any{
		"legend":  map[string]any{"displayMode": "table", "placement": "bottom", "showLegend": true, "calcs": []string{"lastNotNull"}},
		"tooltip": map[string]any{"mode": "multi", "sort": "desc"},
	}
}

// statOptions 是统计面板设置：取最新值、背景着色。
func statOptions() map[string]any {
	return map[string]any{
		"graphMode": "none", "colorMode": "background", "justifyMode": "auto", "textMode": "value_and_name",
		"wideLayout": true, "showPercentChange": false, "percentChangeColorMode": "standard", "orientation": "auto",
		"reduceOptions": map[string]any{"values": false, "calcs": []string{"lastNotNull"}, "fields": ""},
	}
}

// tableOptions 是表格面板设置。
func tableOptions(sortBy string) map[string]any {
	o := map[string]any{
		"frameIndex": 0, "showHeader": true, "cellHeight": "sm",
		"footer": map[string]any{"show": false, "reducer": []string{"sum"}, "countRows": false, "fields": ""},
	}
	if sortBy != "" {
		o["sortBy"] = []map[string]any{{"displayName": sortBy, "desc": false}}
	}
	return o
}

// passFailMappings 把 1 显示为绿色 PASS、0 显示为红色 FAIL。
func passFailMappings() []dashMapping {
	return []dashMapping{{Type: "value", Options: map[string]dashMappingValue{
		"1": {Text: "PASS", Color: "green", Index: 0},
		"0": {Text: "FAIL", Color: "red", Index: 1},
	}}}
}

// redGreen 是 0 红、1 绿的阈值（通过率在 [0,1]，低于 1 即有失败）。
func redGreen() dashThresholds {
	return dashThresholds{Mode: "absolute", Steps: []dashThreshold{{Color: "red"}, {Color: "yellow", Value: f64(0.9)}, {Color: "green", Value: f64(1)}}}
}

// NewDashboard 生成需求 §7（docs/requirements.md）的 "vLLM CI Bench" 看板：默认最近 7 天，只看 run_type="daily"，
// 变量 model/quant/scenario/dataset/concurrency/input_len/output_len/backend/quantile/metric_prefix，
// 性能面板带 Today/−1d/−7d 对比，精度趋势，功能汇总与逐用例表（1 绿 0 红）。
func NewDashboard(opts DashboardOptions) (*Dashboard, error) {
	prefix, err := normalizePrefix(opts.Prefix)
	if err != nil {
		return nil, err
	}
	if prefix != "" {
		prefix += "_"
	}
	if opts.Title == "" {
		opts.Title = DefaultDashboardTitle
	}
	if opts.UID == "" {
		opts.UID = DefaultDashboardUID
	}
	if len(opts.UID) > 40 || strings.ContainsAny(opts.UID, "/ ") {
		return nil, &field.Error{Err: ErrInvalid, Field: "DashboardOptions.UID", Value: opts.UID, Reason: "must be at most 40 characters without spaces or slashes"}
	}
	d := &Dashboard{}
	ds := dashDSRef{Type: "prometheus", UID: "${" + DashboardDatasourceInput + "}"}
	d.model = dashModel{
		Inputs: []dashInput{{Name: DashboardDatasourceInput, Label: "Prometheus", Description: "Prometheus that scrapes the Pushgateway cibench pushes to",
			Type: "datasource", PluginID: "prometheus", PluginName: "Prometheus"}},
		Requires: []dashRequire{
			{Type: "grafana", ID: "grafana", Name: "Grafana", Version: "10.0.0"},
			{Type: "datasource", ID: "prometheus", Name: "Prometheus", Version: "1.0.0"},
			{Type: "panel", ID: "stat", Name: "Stat", Version: ""},
			{Type: "panel", ID: "table", Name: "Table", Version: ""},
			{Type: "panel", ID: "timeseries", Name: "Time series", Version: ""},
		},
		Annotations: dashAnnotations{List: []dashAnnotation{{BuiltIn: 1, Datasource: dashDSRef{Type: "grafana", UID: "-- Grafana --"},
			Enable: true, Hide: true, IconColor: "rgba(0, 211, 255, 1)", Name: "Annotations & Alerts", Type: "dashboard"}}},
		Description:   "Daily vLLM CI benchmark results pushed by cibench: performance (Today / -1d / -7d), accuracy trend, functional pass/fail.",
		Editable:      true,
		GraphTooltip:  1,
		Links:         []struct{}{},
		SchemaVersion: 39,
		Tags:          []string{"vllm", "cibench", "ci"},
		Time:          dashTime{From: "now-7d", To: "now"},
		Timezone:      "browser",
		Title:         opts.Title,
		UID:           opts.UID,
		Version:       1,
	}
	g := &genState{d: d, ds: ds}
	g.variables(prefix)

	g.runs()

	g.row("Performance — Today / -1d / -7d (run_type=daily)")
	g.comparePanel("TTFT P$quantile", "Time to first token at the selected quantile", NamePerfTTFT, `,quantile="$quantile"`, "s")
	g.comparePanel("E2E latency P$quantile", "End-to-end request latency at the selected quantile", NamePerfE2E, `,quantile="$quantile"`, "s")
	g.comparePanel("TPOT P$quantile", "Time per output token at the selected quantile", NamePerfTPOT, `,quantile="$quantile"`, "s")
	g.comparePanel("Output token throughput", "Completion tokens per second", NamePerfOutputTokenThroughput, "", "none")
	g.comparePanel("Total token throughput", "Prompt + completion tokens per second", NamePerfTotalTokenThroughput, "", "none")
	g.comparePanel("QPS", "Completed requests per second", NamePerfQPS, "", "reqps")
	g.comparePanel("Fail rate", "Failed / sent requests", NamePerfFailRatio, "", "percentunit")
	g.comparePanel("Capacity (max sustainable rate)", "Highest open-loop arrival rate at which the goodput SLOs hold without errors "+
		"(control_method: sweep); concurrency 0 means no client-side cap", NameCapacity, "", "reqps")
	g.comparePanel("Load generator read lag P$quantile", "The load generator's own lag between a first token reaching the socket and being parsed "+
		"(kernel receive timestamps; not part of TTFT). A rising line means the benchmark host, not the server, is busy.", NamePerfClientLag, `,quantile="$quantile"`, "s")

	g.row("Workload — server cache, preemptions, multi-turn (run_type=daily)")
	g.comparePanel("Prefix cache hit rate", "Server-reported prefix cache hit rate per group: delta vllm:prefix_cache_hits_total / "+
		"delta vllm:prefix_cache_queries_total (tokens)", NamePerfPrefixCacheHitRatio, "", "percentunit")
	g.comparePanel("Preemptions", "Server preemptions per group (delta vllm:num_preemptions_total): KV cache pressure", NamePerfPreemptions, "", "none")
	g.comparePanel("Peak KV cache usage", "Highest vllm:kv_cache_usage_perc sampled during the group", NamePerfPeakKVCacheUsage, "", "percentunit")
	g.comparePanel("Mean TTFT: server queue", "The queue share of the client's mean TTFT (vllm:request_queue_time_seconds over the group): "+
		"a rise here is a scheduler or capacity change (see docs/report.md, where the time went)", NamePerfTTFTPhase, `,phase="queue"`, "s")
	g.comparePanel("Mean TTFT: prefill", "The prefill share of the client's mean TTFT (vllm:request_prefill_time_seconds): "+
		"a rise here is a kernel, quantisation or prefix-cache change", NamePerfTTFTPhase, `,phase="prefill"`, "s")
	g.comparePanel("Trace dispatch lag P$quantile", "Trace replay: actual send minus the trace's schedule; above 1ms the client did not keep the schedule",
		NamePerfDispatchLag, `,quantile="$quantile"`, "s")
	g.turnPanel()

	g.row("Accuracy")
	g.accuracy()

	g.row("Functional")
	g.functional()
	return d, nil
}

// variables 生成全部模板变量；metric_prefix 是文本框（可为空），其默认值带末尾下划线。
func (g *genState) variables(prefix string) {
	v := &g.d.model.Templating.List
	*v = append(*v, dashVar{Type: "textbox", Name: "metric_prefix", Label: "metric prefix",
		Description: "Metric name prefix including the trailing underscore, e.g. cibench_; empty when metrics carry no prefix",
		Query:       prefix, Current: &dashOption{Text: prefix, Value: prefix},
		Options: []dashOption{{Selected: true, Text: prefix, Value: prefix}}})
	type lv struct{ name, label, metric, sel string }
	runInfo := NameRunInfo
	for _, q := range []lv{
		{"model", "model", runInfo, `run_type="daily"`},
		{"quant", "quant", runInfo, `run_type="daily",model=~"$model"`},
		{"scenario", "scenario", runInfo, `run_type="daily",model=~"$model",quant=~"$quant"`},
		{"dataset", "dataset", "", runSel},
		{"backend", "backend", NamePerfInfo, runSel},
		{"concurrency", "concurrency", NamePerfInfo, runSel},
		{"input_len", "input_len", NamePerfInfo, runSel},
		{"output_len", "output_len", NamePerfInfo, runSel},
	} {
		var sel string
		if q.metric == "" {
			// dataset 同时来自压测（random 等）与精度（gpqa 等）。
			sel = `{__name__=~"${metric_prefix}(` + NamePerfInfo + `|` + NameAccuracyScore + `)",` + q.sel + `}`
		} else {
			sel = "${metric_prefix}" + q.metric + "{" + q.sel + "}"
		}
		def := "label_values(" + sel + "," + q.label + ")"
		sort := 1 // 字母序
		if q.name == "concurrency" || q.name == "input_len" || q.name == "output_len" {
			sort = 3 // 数值序
		}
		g.d.queries = append(g.d.queries, DashboardQuery{Panel: "variable:" + q.name, Expr: sel, Label: q.label})
		*v = append(*v, dashVar{Type: "query", Name: q.name, Label: q.label, Datasource: &g.ds, Definition: def,
			Query:   dashVarQuery{QryType: 1, Query: def, RefID: "PrometheusVariableQueryEditor-VariableQuery"},
			Current: &dashOption{Selected: true, Text: []string{"All"}, Value: []string{"$__all"}},
			Options: []dashOption{}, Multi: true, IncludeAll: true, AllValue: ".*", Refresh: 2, Sort: sort})
	}
	opts := make([]dashOption, 0, len(quantiles))
	var vals []string
	for _, q := range quantiles {
		s := formatFloat(q)
		vals = append(vals, s)
		opts = append(opts, dashOption{Selected: s == "0.99", Text: s, Value: s})
	}
	*v = append(*v, dashVar{Type: "custom", Name: "quantile", Label: "quantile", Query: strings.Join(vals, ","),
		Current: &dashOption{Selected: true, Text: "0.99", Value: "0.99"}, Options: opts})
}

// accuracy 生成精度面板：总分趋势，以及 Today/−1d/−7d 对比的统计面板。
func (g *genState) accuracy() {
	unit := dashFieldDefaults{Unit: "percentunit", Min: f64(0), Max: f64(1), Mappings: []dashMapping{},
		Thresholds: dashThresholds{Mode: "absolute", Steps: []dashThreshold{{Color: "green"}}}, Color: dashFieldColor{Mode: "palette-classic"}}
	trend := dashPanel{Type: "timeseries", ID: g.id(), Title: "Accuracy score trend", Description: "simple-evals score per dataset",
		Datasource: g.ds, GridPos: g.place(16, 8), FieldConfig: dashFieldConfig{Defaults: unit, Overrides: []dashOverride{}},
		Options: timeseriesOptions()}
	trend.Targets = append(trend.Targets, g.target(trend.Title, "A", vec(NameAccuracyScore, accSel, ""),
		"{{model}} {{quant}} {{scenario}} {{dataset}}", "time_series", false, ""))
	g.d.model.Panels = append(g.d.model.Panels, trend)

	statDefaults := unit
	statDefaults.Color = dashFieldColor{Mode: "thresholds"}
	statDefaults.Thresholds = dashThresholds{Mode: "absolute", Steps: []dashThreshold{{Color: "blue"}}}
	cmp := dashPanel{Type: "stat", ID: g.id(), Title: "Accuracy score: Today / -1d / -7d", Datasource: g.ds, GridPos: g.place(8, 8),
		FieldConfig: dashFieldConfig{Defaults: statDefaults, Overrides: []dashOverride{}}, Options: statOptions()}
	for _, c := range comparisons {
		cmp.Targets = append(cmp.Targets, g.target(cmp.Title, c.ref, vec(NameAccuracyScore, accSel, c.offset),
			"{{dataset}} "+c.suffix, "time_series", true, c.offset))
	}
	g.d.model.Panels = append(g.d.model.Panels, cmp)
}

// functional 生成功能面板：各套件通过率、套件汇总表、逐用例 PASS/FAIL 表。
func (g *genState) functional() {
	ratio := dashPanel{Type: "stat", ID: g.id(), Title: "Functional pass ratio by suite", Datasource: g.ds, GridPos: g.place(8, 8),
		FieldConfig: dashFieldConfig{Defaults: dashFieldDefaults{Unit: "percentunit", Min: f64(0), Max: f64(1), Mappings: []dashMapping{},
			Thresholds: redGreen(), Color: dashFieldColor{Mode: "thresholds"}}, Overrides: []dashOverride{}},
		Options: statOptions()}
	ratio.Targets = append(ratio.Targets, g.target(ratio.Title, "A", vec(NameFunctionalPassRatio, runSel, ""),
		"{{model}} {{quant}} {{scenario}} {{suite}}", "time_series", true, ""))
	g.d.model.Panels = append(g.d.model.Panels, ratio)

	// 套件汇总表：三个即时查询按标签合并成一行一个套件。
	hide := map[string]bool{"Time": true, "__name__": true, "job": true, "instance": true, "run_type": true}
	summary := dashPanel{Type: "table", ID: g.id(), Title: "Functional suite summary", Datasource: g.ds, GridPos: g.place(16, 8),
		FieldConfig: dashFieldConfig{Defaults: dashFieldDefaults{Mappings: []dashMapping{},
			Thresholds: dashThresholds{Mode: "absolute", Steps: []dashThreshold{{Color: "green"}}}, Color: dashFieldColor{Mode: "thresholds"},
			Custom: map[string]any{"align": "auto", "inspect": false, "cellOptions": map[string]any{"type": "auto"}}},
			Overrides: []dashOverride{{Matcher: dashMatcher{ID: "byName", Options: "failed"}, Properties: []dashProperty{
				{ID: "thresholds", Value: dashThresholds{Mode: "absolute", Steps: []dashThreshold{{Color: "green"}, {Color: "red", Value: f64(1)}}}},
				{ID: "custom.cellOptions", Value: map[string]any{"type": "color-background", "mode": "basic"}},
			}}}},
		Options: tableOptions("suite")}
	for _, q := range []struct{ ref, name string }{{"A", NameFunctionalPassRatio}, {"B", NameFunctionalCasesTotal}, {"C", NameFunctionalCasesFailed}} {
		// 聚合去掉 __name__（以及 job/instance），三个查询的标签列才相同，merge 才能按套件合并成一行。
		expr := "max without (job, instance) (" + vec(q.name, runSel, "") + ")"
		summary.Targets = append(summary.Targets, g.target(summary.Title, q.ref, expr, "", "table", true, ""))
	}
	summary.Transformations = []dashTransform{
		{ID: "merge", Options: map[string]any{}},
		{ID: "organize", Options: map[string]any{"excludeByName": hide, "indexByName": map[string]int{},
			"renameByName": map[string]string{"Value #A": "pass ratio", "Value #B": "cases", "Value #C": "failed"}}},
	}
	g.d.model.Panels = append(g.d.model.Panels, summary)

	cases := dashPanel{Type: "table", ID: g.id(), Title: "Functional cases (1 = PASS green, 0 = FAIL red)", Datasource: g.ds,
		GridPos: g.place(24, 12),
		FieldConfig: dashFieldConfig{Defaults: dashFieldDefaults{Mappings: []dashMapping{},
			Thresholds: dashThresholds{Mode: "absolute", Steps: []dashThreshold{{Color: "green"}}}, Color: dashFieldColor{Mode: "thresholds"},
			Custom: map[string]any{"align": "auto", "inspect": false, "filterable": true, "cellOptions": map[string]any{"type": "auto"}}},
			Overrides: []dashOverride{{Matcher: dashMatcher{ID: "byName", Options: "result"}, Properties: []dashProperty{
				{ID: "mappings", Value: passFailMappings()},
				{ID: "thresholds", Value: dashThresholds{Mode: "absolute", Steps: []dashThreshold{{Color: "red"}, {Color: "green", Value: f64(1)}}}},
				{ID: "custom.cellOptions", Value: map[string]any{"type": "color-background", "mode": "basic"}},
			}}}},
		Options: tableOptions("case_id")}
	cases.Targets = append(cases.Targets, g.target(cases.Title, "A", vec(NameFunctionalCasePass, runSel, ""), "", "table", true, ""))
	cases.Transformations = []dashTransform{{ID: "organize", Options: map[string]any{"excludeByName": hide,
		"indexByName":  map[string]int{"model": 0, "quant": 1, "scenario": 2, "suite": 3, "case_id": 4, "Value": 5},
		"renameByName": map[string]string{"Value": "result"}}}}
	g.d.model.Panels = append(g.d.model.Panels, cases)
}

// runs 生成顶部的"最近一次每日运行"表：每个场景当前的 commit、branch、run_id，
// 让看曲线的人知道数据来自哪次提交。
func (g *genState) runs() {
	p := dashPanel{Type: "table", ID: g.id(), Title: "Latest daily runs", Datasource: g.ds, GridPos: g.place(24, 5),
		FieldConfig: dashFieldConfig{Defaults: dashFieldDefaults{Mappings: []dashMapping{},
			Thresholds: dashThresholds{Mode: "absolute", Steps: []dashThreshold{{Color: "green"}}}, Color: dashFieldColor{Mode: "thresholds"},
			Custom: map[string]any{"align": "auto", "inspect": false, "cellOptions": map[string]any{"type": "auto"}}},
			Overrides: []dashOverride{}},
		Options: tableOptions("scenario")}
	p.Targets = append(p.Targets, g.target(p.Title, "A", vec(NameRunInfo, runSel, ""), "", "table", true, ""))
	p.Transformations = []dashTransform{{ID: "organize", Options: map[string]any{
		"excludeByName": map[string]bool{"Time": true, "Value": true, "__name__": true, "job": true, "instance": true, "run_type": true},
		"indexByName":   map[string]int{"model": 0, "quant": 1, "scenario": 2, "commit": 3, "branch": 4, "run_id": 5},
		"renameByName":  map[string]string{}}}}
	g.d.model.Panels = append(g.d.model.Panels, p)
}

// Queries 返回看板中全部 PromQL（面板查询与变量查询）的副本。
func (d *Dashboard) Queries() []DashboardQuery { return append([]DashboardQuery(nil), d.queries...) }

// MarshalJSON 输出可导入 Grafana 的看板 JSON（含 __inputs）。
func (d *Dashboard) MarshalJSON() ([]byte, error) { return json.Marshal(d.model) }

// WriteJSON 把缩进后的看板 JSON 写入 w，末尾带换行，便于提交到仓库与 diff。
func (d *Dashboard) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d.model); err != nil {
		return fmt.Errorf("metrics: dashboard: %w", err)
	}
	return nil
}

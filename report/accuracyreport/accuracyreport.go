package accuracyreport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/report"
)

// Section 是精度结果在场景中的分节：summary.json 的 "accuracy" 键与 accuracy/results.json（函数而不是包级变量：
// 调用方拿到副本，改不动产物格式）。
func Section() report.Section { return report.Section{Key: "accuracy", File: "accuracy/results.json"} }

// Result 是一项精度评测结果及其门禁设置；门禁由 gate.JudgeAccuracy 经 accuracy.Gate 判定（见 Spec）。
// Threshold 为 nil 表示分数不设门禁（内置样例或 report_only），失败请求比例照常判定。
// Result.Source 记录评分所用数据的来源与 sha256，Result.Errors 是失败的请求数。
type Result struct {
	Result    accuracy.EvalResult `json:"result"`
	Threshold *float64            `json:"threshold,omitempty"`
	// Metric 是门禁比较的指标（空即 score）；它从不改写 Result.Score。
	Metric string `json:"metric,omitempty"`
	// MaxErrorRate 是允许的失败请求比例（0 = 任何失败都让门禁失败）。
	MaxErrorRate float64 `json:"max_error_rate"`
}

// Spec 返回交给 accuracy.Gate 的门禁设置。
func (a Result) Spec() accuracy.DatasetConfig {
	rate := a.MaxErrorRate
	return accuracy.DatasetConfig{Name: a.Result.Dataset, Threshold: a.Threshold, Metric: a.Metric, MaxErrorRate: &rate}
}

// Verdict 用 accuracy.Gate 判定这一项（与精度门禁、驱动的 on_failure 判断同一个函数）。
func (a Result) Verdict() accuracy.Verdict { return accuracy.Gate(a.Spec(), a.Result) }

// Record 追加场景的一项精度评测结果。指标映射被复制后再清洗非有限数值，调用方的值不会被改动。
func Record(run *report.Run, scenario string, res Result) error {
	res.Result.Metrics = maps.Clone(res.Result.Metrics)
	return run.UpdateSection(scenario, Section(), func(old json.RawMessage) (any, error) {
		// 从空列表（而不是 nil）开始：一次什么也没记下的运行（例如每个请求都失败）记为 []，不是 null。
		all := []Result{}
		if old != nil {
			if err := json.Unmarshal(old, &all); err != nil {
				return nil, err
			}
		}
		all = append(all, res)
		return &all, nil
	})
}

// Set 把精度结果存进内存中的场景（覆盖，不落盘），用于组装 report.Result。
func Set(sc *report.Scenario, rs []Result) error { return sc.SetSection(Section(), &rs) }

// Results 读出场景的精度结果（按记录顺序）；没有精度分节时为空。
func Results(sc report.Scenario) ([]Result, error) {
	var out []Result
	_, err := sc.Decode(Section().Key, &out)
	return out, err
}

// Renderer 返回精度评测的渲染器：总览表的 "accuracy" 列、HTML 片段与精度门禁输入。
func Renderer() report.Renderer {
	return report.Renderer{Name: "accuracy", Columns: []string{"accuracy"}, Cells: cells, HTML: html, Gate: gateInput}
}

// cells 给出总览表中精度结果的项数。
func cells(sc report.Scenario) ([]report.Cell, error) {
	rs, err := Results(sc)
	return []report.Cell{{Text: strconv.Itoa(len(rs)), Num: true}}, err
}

// gateInput 把每一项的判定（accuracy.Gate → gate.JudgeAccuracy）交给 gate。
func gateInput(sc report.Scenario, in *gate.Scenario) error {
	rs, err := Results(sc)
	if err != nil {
		return err
	}
	for _, a := range rs {
		in.Accuracy = append(in.Accuracy, input(a))
	}
	return nil
}

// input 用精度门禁规则的唯一实现（gate.JudgeAccuracy，经 accuracy.Gate）得出结论，加上样本数交给 gate。
func input(a Result) gate.Accuracy {
	return a.Verdict().Input(a.Result.Outcome())
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

// accView 是 HTML 片段的数据。
type accView struct {
	Rows  []accRow
	Chart template.HTML
}

// page 是精度片段的模板（样式类与 report 的页面共用）。
var page = template.Must(template.New("accuracy").Funcs(template.FuncMap{
	"verdictClass": func(v gate.Verdict) string { return "v-" + string(v) },
}).Parse(`<h3>Accuracy</h3>
{{if .Rows}}
<div class="charts">{{.Chart}}</div>
<table class="accuracy"><tr><th>dataset</th><th>model</th><th>examples</th><th>score</th><th>threshold</th><th>failed requests</th><th>verdict</th><th>data source</th></tr>
{{range .Rows}}<tr class="{{if eq .Verdict "fail"}}row-fail{{else}}row-ok{{end}}"><td>{{.Dataset}}</td><td>{{.Model}}</td><td class="num">{{.Examples}}</td><td class="num">{{.Score}}</td><td class="num">{{.Threshold}}</td><td class="num">{{.Errors}}</td><td class="{{verdictClass .Verdict}}" title="{{.Reason}}">{{.Verdict}}</td><td>{{or .Source "—"}}{{range .Files}}<br><code>{{.Name}}</code> sha256 <code>{{.SHA256}}</code> <span class="note">{{.Location}}</span>{{end}}</td></tr>
{{end}}</table>
{{else}}<p class="note">No accuracy results.</p>{{end}}
`))

// html 渲染精度片段：分数对阈值的柱状图与逐数据集的结论（结论与精度门禁同一判定，
// 场景的阶段错误也计入，见 gate.AccuracyGate）。
func html(sc report.Scenario, _ []gate.Gate) (template.HTML, error) {
	rs, err := Results(sc)
	if err != nil {
		return "", err
	}
	var v accView
	var cats []string
	var scores, thresholds []float64
	in := gate.Scenario{Name: sc.Name, Errors: sc.GateErrors()}
	for _, a := range rs {
		g := gate.AccuracyGate(in, input(a))
		row := accRow{Dataset: a.Result.Dataset, Model: a.Result.Model, Score: report.FormatMetric(gate.MetricScore, a.Result.Score), Threshold: "—", Examples: a.Result.Examples, Verdict: g.Verdict,
			Errors: accErrors(a.Result), Source: "not recorded", Reason: g.Reason}
		if src := a.Result.Source; src != nil {
			row.Source = src.Kind + ": " + src.Location
			for _, f := range src.Files {
				row.Files = append(row.Files, accFile{Name: f.Name, Location: f.Location, SHA256: f.SHA256})
			}
		}
		th := math.NaN()
		if a.Threshold != nil {
			row.Threshold = report.FormatMetric(gate.MetricScore, *a.Threshold)
			if a.Metric != "" && a.Metric != gate.MetricScore {
				row.Threshold = fmt.Sprintf("%s ≥ %g", a.Metric, *a.Threshold)
			}
			th = *a.Threshold
		}
		v.Rows = append(v.Rows, row)
		cats = append(cats, a.Result.Dataset)
		scores = append(scores, a.Result.Score)
		thresholds = append(thresholds, th)
	}
	if len(cats) > 0 {
		v.Chart = report.Chart{Title: "Accuracy score vs threshold", XLabel: "dataset", YLabel: "score", Categories: cats, Bars: true,
			Series: []report.Series{{Name: "score", Values: scores}, {Name: "threshold", Values: thresholds, Color: "#D55E00", Dashed: true}}}.SVG()
	}
	var b bytes.Buffer
	if err := page.Execute(&b, v); err != nil {
		return "", fmt.Errorf("accuracyreport: html: %w", err)
	}
	// 模板由 html/template 执行，所有数据都已转义；图表标记由 report.Chart 生成。
	return template.HTML(b.String()), nil
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

package functionalreport

import (
	"bytes"
	"fmt"
	"html/template"
	"time"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/report"
)

// Section 是功能报告在场景中的分节：summary.json 的 "functional" 键与 functional/result.json（函数而不是包级变量：
// 调用方拿到副本，改不动产物格式）。
func Section() report.Section {
	return report.Section{Key: "functional", File: "functional/result.json"}
}

// Record 记录场景的功能测试报告（覆盖此前的记录）。报告被复制后再清洗非有限数值，
// 调用方的 rep 不会被改动。
func Record(run *report.Run, scenario string, rep functional.Report) error {
	rep.Results = append([]functional.Result(nil), rep.Results...)
	rep.Suites = append([]functional.SuiteSummary(nil), rep.Suites...)
	for i := range rep.Suites {
		if p := rep.Suites[i].PassRatio; p != nil {
			v := *p // 不经指针改动调用方的通过率
			rep.Suites[i].PassRatio = &v
		}
	}
	return run.RecordSection(scenario, Section(), &rep)
}

// Set 把功能报告存进内存中的场景（不落盘），用于组装 report.Result（测试、导入的结果）。
func Set(sc *report.Scenario, rep functional.Report) error { return sc.SetSection(Section(), &rep) }

// Report 读出场景的功能报告；场景没有功能分节时返回 (nil, nil)。
func Report(sc report.Scenario) (*functional.Report, error) {
	var rep functional.Report
	ok, err := sc.Decode(Section().Key, &rep)
	if !ok || err != nil {
		return nil, err
	}
	return &rep, nil
}

// Renderer 返回功能测试的渲染器：总览表的 "functional" 列、HTML 片段、JUnit 套件与功能门禁输入。
func Renderer() report.Renderer {
	return report.Renderer{Name: "functional", Columns: []string{"functional"}, Cells: cells, HTML: html, JUnit: junitSuites, Gate: gateInput}
}

// cells 给出总览表的 "通过 / 失败 / 跳过" 单元格；没有功能报告时为 "—"。
func cells(sc report.Scenario) ([]report.Cell, error) {
	rep, err := Report(sc)
	if err != nil || rep == nil {
		return []report.Cell{{Text: "—"}}, err
	}
	v := view(rep)
	return []report.Cell{{Text: fmt.Sprintf("%d pass / %d fail / %d skip", v.Passed, len(v.Failed), v.Skipped)}}, nil
}

// gateInput 把功能报告变成逐用例结论；选择范围（Report.Selection）由 functional.Matches 判断。
func gateInput(sc report.Scenario, in *gate.Scenario) error {
	rep, err := Report(sc)
	if err != nil || rep == nil {
		return err
	}
	fn := &gate.Functional{Cases: make([]gate.Case, len(rep.Results))}
	for i, r := range rep.Results {
		fn.Cases[i] = gate.Case{ID: r.CaseID, Suite: r.Suite, Status: gate.CaseStatus(r.Status), PassedAfterRetry: r.PassedAfterRetry()}
	}
	sel := rep.Selection
	fn.InScope = func(id, suite string) bool { return functional.Matches(sel, id, suite) }
	in.Functional = fn
	return nil
}

// junitSuites 为场景的每个套件写一个 testsuite（名字 <场景>/functional/<套件>），
// 失败带类别、请求与响应，跳过与不支持记为 skipped，重试后通过写进 system-out。
func junitSuites(sc report.Scenario) ([]report.JUnitSuite, error) {
	rep, err := Report(sc)
	if err != nil || rep == nil {
		return nil, err
	}
	bySuite := map[string]*report.JUnitSuite{}
	var order []string
	for _, r := range rep.Results {
		s, ok := bySuite[r.Suite]
		if !ok {
			s = &report.JUnitSuite{Name: sc.Name + "/functional/" + r.Suite, Timestamp: rep.Started}
			bySuite[r.Suite] = s
			order = append(order, r.Suite)
		}
		c := report.JUnitCase{Name: r.CaseID, Classname: sc.Name + ".functional." + r.Suite, Seconds: r.Duration.Seconds()}
		switch r.Status {
		case functional.StatusFail:
			body := r.Reason
			if r.Request != "" {
				body += "\n\nrequest:\n" + r.Request
			}
			if r.Response != "" {
				body += "\n\nresponse:\n" + r.Response
			}
			// type 是故障类别（http_429、timeout、too_large……）；旧报告没有类别时为 fail。
			typ := string(r.Class)
			if typ == "" {
				typ = "fail"
			}
			c.Failure = &report.JUnitMessage{Message: r.Reason, Type: typ, Body: body}
		case functional.StatusCancelled:
			c.Failure = &report.JUnitMessage{Message: r.Reason, Type: string(functional.StatusCancelled)}
		case functional.StatusSkip:
			c.Skipped = &report.JUnitMessage{Message: r.Reason}
		case functional.StatusUnsupported:
			c.Skipped = &report.JUnitMessage{Message: "unsupported: " + r.Reason, Type: string(functional.StatusUnsupported)}
		}
		// 重试后才通过不是干净的通过：JUnit 没有这一状态，写进 system-out。
		c.SystemOut = r.RetryNote()
		s.Cases = append(s.Cases, c)
		s.Seconds += r.Duration.Seconds()
	}
	out := make([]report.JUnitSuite, 0, len(order))
	for _, name := range order {
		out = append(out, *bySuite[name])
	}
	return out, nil
}

// fnView 是 HTML 片段的数据。
type fnView struct {
	Has     bool
	Suites  []functional.SuiteSummary
	Failed  []functional.Result
	All     []functional.Result
	Passed  int
	Skipped int
}

// view 按状态归类用例；报告未带套件汇总时按结果计算（与 functional 包同一口径）。
func view(rep *functional.Report) fnView {
	v := fnView{Has: true, All: rep.Results, Suites: rep.Suites}
	if len(v.Suites) == 0 {
		v.Suites = functional.Summarize(rep.Results)
	}
	for _, r := range rep.Results {
		switch {
		case r.Status.Failing():
			v.Failed = append(v.Failed, r)
		case r.Status.NotRun():
			v.Skipped++
		case r.Status == functional.StatusPass:
			v.Passed++
		}
	}
	return v
}

// page 是功能片段的模板（样式类与 report 的页面共用）。
var page = template.Must(template.New("functional").Funcs(template.FuncMap{
	"statusClass": func(s functional.Status) string { return "s-" + string(s) },
	// 与报告其余的时延同一写法：数字与单位之间一个空格（"12 ms"、"1.250 s"）。
	"dur": func(d time.Duration) string {
		if d < time.Second {
			return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
		}
		return fmt.Sprintf("%.3f s", d.Seconds())
	},
	"ratio": func(f *float64) string {
		if f == nil {
			return "—"
		}
		return fmt.Sprintf("%.1f%%", *f*100)
	},
}).Parse(`<h3>Functional</h3>
{{if .Has}}
<table><tr><th>suite</th><th>total</th><th>passed</th><th>failed</th><th>skipped</th><th>pass ratio</th></tr>
{{range .Suites}}<tr class="{{if .Failed}}row-fail{{else}}row-ok{{end}}"><td>{{.Suite}}</td><td class="num">{{.Total}}</td><td class="num">{{.Passed}}{{if .PassedAfterRetry}} ({{.PassedAfterRetry}} after retry){{end}}</td><td class="num">{{.Failed}}</td><td class="num">{{.Skipped}}{{if .Unsupported}} + {{.Unsupported}} unsupported{{end}}{{if .Cancelled}} + {{.Cancelled}} cancelled{{end}}</td><td class="num">{{ratio .PassRatio}}</td></tr>
{{end}}</table>
{{if .Failed}}<table class="failed-cases"><tr><th>case</th><th>suite</th><th>reason</th><th>request / response</th></tr>
{{range .Failed}}<tr class="row-fail"><td>{{.CaseID}}</td><td>{{.Suite}}</td><td>{{or .Reason "—"}}</td><td>{{if .Request}}<pre>{{.Request}}</pre>{{end}}{{if .Response}}<pre>{{.Response}}</pre>{{end}}{{if not (or .Request .Response)}}—{{end}}</td></tr>
{{end}}</table>{{end}}
<details><summary>all {{len .All}} cases</summary><table><tr><th>case</th><th>suite</th><th>status</th><th>duration</th><th>reason</th></tr>
{{range .All}}<tr class="{{if eq .Status "fail"}}row-fail{{else}}row-ok{{end}}"><td>{{.CaseID}}</td><td>{{.Suite}}</td><td class="{{statusClass .Status}}">{{.Status}}{{if .PassedAfterRetry}} (after retry){{end}}</td><td class="num">{{dur .Duration}}</td><td>{{with .RetryNote}}<b>{{.}}</b> {{end}}{{or .Reason "—"}}</td></tr>
{{end}}</table></details>
{{else}}<p class="note">No functional report.</p>{{end}}
`))

// html 渲染功能片段：套件表、失败用例（含请求与响应）与全部用例；没有报告时写明。
func html(sc report.Scenario, _ []gate.Gate) (template.HTML, error) {
	rep, err := Report(sc)
	if err != nil {
		return "", err
	}
	var v fnView
	if rep != nil {
		v = view(rep)
	}
	var b bytes.Buffer
	if err := page.Execute(&b, v); err != nil {
		return "", fmt.Errorf("functionalreport: html: %w", err)
	}
	// 模板由 html/template 执行，所有数据都已转义。
	return template.HTML(b.String()), nil
}

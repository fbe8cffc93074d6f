package functionalreport_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/functionalreport"
	"github.com/vllm-cibench/cibench/runtype"
)

// t0 是测试使用的固定时钟起点。
var t0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

// sample 返回一份覆盖每种状态的功能报告：通过、重试后通过、带类别与请求/响应的失败、
// 取消、跳过、不支持；套件汇总带通过率。
func sample() functional.Report {
	ratio := 0.5
	return functional.Report{Model: "m", Started: t0, Duration: time.Second, Selection: []string{"chat"},
		Results: []functional.Result{
			{CaseID: "chat/a", Suite: "chat", Status: functional.StatusPass, Duration: 10 * time.Millisecond},
			{CaseID: "chat/b", Suite: "chat", Status: functional.StatusPass, Retried: 1, Duration: 20 * time.Millisecond},
			{CaseID: "chat/c", Suite: "chat", Status: functional.StatusFail, Class: functional.ClassTimeout, Reason: "took <80ms>", Request: `{"q":1}`, Response: `{"a":2}`, Duration: 80 * time.Millisecond},
			{CaseID: "tools/d", Suite: "tools", Status: functional.StatusFail, Reason: "no tool_calls", Duration: 5 * time.Millisecond},
			{CaseID: "tools/e", Suite: "tools", Status: functional.StatusCancelled, Reason: "interrupted"},
			{CaseID: "tools/f", Suite: "tools", Status: functional.StatusSkip, Reason: "needs reasoning"},
			{CaseID: "tools/g", Suite: "tools", Status: functional.StatusUnsupported, Reason: "top_k"},
		},
		Suites: []functional.SuiteSummary{{Suite: "chat", Total: 3, Passed: 2, PassedAfterRetry: 1, Failed: 1, PassRatio: &ratio}},
	}
}

// TestRecordRendersEverywhere 记录一份功能报告并结束运行，逐项核对：记录复制了调用方的数据、
// summary.json 的 "functional" 键与 functional/result.json、JUnit 的套件与用例、HTML 片段与总览单元格、
// 功能门禁（选择范围来自 Selection）。
func TestRecordRendersEverywhere(t *testing.T) {
	rd := functionalreport.Renderer()
	run, err := report.NewRun(t.TempDir(), runtype.PR, "f1", t0, report.WithRenderers(rd))
	if err != nil {
		t.Fatal(err)
	}
	rep := sample()
	if err := functionalreport.Record(run, "s", rep); err != nil {
		t.Fatal(err)
	}
	*rep.Suites[0].PassRatio = 0.9 // 调用方之后改自己的值，不影响已记录的报告
	rep.Results[0].Status = functional.StatusFail
	sc := run.Result().Scenarios[0]
	got, err := functionalreport.Report(sc)
	if err != nil || got == nil || *got.Suites[0].PassRatio != 0.5 || got.Results[0].Status != functional.StatusPass || got.Selection[0] != "chat" {
		t.Fatalf("recorded report %+v %v", got, err)
	}
	in, err := run.Result().GateInputs(rd)
	if err != nil {
		t.Fatal(err)
	}
	fn := in[0].Functional
	if fn == nil || len(fn.Cases) != 7 || !fn.Cases[1].PassedAfterRetry || fn.Cases[2].Status != gate.CaseStatus(functional.StatusFail) ||
		!fn.InScope("chat/zz", "chat") || fn.InScope("other/x", "other") {
		t.Fatalf("gate input %+v", fn)
	}
	gates, err := gate.Evaluate(context.Background(), in, gate.Thresholds{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Finish(context.Background(), gates, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	dir := run.Dir()
	var onDisk functional.Report
	b, err := os.ReadFile(filepath.Join(dir, "s", "functional", "result.json"))
	if err != nil || json.Unmarshal(b, &onDisk) != nil || len(onDisk.Results) != 7 {
		t.Fatalf("functional/result.json: %v", err)
	}
	var sum struct {
		Scenarios []struct {
			Functional *functional.Report `json:"functional"`
		} `json:"scenarios"`
	}
	b, _ = os.ReadFile(filepath.Join(dir, "summary.json"))
	if err := json.Unmarshal(b, &sum); err != nil || sum.Scenarios[0].Functional == nil || sum.Scenarios[0].Functional.Model != "m" {
		t.Fatalf("summary.json functional: %v", err)
	}

	var doc struct {
		Time   string `xml:"time,attr"`
		Suites []struct {
			Name      string `xml:"name,attr"`
			Tests     int    `xml:"tests,attr"`
			Failures  int    `xml:"failures,attr"`
			Skipped   int    `xml:"skipped,attr"`
			Time      string `xml:"time,attr"`
			Timestamp string `xml:"timestamp,attr"`
			Cases     []struct {
				Name      string `xml:"name,attr"`
				Classname string `xml:"classname,attr"`
				SystemOut string `xml:"system-out"`
				Failure   *struct {
					Type    string `xml:"type,attr"`
					Message string `xml:"message,attr"`
					Body    string `xml:",chardata"`
				} `xml:"failure"`
				Skipped *struct {
					Type    string `xml:"type,attr"`
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	b, _ = os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 3 || doc.Time != "0.115" {
		t.Fatalf("junit suites %d time %s:\n%s", len(doc.Suites), doc.Time, b)
	}
	chat, tools := doc.Suites[0], doc.Suites[1]
	if chat.Name != "s/functional/chat" || chat.Tests != 3 || chat.Failures != 1 || chat.Time != "0.110" || chat.Timestamp != "2026-11-20T00:00:00" ||
		chat.Cases[0].Classname != "s.functional.chat" || !strings.Contains(chat.Cases[1].SystemOut, "retr") {
		t.Fatalf("chat suite %+v", chat)
	}
	if f := chat.Cases[2].Failure; f == nil || f.Type != "timeout" || !strings.Contains(f.Body, "request:\n{\"q\":1}") || !strings.Contains(f.Body, "response:\n{\"a\":2}") {
		t.Fatalf("classed failure %+v", f)
	}
	if tools.Tests != 4 || tools.Failures != 2 || tools.Skipped != 2 || tools.Cases[0].Failure.Type != "fail" || tools.Cases[1].Failure.Type != "cancelled" ||
		tools.Cases[2].Skipped.Message != "needs reasoning" || tools.Cases[3].Skipped.Type != "unsupported" || tools.Cases[3].Skipped.Message != "unsupported: top_k" {
		t.Fatalf("tools suite %+v", tools)
	}
	if doc.Suites[2].Name != "gates" {
		t.Fatalf("last suite %s", doc.Suites[2].Name)
	}

	page, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	for _, want := range []string{"<th>functional</th>", "<td>2 pass / 3 fail / 2 skip</td>", "<h3>Functional</h3>", "2 (1 after retry)",
		"50.0%", "took &lt;80ms&gt;", "all 7 cases", `class="s-unsupported"`, "(after retry)"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// TestNoReportAndMistyped 检查没有功能报告的场景（说明、"—"、没有套件与门禁输入）与类型不对的分节
// （每个钩子都返回写明场景与分节的错误）。
func TestNoReportAndMistyped(t *testing.T) {
	rd := functionalreport.Renderer()
	empty := report.Scenario{Name: "e"}
	page, err := rd.HTML(empty, nil)
	if err != nil || !strings.Contains(string(page), "No functional report.") {
		t.Fatalf("HTML %q %v", page, err)
	}
	cells, err := rd.Cells(empty)
	if err != nil || len(cells) != 1 || cells[0].Text != "—" {
		t.Fatalf("cells %+v %v", cells, err)
	}
	suites, err := rd.JUnit(empty)
	var in gate.Scenario
	if err != nil || suites != nil || rd.Gate(empty, &in) != nil || in.Functional != nil {
		t.Fatalf("junit %+v %v, gate %+v", suites, err, in)
	}
	// 没带套件汇总的报告按结果计算（与 functional.Summarize 同一口径）。
	var sc report.Scenario
	rep := sample()
	rep.Suites = nil
	if err := functionalreport.Set(&sc, rep); err != nil {
		t.Fatal(err)
	}
	page, err = rd.HTML(sc, nil)
	if err != nil || !strings.Contains(string(page), "<td>tools</td>") {
		t.Fatalf("summarized suites missing: %v\n%s", err, page)
	}

	bad := report.Scenario{Name: "s", Sections: map[string]json.RawMessage{functionalreport.Section().Key: json.RawMessage(`[1,2]`)}}
	check := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "scenario s: section functional") {
			t.Errorf("%s: %v", what, err)
		}
	}
	_, err = functionalreport.Report(bad)
	check("Report", err)
	_, err = rd.Cells(bad)
	check("Cells", err)
	_, err = rd.HTML(bad, nil)
	check("HTML", err)
	_, err = rd.JUnit(bad)
	check("JUnit", err)
	check("Gate", rd.Gate(bad, &gate.Scenario{}))
}

package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/runtype"
)

// probe 是一个不属于 cibench 的阶段的结果（例如团队自己的检查）：report 不认识它的类型。
type probe struct {
	Checked int     `json:"checked"`
	Failed  int     `json:"failed"`
	Ratio   float64 `json:"ratio"`
}

// 团队阶段的两个分节：一个进 summary.json，一个只写文件。
var (
	probeSection = report.Section{Key: "probe", File: "probe/result.json"}
	traceSection = report.Section{Key: "probe_trace", File: "probe/trace.json", Detail: true}
)

// probeRenderer 是团队阶段的渲染器：总览两列（第二列故意缺省）、一个片段、一个 JUnit 套件、
// 一条功能用例形式的门禁输入，以及"有失败就算残缺"。
func probeRenderer() report.Renderer {
	decode := func(sc report.Scenario) (*probe, error) {
		var p probe
		ok, err := sc.Decode(probeSection.Key, &p)
		if !ok || err != nil {
			return nil, err
		}
		return &p, nil
	}
	return report.Renderer{
		Name:    "probe",
		Columns: []string{"probe checked", "probe extra"},
		Cells: func(sc report.Scenario) ([]report.Cell, error) {
			p, err := decode(sc)
			if err != nil || p == nil {
				return nil, err
			}
			return []report.Cell{{Text: strings.Repeat("x", p.Checked), Num: true}}, nil
		},
		HTML: func(sc report.Scenario, _ []gate.Gate) (template.HTML, error) {
			p, err := decode(sc)
			if err != nil {
				return "", err
			}
			if p == nil {
				return "<h3>Probe</h3><p>none</p>", nil
			}
			return template.HTML("<h3>Probe</h3><p id=\"probe\">" + strings.Repeat("!", p.Failed) + "</p>"), nil
		},
		JUnit: func(sc report.Scenario) ([]report.JUnitSuite, error) {
			p, err := decode(sc)
			if err != nil || p == nil {
				return nil, err
			}
			s := report.JUnitSuite{Name: sc.Name + "/probe", Seconds: 1.5, Timestamp: t0}
			for i := range p.Checked {
				c := report.JUnitCase{Name: "check" + string(rune('a'+i)), Classname: sc.Name + ".probe", Seconds: 0.5}
				if i < p.Failed {
					c.Failure = &report.JUnitMessage{Message: "bad", Type: "probe_fail", Body: "details"}
				} else if i == p.Checked-1 {
					c.Skipped = &report.JUnitMessage{Message: "not applicable"}
				}
				s.Cases = append(s.Cases, c)
			}
			return []report.JUnitSuite{s}, nil
		},
		Gate: func(sc report.Scenario, in *gate.Scenario) error {
			p, err := decode(sc)
			if err != nil || p == nil {
				return err
			}
			fn := &gate.Functional{}
			for i := range p.Checked {
				st := gate.CasePass
				if i < p.Failed {
					st = gate.CaseStatus("fail")
				}
				fn.Cases = append(fn.Cases, gate.Case{ID: "probe/" + string(rune('a'+i)), Suite: "probe", Status: st})
			}
			in.Functional = fn
			return nil
		},
		Incomplete: func(sc report.Scenario) (bool, error) {
			p, err := decode(sc)
			return p != nil && p.Failed > 0, err
		},
	}
}

// TestNewStageReachesReport 是 report 的接缝：一个 report 不认识的阶段经 RecordSection / UpdateSection
// 记下分节、经自己的 Renderer 进入 summary.json（与 name、errors 并列的键，原文照抄，NaN 记为 −1）、
// 各自的文件与索引、Load、JUnit（计数由 report 算出）、HTML（总览列与片段）、门禁与完整性判断。
func TestNewStageReachesReport(t *testing.T) {
	root := t.TempDir()
	run, err := report.NewRun(root, runtype.PR, "p1", t0, report.WithRenderers(probeRenderer()))
	if err != nil {
		t.Fatal(err)
	}
	if err := run.AddScenario(report.ScenarioInfo{Name: "s", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if err := run.RecordSection("s", probeSection, probe{Checked: 3, Failed: 1, Ratio: math.NaN()}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		err := run.UpdateSection("s", traceSection, func(old json.RawMessage) (any, error) {
			var lines []string
			if old != nil {
				if err := json.Unmarshal(old, &lines); err != nil {
					return nil, err
				}
			}
			return append(lines, "line"+string(rune('0'+i))), nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// update 返回错误时什么也不写。
	boom := errors.New("boom")
	if err := run.UpdateSection("s", traceSection, func(json.RawMessage) (any, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("UpdateSection error = %v", err)
	}
	in, err := run.Result().GateInputs(run.Renderers()...)
	if err != nil {
		t.Fatal(err)
	}
	gates, err := gate.Evaluate(context.Background(), in, gate.Thresholds{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := gateByName(t, gates, "s", "functional"); g.Verdict != gate.VerdictFail || g.Current != 1 {
		t.Fatalf("probe cases did not reach the functional gate: %+v", g)
	}
	code, err := run.Finish(context.Background(), gates, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	dir := run.Dir()
	res := run.Result()
	// 有失败的探测让渲染器报告残缺：运行不完整，永远不会成为基线。
	if code != gate.ExitGateFailed || res.Complete {
		t.Fatalf("exit %d complete %v", code, res.Complete)
	}
	sum, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(sum, []byte(`"model": "m",
      "probe": {
        "checked": 3,
        "failed": 1,
        "ratio": -1
      },
      "stages"`)) && !bytes.Contains(sum, []byte(`"probe": {
        "checked": 3,
        "failed": 1,
        "ratio": -1
      }`)) {
		t.Fatalf("summary.json lacks the probe section:\n%s", sum)
	}
	if bytes.Contains(sum, []byte("line0")) {
		t.Error("a Detail section leaked into summary.json")
	}
	for rel, want := range map[string]string{
		"s/probe/result.json":        `"ratio": -1`,
		"s/probe/trace.json":         `"line1"`,
		"s/section-probe.json":       `"file": "probe/result.json"`,
		"s/section-probe_trace.json": `"detail": true`,
	} {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s = %s (%v), want %s", rel, b, err, want)
		}
	}
	loaded, err := report.Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	var p probe
	var lines []string
	if ok, err := loaded.Scenarios[0].Decode(probeSection.Key, &p); !ok || err != nil || p.Checked != 3 || p.Ratio != -1 {
		t.Fatalf("loaded probe %+v %v %v", p, ok, err)
	}
	if ok, err := loaded.Scenarios[0].Decode(traceSection.Key, &lines); !ok || err != nil || strings.Join(lines, ",") != "line0,line1" {
		t.Fatalf("loaded trace %v %v %v", lines, ok, err)
	}
	if ok, err := loaded.Scenarios[0].Decode("absent", &p); ok || err != nil {
		t.Fatalf("absent section: %v %v", ok, err)
	}
	// JUnit：团队套件（计数由 report 算出）在 gates 之前，根元素的 time 计入套件耗时。
	b, _ := os.ReadFile(filepath.Join(dir, "junit.xml"))
	var doc struct {
		Time   string `xml:"time,attr"`
		Suites []struct {
			Name      string `xml:"name,attr"`
			Tests     int    `xml:"tests,attr"`
			Failures  int    `xml:"failures,attr"`
			Skipped   int    `xml:"skipped,attr"`
			Timestamp string `xml:"timestamp,attr"`
			Cases     []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Type string `xml:"type,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 2 || doc.Suites[0].Name != "s/probe" || doc.Suites[0].Tests != 3 || doc.Suites[0].Failures != 1 || doc.Suites[0].Skipped != 1 ||
		doc.Suites[0].Timestamp != "2026-11-20T00:00:00" || doc.Suites[0].Cases[0].Failure == nil || doc.Suites[0].Cases[0].Failure.Type != "probe_fail" ||
		doc.Suites[1].Name != "gates" || doc.Time != "1.500" {
		t.Fatalf("junit.xml:\n%s", b)
	}
	// HTML：总览表的两列（缺省的单元格写 —）、片段、FAIL 徽标（团队的门禁失败了；运行不完整另起一句）。
	page, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	for _, want := range []string{"<th>probe checked</th><th>probe extra</th>", `<td class="num">xxx</td><td>—</td>`, `<p id="probe">!</p>`, `id="verdict">FAIL`, "Incomplete:", "s/probe/trace.json"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// TestRendererErrorsKeepTheReport 检查一个渲染器出错（这里：分节类型不对）时，JUnit 与 HTML 照常写出
// 其余内容、该阶段换成错误说明，错误写明阶段与场景；门禁输入与完整性判断同样返回错误。
func TestRendererErrorsKeepTheReport(t *testing.T) {
	run, err := report.NewRun(t.TempDir(), runtype.PR, "e1", t0, report.WithRenderers(probeRenderer()))
	if err != nil {
		t.Fatal(err)
	}
	if err := run.RecordSection("s", probeSection, []string{"not", "a", "probe"}); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result().GateInputs(run.Renderers()...); err == nil || !strings.Contains(err.Error(), "probe gate input") {
		t.Fatalf("GateInputs: %v", err)
	}
	gates := []gate.Gate{{Scenario: "s", Name: "team/x", Kind: gate.KindStage, Verdict: gate.VerdictPass}}
	code, err := run.Finish(context.Background(), gates, t0.Add(time.Minute))
	if err == nil || !strings.Contains(err.Error(), "scenario s: probe") || code != gate.ExitError {
		t.Fatalf("Finish = %d, %v", code, err)
	}
	page, err := os.ReadFile(filepath.Join(run.Dir(), "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h3>probe</h3>", "cannot render this stage:", "team/x", `<td>error</td>`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	junitXML, err := os.ReadFile(filepath.Join(run.Dir(), "junit.xml"))
	if err != nil || !strings.Contains(string(junitXML), `name="team/x"`) {
		t.Fatalf("junit.xml = %s (%v)", junitXML, err)
	}
}

// TestSectionValidation 检查分节描述的校验（键、文件）与编码失败：错误包装 ErrSection、写明取值，
// 且任何东西都没有写进场景。
func TestSectionValidation(t *testing.T) {
	run, err := report.NewRun(t.TempDir(), runtype.PR, "v1", t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range []report.Section{
		{Key: "", File: "a/b.json"}, {Key: "../x", File: "a/b.json"}, {Key: "errors", File: "a/b.json"}, {Key: "name", File: "a/b.json"},
		{Key: "ok", File: "b.json"}, {Key: "ok", File: "/abs/b.json"}, {Key: "ok", File: "a/../b.json"}, {Key: "ok", File: "a/.hidden/b.json"},
		{Key: "ok", File: "a/.tmp-x/b.json"}, {Key: "ok", File: "a/"},
	} {
		if err := run.RecordSection("s", sec, 1); !errors.Is(err, report.ErrSection) {
			t.Errorf("RecordSection(%+v) = %v, want ErrSection", sec, err)
		}
		var sc report.Scenario
		if err := sc.SetSection(sec, 1); !errors.Is(err, report.ErrSection) {
			t.Errorf("SetSection(%+v) = %v, want ErrSection", sec, err)
		}
	}
	if err := run.RecordSection("s", probeSection, make(chan int)); !errors.Is(err, report.ErrSection) || !strings.Contains(err.Error(), "probe") {
		t.Errorf("unencodable value: %v", err)
	}
	if err := run.RecordSection("s", probeSection, (*probe)(nil)); !errors.Is(err, report.ErrSection) || !strings.Contains(err.Error(), "nil value") {
		t.Errorf("nil value: %v", err)
	}
	if err := run.RecordSection("../s", probeSection, 1); !errors.Is(err, report.ErrInvalidName) {
		t.Errorf("bad scenario name: %v", err)
	}
	if len(run.Result().Scenarios) != 0 {
		t.Fatalf("invalid records created scenarios: %+v", run.Result().Scenarios)
	}
	// SetSection 换到 Detail 时从 Sections 移走；不合法的原文让 MarshalJSON 报错而不是写出坏 JSON。
	sc := report.Scenario{Name: "s"}
	if err := sc.SetSection(probeSection, probe{Checked: 1}); err != nil {
		t.Fatal(err)
	}
	detail := probeSection
	detail.Detail = true
	if err := sc.SetSection(detail, probe{Checked: 2}); err != nil {
		t.Fatal(err)
	}
	if _, ok := sc.Sections[probeSection.Key]; ok || string(sc.Details[probeSection.Key]) != `{"checked":2,"failed":0,"ratio":0}` {
		t.Fatalf("sections %v details %v", sc.Sections, sc.Details)
	}
	sc.Sections = map[string]json.RawMessage{"bad": json.RawMessage(`{`)}
	if _, err := json.Marshal(sc); !errors.Is(err, report.ErrSection) {
		t.Fatalf("Marshal with invalid raw section: %v", err)
	}
	// Result 返回的场景副本不与 Run 共享分节映射（之后的记录不会改动调用方手里的副本）。
	if err := run.RecordSection("s", probeSection, probe{Checked: 1}); err != nil {
		t.Fatal(err)
	}
	snap := run.Result()
	if err := run.RecordSection("s", traceSection, []string{"later"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Scenarios[0].Section(traceSection.Key); ok {
		t.Error("a Result copy sees a section recorded after it was taken")
	}
}

// TestScenarioJSONShape 检查场景的 JSON 形状：固定字段、按键排序的分节、errors 与 stages；
// 解码时未知键都成为分节（report 不需要知道它们的类型），null 被忽略。
func TestScenarioJSONShape(t *testing.T) {
	sc := report.Scenario{Name: "s", Model: "m", Sections: map[string]json.RawMessage{"perf": json.RawMessage(`[1]`), "accuracy": json.RawMessage(`[]`)},
		Errors: []report.StageError{{Stage: report.StageDeploy, Message: "x"}}}
	b, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"s","model":"m","accuracy":[],"perf":[1],"errors":[{"stage":"deploy","message":"x"}]}`; string(b) != want {
		t.Fatalf("json %s\nwant %s", b, want)
	}
	if b, _ := json.Marshal(report.Scenario{Name: "only"}); string(b) != `{"name":"only"}` {
		t.Fatalf("bare scenario %s", b)
	}
	var back report.Scenario
	if err := json.Unmarshal([]byte(`{"name":"s","backend":"b","team":{"a":1},"gone":null,"stages":[{"stage":"perf","status":"ok"}]}`), &back); err != nil {
		t.Fatal(err)
	}
	if back.Name != "s" || back.Backend != "b" || string(back.Sections["team"]) != `{"a":1}` || len(back.Sections) != 1 || len(back.Stages) != 1 {
		t.Fatalf("decoded %+v", back)
	}
	if err := json.Unmarshal([]byte(`[1]`), &back); err == nil {
		t.Fatal("a JSON array decoded as a scenario")
	}
}

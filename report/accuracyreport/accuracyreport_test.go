package accuracyreport_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/accuracyreport"
	"github.com/vllm-cibench/cibench/runtype"
)

// t0 是测试使用的固定时钟起点。
var t0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

// ptr 返回 v 的指针。
func ptr[T any](v T) *T { return &v }

// TestRecordGateAndHTML 追加三项精度结果（通过、门禁指标低于阈值、失败请求超过上限）并结束运行：
// 记录按顺序追加且不改调用方的指标映射（NaN 记为 −1），门禁输入来自 accuracy.Gate，
// summary.json 与 accuracy/results.json 的形状不变，HTML 列出阈值、失败请求、数据来源与柱状图。
func TestRecordGateAndHTML(t *testing.T) {
	rd := accuracyreport.Renderer()
	run, err := report.NewRun(t.TempDir(), runtype.PR, "a1", t0, report.WithRenderers(rd))
	if err != nil {
		t.Fatal(err)
	}
	metrics := map[string]float64{"score": 0.6, "score:std": math.NaN()}
	pass := accuracyreport.Result{Threshold: ptr(0.5), Result: accuracy.EvalResult{Dataset: "gpqa", Model: "m", Score: 0.6, Examples: 10, Planned: 10, Requests: 10, Metrics: metrics,
		Source: &accuracy.DataSource{Kind: "url", Location: "https://example.invalid/se/", Files: []accuracy.DataFile{{Name: "gpqa.csv", Location: "https://example.invalid/se/gpqa.csv", SHA256: "feedbeef"}}}}}
	f1 := accuracyreport.Result{Threshold: ptr(0.5), Metric: "f1_score", Result: accuracy.EvalResult{Dataset: "drop", Model: "m", Score: 0.9, Examples: 10, Planned: 10, Requests: 10,
		Metrics: map[string]float64{"f1_score": 0.3}}}
	errs := accuracyreport.Result{MaxErrorRate: 0.1, Result: accuracy.EvalResult{Dataset: "mmlu", Model: "m", Score: 0.9, Examples: 10, Planned: 10, Requests: 10, Errors: 5,
		ErrorClasses: map[string]int{"http_500": 3, "bad_request": 2}}}
	for _, r := range []accuracyreport.Result{pass, f1, errs} {
		if err := accuracyreport.Record(run, "s", r); err != nil {
			t.Fatal(err)
		}
	}
	if !math.IsNaN(metrics["score:std"]) {
		t.Fatal("Record changed the caller's metrics map")
	}
	got, err := accuracyreport.Results(run.Result().Scenarios[0])
	if err != nil || len(got) != 3 || got[0].Result.Metrics["score:std"] != -1 || got[1].Metric != "f1_score" || got[2].MaxErrorRate != 0.1 {
		t.Fatalf("recorded %+v %v", got, err)
	}
	if !got[0].Verdict().Pass || got[1].Verdict().Pass || got[2].Verdict().Pass || got[1].Verdict().Value != 0.3 {
		t.Fatalf("verdicts %+v %+v %+v", got[0].Verdict(), got[1].Verdict(), got[2].Verdict())
	}
	if spec := got[2].Spec(); spec.Name != "mmlu" || spec.MaxErrorRate == nil || *spec.MaxErrorRate != 0.1 || spec.Threshold != nil {
		t.Fatalf("spec %+v", spec)
	}
	in, err := run.Result().GateInputs(rd)
	if err != nil {
		t.Fatal(err)
	}
	acc := in[0].Accuracy
	if len(acc) != 3 || !acc[0].Pass || !acc[0].ScoreGated || acc[1].Pass || acc[1].Metric != "f1_score" || acc[1].Value != 0.3 || acc[2].Pass || acc[2].ScoreGated ||
		!strings.Contains(acc[2].Reason, "5 of 10 requests failed") {
		t.Fatalf("gate inputs %+v", acc)
	}
	gates, err := gate.Evaluate(context.Background(), in, gate.Thresholds{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	code, err := run.Finish(context.Background(), gates, t0.Add(time.Minute))
	if err != nil || code != gate.ExitGateFailed {
		t.Fatalf("Finish = %d, %v", code, err)
	}
	var onDisk []accuracyreport.Result
	b, err := os.ReadFile(filepath.Join(run.Dir(), "s", "accuracy", "results.json"))
	if err != nil || json.Unmarshal(b, &onDisk) != nil || len(onDisk) != 3 || onDisk[0].Result.Source.Files[0].SHA256 != "feedbeef" {
		t.Fatalf("accuracy/results.json: %s", b)
	}
	sum, _ := os.ReadFile(filepath.Join(run.Dir(), "summary.json"))
	if !strings.Contains(string(sum), `"accuracy": [`) || !strings.Contains(string(sum), `"max_error_rate": 0.1`) {
		t.Fatalf("summary.json lacks the accuracy section:\n%s", sum)
	}
	page, _ := os.ReadFile(filepath.Join(run.Dir(), "report.html"))
	for _, want := range []string{"<th>accuracy</th>", `<td class="num">3</td>`, "<h3>Accuracy</h3>", "Accuracy score vs threshold", "0.5000", "f1_score ≥ 0.5",
		"5 of 10 (bad_request: 2, http_500: 3)", "0 of 10", "url: https://example.invalid/se/", "<code>gpqa.csv</code> sha256 <code>feedbeef</code>", "not recorded",
		`class="v-fail"`, `class="v-pass"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// TestNoResultsAndMistyped 检查没有精度结果的场景（说明、0 项、没有门禁输入）与类型不对的分节
// （读取、每个钩子与追加记录都返回写明场景与分节的错误）。
func TestNoResultsAndMistyped(t *testing.T) {
	rd := accuracyreport.Renderer()
	empty := report.Scenario{Name: "e"}
	page, err := rd.HTML(empty, nil)
	if err != nil || !strings.Contains(string(page), "No accuracy results.") {
		t.Fatalf("HTML %q %v", page, err)
	}
	var in gate.Scenario
	if cells, err := rd.Cells(empty); err != nil || cells[0].Text != "0" || rd.Gate(empty, &in) != nil || in.Accuracy != nil {
		t.Fatalf("cells %+v %v gate %+v", cells, err, in)
	}
	var sc report.Scenario
	if err := accuracyreport.Set(&sc, []accuracyreport.Result{{Result: accuracy.EvalResult{Dataset: "gpqa"}}}); err != nil {
		t.Fatal(err)
	}
	if rs, err := accuracyreport.Results(sc); err != nil || len(rs) != 1 {
		t.Fatalf("Set/Results %+v %v", rs, err)
	}

	bad := report.Scenario{Name: "s", Sections: map[string]json.RawMessage{accuracyreport.Section().Key: json.RawMessage(`{"result":1}`)}}
	check := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "scenario s: section accuracy") {
			t.Errorf("%s: %v", what, err)
		}
	}
	_, err = accuracyreport.Results(bad)
	check("Results", err)
	_, err = rd.Cells(bad)
	check("Cells", err)
	_, err = rd.HTML(bad, nil)
	check("HTML", err)
	check("Gate", rd.Gate(bad, &gate.Scenario{}))

	// 产物目录中的分节类型不对时，追加记录不覆盖它而是返回错误。
	root := t.TempDir()
	dir := filepath.Join(root, "pr", "bad")
	for name, body := range map[string]string{
		"run.json":                `{"schema":"` + report.SchemaVersion + `","run_type":"pr","run_id":"bad"}`,
		"s/scenario.json":         `{"name":"s"}`,
		"s/section-accuracy.json": `{"key":"accuracy","file":"accuracy/results.json"}`,
		"s/accuracy/results.json": `{"not":"a list"}`,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run, err := report.NewRun(root, "pr", "bad", t0)
	if err != nil {
		t.Fatal(err)
	}
	err = accuracyreport.Record(run, "s", accuracyreport.Result{})
	if err == nil || !strings.Contains(err.Error(), "scenario s: section accuracy") {
		t.Fatalf("Record onto a mistyped section: %v", err)
	}
}

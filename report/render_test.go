package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/internal/pagecheck"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/accuracyreport"
	"github.com/vllm-cibench/cibench/report/functionalreport"
)

// sampleResult 构造一次含回归的 PR 运行结果（两个场景，其中一个部署失败），
// 门禁已按 sampleBaseline 计算。
func sampleResult(t *testing.T) report.Result {
	t.Helper()
	base := report.Result{RunID: "daily-20261119", Scenarios: []report.Scenario{scenarioOf(t, stageScenario{Scenario: report.Scenario{Name: "emu-qwen", Model: "qwen"}, Perf: perfRows(1, 3)})}}
	res := report.Result{Schema: report.SchemaVersion, RunType: "pr", RunID: "pr-42", Commit: "deadbeef", Branch: "feature/x",
		Started: t0, Finished: t0.Add(3 * time.Minute), Complete: true,
		Scenarios: []report.Scenario{
			scenarioOf(t, stageScenario{Scenario: report.Scenario{Name: "emu-qwen", Model: "qwen", Quant: "w8a8", Deploy: "emulator", Backend: "openai-chat"},
				Functional: ptr(funcReport(5, 2)), Perf: perfRows(1.25, 1),
				Accuracy: []accuracyreport.Result{acc("gpqa", 0.41, ptr(0.3)), acc("mmlu <b>", 0.2, ptr(0.6))}}),
			{Name: "k8s-pd", Model: "qwen", Deploy: "kube", Errors: []report.StageError{{Stage: report.StageDeploy, Message: "pod not ready <after> 20m"}}},
		}}
	gates, err := gate.Evaluate(context.Background(), gateInputs(t, res), gate.Thresholds{}, gate.FromRun(gateRun(t, base)))
	if err != nil {
		t.Fatal(err)
	}
	res.Gates = gates
	res.ExitCode = gate.ExitCode(gates)
	res.Verdict = gate.VerdictFail
	return res
}

// TestJUnit 解析生成的 JUnit XML，核对套件、计数与失败信息。
func TestJUnit(t *testing.T) {
	res := sampleResult(t)
	// 第一个失败用例带故障类别：它成为 failure 的 type；没有类别的失败仍是 "fail"。
	classed := false
	for i, sc := range res.Scenarios {
		rep := view(t, sc).Functional
		if rep == nil {
			continue
		}
		for j := range rep.Results {
			if r := &rep.Results[j]; r.Status == functional.StatusFail && !classed {
				r.Class, classed = functional.ClassTimeout, true
			}
		}
		if err := functionalreport.Set(&res.Scenarios[i], *rep); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := report.WriteJUnit(&buf, res, renderers()...); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Skipped  int    `xml:"skipped,attr"`
		Suites   []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Skipped  int    `xml:"skipped,attr"`
			Cases    []struct {
				Name      string `xml:"name,attr"`
				Classname string `xml:"classname,attr"`
				Failure   *struct {
					Message string `xml:"message,attr"`
					Type    string `xml:"type,attr"`
					Body    string `xml:",chardata"`
				} `xml:"failure"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("invalid XML: %v\n%s", err, buf.String())
	}
	var names []string
	for _, s := range doc.Suites {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "emu-qwen/functional/chat,emu-qwen/functional/tools,emu-qwen/functional/reasoning,gates" {
		t.Fatalf("suites %s", got)
	}
	tools := doc.Suites[1]
	if tools.Tests != 2 || tools.Failures != 2 || tools.Cases[0].Failure == nil || !strings.Contains(tools.Cases[0].Failure.Body, `{"model":"m","messages":[]}`) {
		t.Fatalf("tools suite %+v", tools)
	}
	if !classed || tools.Cases[0].Failure.Type != "timeout" || tools.Cases[1].Failure == nil || tools.Cases[1].Failure.Type != "fail" {
		t.Fatalf("failure types: classed=%v %+v", classed, tools.Cases)
	}
	if r := doc.Suites[2]; r.Skipped != 1 || r.Cases[0].Skipped == nil || r.Cases[0].Skipped.Message != "capability reasoning not supported" {
		t.Fatalf("reasoning suite %+v", r)
	}
	gates := doc.Suites[3]
	if gates.Tests != len(res.Gates) {
		t.Fatalf("gates suite has %d cases, want %d", gates.Tests, len(res.Gates))
	}
	fails := 0
	for _, g := range res.Gates {
		if g.Verdict == gate.VerdictFail {
			fails++
		}
	}
	if gates.Failures != fails || doc.Failures != fails+2 || doc.Tests != 8+len(res.Gates) {
		t.Fatalf("failures gates=%d total=%d tests=%d (want %d, %d, %d)", gates.Failures, doc.Failures, doc.Tests, fails, fails+2, 8+len(res.Gates))
	}
	found := false
	for _, c := range gates.Cases {
		if c.Name == "perf/in2048-out1024-c4-openai-chat/ttft_p99_seconds" {
			found = true
			if c.Failure == nil || !strings.Contains(c.Failure.Message, "regressed +25.0%") || !strings.Contains(c.Failure.Body, "delta=+25.0%") {
				t.Fatalf("ttft gate case %+v", c)
			}
			if c.Classname != "emu-qwen.gates.performance" {
				t.Fatalf("classname %q", c.Classname)
			}
		}
	}
	if !found {
		t.Fatal("ttft gate case missing")
	}
	if doc.Name != "cibench pr pr-42" {
		t.Fatalf("name %q", doc.Name)
	}
}

// failWriter 在写入 n 字节后失败，用于检查写出错误被返回。
type failWriter struct{ n int }

// Write 写满 n 字节后返回错误。
func (f *failWriter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("disk full")
	}
	k := min(len(p), f.n)
	f.n -= k
	if k < len(p) {
		return k, errors.New("disk full")
	}
	return k, nil
}

// TestWriterErrorsPropagate 检查 JUnit 与 HTML 写出失败时返回错误。
func TestWriterErrorsPropagate(t *testing.T) {
	res := sampleResult(t)
	for _, n := range []int{0, 100, 5000} {
		if err := report.WriteJUnit(&failWriter{n: n}, res, renderers()...); err == nil {
			t.Errorf("WriteJUnit n=%d: no error", n)
		}
	}
	if err := report.WriteHTML(&failWriter{n: 0}, res, renderers()...); err == nil {
		t.Error("WriteHTML: no error")
	}
}

// TestHTMLContent 检查报告的关键内容：结论、回归门禁的基线/当前/差值、
// 精度阈值、SVG 图表结构（可被 XML 解析、有坐标轴刻度与图例）、转义、
// 无外部资源引用。
func TestHTMLContent(t *testing.T) {
	res := sampleResult(t)
	var buf bytes.Buffer
	if err := report.WriteHTML(&buf, res, renderers()...); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{
		`<title>FAIL — cibench pr pr-42</title>`,
		`id="verdict">FAIL</span>`,
		`perf/in2048-out1024-c4-openai-chat/ttft_p99_seconds`,
		`&#43;25.0%`,
		`(daily-20261119)`,
		`score 0.2000 &lt; threshold 0.6000`,
		`mmlu &lt;b&gt;`,
		`pod not ready &lt;after&gt; 20m`,
		`tools_call_a`,
		`TTFT P99 vs concurrency`, `E2E P99 vs concurrency`, `Output token throughput vs concurrency`, `QPS vs concurrency`, `Accuracy score vs threshold`,
		`in128/out128 baseline`,
		`commit deadbeef`,
		`client lag P50</th>`, `<td class="num">0.2 ms</td></tr>`,
		// 每一行都不可得的可选列不画，"n/a" 只在表下说一次。
		`Not measured in this run, so not shown: prefix hit, preempt, peak KV, dispatch lag P50, TTFT by turn.`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// 显示出来的列没有空白单元格（多轮列曾在非多轮运行里整列空白）。
	if strings.Contains(page, "<td></td>") {
		t.Error("report has a blank table cell")
	}
	if regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).MatchString(page) {
		t.Error("report references an external resource")
	}
	svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(page, -1)
	if len(svgs) != 5 {
		t.Fatalf("%d svg charts, want 5", len(svgs))
	}
	for i, s := range svgs {
		var root struct {
			XMLName xml.Name
			Texts   []string `xml:"text"`
			Paths   []struct {
				D string `xml:"d,attr"`
			} `xml:"path"`
			Rects []struct{} `xml:"rect"`
		}
		if err := xml.Unmarshal([]byte(s), &root); err != nil {
			t.Fatalf("svg %d not well-formed: %v", i, err)
		}
		if root.XMLName.Local != "svg" || len(root.Texts) < 8 {
			t.Fatalf("svg %d: %d texts", i, len(root.Texts))
		}
		if i < 2 && len(root.Paths) != 8 { // 4 个组合 + 4 条基线虚线
			t.Errorf("latency chart %d has %d paths, want 8", i, len(root.Paths))
		}
		if i == 2 && len(root.Rects) < 12 { // 4 组合 × 3 并发
			t.Errorf("throughput chart has %d rects", len(root.Rects))
		}
	}
	// Y 轴刻度是"好看"的数字：TTFT P99 图的最大值约 73 ms → 刻度 0..80 步长 20。
	for _, tick := range []string{">0<", ">20<", ">40<", ">60<", ">80<"} {
		if !strings.Contains(svgs[0], tick) {
			t.Errorf("TTFT chart lacks tick %s", tick)
		}
	}
	// 精度图：刻度 0..0.6 步长 0.2 且没有浮点尾巴；阈值画成两条虚线标记。
	for _, tick := range []string{">0.2<", ">0.4<", ">0.6<"} {
		if !strings.Contains(svgs[4], tick) {
			t.Errorf("accuracy chart lacks tick %s", tick)
		}
	}
	if strings.Contains(page, "0000000") || strings.Count(svgs[4], `class="mark"`) != 2 || strings.Count(svgs[4], `class="bar"`) != 2 {
		t.Errorf("accuracy chart: float noise or wrong marks/bars:\n%s", svgs[4])
	}
	// 两个 backend 的档位是不同的曲线（名字带 backend），而不是混成一条。
	two := report.Result{RunType: "pr", RunID: "b", Scenarios: []report.Scenario{scenarioOf(t, stageScenario{Scenario: report.Scenario{Name: "s"}, Perf: append(perfRows(1, 1), func() []loadgen.Summary {
		rows := perfRows(2, 1)
		for i := range rows {
			rows[i].Backend = "openai"
		}
		return rows
	}()...)})}}
	buf.Reset()
	if err := report.WriteHTML(&buf, two, renderers()...); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "in128/out128 openai-chat") || !strings.Contains(buf.String(), "in128/out128 openai<") {
		t.Error("series of different backends are not separated")
	}
	// 进行中的运行显示 INCOMPLETE 而不是 PASS。
	partial := report.Result{RunType: "pr", RunID: "x", Scenarios: []report.Scenario{{Name: "s"}}}
	buf.Reset()
	if err := report.WriteHTML(&buf, partial, renderers()...); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `id="verdict">INCOMPLETE`) || !strings.Contains(buf.String(), "No performance results.") {
		t.Fatal("partial report rendering")
	}
}

// chromiumPath 返回无头浏览器路径（pagecheck.Lookup：CIBENCH_CHROMIUM，其次 PATH 上的 chromium 等）；
// 找不到时跳过，CIBENCH_REQUIRE_INTEGRATION=1 时失败。
func chromiumPath(t *testing.T) string {
	t.Helper()
	p, err := pagecheck.Lookup()
	if err == nil {
		return p
	}
	if os.Getenv("CIBENCH_REQUIRE_INTEGRATION") == "1" {
		t.Fatalf("%v and CIBENCH_REQUIRE_INTEGRATION=1", err)
	}
	t.Skip(err)
	return ""
}

// dumpDOM 在无头 Chromium 中打开文件并返回脚本执行后的 DOM。
func dumpDOM(t *testing.T, bin, file string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+file)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	return stdout.String()
}

// TestHTMLInChromium 在真实的无头 Chromium 中打开报告：脚本跑完且没有 JS
// 错误、每个 SVG 都有非零的渲染包围盒、关键文本存在。
func TestHTMLInChromium(t *testing.T) {
	bin := chromiumPath(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	var buf bytes.Buffer
	if err := report.WriteHTML(&buf, sampleResult(t), renderers()...); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := dumpDOM(t, bin, file)
	for _, want := range []string{`data-js-ok="1"`, `data-charts="5"`, `data-charts-drawn="5"`, `<pre id="js-errors" hidden=""></pre>`,
		`perf/in2048-out1024-c4-openai-chat/ttft_p99_seconds`, `TTFT P99 vs concurrency`} {
		if !strings.Contains(dom, want) {
			t.Errorf("DOM lacks %q", want)
		}
	}

	// 反证：同一套检测能发现页面里的 JS 错误（测试可以失败）。
	bad := strings.Replace(buf.String(), `document.body.setAttribute("data-js-ok", "1");`, `undefinedFunction(); document.body.setAttribute("data-js-ok", "1");`, 1)
	if bad == buf.String() {
		t.Fatal("could not inject a JS error")
	}
	badFile := filepath.Join(dir, "bad.html")
	if err := os.WriteFile(badFile, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	dom = dumpDOM(t, bin, badFile)
	if strings.Contains(dom, `data-js-ok="1"`) || !strings.Contains(dom, "undefinedFunction") {
		t.Fatalf("injected JS error not detected:\n%s", firstLines(dom, 40))
	}
}

// firstLines 返回 s 的前 n 行，失败信息不至于太长。
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

var _ io.Writer = (*failWriter)(nil)

// TestHTMLDailyMatrixSplitsCharts 检查每日档（4 输入 × 3 输出 × 5 并发）的
// 12 个组合按输出长度拆成 3 组图，每张折线图至多 4 条实线，基线图例只一条。
func TestHTMLDailyMatrixSplitsCharts(t *testing.T) {
	var rows []loadgen.Summary
	for _, in := range []int{128, 512, 2048, 4096} {
		for _, out := range []int{128, 1024, 4096} {
			for _, c := range []int{1, 2, 4, 8, 16} {
				rows = append(rows, oneRow(c, time.Duration(in+c)*time.Microsecond, time.Duration(out)*time.Millisecond, float64(c), 0))
				rows[len(rows)-1].InputLength, rows[len(rows)-1].OutputLength = in, out
			}
		}
	}
	res := report.Result{RunType: "daily", RunID: "d", Scenarios: []report.Scenario{scenarioOf(t, stageScenario{Scenario: report.Scenario{Name: "s"}, Perf: rows})}}
	gates, err := gate.Evaluate(context.Background(), gateInputs(t, res), gate.Thresholds{}, gate.FromRun(gateRun(t, res)))
	if err != nil {
		t.Fatal(err)
	}
	res.Gates = gates
	var buf bytes.Buffer
	if err := report.WriteHTML(&buf, res, renderers()...); err != nil {
		t.Fatal(err)
	}
	svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(buf.String(), -1)
	if len(svgs) != 12 {
		t.Fatalf("%d charts, want 12", len(svgs))
	}
	for i, out := range []int{128, 1024, 4096} {
		want := fmt.Sprintf("TTFT P99 vs concurrency (output %d)", out)
		if !strings.Contains(svgs[4*i], want) {
			t.Errorf("chart %d is not %q", 4*i, want)
		}
		legend := strings.Count(svgs[4*i], `class="legend"`)
		paths := strings.Count(svgs[4*i], `class="line"`)
		if legend != 5 || paths != 8 || !strings.Contains(svgs[4*i], ">daily baseline<tspan") {
			t.Errorf("output %d: %d legend entries, %d lines", out, legend, paths)
		}
	}
}

// TestAccuracyDataSourceAndErrorsShown 校验 HTML 报告与 summary.json 显示每项精度结果的
// 数据来源（种类、位置、每个文件的 sha256）与失败请求数；旧报告两者都没有。
func TestAccuracyDataSourceAndErrorsShown(t *testing.T) {
	a := acc("gpqa", 0.6, ptr(0.2))
	a.Result.Requests, a.Result.Errors, a.Result.ErrorClasses = 5, 1, map[string]int{"bad_request": 1}
	a.Result.Source = &accuracy.DataSource{Kind: "url", Location: "https://openaipublic.blob.core.windows.net/simple-evals/",
		Files: []accuracy.DataFile{{Name: "gpqa_diamond.csv", Location: "https://openaipublic.blob.core.windows.net/simple-evals/gpqa_diamond.csv", SHA256: "abc123def456"}}}
	a.MaxErrorRate = 0.2
	res := report.Result{RunID: "r", Scenarios: []report.Scenario{scenarioOf(t, stageScenario{Scenario: report.Scenario{Name: "s"}, Accuracy: []accuracyreport.Result{a}})}}
	gates, err := gate.Evaluate(context.Background(), gateInputs(t, res), gate.Thresholds{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Gates = gates
	var page bytes.Buffer
	if err := report.WriteHTML(&page, res, renderers()...); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"url: https://openaipublic.blob.core.windows.net/simple-evals/", "<code>gpqa_diamond.csv</code> sha256 <code>abc123def456</code>", "1 of 5 (bad_request: 1)"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	js, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"source":{"kind":"url"`, `"sha256":"abc123def456"`, `"errors":1`, `"requests":5`, `"max_error_rate":0.2`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("summary JSON lacks %s", want)
		}
	}
}

package report_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/runtype"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/accuracyreport"
	"github.com/vllm-cibench/cibench/report/functionalreport"
	"github.com/vllm-cibench/cibench/report/perfreport"
)

// Example 展示驱动使用本包的完整顺序：建运行目录 → 逐阶段记录 → 与每日
// 基线比较 → Finish 写出报告并得到退出码。
func Example() {
	root, _ := os.MkdirTemp("", "artifacts")
	defer os.RemoveAll(root)
	now := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)

	// 渲染器决定哪些阶段进入 JUnit、HTML 与门禁；report 本身不认识任何阶段。
	run, err := report.NewRun(root, runtype.PR, "1234-1", now, report.WithCommit("abc123", "main"),
		report.WithRenderers(functionalreport.Renderer(), perfreport.Renderer(), accuracyreport.Renderer()))
	if err != nil {
		fmt.Println(err)
		return
	}
	run.Secrets().Add("key-read-from-env") // 运行时读到的 API Key
	_ = run.AddScenario(report.ScenarioInfo{Name: "emu", Model: "m", Deploy: "emulator"})
	logs, _ := run.ScenarioDir("emu", report.StageLogs) // 交给 Deployment.ArchiveLogs
	rel, _ := filepath.Rel(root, logs)
	fmt.Println(filepath.ToSlash(rel))

	row := loadgen.Summary{InputLength: 128, OutputLength: 128, Concurrency: 4, Backend: "openai-chat", QPS: 9,
		TTFT: loadgen.Latency{Count: 64, P99: 60 * time.Millisecond}, E2E: loadgen.Latency{Count: 64, P99: time.Second}}
	_ = perfreport.RecordRows(run, "emu", []loadgen.Summary{row})

	// 最近一次每日基线：通常来自 report.ArtifactBaselines 或 metrics 的 PromBaseline / CSVBaseline（都是 gate.Source）。
	baselines := gate.Static{
		{Scenario: "emu", InputLength: 128, OutputLength: 128, Concurrency: 4}: {RunID: "daily-1121", TTFTP99: 50 * time.Millisecond, E2EP99: time.Second, QPS: 9},
	}
	in, _ := run.Result().GateInputs(run.Renderers()...)
	gates, _ := gate.Evaluate(context.Background(), in, gate.DefaultThresholds(), baselines)
	for _, g := range gates {
		fmt.Printf("%-44s %-8s %s\n", g.Name, g.Verdict, g.Reason)
	}
	code, err := run.Finish(context.Background(), gates, now.Add(10*time.Minute))
	fmt.Println("exit code:", code, err)
	// Output:
	// pr/1234-1/emu/logs
	// functional                                   skipped  functional stage produced no report
	// perf/in128-out128-c4-openai-chat/ttft_p99_seconds fail     ttft_p99_seconds regressed +20.0% vs baseline (limit +10%)
	// perf/in128-out128-c4-openai-chat/e2e_p99_seconds pass     e2e_p99_seconds 0.0% vs baseline
	// perf/in128-out128-c4-openai-chat/qps         pass     qps 0.0% vs baseline
	// perf/in128-out128-c4-openai-chat/fail_rate   pass     fail rate 0.00% ≤ 5.00%
	// exit code: 1 <nil>
}

// ExampleSecrets 展示驱动如何在发出第一个请求之前登记运行时读到的密钥，
// 并用同一个 Secrets 包装自己的日志、再交给 NewRun：日志与产物遮住同一组密钥，
// 无论它以原文、base64（basic auth 实际发送的 "user:pass"）还是 URL 转义出现，
// 也无论它被切在几次 Write 之间。
func ExampleSecrets() {
	secrets := report.NewSecrets()
	secrets.Add("key-from-env+123")         // 场景的 API Key（os.Getenv 读到的值）
	secrets.AddBasicAuth("pgw", "pgw-pass") // Pushgateway 的 basic auth

	logw := secrets.Writer(os.Stdout) // 例如 slog.NewTextHandler(logw, nil)
	fmt.Fprint(logw, "GET /v1/models?key=key-from-env%2B123\n")
	fmt.Fprint(logw, "server said: Authorization: Basic cGd3On")
	fmt.Fprint(logw, "Bndy1wYXNz\n")
	fmt.Fprint(logw, "retrying with key-from-")
	fmt.Fprint(logw, "env+123 at http://admin:pw@10.0.0.1:8000/v1")
	_ = logw.Close() // 写出最后一行（不带换行）；不关闭 os.Stdout
	fmt.Println()

	fmt.Println(secrets.Redact(`error body: {"echo":"cGd3OnBndy1wYXNz"}`))

	root, _ := os.MkdirTemp("", "artifacts")
	defer os.RemoveAll(root)
	run, _ := report.NewRun(root, runtype.PR, "1", time.Now(), report.WithSecrets(secrets))
	fmt.Println(run.Secrets() == secrets)
	// Output:
	// GET /v1/models?key=[REDACTED]
	// server said: Authorization: Basic [REDACTED]
	// retrying with [REDACTED] at http://[REDACTED]@10.0.0.1:8000/v1
	// error body: {"echo":"[REDACTED]"}
	// true
}

// ExampleRun_RecordSection 展示一个 report 不认识的阶段（团队自己的检查）如何进入报告：
// 记下分节，再交一个 Renderer；report 本身一行都不用改。
func ExampleRun_RecordSection() {
	root, _ := os.MkdirTemp("", "artifacts")
	defer os.RemoveAll(root)
	type models struct {
		Listed []string `json:"listed"`
	}
	sec := report.Section{Key: "acme_models", File: "acme/models.json"}
	rd := report.Renderer{
		Name:    "acme",
		Columns: []string{"acme models"},
		Cells: func(sc report.Scenario) ([]report.Cell, error) {
			var m models
			_, err := sc.Decode(sec.Key, &m)
			return []report.Cell{{Text: fmt.Sprint(len(m.Listed)), Num: true}}, err
		},
		JUnit: func(sc report.Scenario) ([]report.JUnitSuite, error) {
			return []report.JUnitSuite{{Name: sc.Name + "/acme", Cases: []report.JUnitCase{{Name: "models_listed", Classname: sc.Name + ".acme"}}}}, nil
		},
	}
	now := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	run, _ := report.NewRun(root, runtype.PR, "1", now, report.WithRenderers(rd))
	_ = run.RecordSection("emu", sec, models{Listed: []string{"m"}})
	_, _ = run.Finish(context.Background(), nil, now.Add(time.Minute))

	summary, _ := os.ReadFile(filepath.Join(run.Dir(), "summary.json"))
	junit, _ := os.ReadFile(filepath.Join(run.Dir(), "junit.xml"))
	page, _ := os.ReadFile(filepath.Join(run.Dir(), "report.html"))
	fmt.Println(strings.Contains(string(summary), `"acme_models": {`))
	fmt.Println(strings.Contains(string(junit), `name="emu/acme"`))
	fmt.Println(strings.Contains(string(page), "<th>acme models</th>"))
	// Output:
	// true
	// true
	// true
}

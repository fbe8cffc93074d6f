package report_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/runtype"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/internal/redact"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/accuracyreport"
	"github.com/vllm-cibench/cibench/report/functionalreport"
	"github.com/vllm-cibench/cibench/report/perfreport"
)

// TestNoSecretInAnyArtifact 写出一次完整运行的全部产物（本包写入的、其他
// 包直接写进 ScenarioDir 的、配置与命令快照、日志、最终报告），密钥以各种
// 形态出现；Finish 之后逐个文件搜索，任何密钥片段都不应出现。
func TestNoSecretInAnyArtifact(t *testing.T) {
	const apiKey = "cibench-TEST-key-7f3a9c2e" // 运行时从环境读取的 API Key（形态不匹配任何内置规则）
	const urlPass = "pa55w0rd-in-url"
	const kubeToken = "kube-sa-token-Zx81Qq"
	const keyData = "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo="
	const bearer = "bearerTOKENvalue123456"
	secrets := []string{apiKey, urlPass, kubeToken, keyData, bearer}

	red := report.NewSecrets()
	red.Add(apiKey)
	root := t.TempDir()
	run, err := newRun(root, runtype.Daily, "20261122-1", t0, report.WithCommit("c0ffee", "main"), report.WithSecrets(red))
	if err != nil {
		t.Fatal(err)
	}
	baseURL := "http://admin:" + urlPass + "@10.0.0.7:8000/v1"

	// 命令与配置快照。
	if err := run.SnapshotCommand("", report.Command{Args: []string{"cibench-ci", "-base-url", baseURL, "-api-key", apiKey}, Env: map[string]string{"OPENAI_API_KEY": apiKey}, Time: t0}); err != nil {
		t.Fatal(err)
	}
	cfg := fstest.MapFS{
		"providers.yaml":    {Data: []byte("providers:\n  - id: 'vllm'\n    api_key: '" + apiKey + "'\n    base_url: '" + baseURL + "'\n")},
		"kube/config.yaml":  {Data: []byte("users:\n- name: ci\n  user:\n    token: " + kubeToken + "\n    client-key-data: " + keyData + "\n")},
		"matrix.yaml":       {Data: []byte("scenarios:\n  - name: emu\n")},
		"nested/deep/x.txt": {Data: []byte("Authorization: Bearer " + bearer + "\n")},
	}
	if err := run.SnapshotConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if err := run.AddScenario(report.ScenarioInfo{Name: "emu", Model: "m", Deploy: "emulator"}); err != nil {
		t.Fatal(err)
	}
	if err := run.SnapshotCommand("emu/logs/command.json", report.Command{Args: []string{"vllm", "serve", "m", "--api-key", apiKey}}); err != nil {
		t.Fatal(err)
	}

	// 其他包直接写入场景目录的文件（日志归档、CSV、精度 HTML）。
	logs, err := run.ScenarioDir("emu", report.StageLogs)
	if err != nil {
		t.Fatal(err)
	}
	serverLog := fmt.Sprintf("INFO started with --api-key %s\nDEBUG GET %s/models\nDEBUG header Authorization: Bearer %s\n", apiKey, baseURL, bearer)
	if err := os.WriteFile(filepath.Join(logs, "server.log"), []byte(serverLog), 0o644); err != nil {
		t.Fatal(err)
	}
	accDir, err := run.ScenarioDir("emu", report.StageAccuracy)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(accDir, "gpqa_m_20261122.html"), []byte("<pre>url="+baseURL+" key="+apiKey+"</pre>"), 0o644); err != nil {
		t.Fatal(err)
	}
	// 日志经脱敏 Writer 流式写入（驱动包装子进程输出的方式）。
	lf, err := run.Create("emu/logs/driver.log")
	if err != nil {
		t.Fatal(err)
	}
	lw := red.Writer(lf)
	for i := range 50 {
		fmt.Fprintf(lw, "step %d key=%s", i, apiKey[:7])
		fmt.Fprintf(lw, "%s url %s\n", apiKey[7:], baseURL)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lf.Close(); err != nil {
		t.Fatal(err)
	}

	// 阶段结果里也带着密钥（失败用例的请求体、错误信息、Provider 名）。
	rep := funcReport(2, 1)
	rep.Results[2].Request = `{"headers":{"Authorization":"Bearer ` + bearer + `"},"api_key":"` + apiKey + `"}`
	rep.Results[2].Reason = "POST " + baseURL + "/chat/completions: 401"
	if err := functionalreport.Record(run, "emu", rep); err != nil {
		t.Fatal(err)
	}
	rows := perfRows(1, 1)
	rows[0].Provider = apiKey
	if err := perfreport.RecordRows(run, "emu", rows); err != nil {
		t.Fatal(err)
	}
	a := acc("gpqa", 0.5, ptr(0.3))
	a.Result.Model = "m@" + apiKey
	if err := accuracyreport.Record(run, "emu", a); err != nil {
		t.Fatal(err)
	}
	if err := run.RecordError("emu", report.StagePerf, fmt.Errorf("dial %s: token=%s: %w", baseURL, kubeToken, errors.New("refused"))); err != nil {
		t.Fatal(err)
	}

	gates, err := gate.Evaluate(context.Background(), gateInputs(t, run.Result()), gate.Thresholds{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 门禁原因里也可能混入密钥（例如基线查询错误），Finish 必须照样脱敏。
	gates = append(gates, gate.Gate{Kind: gate.KindStage, Scenario: "emu", Name: "stage/custom", Verdict: gate.VerdictFail, Reason: "leak " + apiKey})
	code, err := run.Finish(context.Background(), gates, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if code != gate.ExitGateFailed {
		t.Fatalf("exit %d", code)
	}

	files := 0
	masks := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s contains secret %q", p, s)
			}
		}
		if strings.Contains(string(b), "cibench-TEST") {
			t.Errorf("%s contains a fragment of the API key", p)
		}
		if strings.Contains(string(b), redact.Mask) || strings.Contains(string(b), "[REDACTED]") {
			masks++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 15 || masks < 10 {
		t.Fatalf("walked %d files, %d with masks — the test did not exercise enough artifacts", files, masks)
	}
	// 报告链接了场景目录下的产物（相对路径，离线可点）。
	page, _ := os.ReadFile(filepath.Join(run.Dir(), "report.html"))
	for _, href := range []string{`href="emu/logs/server.log"`, `href="emu/accuracy/gpqa_m_20261122.html"`, `href="emu/perf/summary.json"`} {
		if !strings.Contains(string(page), href) {
			t.Errorf("report.html lacks %s", href)
		}
	}
	// 脱敏保留上下文：人仍能看出哪里有过凭据。
	b, _ := os.ReadFile(filepath.Join(run.Dir(), "emu", "logs", "server.log"))
	if want := "DEBUG GET http://" + redact.Mask + "@10.0.0.7:8000/v1/models\n"; !strings.Contains(string(b), want) {
		t.Fatalf("server.log:\n%s", b)
	}
	var got functional.Report
	readJSONFile(t, filepath.Join(run.Dir(), "emu", "functional", "result.json"), &got)
	if !strings.Contains(got.Results[2].Reason, "http://"+redact.Mask+"@10.0.0.7:8000/v1/chat/completions: 401") {
		t.Fatalf("reason %q", got.Results[2].Reason)
	}
}

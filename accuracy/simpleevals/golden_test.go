package simpleevals_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/accuracy/internal/scripted"
	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
	"github.com/vllm-cibench/cibench/endpoint"
)

// update 为 true 时重写 testdata/golden 下的期望输出。
var update = flag.Bool("update", false, "rewrite golden files in testdata/golden")

// golden 比较 got 与 testdata/golden/name；-update 时改写。
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden:\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

// python3OrSkip 返回 python3 路径；缺失时跳过（CIBENCH_REQUIRE_INTEGRATION=1 时失败）。
func python3OrSkip(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CIBENCH_REQUIRE_INTEGRATION") == "1" {
			t.Fatal("python3 not on PATH but CIBENCH_REQUIRE_INTEGRATION=1")
		}
		t.Skip("python3 not on PATH: skipped (humaneval executes code with python3)")
	}
	return p
}

// TestScriptedServerGolden 对每个数据集跑完整流程（真实回环 HTTP → 抽取 → 聚合 → 写出），
// 结果 JSON 与 JSONL 和 golden 文件逐字节比较。
func TestScriptedServerGolden(t *testing.T) {
	base := scripted.Serve(t, &scripted.Model{})
	sampler, err := accuracy.NewChatSampler(accuracy.ChatConfig{Endpoint: endpoint.Endpoint{BaseURLs: []string{base}, Model: "scripted"}, MaxTokens: 128, Temperature: 0.6, Timeout: 10 * time.Second, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		debug bool
	}{{"gpqa", true}, {"gpqa", false}, {"mmlu", false}, {"mmlu", true}, {"mgsm", true}, {"drop", true}, {"drop", false}, {"humaneval", true}} {
		mode := map[bool]string{true: "debug", false: "full"}[tc.debug]
		t.Run(tc.name+"_"+mode, func(t *testing.T) {
			mode := mode
			var e accuracy.Eval
			var err error
			if tc.name == "humaneval" {
				// 每次执行都要启动 python3，这里只抽 3 题（仍是 random.Random(0).sample）以控制耗时。
				e, err = simpleevals.NewHumanEval(simpleevals.SampleData(), simpleevals.HumanEvalOptions{
					NumExamples: 3, Interpreter: []string{python3OrSkip(t)}, ExecTimeout: 2 * time.Second})
				mode = "sub3"
			} else {
				e, err = simpleevals.Registry().New(tc.name, simpleevals.SampleData(), accuracy.EvalOptions{Debug: tc.debug})
			}
			if err != nil {
				t.Fatal(err)
			}
			res, err := accuracy.Run(context.Background(), sampler, e, accuracy.Options{Threads: 4, Model: "scripted"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Partial || res.Errors != 0 || res.Examples != res.Planned || res.Examples == 0 {
				t.Fatalf("unexpected run shape: %+v", res)
			}
			var js, jl bytes.Buffer
			if err := accuracy.WriteJSON(&js, res); err != nil {
				t.Fatal(err)
			}
			if err := accuracy.WriteJSONL(&jl, res.Singles); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+"_"+mode+".json", js.Bytes())
			golden(t, tc.name+"_"+mode+".jsonl", jl.Bytes())
			// 离线重评分必须得到同样的结果文件。
			recs, err := accuracy.ReadJSONL(&jl)
			if err != nil {
				t.Fatal(err)
			}
			again, err := accuracy.Rescore(context.Background(), e, recs, "scripted")
			if err != nil {
				t.Fatal(err)
			}
			var js2 bytes.Buffer
			if err := accuracy.WriteJSON(&js2, again); err != nil {
				t.Fatal(err)
			}
			if js2.String() != js.String() {
				t.Errorf("rescore differs:\n%s\nvs\n%s", js2.String(), js.String())
			}
			var html bytes.Buffer
			if err := accuracy.WriteHTML(&html, res); err != nil || !bytes.Contains(html.Bytes(), []byte("<h1>Metrics</h1>")) {
				t.Errorf("html: %v", err)
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
)

// TestEmulatorEndToEnd 不给 --url：进程内模拟器 + 内置合成数据，写出三种结果文件。
func TestEmulatorEndToEnd(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--dataset", "gpqa", "mmlu", "--debug", "--num-threads", "4", "--out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:%s\nstderr:%s", code, stdout.String(), stderr.String())
	}
	for _, ds := range []string{"gpqa", "mmlu"} {
		files, _ := filepath.Glob(filepath.Join(out, ds+"_cibench-emulator_*"))
		if len(files) != 3 {
			t.Fatalf("%s: files %v", ds, files)
		}
		js, _ := filepath.Glob(filepath.Join(out, ds+"_cibench-emulator_*.json"))
		b, err := os.ReadFile(js[0])
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]float64
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", js[0], err)
		}
		if _, ok := m["score"]; !ok {
			t.Fatalf("%s: no score in %s", ds, b)
		}
	}
	// 模拟器对多选题总是以 "Answer: X" 结尾，GPQA 的 5 个回复都必须被抽取到字母。
	jl, _ := filepath.Glob(filepath.Join(out, "gpqa_cibench-emulator_*.jsonl"))
	f, _ := os.Open(jl[0])
	recs, err := accuracy.ReadJSONL(f)
	f.Close()
	if err != nil || len(recs) != 5 {
		t.Fatalf("records=%d err=%v", len(recs), err)
	}
	for _, r := range recs {
		if len(r.ExtractedAnswer) != 1 || !strings.Contains("ABCD", r.ExtractedAnswer) {
			t.Errorf("%s: extracted %q from %q", r.ID, r.ExtractedAnswer, r.Response)
		}
	}
	if !strings.Contains(stderr.String(), "gpqa: 5/5 examples") || !strings.Contains(stdout.String(), "gpqa: score=") {
		t.Errorf("progress/summary missing:\n%s\n%s", stderr.String(), stdout.String())
	}
}

// TestURLAndDatasetPathWithGate 对外部地址（测试中启动的模拟器）与本地数据目录评测，
// 并用 --config 的阈值判定：阈值 1.0 不可能达到，退出码为 1。
func TestURLAndDatasetPathWithGate(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "qwen-test"})
	data := copySampleData(t)
	cfg := filepath.Join(t.TempDir(), "gate.yaml")
	os.WriteFile(cfg, []byte("debug: true\ndatasets:\n  - name: mgsm\n    threshold: 1.0\n"), 0o644)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--dataset", "mgsm", "--served-model-name", "qwen-test", "--url", ep.BaseURL(),
		"--dataset-path", data, "--debug", "--out", out, "--config", cfg, "--model", "Qwen/Qwen3-32B"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stdout.String(), "FAIL (score") {
		t.Fatalf("exit %d\nstdout:%s\nstderr:%s", code, stdout.String(), stderr.String())
	}
	if files, _ := filepath.Glob(filepath.Join(out, "mgsm_Qwen_Qwen3-32B_*.json")); len(files) != 1 {
		t.Fatalf("files %v", files)
	}
}

// TestArgumentErrors 覆盖参数错误、缺少数据来源与中断。
func TestArgumentErrors(t *testing.T) {
	var so, se bytes.Buffer
	if code := run(context.Background(), []string{"--bogus"}, &so, &se); code != 2 {
		t.Errorf("bogus flag: %d", code)
	}
	if code := run(context.Background(), []string{"--url", "http://127.0.0.1:1/v1"}, &so, &se); code != 2 {
		t.Errorf("missing served name: %d", code)
	}
	se.Reset()
	if code := run(context.Background(), []string{"--url", "http://127.0.0.1:1/v1", "--served-model-name", "m", "--dataset-url", "http://127.0.0.1:1/se/", "--out", t.TempDir()}, &so, &se); code != 1 ||
		!strings.Contains(se.String(), "gpqa_diamond.csv: GET http://127.0.0.1:1/se/gpqa_diamond.csv") {
		t.Errorf("unreachable data: %d %s", code, se.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--num-threads", "0"}, "--num-threads 0: must be in [1, 1024]"},
		{[]string{"--num-threads", "100000000"}, "--num-threads 100000000: must be in [1, 1024]"},
		{[]string{"--retries", "-1"}, "--retries -1"},
		{[]string{"--max-error-rate", "2"}, "--max-error-rate 2"},
		{[]string{"--dataset-path", "/a", "--dataset-url", "http://b/"}, "give one"},
	} {
		se.Reset()
		if code := run(context.Background(), c.args, &so, &se); code != 2 || !strings.Contains(se.String(), c.want) {
			t.Errorf("%v: exit %d %s", c.args, code, se.String())
		}
	}
	// 阈值越界的 --config 在启动任何东西之前就报错，并写明文件与字段。
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("datasets: [{name: gpqa, threshold: 7.5}]\n"), 0o644)
	se.Reset()
	if code := run(context.Background(), []string{"--config", bad}, &so, &se); code != 2 || !strings.Contains(se.String(), bad+": accuracy: invalid configuration: datasets[0].threshold: must be in (0, 1] (got \"7.5\")") {
		t.Errorf("threshold 7.5: %s", se.String())
	}
	if code := run(context.Background(), []string{"--dataset", "nope", "--out", t.TempDir()}, &so, &se); code != 2 {
		t.Errorf("unknown dataset: %d", code)
	}
	if code := run(context.Background(), []string{"--dataset-path", "/nonexistent", "--out", t.TempDir()}, &so, &se); code != 2 {
		t.Errorf("bad dataset path: %d", code)
	}
	if code := run(context.Background(), []string{"--config", "/nonexistent.yaml"}, &so, &se); code != 2 {
		t.Errorf("bad config: %d", code)
	}
	if got := splitDatasets([]string{"--dataset", "gpqa", "mmlu", "--debug"}); strings.Join(got, " ") != "--dataset=gpqa,mmlu --debug" {
		t.Errorf("split: %v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if code := run(ctx, []string{"--debug", "--out", t.TempDir()}, &so, &se); code != 130 && code != 1 {
		t.Errorf("cancelled: %d", code)
	}
}

// copySampleData 把仓库里的合成样例文件复制到临时目录，模拟 --dataset-path。
func copySampleData(t *testing.T) string {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	if err := os.CopyFS(data, os.DirFS("../../accuracy/simpleevals/sampledata")); err != nil {
		t.Fatal(err)
	}
	return data
}

// TestInterruptKeepsPartialResults 模拟 Ctrl-C：第 4 个请求到达时取消 ctx，
// 已完成的 3 个样本照常写出，退出码 130。
func TestInterruptKeepsPartialResults(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// 先读完请求体：服务器只有在请求体读完后才会探测到客户端断开并取消 r.Context()。
		io.Copy(io.Discard, r.Body)
		if n.Add(1) > 3 {
			cancel()
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"Answer: C"}}]}`))
	}))
	defer srv.Close()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"--dataset", "gpqa", "--served-model-name", "m", "--url", srv.URL + "/v1", "--dataset-path", copySampleData(t),
		"--debug", "--num-threads", "1", "--out", out}, &stdout, &stderr)
	if code != 130 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	jl, _ := filepath.Glob(filepath.Join(out, "gpqa_m_*.jsonl"))
	if len(jl) != 1 {
		t.Fatalf("jsonl files %v", jl)
	}
	f, _ := os.Open(jl[0])
	recs, err := accuracy.ReadJSONL(f)
	f.Close()
	if err != nil || len(recs) != 3 {
		t.Fatalf("records=%d err=%v", len(recs), err)
	}
	if !strings.Contains(stdout.String(), "examples=3/5") || !strings.Contains(stderr.String(), "partial results written") {
		t.Errorf("stdout=%s stderr=%s", stdout.String(), stderr.String())
	}
}

// TestEveryRequestFailedIsNotAPass 是 issue 14 的复现：每个请求都失败时旧命令行打印
// "errors=5 … PASS"（或不判定）并退出 0。现在失败请求比例超过 --max-error-rate（默认 0）
// 即 FAIL，退出码 1，并写出失败分类。
func TestEveryRequestFailedIsNotAPass(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--dataset", "gpqa", "--served-model-name", "m", "--url", srv.URL + "/v1", "--dataset-path", copySampleData(t),
		"--debug", "--retries", "0", "--out", t.TempDir()}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stdout.String(), "errors=5/5") || !strings.Contains(stdout.String(), "FAIL (5 of 5 requests failed (http_503: 5)") {
		t.Fatalf("exit %d\nstdout:%s\nstderr:%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "data: path ") || !strings.Contains(stdout.String(), "gpqa_diamond.csv sha256 ") {
		t.Errorf("data source not shown: %s", stdout.String())
	}
}

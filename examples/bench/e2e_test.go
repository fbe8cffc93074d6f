package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/internal/tokenize"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/dataset"
)

// captured 是被测服务端收到的一个生成请求的要点。
type captured struct {
	prompt    string
	maxTokens int
}

// capServer 是包在进程内模拟器外面的回环 HTTP 服务器，记下每个生成请求的 prompt 与 max_tokens。
type capServer struct {
	url  string
	mu   sync.Mutex
	reqs []captured
}

// startCapture 以 model 启动模拟器并在它前面加记录层，返回服务器与指向它的 providers.yaml。
func startCapture(t *testing.T, model string) (*capServer, string) {
	t.Helper()
	em, err := emulator.New(emulator.Config{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	cs := &capServer{}
	h := em.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/completions") {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
			var req struct {
				Messages []struct {
					Content string `json:"content"`
				} `json:"messages"`
				Prompt    string `json:"prompt"`
				MaxTokens int    `json:"max_tokens"`
				MaxCompl  int    `json:"max_completion_tokens"`
			}
			// loadgen 开跑前的探测请求（prompt "hi"、1 个 token）不算压测请求。
			if err := json.Unmarshal(body, &req); err == nil && !(req.Prompt+firstContent(req.Messages) == "hi" && max(req.MaxTokens, req.MaxCompl) == 1) {
				c := captured{prompt: req.Prompt, maxTokens: max(req.MaxTokens, req.MaxCompl)}
				if len(req.Messages) > 0 {
					c.prompt = req.Messages[0].Content
				}
				cs.mu.Lock()
				cs.reqs = append(cs.reqs, c)
				cs.mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cs.url = srv.URL
	prov := filepath.Join(t.TempDir(), "providers.yaml")
	yml := "providers:\n  - id: 'ascend-vllm'\n    name: 'ascend-vllm'\n    api_key: 'EMPTY'\n    base_url: '" + srv.URL + "/v1'\n    model_name: '" + model + "'\n    model_category: '" + model + "'\n"
	if err := os.WriteFile(prov, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	return cs, prov
}

// firstContent 返回第一条消息的内容（没有消息时为空）。
func firstContent(ms []struct {
	Content string `json:"content"`
}) string {
	if len(ms) == 0 {
		return ""
	}
	return ms[0].Content
}

// requests 返回到目前为止记下的请求副本。
func (c *capServer) requests() []captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]captured(nil), c.reqs...)
}

// TestRangeRatioJittersOutputNotInput 验证 prof 的 -ra/-rb 抖动的是发出的 max_tokens（输出长度），
// 而输入长度保持 -il（以前 --range-ratio-above 抖动的是输入长度）。
func TestRangeRatioJittersOutputNotInput(t *testing.T) {
	cs, prov := startCapture(t, "m")
	err := run([]string{"prof", "-p", prov, "-c", "4", "-il", "16", "-ol", "10", "-n", "60", "-ra", "0.5", "-rb", "0.5",
		"-s", t.TempDir(), "--quiet"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	reqs := cs.requests()
	if len(reqs) != 60 {
		t.Fatalf("%d requests", len(reqs))
	}
	distinct := map[int]bool{}
	for _, r := range reqs {
		if r.maxTokens < 5 || r.maxTokens > 15 {
			t.Fatalf("max_tokens %d outside [10×0.5, 10×1.5]", r.maxTokens)
		}
		distinct[r.maxTokens] = true
		if n := tokenize.Count(r.prompt); n != 16 {
			t.Fatalf("input length %d, want 16 (the input must not be jittered)", n)
		}
	}
	if len(distinct) < 4 {
		t.Fatalf("max_tokens barely vary: %v", distinct)
	}
	// 不给 -ra/-rb 时 max_tokens 恒等于 -ol。
	cs2, prov2 := startCapture(t, "m")
	if err := run([]string{"prof", "-p", prov2, "-il", "16", "-ol", "10", "-n", "8", "-s", t.TempDir(), "--quiet"}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range cs2.requests() {
		if r.maxTokens != 10 {
			t.Fatalf("max_tokens %d without jitter", r.maxTokens)
		}
	}
}

// readRows 读取生成的 JSONL 数据集的每一行。
func readRows(t *testing.T, path string) []dataset.Prompt {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []dataset.Prompt
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var p dataset.Prompt
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// TestGenerateDatasetRoundTrip 验证 generate dataset 写出的文件（名字、每行形状、按 --tokenizer
// 计的长度、公共前缀、-ra/-rb 的输入长度抖动）被 prof -dt custom -i 原样发出；数据集里没有的
// 输入长度在发出任何请求之前报错。
func TestGenerateDatasetRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	tokPath := "../../loadgen/tokenizer/testdata/gpt2_tiny_tokenizer.json"
	var out bytes.Buffer
	for _, il := range []string{"32", "64"} {
		if err := run([]string{"generate", "dataset", "-o", dir, "-il", il, "-n", "12", "-pl", "4", "-ra", "0.25", "-rb", "0.25",
			"-t", tokPath, "--seed", "7"}, &out); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	sort.Strings(names)
	if len(names) != 2 || filepath.Base(names[0]) != "random_input32_num12_prefix4.jsonl" || filepath.Base(names[1]) != "random_input64_num12_prefix4.jsonl" {
		t.Fatalf("files %v", names)
	}
	tok, err := loadTokenizer(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, names[0])
	if len(rows) != 12 {
		t.Fatalf("%d rows", len(rows))
	}
	lengths := map[int]bool{}
	for _, r := range rows {
		n, _ := tok.CountTokens(context.Background(), r.Text)
		if r.InputLength != 32 || r.Tokens != n || n < 24-2 || n > 40+2 {
			t.Fatalf("row input_length %d prompt_tokens %d, tokenizer counts %d", r.InputLength, r.Tokens, n)
		}
		lengths[n] = true
	}
	if len(lengths) < 3 {
		t.Fatalf("-ra/-rb did not jitter the input length: %v", lengths)
	}
	prefix := rows[0].Text[:8]
	for _, r := range rows {
		if !strings.HasPrefix(r.Text, prefix) {
			t.Fatalf("no shared prefix: %q vs %q", r.Text[:8], prefix)
		}
	}
	// 同样的参数再生成一次，内容逐字节相同（可复现）。
	dir2 := filepath.Join(t.TempDir(), "ds2")
	if err := run([]string{"generate", "dataset", "-o", dir2, "-il", "32", "-n", "12", "-pl", "4", "-ra", "0.25", "-rb", "0.25",
		"-t", tokPath, "--seed", "7", "--quiet"}, &out); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(names[0])
	b, _ := os.ReadFile(filepath.Join(dir2, "random_input32_num12_prefix4.jsonl"))
	if !bytes.Equal(a, b) {
		t.Fatal("same seed, different dataset")
	}

	cs, prov := startCapture(t, "m")
	save := t.TempDir()
	if err := run([]string{"prof", "-p", prov, "-dt", "custom", "-i", dir, "-il", "32,64", "-ol", "4", "-c", "2", "-n", "12", "-s", save, "--quiet"}, &out); err != nil {
		t.Fatal(err)
	}
	sent := map[string]int{}
	for _, r := range cs.requests() {
		sent[r.prompt]++
	}
	for _, f := range names {
		for _, r := range readRows(t, f) {
			if sent[r.Text] != 1 {
				t.Fatalf("dataset prompt sent %d times (want once): %.40q", sent[r.Text], r.Text)
			}
		}
	}
	if len(cs.requests()) != 24 {
		t.Fatalf("%d requests, want 12 per input length", len(cs.requests()))
	}
	files, _ := filepath.Glob(filepath.Join(save, "requests_ascend-vllm_custom_normal_concurrency2_threading-pool_input64_output4_*.csv"))
	if len(files) != 1 {
		t.Fatalf("artifacts: %v", files)
	}
	before := len(cs.requests())
	err = run([]string{"prof", "-p", prov, "-dt", "custom", "-i", dir, "-il", "128", "-s", t.TempDir(), "--quiet"}, &out)
	if err == nil || !strings.Contains(err.Error(), "-il 128: the custom dataset has no prompt of this input length (input_length in the dataset: 32, 64)") {
		t.Fatalf("err %v", err)
	}
	if len(cs.requests()) != before {
		t.Fatal("requests were sent before the error")
	}
}

// TestREADMECommandsRun 从 README.md 取出 bench 的命令（prof 与 generate dataset 往返），
// 把 configs/providers.yaml 换成指向进程内模拟器（同一个 model_name）的文件、把输出目录
// 换成临时目录，原样执行：README 里的命令在干净的检出上能跑。
func TestREADMECommandsRun(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	real, err := os.ReadFile("../../configs/providers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := loadgen.ParseProviders(bytes.NewReader(real))
	if err != nil {
		t.Fatal(err)
	}
	_, prov := startCapture(t, ps[0].ModelName)
	tmp := t.TempDir()
	var cmds [][]string
	for _, line := range strings.Split(string(readme), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "go run ./examples/bench ") {
			continue
		}
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		args := strings.Fields(strings.TrimPrefix(line, "go run ./examples/bench "))
		if len(args) == 0 || (args[0] != "prof" && args[0] != "generate") {
			continue
		}
		// --kube-shards 需要一个真实集群与镜像，由 deploy/kube 的集成测试在真实
		// kube-apiserver + kwok 上覆盖；这里只跑本机能跑的命令。
		if slices.Contains(args, "--kube-shards") {
			continue
		}
		for i, a := range args {
			switch {
			case a == "configs/providers.yaml":
				args[i] = prov
			case strings.HasPrefix(a, "loadgen/"), strings.HasPrefix(a, "configs/"):
				args[i] = "../../" + a
			case i > 0 && (args[i-1] == "-s" || args[i-1] == "-o" || args[i-1] == "-i"):
				args[i] = filepath.Join(tmp, a)
			}
		}
		cmds = append(cmds, args)
	}
	want := map[string]bool{"prof -c 1,2,4 -il 128 -ol 128 -n 16,32,64 -ub True -gr 2 -gi 5000": false, "generate dataset": false, "-dt custom -i": false}
	for _, args := range cmds {
		joined := strings.Join(args, " ")
		for k := range want {
			if strings.Contains(strings.Replace(joined, "-p "+prov+" ", "", 1), k) {
				want[k] = true
			}
		}
		var out bytes.Buffer
		if err := run(append(args, "--quiet"), &out); err != nil {
			t.Fatalf("README command %v: %v\n%s", args, err, out.String())
		}
	}
	for k, ok := range want {
		if !ok {
			t.Errorf("README has no bench command containing %q", k)
		}
	}
	sums, _ := filepath.Glob(filepath.Join(tmp, "out", "summary_ascend-vllm_climb_threading-pool_*.csv"))
	if len(sums) == 0 {
		t.Fatalf("no climb summary in %s", tmp)
	}
}

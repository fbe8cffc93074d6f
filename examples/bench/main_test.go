package main

import (
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
)

// TestFlagsCommaListsAndRepeats 验证逗号列表与重复参数两种写法等价，且单位换算正确。
func TestFlagsCommaListsAndRepeats(t *testing.T) {
	o, err := parseFlags([]string{"--concurrency", "1,2", "--concurrency", "4", "--input-length", "128",
		"--output-length", "16,32", "--use-climb", "--growth-interval", "2500", "--timeout", "1.5",
		"--request-rate", "20", "--goodput", "ttft:50", "--goodput", "e2e:1000", "--top-k", "-1",
		"--ignore-eos=false", "--config-option", "image_width:64,image_height:32", "--modal-type", "image-text"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	p := o.p
	if len(p.Concurrency) != 3 || p.Concurrency[2] != 4 || len(p.OutputLength) != 2 {
		t.Fatalf("lists %v %v", p.Concurrency, p.OutputLength)
	}
	if p.ControlMethod != loadgen.ControlClimb || p.GrowthInterval != 2500*time.Millisecond || p.Timeout != 1500*time.Millisecond {
		t.Fatalf("climb/timeout %s %v %v", p.ControlMethod, p.GrowthInterval, p.Timeout)
	}
	if p.RequestRate != 20 || len(p.Goodput) != 2 || *p.TopK != -1 || *p.IgnoreEOS || p.ImageWidth != 64 || p.ImageHeight != 32 {
		t.Fatalf("%+v", p)
	}
	if err := p.WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := parseFlags([]string{"--concurrency-backend", "threading-pool", "--chunk-size", "1024", "--num-process", "1", "--trace", "false"}, &bytes.Buffer{}); err != nil {
		t.Fatalf("acs-bench compatibility flags at their defaults rejected: %v", err)
	}
	for _, bad := range [][]string{{"--concurrency", "x"}, {"--request-rate", "-3"}, {"--config-option", "depth:3"}, {"extra"},
		{"--concurrency-backend", "processing-pool"}, {"--request-mode", "pd_dynamic"}, {"--profile"}, {"--chunk-size", "4096"}, {"--trace"}} {
		if _, err := parseFlags(bad, &bytes.Buffer{}); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
}

// TestProfileFileWithOverrides 验证 --perf-profile 读取档位、显式参数覆盖档位。
func TestProfileFileWithOverrides(t *testing.T) {
	o, err := parseFlags([]string{"--perf-profile", "../../configs/tests/perf/profiles/pr.yaml", "--concurrency", "3"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.p.Concurrency) != 1 || o.p.Concurrency[0] != 3 || o.p.ControlMethod != loadgen.ControlClimb || o.p.Warmup != 1 {
		t.Fatalf("%+v", o.p)
	}
	if len(o.p.InputLength) != 2 || o.p.GrowthInterval != time.Second {
		t.Fatalf("profile values lost: %+v", o.p)
	}
}

// TestRunWritesArtifacts 对进程内模拟器跑两组，检查 A.6 的产物文件与进度行。
func TestRunWritesArtifacts(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	err := run([]string{"--concurrency", "1,2", "--input-length", "16", "--output-length", "4", "--num-requests", "6",
		"--epochs", "2", "--benchmark-save-path", dir, "--chunk-times"}, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if len(names) != 3 || !strings.HasPrefix(names[0], "requests_emulator_random_normal_concurrency1_threading-pool_input16_output4_") ||
		!strings.HasPrefix(names[2], "summary_emulator_normal_threading-pool_") {
		t.Fatalf("artifacts %v", names)
	}
	f, _ := os.Open(filepath.Join(dir, names[2]))
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 5 {
		t.Fatalf("summary rows %d: %v", len(rows), err)
	}
	req, _ := os.ReadFile(filepath.Join(dir, names[0]))
	if n := strings.Count(string(req), "\n"); n != 1+12 {
		t.Fatalf("requests file has %d lines, want header + 2 epochs × 6", n)
	}
	if !strings.Contains(stderr.String(), "6/6 done") {
		t.Fatalf("no progress line:\n%s", stderr.String())
	}
}

// TestProviderFile 验证 --provider 读取 providers.yaml 并报告未知 id。
func TestProviderFile(t *testing.T) {
	err := run([]string{"--provider", "../../configs/providers.yaml", "--provider-id", "nope"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("err %v", err)
	}
}

// TestTokenizerFlag 验证 --tokenizer 接受文件或目录，坏路径报错。
func TestTokenizerFlag(t *testing.T) {
	if _, err := loadTokenizer("../../loadgen/tokenizer/testdata/gpt2_tiny_tokenizer.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := loadTokenizer(t.TempDir()); err == nil {
		t.Fatal("directory without tokenizer.json accepted")
	}
	err := run([]string{"--tokenizer", "../../loadgen/tokenizer/testdata/gpt2_tiny_tokenizer.json", "--input-length", "32", "--output-length", "2",
		"--num-requests", "2", "--benchmark-save-path", t.TempDir(), "--quiet"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
}

// readCSV 读出一个 CSV 文件的全部行（第一行为表头）。
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

// TestRequestCSVValues 检查逐请求 CSV 的取值而不只是表头：issue 14 的命令行
// （c=2、6 个请求、输入 16、输出 8）曾在 Finish_Reason 列写出 "promp"、"rompt_" 等垃圾。
func TestRequestCSVValues(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	if err := run([]string{"--concurrency", "2", "--num-requests", "6", "--input-length", "16", "--output-length", "8",
		"--benchmark-save-path", dir, "--quiet"}, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "requests_*.csv"))
	if len(matches) != 1 {
		t.Fatalf("request files %v", matches)
	}
	rows := readCSV(t, matches[0])
	if len(rows) != 7 {
		t.Fatalf("%d rows, want header + 6", len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	want := map[string]string{"Finish_Reason": "length", "Success": "true", "Status": "200", "Error_Class": "", "Error": "",
		"Completion_Tokens": "8", "Prompt_Tokens": "16", "Token_Source": "usage", "Chunks": "8", "Input_Length": "16",
		"Output_Length": "8", "Concurrency": "2", "Round": "1"}
	seen := map[string]bool{}
	for _, r := range rows[1:] {
		if len(r) != len(rows[0]) {
			t.Fatalf("row has %d cells, header %d: %q", len(r), len(rows[0]), r)
		}
		for name, v := range want {
			i, ok := col[name]
			if !ok {
				t.Fatalf("no column %s", name)
			}
			if r[i] != v {
				t.Errorf("request %s: %s = %q, want %q", r[col["Request_ID"]], name, r[i], v)
			}
		}
		seen[r[col["Request_ID"]]] = true
	}
	if len(seen) != 6 {
		t.Errorf("request ids %v, want 6 distinct", seen)
	}
}

// providerFile 写一个指向 url 的 providers.yaml（api_key 为 key），返回路径。
func providerFile(t *testing.T, url, key string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "providers.yaml")
	y := "providers:\n  - id: 'hostile'\n    name: 'hostile'\n    api_key: '" + key + "'\n    base_url: '" + url + "/v1'\n    model_name: 'm'\n"
	if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// sse 写出一组 SSE data 事件。
func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		fmt.Fprintf(w, "data: %s\n\n", e)
	}
}

// probeOK 让探测请求（提示 "hi"、max_tokens 1）成功，返回是否已处理。
func probeOK(w http.ResponseWriter, body []byte) bool {
	if !bytes.Contains(body, []byte(`"hi"`)) {
		return false
	}
	sse(w, `{"choices":[{"index":0,"delta":{"content":"a"}}]}`, "[DONE]")
	return true
}

// TestExitsNonZeroWhenAGroupHadNoSuccess 钉住"全部失败仍退出 0"：服务对每个真实请求都回 500 时，
// run 返回 errNoSuccess（main 以 1 退出），stderr 点名该组与失败类别；仍写出产物。
func TestExitsNonZeroWhenAGroupHadNoSuccess(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if probeOK(w, b) {
			return
		}
		http.Error(w, `{"error":{"message":"engine dead","code":500}}`, http.StatusInternalServerError)
	}))
	defer srv.Close()
	dir := t.TempDir()
	var stderr bytes.Buffer
	err := run([]string{"--provider", providerFile(t, srv.URL, "EMPTY"), "--concurrency", "1,2", "--num-requests", "3",
		"--input-length", "8", "--output-length", "4", "--benchmark-save-path", dir, "--quiet"}, &stderr)
	if !errors.Is(err, errNoSuccess) || !strings.Contains(err.Error(), "2 of 2 groups") {
		t.Fatalf("err %v, want errNoSuccess for 2 of 2 groups\n%s", err, stderr.String())
	}
	for _, want := range []string{"c=1 in=8 out=4 round=1: no successful request (3 of 3 failed [http=3])",
		"c=2 in=8 out=4 round=1: no successful request (3 of 3 failed [http=3])"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if sums, _ := filepath.Glob(filepath.Join(dir, "summary_*.csv")); len(sums) != 1 || len(readCSV(t, sums[0])) != 3 {
		t.Errorf("summary file %v should still hold both groups", sums)
	}
}

// captureStdout 在 fn 执行期间把 os.Stdout 接到一个临时文件，返回写入的内容。
func captureStdout(t *testing.T, fn func()) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = f
	defer func() { os.Stdout = old }()
	fn()
	_ = f.Close()
	b, _ := os.ReadFile(f.Name())
	return string(b)
}

// TestEchoedKeyNeverReachesArtifactsOrOutput 钉住密钥泄漏：服务端把 Authorization 头回显进
// 错误体（401）与流内错误事件（原文与 base64 两种形式），bench 写出的每个文件、stdout 与
// stderr 中都不得出现密钥（canary）的任何形式。
func TestEchoedKeyNeverReachesArtifactsOrOutput(t *testing.T) {
	const key = "sk-canary-0a1b2c3d4e5f"
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if probeOK(w, b) {
			return
		}
		auth := r.Header.Get("Authorization")
		b64 := base64.StdEncoding.EncodeToString([]byte(strings.TrimPrefix(auth, "Bearer ")))
		if n.Add(1)%2 == 0 {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"rejected Authorization: %s (%s)","code":401}}`, auth, b64)
			return
		}
		sse(w, `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
			fmt.Sprintf(`{"error":{"message":"key %s b64 %s","code":500}}`, strings.TrimPrefix(auth, "Bearer "), b64), "[DONE]")
	}))
	defer srv.Close()
	dir := t.TempDir()
	var stderr bytes.Buffer
	var err error
	stdout := captureStdout(t, func() {
		err = run([]string{"--provider", providerFile(t, srv.URL, key), "--num-requests", "4", "--input-length", "8",
			"--output-length", "4", "--benchmark-save-path", dir, "--quiet"}, &stderr)
	})
	if !errors.Is(err, errNoSuccess) {
		t.Fatalf("err %v", err)
	}
	canaries := []string{key, "canary", base64.StdEncoding.EncodeToString([]byte(key)), base64.StdEncoding.EncodeToString([]byte("Bearer " + key))}
	outputs := map[string]string{"stdout": stdout, "stderr": stderr.String(), "error": err.Error()}
	files, _ := os.ReadDir(dir)
	for _, f := range files {
		b, _ := os.ReadFile(filepath.Join(dir, f.Name()))
		outputs[f.Name()] = string(b)
	}
	if len(files) != 2 {
		t.Fatalf("artifacts %v", files)
	}
	for name, text := range outputs {
		for _, c := range canaries {
			if strings.Contains(text, c) {
				t.Errorf("%s contains the secret form %q", name, c)
			}
		}
	}
	if req, _ := filepath.Glob(filepath.Join(dir, "requests_*.csv")); len(req) != 1 || !strings.Contains(outputs[filepath.Base(req[0])], "[REDACTED]") {
		t.Errorf("the server's error text should be kept with the key masked")
	}
}

// TestTimeoutFlagBoundsSilentServer 钉住挂死：服务接受连接后不应答时，bench 曾无视 --timeout
// 永远挂住（探测没有期限）。现在在 --timeout 之后以点名探测的错误退出。
func TestTimeoutFlagBoundsSilentServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // 不读不写
		}
	}()
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"--provider", providerFile(t, "http://"+ln.Addr().String(), "EMPTY"), "--timeout", "0.5",
			"--num-requests", "2", "--input-length", "8", "--output-length", "4", "--benchmark-save-path", t.TempDir(), "--quiet"}, io.Discard)
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "probe") {
			t.Fatalf("err %v, want a probe timeout", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("bench still running 20s after a 0.5s --timeout against a silent server")
	}
}

// TestBucketIntervalWritesTimeline 验证 --bucket-interval / -bi 不再被拒绝：写出与汇总同名规则的
// timeline_*.csv，各行 Started 之和等于请求数；0 与 10 之间的间隔在运行前报错并点名选项。
func TestBucketIntervalWritesTimeline(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	err := run([]string{"--concurrency", "2", "--input-length", "16", "--output-length", "4", "--num-requests", "8",
		"--benchmark-save-path", dir, "-bi", "20"}, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "timeline_emulator_normal_threading-pool_*.csv"))
	if len(files) != 1 {
		t.Fatalf("timeline files %v", files)
	}
	f, _ := os.Open(files[0])
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 || rows[0][9] != "Started" {
		t.Fatalf("timeline rows %v: %v", rows, err)
	}
	started := 0
	for _, r := range rows[1:] {
		n, _ := strconv.Atoi(r[9])
		started += n
	}
	if started != 8 {
		t.Fatalf("started sums to %d, want 8", started)
	}
	err = run([]string{"--bucket-interval", "5", "--benchmark-save-path", t.TempDir()}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "bucket-interval") {
		t.Fatalf("5ms interval: err = %v", err)
	}
}

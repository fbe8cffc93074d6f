package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
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
	if err := p.Defaults().Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := parseFlags([]string{"--concurrency-backend", "threading-pool", "--chunk-size", "4096", "--num-process", "1", "--trace"}, &bytes.Buffer{}); err != nil {
		t.Fatalf("acs-bench compatibility flags rejected: %v", err)
	}
	for _, bad := range [][]string{{"--concurrency", "x"}, {"--request-rate", "-3"}, {"--config-option", "depth:3"}, {"extra"},
		{"--concurrency-backend", "processing-pool"}, {"--request-mode", "pd_dynamic"}, {"--profile"}} {
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
	if _, err := loadTokenizer("../../loadgen/testdata/gpt2_tiny_tokenizer.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := loadTokenizer(t.TempDir()); err == nil {
		t.Fatal("directory without tokenizer.json accepted")
	}
	err := run([]string{"--tokenizer", "../../loadgen/testdata/gpt2_tiny_tokenizer.json", "--input-length", "32", "--output-length", "2",
		"--num-requests", "2", "--benchmark-save-path", t.TempDir(), "--quiet"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
}

// TestBucketIntervalWritesTimeline 验证 --bucket-interval 不再被忽略：写出与汇总同名规则的
// timeline_*.csv，各行 Started 之和等于请求数；过小的间隔在运行前报错并点名。
func TestBucketIntervalWritesTimeline(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	err := run([]string{"--concurrency", "2", "--input-length", "16", "--output-length", "4", "--num-requests", "8",
		"--benchmark-save-path", dir, "--bucket-interval", "20"}, &stderr)
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
	if err == nil || !strings.Contains(err.Error(), "bucket_interval") {
		t.Fatalf("5ms interval: err = %v", err)
	}
}

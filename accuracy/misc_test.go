package accuracy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"gopkg.in/yaml.v3"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/accuracy/external"
	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
)

// TestHTTPSourceCache 从 httptest 服务器下载数据文件，第二次命中磁盘缓存。
func TestHTTPSourceCache(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != "/se/gpqa_diamond.csv" {
			http.NotFound(w, r)
			return
		}
		f, _ := simpleevals.SampleData().Open(r.Context(), "gpqa_diamond.csv")
		defer f.Close()
		io.Copy(w, f)
	}))
	defer srv.Close()
	cache := t.TempDir()
	src, err := accuracy.NewHTTPSource(srv.URL+"/se", cache, nil, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		e, _ := simpleevals.Registry().New("gpqa", src, accuracy.EvalOptions{Debug: true})
		exs, err := e.Examples(context.Background())
		if err != nil || len(exs) != 5 {
			t.Fatalf("examples=%d err=%v", len(exs), err)
		}
	}
	if hits.Load() != 1 {
		t.Fatalf("server hits=%d want 1 (second read from cache)", hits.Load())
	}
	if _, err := os.Stat(filepath.Join(cache, "gpqa_diamond.csv")); err != nil {
		t.Fatal(err)
	}
	_, err = src.Open(context.Background(), "mmlu.csv")
	if !errors.Is(err, accuracy.ErrDatasetUnavailable) {
		t.Fatalf("404: %v", err)
	}
	if _, err := src.Open(context.Background(), "../etc/passwd"); err == nil {
		t.Fatal("path traversal accepted")
	}
	// 无缓存目录时直接流式返回。
	nc, _ := accuracy.NewHTTPSource("", "", map[string]string{"x.csv": srv.URL + "/se/gpqa_diamond.csv"}, nil)
	rc, err := nc.Open(context.Background(), "x.csv")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.HasPrefix(b, []byte("Record ID,Question")) {
		t.Fatalf("body %q", b[:20])
	}
	if _, err := nc.Open(context.Background(), "y.csv"); !errors.Is(err, accuracy.ErrDatasetUnavailable) {
		t.Fatal(err)
	}
	if _, err := accuracy.NewHTTPSource("", "", nil, nil); !errors.Is(err, accuracy.ErrDatasetUnavailable) {
		t.Fatal("no url must fail")
	}
	if _, err := accuracy.NewHTTPSource("ftp://x", "", nil, nil); err == nil {
		t.Fatal("ftp accepted")
	}
}

// TestFSSourceMissingFile 校验本地目录缺文件时错误写明文件名与目录，且不退回到任何其他数据。
func TestFSSourceMissingFile(t *testing.T) {
	empty := accuracy.FSSource{FS: fstest.MapFS{}, Label: "/data/se"}
	_, err := empty.Open(context.Background(), "mmlu.csv")
	if !errors.Is(err, accuracy.ErrDatasetUnavailable) || !strings.Contains(err.Error(), "mmlu.csv not found in /data/se") {
		t.Fatalf("err=%v", err)
	}
}

// TestConfigFilesDecodeStrictly 严格解码仓库中的 pr/daily 配置并校验门禁。
func TestConfigFilesDecodeStrictly(t *testing.T) {
	for _, name := range []string{"pr", "daily"} {
		f, err := os.Open(filepath.Join("..", "configs", "tests", "accuracy", name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(f)
		dec.KnownFields(true)
		var c accuracy.Config
		err = dec.Decode(&c)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := c.Validate(simpleevals.Registry()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c = c.WithDefaults()
		wantDebug, wantTokens := name == "pr", map[string]int{"pr": 128, "daily": 16384}[name]
		if c.Debug != wantDebug || c.MaxTokens != wantTokens || c.Temperature != 0.6 || c.NumThreads != 32 || len(c.Datasets) == 0 || c.Datasets[0].Name != "gpqa" || c.Datasets[0].Threshold == nil {
			t.Errorf("%s: %+v", name, c)
		}
	}
}

// TestConfigValidateAndGate 覆盖校验错误与门禁判定的各分支。
func TestConfigValidateAndGate(t *testing.T) {
	bad := []accuracy.Config{
		{Evaluator: "lm-eval"}, {MaxTokens: -1}, {Temperature: 3}, {NumThreads: -1},
		{Datasets: []accuracy.DatasetConfig{{Name: "gsm8k"}}},
		{Datasets: []accuracy.DatasetConfig{{Name: "gpqa"}, {Name: "gpqa"}}},
		{Datasets: []accuracy.DatasetConfig{{Name: "gpqa", Threshold: ptr(-1)}}},
		{Datasets: []accuracy.DatasetConfig{{Name: "gpqa", Examples: -1}}},
		{Datasets: []accuracy.DatasetConfig{{Name: "gpqa", Examples: 5}}},
		{External: []external.Config{{Name: "oc"}}},
	}
	for i, c := range bad {
		if err := c.Validate(simpleevals.Registry()); err == nil {
			t.Errorf("bad[%d] accepted: %+v", i, c)
		}
	}
	def := accuracy.DefaultConfig()
	def.Datasets[0].Threshold = ptr(0.2)
	if err := def.Validate(simpleevals.Registry()); err != nil {
		t.Fatal(err)
	}
	if c := (accuracy.Config{Datasets: []accuracy.DatasetConfig{{Name: "drop"}}}).WithDefaults(); c.MaxTokens != 128 || c.Datasets[0].Metric != "score" || c.Evaluator != "simple-evals" {
		t.Errorf("defaults: %+v", c)
	}
	r := accuracy.EvalResult{Dataset: "drop", Score: 0.5, Examples: 10, Planned: 10, Requests: 10, Metrics: map[string]float64{"f1_score": 70}}
	for _, c := range []struct {
		d    accuracy.DatasetConfig
		pass bool
	}{
		{accuracy.DatasetConfig{Threshold: ptr(0.5)}, true},
		{accuracy.DatasetConfig{ReportOnly: true}, true},
		{accuracy.DatasetConfig{Threshold: ptr(0.51)}, false},
		{accuracy.DatasetConfig{Metric: "f1_score", Threshold: ptr(65)}, true},
		{accuracy.DatasetConfig{Metric: "pass@1", Threshold: ptr(0)}, false},
	} {
		if v := accuracy.Gate(c.d, r); v.Pass != c.pass || v.Reason == "" {
			t.Errorf("%+v: %+v", c.d, v)
		}
	}
	if v := accuracy.Gate(accuracy.DatasetConfig{Threshold: ptr(0)}, accuracy.EvalResult{Score: math.NaN()}); v.Pass {
		t.Error("NaN must fail")
	}
}

package accuracy_test

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/accuracy/external"
	"github.com/vllm-cibench/cibench/accuracy/internal/scripted"
	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
	"github.com/vllm-cibench/cibench/endpoint"
)

// memFiles 是内存中的输出目录，记录 RunStage 写出的文件。
type memFiles struct {
	mu    sync.Mutex
	files map[string]*bytes.Buffer
}

// nopCloser 给 bytes.Buffer 加上 Close。
type nopCloser struct{ *bytes.Buffer }

// Close 什么也不做。
func (nopCloser) Close() error { return nil }

// create 实现 StageOptions.Create。
func (m *memFiles) create(name string) (io.WriteCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files == nil {
		m.files = map[string]*bytes.Buffer{}
	}
	b := &bytes.Buffer{}
	m.files[name] = b
	return nopCloser{b}, nil
}

// TestRunStage 按配置跑完整的精度阶段：阈值判定、跳过 HumanEval、外部评测、结果文件。
func TestRunStage(t *testing.T) {
	base := scripted.Serve(t, &scripted.Model{})
	script, _ := filepath.Abs("external/testdata/fake_eval.sh")
	cfg := accuracy.Config{
		Debug: true, MaxTokens: 64, Temperature: 0.6, NumThreads: 4,
		Datasets: []accuracy.DatasetConfig{
			{Name: "gpqa", Threshold: ptr(0.01)},
			{Name: "mmlu", Threshold: ptr(1)},
			{Name: "drop", Metric: "f1_score", Threshold: ptr(10)},
			{Name: "humaneval", Threshold: ptr(0.5)},
		},
		External: []external.Config{{Name: "mme", Command: []string{script, "mme"}, ResultFile: "mme.txt", Env: map[string]string{"FAKE_WANT_MODEL": "{model}"},
			Score: external.ScoreSpec{Format: "regex", Pattern: `total score: ([0-9.]+)`}, Threshold: ptr(1000)}},
	}
	var files memFiles
	var progressed sync.Map
	res, err := accuracy.RunStage(context.Background(), cfg, accuracy.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{base}, Model: "scripted", APIKey: "sk-x"}}, accuracy.StageOptions{Evals: simpleevals.Registry(),
		Source: simpleevals.SampleData(), Create: files.create, ExternalDir: t.TempDir(),
		Progress: func(ds string, done, total int) { progressed.Store(ds, done) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) != 0 || res.Skipped["humaneval"] == "" || len(res.Results) != 4 || len(res.Verdicts) != 4 {
		t.Fatalf("errors=%v skipped=%v results=%d", res.Errors, res.Skipped, len(res.Results))
	}
	want := map[string]bool{"gpqa": false, "mmlu": true, "drop": true, "mme": true}
	for _, v := range res.Verdicts {
		if v.Pass != want[v.Dataset] {
			t.Errorf("%s: %+v", v.Dataset, v)
		}
	}
	if res.Passed() {
		t.Error("stage must fail because gpqa misses its threshold")
	}
	if len(files.files) != 9 {
		t.Errorf("files: %d", len(files.files))
	}
	for name, b := range files.files {
		if strings.HasSuffix(name, ".json") && !strings.Contains(b.String(), `"score": `) {
			t.Errorf("%s: %s", name, b.String())
		}
	}
	if v, ok := progressed.Load("gpqa"); !ok || v.(int) != 5 {
		t.Errorf("progress %v", v)
	}
	// 配置无效时直接返回错误。
	if _, err := accuracy.RunStage(context.Background(), accuracy.Config{Datasets: []accuracy.DatasetConfig{{Name: "x"}}}, accuracy.Target{}, accuracy.StageOptions{Evals: simpleevals.Registry()}); err == nil {
		t.Error("invalid config accepted")
	}
	// 数据目录缺文件：该数据集记为错误，阶段继续。
	bad := accuracy.Config{DatasetPath: t.TempDir(), Datasets: []accuracy.DatasetConfig{{Name: "mmlu", Threshold: ptr(0.5)}}}
	r2, err := accuracy.RunStage(context.Background(), bad, accuracy.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{base}, Model: "scripted"}}, accuracy.StageOptions{Evals: simpleevals.Registry()})
	if err != nil || r2.Errors["mmlu"] == nil || r2.Passed() {
		t.Errorf("missing data: %v %+v", err, r2)
	}
}

package simpleevals_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
)

// TestBadDataFiles 校验坏数据给出指明文件/行/列的错误。
func TestBadDataFiles(t *testing.T) {
	gz := func(s string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
		return b.Bytes()
	}
	fsys := fstest.MapFS{
		"gpqa_diamond.csv":       {Data: []byte("Question,Correct Answer\nq,a\n")},
		"mmlu.csv":               {Data: []byte("Question,A,B,C,D,Answer,Subject\n\"unterminated\n")},
		"mgsm_en.tsv":            {Data: []byte("q1\t3\n\nq2\t4\n")},
		"mgsm_de.tsv":            {Data: []byte("q1\t3.5\n")},
		"drop_v0_train.jsonl.gz": {Data: gz("{\"context\": \"c\"}\n")},
		"drop_v0_dev.jsonl.gz":   {Data: gz("not json\n")},
		"HumanEval.jsonl.gz":     {Data: []byte("not gzip")},
	}
	src := accuracy.FSSource{FS: fsys}
	for _, c := range []struct {
		name string
		opts accuracy.EvalOptions
		want string
	}{
		{"gpqa", accuracy.EvalOptions{}, `missing column "Incorrect Answer 1"`},
		{"mmlu", accuracy.EvalOptions{}, "mmlu.csv"},
		{"drop", accuracy.EvalOptions{}, "drop_v0_dev.jsonl.gz line 1"},
		{"humaneval", accuracy.EvalOptions{Interpreter: []string{"python3"}}, "HumanEval.jsonl.gz"},
	} {
		e, err := simpleevals.Registry().New(c.name, src, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Examples(context.Background()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err=%v want %q", c.name, err, c.want)
		}
	}
	for lang, want := range map[string]string{"en": "mgsm_en.tsv line 2", "de": "contains a decimal point"} {
		m, _ := simpleevals.NewMGSM(src, simpleevals.MGSMOptions{Languages: []string{lang}})
		if _, err := m.Examples(context.Background()); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("mgsm %s: err=%v", lang, err)
		}
	}
	if _, err := simpleevals.NewMGSM(src, simpleevals.MGSMOptions{Languages: []string{"xx"}}); err == nil {
		t.Error("bad language accepted")
	}
	if _, err := simpleevals.Registry().New("gpqa", src, accuracy.EvalOptions{Examples: 3}); err == nil {
		t.Error("gpqa examples in full mode with 10 repeats must fail like the python assert")
	}
	if _, err := simpleevals.Registry().New("nope", src, accuracy.EvalOptions{}); !errors.Is(err, accuracy.ErrUnknownDataset) {
		t.Error(err)
	}
	if _, err := simpleevals.Registry().New("humaneval", src, accuracy.EvalOptions{}); !errors.Is(err, simpleevals.ErrNoPython) {
		t.Error(err)
	}
	// 抽样数超过总体时报错（Python: ValueError: Sample larger than population）。
	e, _ := simpleevals.Registry().New("mmlu", simpleevals.SampleData(), accuracy.EvalOptions{Examples: 99})
	if _, err := e.Examples(context.Background()); err == nil {
		t.Error("oversample accepted")
	}
	g, _ := simpleevals.NewGPQA(simpleevals.SampleData(), simpleevals.GPQAOptions{})
	if _, err := g.Score(context.Background(), accuracy.Example{Index: 0}, []string{"x"}); !errors.Is(err, accuracy.ErrNotLoaded) {
		t.Error("score before load must fail")
	}
}

// TestUpstreamURLsPerEval 校验每个评测默认读取的正是 simple-evals（与 human-eval）
// 自己读取的公共地址。
func TestUpstreamURLsPerEval(t *testing.T) {
	src, err := accuracy.Config{}.OpenSource(simpleevals.Registry().Data(), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	h := src.(*accuracy.HTTPSource)
	const blob = "https://openaipublic.blob.core.windows.net/simple-evals/"
	for name, want := range map[string]string{
		simpleevals.FileGPQADiamond: blob + "gpqa_diamond.csv",
		simpleevals.FileMMLU:        blob + "mmlu.csv",
		simpleevals.FileMGSM("bn"):  blob + "mgsm_bn.tsv",
		simpleevals.FileDROPTrain:   blob + "drop_v0_train.jsonl.gz",
		simpleevals.FileDROPDev:     blob + "drop_v0_dev.jsonl.gz",
		simpleevals.FileHumanEval:   "https://github.com/openai/human-eval/raw/master/data/HumanEval.jsonl.gz",
		simpleevals.FileMGSM("zh"):  blob + "mgsm_zh.tsv",
	} {
		if got := h.Locate(name); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	// 镜像地址替换全部文件（包括 HumanEval），不与上游混用。
	m, _ := accuracy.Config{DatasetURL: "http://mirror.example/se"}.OpenSource(simpleevals.Registry().Data(), nil, "")
	if got := m.(*accuracy.HTTPSource).Locate(simpleevals.FileHumanEval); got != "http://mirror.example/se/HumanEval.jsonl.gz" {
		t.Errorf("mirror humaneval: %s", got)
	}
}

// TestRegistryBuiltins 检查 Registry 登记了 Names 列出的五个评测（顺序同 simple_evals.py），
// 默认数据是上游地址加内置样例，且每次返回独立的表。
func TestRegistryBuiltins(t *testing.T) {
	r := simpleevals.Registry()
	if got, want := strings.Join(r.Names(), ","), strings.Join(simpleevals.Names(), ","); got != want || want != "gpqa,mmlu,mgsm,drop,humaneval" {
		t.Fatalf("Names = %s, want %s", got, want)
	}
	d := r.Data()
	if d.BaseURL != simpleevals.DefaultBaseURL || d.URLs[simpleevals.FileHumanEval] != simpleevals.DefaultURLs()[simpleevals.FileHumanEval] || d.Sample == nil {
		t.Fatalf("data = %+v", d)
	}
	if err := r.Register("team-x", func(accuracy.Source, accuracy.EvalOptions) (accuracy.Eval, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if simpleevals.Registry().Known("team-x") {
		t.Fatal("registries share state")
	}
	// 没有解释器时 humaneval 的构造错误同时是 ErrSkip（RunStage 跳过）与 ErrNoPython。
	_, err := r.New("humaneval", simpleevals.SampleData(), accuracy.EvalOptions{})
	if !errors.Is(err, accuracy.ErrSkip) || !errors.Is(err, simpleevals.ErrNoPython) {
		t.Fatalf("humaneval without python: %v", err)
	}
}

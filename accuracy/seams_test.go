package accuracy_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/fstest"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/accuracy/internal/scripted"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/field"
)

// fileEval 是读数据文件的团队评测：Examples 打开 src 中的 name，每行一道题。用它检查
// 没有数据来源时的错误，以及来源记录（DataSource）。
type fileEval struct {
	src  accuracy.Source
	name string
}

// Name 返回登记名。
func (fileEval) Name() string { return "team-file" }

// Examples 读取整个文件，文件里有几行就有几道题。
func (e fileEval) Examples(ctx context.Context) ([]accuracy.Example, error) {
	rc, err := e.src.Open(ctx, e.name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	return []accuracy.Example{{Index: 0, ID: "team-file/0", Samples: 1, Messages: []accuracy.Message{{Role: "user", Content: string(b)}}}}, nil
}

// Score 总是 1 分。
func (fileEval) Score(_ context.Context, ex accuracy.Example, responses []string) (accuracy.SingleResult, error) {
	return accuracy.SingleResult{Index: ex.Index, ID: ex.ID, Score: 1, Responses: responses}, nil
}

// TestRunStageCoreOnly 只用核心包跑精度阶段：空登记表上登记三个团队评测——自带数据的、
// 读数据文件的、以及构造时报 ErrSkip 的。登记表没有默认数据来源：自带数据的照常评分，
// 读文件的记为写明原因的 ErrDatasetUnavailable，ErrSkip 的记入 Skipped（原因是错误文本
// 去掉哨兵前缀）。nil 登记表是配置错误。
func TestRunStageCoreOnly(t *testing.T) {
	base := scripted.Serve(t, &scripted.Model{})
	tgt := accuracy.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{base}, Model: "scripted"}}
	evals := accuracy.NewRegistry()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(evals.Register("team-echo", func(accuracy.Source, accuracy.EvalOptions) (accuracy.Eval, error) {
		return fixedEval{want: "idea"}, nil
	}))
	must(evals.Register("team-file", func(src accuracy.Source, _ accuracy.EvalOptions) (accuracy.Eval, error) {
		return fileEval{src: src, name: "questions.txt"}, nil
	}))
	must(evals.Register("team-gpu", func(accuracy.Source, accuracy.EvalOptions) (accuracy.Eval, error) {
		return nil, fmt.Errorf("%w: no GPU for the judge model", accuracy.ErrSkip)
	}))
	cfg := accuracy.Config{MaxTokens: 16, NumThreads: 2, Datasets: []accuracy.DatasetConfig{
		{Name: "team-echo", Threshold: ptr(0.5)}, {Name: "team-file", ReportOnly: true}, {Name: "team-gpu", ReportOnly: true}}}
	if _, err := accuracy.RunStage(context.Background(), cfg, tgt, accuracy.StageOptions{}); !errors.Is(err, accuracy.ErrConfig) {
		t.Fatalf("nil Evals: err = %v, want ErrConfig", err)
	}
	res, err := accuracy.RunStage(context.Background(), cfg, tgt, accuracy.StageOptions{Evals: evals})
	if err != nil {
		t.Fatal(err)
	}
	// 脚本化模型对不认识的题目回答 "I have no idea."：两题都含 "idea"，得分 1。
	if len(res.Results) != 1 || res.Results[0].Dataset != "team-echo" || res.Results[0].Score != 1 || !res.Verdicts[0].Pass {
		t.Fatalf("results = %+v verdicts = %+v", res.Results, res.Verdicts)
	}
	if src := res.Results[0].Source; src == nil || src.Kind != "none" || len(src.Files) != 0 {
		t.Fatalf("source = %+v, want kind none without files", src)
	}
	if err := res.Errors["team-file"]; !errors.Is(err, accuracy.ErrDatasetUnavailable) {
		t.Fatalf("team-file error = %v, want ErrDatasetUnavailable", err)
	}
	if got := res.Skipped["team-gpu"]; got != "no GPU for the judge model" {
		t.Fatalf("skip reason = %q", got)
	}
	if res.Passed() {
		t.Fatal("a stage with a dataset error passed")
	}
	// 给出数据目录时读文件的评测照常运行，来源记录文件与 sha256。
	res, err = accuracy.RunStage(context.Background(), accuracy.Config{MaxTokens: 16, Datasets: cfg.Datasets[1:2]}, tgt, accuracy.StageOptions{
		Evals: evals, Source: accuracy.FSSource{FS: fstest.MapFS{"questions.txt": {Data: []byte("q?")}}, Label: "/team/data"}})
	if err != nil || len(res.Results) != 1 {
		t.Fatalf("with a source: %+v %v", res, err)
	}
	src := res.Results[0].Source
	if src.Kind != accuracy.SourcePath || len(src.Files) != 1 || src.Files[0].Location != "/team/data/questions.txt" ||
		src.Files[0].SHA256 != fmt.Sprintf("%x", sha256.Sum256([]byte("q?"))) || src.Files[0].Bytes != 2 {
		t.Fatalf("source = %+v", src)
	}
}

// TestRegisterOptions 检查登记项带的校验与指标上限在 Config.Validate 中生效：WithMetricMax
// 放宽该指标的阈值范围（别的指标、别的评测不受影响）；WithCheck 的 *field.Error 被定位到
// datasets[i] 下并包装 ErrConfig（原哨兵仍在链上），其他错误整体记在 datasets[i] 上。
func TestRegisterOptions(t *testing.T) {
	errTeam := errors.New("team: bad option")
	evals := accuracy.NewRegistry()
	mk := func(accuracy.Source, accuracy.EvalOptions) (accuracy.Eval, error) { return fixedEval{}, nil }
	if err := evals.Register("pct", mk, accuracy.WithMetricMax("pct", 100), accuracy.WithMetricMax("permille", 1000)); err != nil {
		t.Fatal(err)
	}
	if err := evals.Register("checked", mk, accuracy.WithCheck(func(d accuracy.DatasetConfig, debug bool) error {
		switch {
		case d.Examples == 1:
			return field.New(nil, "examples", d.Examples, "one is not enough")
		case d.Examples == 2:
			return field.New(errTeam, "", d.Examples, "two is odd")
		case d.Examples == 3 && !debug:
			return errors.New("three needs debug")
		case d.Examples == 4:
			return field.New(accuracy.ErrConfig, "n_repeats", d.NRepeats, "four needs repeats")
		}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		d         accuracy.DatasetConfig
		debug     bool
		field     string
		also      error
		wantValid bool
	}{
		{d: accuracy.DatasetConfig{Name: "pct", Metric: "pct", Threshold: ptr(60)}, wantValid: true},
		{d: accuracy.DatasetConfig{Name: "pct", Metric: "permille", Threshold: ptr(600)}, wantValid: true},
		{d: accuracy.DatasetConfig{Name: "pct", Metric: "pct", Threshold: ptr(160)}, field: "datasets[0].threshold"},
		{d: accuracy.DatasetConfig{Name: "pct", Threshold: ptr(60)}, field: "datasets[0].threshold"},
		{d: accuracy.DatasetConfig{Name: "checked", Metric: "pct", Threshold: ptr(60)}, field: "datasets[0].threshold"},
		{d: accuracy.DatasetConfig{Name: "checked", ReportOnly: true}, wantValid: true},
		{d: accuracy.DatasetConfig{Name: "checked", ReportOnly: true, Examples: 1}, field: "datasets[0].examples"},
		{d: accuracy.DatasetConfig{Name: "checked", ReportOnly: true, Examples: 2}, field: "datasets[0]", also: errTeam},
		{d: accuracy.DatasetConfig{Name: "checked", ReportOnly: true, Examples: 3}, field: "datasets[0]"},
		{d: accuracy.DatasetConfig{Name: "checked", ReportOnly: true, Examples: 3}, debug: true, wantValid: true},
		{d: accuracy.DatasetConfig{Name: "checked", ReportOnly: true, Examples: 4}, field: "datasets[0].n_repeats"},
	} {
		err := accuracy.Config{Debug: tc.debug, Datasets: []accuracy.DatasetConfig{tc.d}}.Validate(evals)
		if tc.wantValid {
			if err != nil {
				t.Errorf("%+v: %v", tc.d, err)
			}
			continue
		}
		var fe *field.Error
		if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, accuracy.ErrConfig) || (tc.also != nil && !errors.Is(err, tc.also)) {
			t.Errorf("%+v debug=%v: err = %v, want field %s wrapping ErrConfig", tc.d, tc.debug, err, tc.field)
		}
	}
}

// TestRegistryData 检查登记表带的默认数据来源：SetData 与 Data 都复制 URLs（调用方改动
// 不影响登记表），nil 登记表没有数据；builtin-sample 要求登记表带样例，BuiltinSource
// 记为 builtin-sample 并给出源码树中的位置。
func TestRegistryData(t *testing.T) {
	urls := map[string]string{"a.csv": "http://mirror.example/a.csv"}
	r := accuracy.NewRegistry()
	r.SetData(accuracy.Data{URLs: urls})
	urls["a.csv"] = "http://evil.example/a.csv"
	got := r.Data()
	got.URLs["b.csv"] = "x"
	if d := r.Data(); d.URLs["a.csv"] != "http://mirror.example/a.csv" || len(d.URLs) != 1 {
		t.Fatalf("data = %+v", d)
	}
	var nilReg *accuracy.Registry
	if d := nilReg.Data(); d.BaseURL != "" || d.URLs != nil || d.Sample != nil {
		t.Fatalf("nil registry data = %+v", d)
	}
	src, err := accuracy.Config{}.OpenSource(r.Data(), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := src.(*accuracy.HTTPSource); !ok || h.Locate("a.csv") != "http://mirror.example/a.csv" {
		t.Fatalf("source = %#v", src)
	}
	cfg := accuracy.Config{Dataset: accuracy.BuiltinSample, Datasets: []accuracy.DatasetConfig{{Name: "team-echo"}}}
	if err := r.Register("team-echo", func(accuracy.Source, accuracy.EvalOptions) (accuracy.Eval, error) { return fixedEval{}, nil }); err != nil {
		t.Fatal(err)
	}
	var fe *field.Error
	if err := cfg.Validate(r); !errors.As(err, &fe) || fe.Field != "dataset" {
		t.Fatalf("builtin-sample without a sample: %v", err)
	}
	if _, err := cfg.OpenSource(r.Data(), nil, ""); !errors.Is(err, accuracy.ErrConfig) {
		t.Fatalf("OpenSource builtin-sample without a sample: %v", err)
	}
	sample := accuracy.BuiltinSource(fstest.MapFS{"q.txt": {Data: []byte("q")}}, "team/sampledata")
	r.SetData(accuracy.Data{Sample: sample})
	if err := cfg.Validate(r); err != nil {
		t.Fatal(err)
	}
	src, err = cfg.OpenSource(r.Data(), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := src.Open(context.Background(), "q.txt")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(rc); string(b) != "q" {
		t.Fatalf("sample file = %q", b)
	}
	rc.Close()
	d, ok := src.(interface {
		Describe() accuracy.DataSource
		Locate(string) string
	})
	if !ok || d.Describe().Kind != accuracy.SourceBuiltin || d.Describe().Location != "built-in synthetic sample (team/sampledata, not a real benchmark)" ||
		d.Locate("q.txt") != "team/sampledata/q.txt" {
		t.Fatalf("builtin source describes itself as %+v", d)
	}
}

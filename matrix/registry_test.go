package matrix_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/runtype"
)

// registryTree 是一棵最小的配置树：场景声明厂商能力 acme_lora，精度配置列出评测 acme-words，
// 矩阵选中套件 acme。三个名字都只有团队登记后才合法。
func registryTree() fstest.MapFS {
	return fstest.MapFS{
		"matrix.yaml":                 {Data: []byte("scenarios:\n  s:\n    pr:\n      functional: {suites: [acme]}\n")},
		"scenarios/s.yaml":            {Data: []byte("mode: emulator\nserved_model_name: m\nfeatures: [acme_lora]\n")},
		"tests/perf/profiles/pr.yaml": {Data: []byte("concurrency: [1]\ninput_length: [8]\noutput_length: [8]\nrequests_per_concurrency: 1\n")},
		"tests/accuracy/pr.yaml":      {Data: []byte("dataset: builtin-sample\ndatasets:\n  - {name: acme-words, threshold: 0.5}\n")},
	}
}

// TestLoadWithRegistries 证明 YAML 接受登记过的厂商能力、团队评测与团队套件，并且在没有
// 登记时仍以文件:行:列拒绝它们（三个错误各指向自己的文件）。
func TestLoadWithRegistries(t *testing.T) {
	_, err := load(registryTree())
	if err == nil {
		t.Fatal("Load accepted names nobody registered")
	}
	for _, want := range []string{`scenarios/s.yaml:3:`, `"acme_lora"`, `tests/accuracy/pr.yaml:3:`, `unknown dataset`, `matrix.yaml:4:`, `"acme"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
	feats := functional.DefaultFeatures()
	if err := feats.Register("acme_lora"); err != nil {
		t.Fatal(err)
	}
	evals := simpleevals.Registry()
	if err := evals.Register("acme-words", func(accuracy.Source, accuracy.EvalOptions) (accuracy.Eval, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	noop := func(context.Context, *functional.T) {}
	tc := functional.Case{ID: "x", Suite: "acme", Requires: []functional.Feature{"acme_lora"}, Run: noop}
	m, err := load(registryTree(), matrix.WithFeatures(feats), matrix.WithEvals(evals), matrix.WithCases(tc))
	if err != nil {
		t.Fatalf("registered names rejected: %v", err)
	}
	if sc := m.Scenarios["s"]; sc == nil || !sc.HasFeature("acme_lora") {
		t.Fatalf("scenario features: %+v", m.Scenarios["s"])
	}
	plans, err := m.Plan(runtype.PR)
	if err != nil || len(plans) != 1 || plans[0].Accuracy.Configs[0].Config.Datasets[0].Name != "acme-words" || strings.Join(plans[0].Functional.Select, ",") != "acme" {
		t.Fatalf("plan: %+v %v", plans, err)
	}
	// 团队用例的 Requires 也按同一张表校验：没登记的能力让 WithCases 的用例成为加载错误。
	bad := functional.Case{ID: "y", Suite: "acme", Requires: []functional.Feature{"acme_other"}, Run: noop}
	if _, err := load(registryTree(), matrix.WithFeatures(feats), matrix.WithEvals(evals), matrix.WithCases(tc, bad)); err == nil || !strings.Contains(err.Error(), `unknown feature "acme_other"`) {
		t.Fatalf("case with an unregistered feature: %v", err)
	}
}

// TestLoadWithoutRegistries 记下 matrix.Load 不带登记表时的行为：本包不链接模拟器、Kubernetes
// 与 simple-evals，于是 emulator 场景与 datasets[].name 被点名拒绝，错误写明该传什么。
func TestLoadWithoutRegistries(t *testing.T) {
	_, err := matrix.Load(registryTree(), matrix.WithFeatures(nil))
	for _, want := range []string{`unknown mode "emulator" (registered: external, local)`, "pipeline.DefaultModes()", "simpleevals.Registry()"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// swapParams 是测试里团队用例的参数结构体。
type swapParams struct {
	Adapter string `yaml:"adapter"`
}

// TestCaseParamsCheckedAtLoad 证明团队用例的 YAML 参数在加载配置时就被校验：声明了 Case.Params
// 的用例，params.<ID> 里的拼写错误带文件:行:列报告；params 下没有对应用例的 ID 同样被拒绝；
// 写对了的参数原样留在 Functional.Params 里，供用例运行时用 T.Params 读取。
func TestCaseParamsCheckedAtLoad(t *testing.T) {
	tc := functional.Case{ID: "acme/swap", Suite: "acme", Params: &swapParams{}, Run: func(context.Context, *functional.T) {}}
	tree := func(params string) fstest.MapFS {
		return fstest.MapFS{
			"matrix.yaml":                {Data: []byte("scenarios:\n  s:\n    pr: {functional: {suites: [acme]}, perf: {enabled: false}, accuracy: {enabled: false}}\n")},
			"scenarios/s.yaml":           {Data: []byte("mode: emulator\nserved_model_name: m\n")},
			"tests/functional/acme.yaml": {Data: []byte(params)},
		}
	}
	m, err := load(tree("params:\n  acme/swap:\n    adapter: sql-lora\n"), matrix.WithCases(tc))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := m.Functional.Params["acme/swap"]; !ok || p.YAML != "adapter: sql-lora" || p.File != "tests/functional/acme.yaml" || p.Line != 3 {
		t.Fatalf("params not kept: %+v", m.Functional.Params)
	}
	for doc, want := range map[string]string{
		"params:\n  acme/swap:\n    adaptor: sql-lora\n": `tests/functional/acme.yaml:3:5: params.acme/swap.adaptor: unknown field "adaptor"`,
		// 没有对应用例的 ID 定位到 ID 所在的行（issue 36：曾定位到块的第一个键）。
		"params:\n  acme/swapp:\n    adapter: x\n": `tests/functional/acme.yaml:2:3: params.acme/swapp: no functional case has this ID`,
	} {
		_, err := load(tree(doc), matrix.WithCases(tc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", doc, err, want)
		}
		// 加载时的参数错误同样包装 functional.ErrParams（issue 36），且只报一次。
		if !errors.Is(err, functional.ErrParams) || strings.Count(err.Error(), "params.acme/swap") != 1 {
			t.Errorf("%q: err %v does not wrap functional.ErrParams exactly once", doc, err)
		}
	}
}

// TestCaseParamsMergeAcrossFiles 复现一个缺陷：几个功能配置文件按文件名顺序叠加时，后一个文件的
// params: 映射整体替换了前一个的，于是前一个文件里别的用例的参数既没被校验也读不到。现在按用例
// ID 合并：两份文件各自的块都保留、都按声明的结构体校验（错误定位到各自的文件），同一个 ID
// 以后写的为准。
func TestCaseParamsMergeAcrossFiles(t *testing.T) {
	swap := functional.Case{ID: "acme/swap", Suite: "acme", Params: &swapParams{}, Run: func(context.Context, *functional.T) {}}
	other := functional.Case{ID: "acme/other", Suite: "acme", Params: &swapParams{}, Run: func(context.Context, *functional.T) {}}
	tree := func(a, b string) fstest.MapFS {
		return fstest.MapFS{
			"matrix.yaml":             {Data: []byte("scenarios:\n  s:\n    pr: {functional: {suites: [acme]}, perf: {enabled: false}, accuracy: {enabled: false}}\n")},
			"scenarios/s.yaml":        {Data: []byte("mode: emulator\nserved_model_name: m\n")},
			"tests/functional/a.yaml": {Data: []byte(a)},
			"tests/functional/b.yaml": {Data: []byte(b)},
		}
	}
	m, err := load(tree("params:\n  acme/swap:\n    adapter: first\n  acme/other:\n    adapter: kept\n",
		"params:\n  acme/swap:\n    adapter: second\n"), matrix.WithCases(swap, other))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Functional.Params; got["acme/swap"].YAML != "adapter: second" || got["acme/other"].YAML != "adapter: kept" || got["acme/other"].File != "tests/functional/a.yaml" {
		t.Fatalf("params %+v", got)
	}
	_, err = load(tree("params:\n  acme/other:\n    adaptor: typo\n", "params:\n  acme/swap:\n    adapter: ok\n"), matrix.WithCases(swap, other))
	if err == nil || !strings.Contains(err.Error(), `tests/functional/a.yaml:3:5: params.acme/other.adaptor: unknown field "adaptor"`) {
		t.Fatalf("err = %v", err)
	}
}

// TestUnknownFeatureIsErrUnknownFeature 复现 issue #30：docs/functional.md 承诺场景 YAML 里没登记的
// 能力名满足 errors.Is(err, functional.ErrUnknownFeature)，matrix.Load 却只包装了 ErrConfig。
func TestUnknownFeatureIsErrUnknownFeature(t *testing.T) {
	_, err := load(registryTree())
	if !errors.Is(err, functional.ErrUnknownFeature) || !errors.Is(err, matrix.ErrConfig) {
		t.Fatalf("err = %v", err)
	}
	if fes := field.All(err); len(fes) == 0 || !strings.Contains(err.Error(), `scenarios/s.yaml:3:12: features[0]: unknown feature "acme_lora"`) {
		t.Fatalf("located errors: %v", err)
	}
}

package accuracy_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/accuracy/internal/scripted"
	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/field"
)

// fixedEval 是团队自带数据的评测：两道题，回复里出现 want 才得分。它不读 Source，
// 证明登记的评测可以完全不用 simple-evals 的数据文件。
type fixedEval struct{ want string }

// Name 返回登记名。
func (fixedEval) Name() string { return "team-echo" }

// Examples 返回两道固定的题。
func (fixedEval) Examples(context.Context) ([]accuracy.Example, error) {
	return []accuracy.Example{
		{Index: 0, ID: "team-echo/0", Messages: []accuracy.Message{{Role: "user", Content: "say A"}}, Samples: 1},
		{Index: 1, ID: "team-echo/1", Messages: []accuracy.Message{{Role: "user", Content: "say B"}}, Samples: 1},
	}, nil
}

// Score 在回复含 want 时记 1 分。
func (e fixedEval) Score(_ context.Context, ex accuracy.Example, responses []string) (accuracy.SingleResult, error) {
	s := 0.0
	if strings.Contains(responses[0], e.want) {
		s = 1
	}
	return accuracy.SingleResult{Index: ex.Index, ID: ex.ID, Score: s, Responses: responses}, nil
}

// TestRegistryRegister 检查登记时的校验：空名、写法不合法、nil 构造函数、重复（包括覆盖内置）
// 都被拒绝并可用 errors.Is 区分；DefaultRegistry 每次是新值。
func TestRegistryRegister(t *testing.T) {
	r := simpleevals.Registry()
	mk := func(accuracy.Source, accuracy.EvalOptions) (accuracy.Eval, error) { return fixedEval{}, nil }
	if err := r.Register("team-echo", mk); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    accuracy.EvalFactory
		want error
	}{
		{"", mk, accuracy.ErrEvalName},
		{"Team", mk, accuracy.ErrEvalName},
		{"a/b", mk, accuracy.ErrEvalName},
		{"x y", mk, accuracy.ErrEvalName},
		{strings.Repeat("x", 65), mk, accuracy.ErrEvalName},
		{"ok", nil, accuracy.ErrEvalName},
		{"team-echo", mk, accuracy.ErrDuplicateEval},
		{"gpqa", mk, accuracy.ErrDuplicateEval},
	} {
		if err := r.Register(tc.name, tc.f); !errors.Is(err, tc.want) {
			t.Errorf("Register(%q) = %v, want %v", tc.name, err, tc.want)
		}
	}
	if got := strings.Join(r.Names(), ","); got != "gpqa,mmlu,mgsm,drop,humaneval,team-echo" {
		t.Fatalf("Names = %s", got)
	}
	if simpleevals.Registry().Known("team-echo") || accuracy.NewRegistry().Known("gpqa") {
		t.Fatal("registries share state")
	}
	var nilReg *accuracy.Registry
	if nilReg.Known("gpqa") || nilReg.Names() != nil {
		t.Fatal("a nil registry must know nothing")
	}
	if _, err := simpleevals.Registry().New("team-echo", nil, accuracy.EvalOptions{}); !errors.Is(err, accuracy.ErrUnknownDataset) || !strings.Contains(err.Error(), `"team-echo"`) {
		t.Fatalf("New of an unregistered name = %v", err)
	}
	if e, err := r.New("team-echo", nil, accuracy.EvalOptions{}); err != nil || e.Name() != "team-echo" {
		t.Fatalf("New(team-echo) = %v, %v", e, err)
	}
}

// TestRunStageTeamEval 是“加一个精度评测”这条用户故事：以前 NewEval 是封闭的 switch，
// Config.Validate 拒绝一切未知名字。现在登记后同一份配置通过校验，RunStage 构造并运行它，
// 结果与门禁判定与内置评测一样出现在 StageResult 中；阈值高于得分时门禁不通过。
// 没有登记的表仍拒绝这个名字（YAML 拒绝没人登记的评测）。
func TestRunStageTeamEval(t *testing.T) {
	base := scripted.Serve(t, &scripted.Model{})
	cfg := accuracy.Config{Debug: true, MaxTokens: 16, NumThreads: 2, Datasets: []accuracy.DatasetConfig{{Name: "team-echo", Threshold: ptr(0.99)}}}
	var ce *field.Error
	if err := cfg.Validate(simpleevals.Registry()); !errors.As(err, &ce) || ce.Field != "datasets[0].name" || !errors.Is(err, accuracy.ErrConfig) {
		t.Fatalf("the built-in registry accepted an unregistered eval: %v", err)
	}
	evals := simpleevals.Registry()
	// 脚本化模型的回复里没有 "zzz"：得分 0，低于阈值，门禁必须是红的。
	if err := evals.Register("team-echo", func(accuracy.Source, accuracy.EvalOptions) (accuracy.Eval, error) { return fixedEval{want: "zzz"}, nil }); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(evals); err != nil {
		t.Fatalf("registered eval rejected: %v", err)
	}
	var files memFiles
	res, err := accuracy.RunStage(context.Background(), cfg, accuracy.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{base}, Model: "scripted"}},
		accuracy.StageOptions{Source: simpleevals.SampleData(), Evals: evals, Create: files.create})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 1 || res.Results[0].Dataset != "team-echo" || res.Results[0].Examples != 2 || res.Results[0].Score != 0 {
		t.Fatalf("results = %+v", res.Results)
	}
	if v := res.Verdicts[0]; v.Pass || !v.ScoreGated || v.Dataset != "team-echo" {
		t.Fatalf("verdict = %+v, want a failing score gate", v)
	}
	if res.Passed() {
		t.Fatal("stage passed with the team eval below its threshold")
	}
	found := false
	for name := range files.files {
		found = found || strings.HasPrefix(name, "team-echo_scripted_")
	}
	if !found {
		t.Fatalf("no result files for the team eval: %v", files.files)
	}
}

// TestRegistryNewRejectsAliasName 复现 issue #30：登记为 tiny_alias、Name() 却是 tiny_exact 的评测
// 曾经照常运行，结果与门禁于是用两个名字。现在 New 拒绝它并写明两个名字；nil Eval 同样被拒绝。
func TestRegistryNewRejectsAliasName(t *testing.T) {
	r := accuracy.NewRegistry()
	if err := r.Register("tiny_alias", func(accuracy.Source, accuracy.EvalOptions) (accuracy.Eval, error) { return fixedEval{}, nil }); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("tiny.nil", func(accuracy.Source, accuracy.EvalOptions) (accuracy.Eval, error) { return nil, nil }); err != nil {
		t.Fatalf("a dotted name must register like a dotted feature name: %v", err)
	}
	_, err := r.New("tiny_alias", nil, accuracy.EvalOptions{})
	if !errors.Is(err, accuracy.ErrEvalName) || !strings.Contains(err.Error(), `"tiny_alias"`) || !strings.Contains(err.Error(), `"team-echo"`) {
		t.Fatalf("New(alias) = %v", err)
	}
	if _, err := r.New("tiny.nil", nil, accuracy.EvalOptions{}); !errors.Is(err, accuracy.ErrEvalName) {
		t.Fatalf("New(nil eval) = %v", err)
	}
}

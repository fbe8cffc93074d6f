package functional_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/functional"
)

// greetParams 是测试用例的参数，默认值只写在 Case.Params 里。
type greetParams struct {
	Prompt    string `yaml:"prompt"`
	MaxTokens int    `yaml:"max_tokens"`
}

// TestMisspeltParamRejectedBeforeRun 复现 issue 36：只用 functional 包（LoadConfig + NewCatalog +
// Catalog.Add + Runner，不经 matrix 与 pipeline）时，params 块里拼错的键要到用例运行时才被发现，而文档
// 说“在任何东西运行之前”。现在 Catalog.Add 就拒绝它，绕过目录直接交给 Runner.Run 时 Run 在运行任何用例
// 之前拒绝：错误是带文件:行:列与字段路径的 *field.Error，包装 functional.ErrParams。
func TestMisspeltParamRejectedBeforeRun(t *testing.T) {
	fsys := fstest.MapFS{"team.yaml": {Data: []byte("params:\n  acme/greet:\n    max_tokenz: 5\n")}}
	cfg, err := functional.LoadConfig(fsys, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	c := functional.Case{ID: "acme/greet", Suite: "acme", Params: &greetParams{Prompt: "hi", MaxTokens: 8},
		Run: func(context.Context, *functional.T) { ran.Add(1) }}
	cat, err := functional.NewCatalog(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = cat.Add(c)
	var fe *field.Error
	if !errors.Is(err, functional.ErrParams) || !errors.As(err, &fe) || !strings.Contains(err.Error(), `params.acme/greet.max_tokenz: unknown field "max_tokenz"`) || fe.File != "team.yaml" || fe.Line == 0 {
		t.Fatalf("Catalog.Add: %v (field error %+v)", err, fe)
	}
	_, target := startEmulator(t, emulator.Config{Model: "m"})
	r, err := functional.NewRunner(target, functional.Options{Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Run(context.Background(), []functional.Case{c})
	if !errors.Is(err, functional.ErrParams) || !strings.Contains(err.Error(), "max_tokenz") {
		t.Fatalf("Runner.Run: err %v", err)
	}
	if ran.Load() != 0 || len(rep.Results) != 0 {
		t.Fatalf("a case ran (%d) or was reported (%d) despite the bad params", ran.Load(), len(rep.Results))
	}
}

// TestParamsDefaultsWrittenOnce 检查默认值只写一处（issue 36 的摩擦）：声明了 Case.Params 的用例
// 把零值的 out 交给 T.Params 时，先得到 Case.Params 的副本，再叠加 YAML；已经填了值的 out 照旧不被覆盖。
func TestParamsDefaultsWrittenOnce(t *testing.T) {
	_, target := startEmulator(t, emulator.Config{Model: "m"})
	var got, kept greetParams
	c := functional.Case{ID: "acme/greet", Suite: "acme", Params: &greetParams{Prompt: "hi", MaxTokens: 8},
		Run: func(_ context.Context, tt *functional.T) {
			if err := tt.Params(&got); err != nil {
				tt.Fatalf("params: %v", err)
			}
			kept = greetParams{Prompt: "mine"}
			if err := tt.Params(&kept); err != nil {
				tt.Fatalf("params: %v", err)
			}
		}}
	cfg := functional.DefaultConfig()
	cfg.Params = map[string]functional.CaseParams{"acme/greet": {YAML: "max_tokens: 3\n", File: "team.yaml", Line: 2, Column: 5}}
	r, err := functional.NewRunner(target, functional.Options{Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Run(context.Background(), []functional.Case{c})
	if err != nil || rep.Results[0].Status != functional.StatusPass {
		t.Fatalf("run: %v %+v", err, rep.Results)
	}
	if got != (greetParams{Prompt: "hi", MaxTokens: 3}) {
		t.Errorf("zero out: got %+v, want the declared defaults with max_tokens from YAML", got)
	}
	if kept != (greetParams{Prompt: "mine", MaxTokens: 3}) {
		t.Errorf("filled out: got %+v, want the caller's values kept", kept)
	}
}

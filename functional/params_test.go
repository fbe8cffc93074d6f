package functional_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/functional"
)

// loraParams 是团队用例的参数：默认值在 Case.Params 里，YAML 覆盖其中的字段。
type loraParams struct {
	Adapter string `yaml:"adapter"`
	Tries   int    `yaml:"tries"`
}

// TestCaseReadsParamsFromYAML 证明团队用例能从功能配置的 params.<ID> 读取参数：写了的字段覆盖
// 默认值，没写的保留；没有这一块时默认值不变；写错的字段是带路径与行列的 ErrParams 错误。
func TestCaseReadsParamsFromYAML(t *testing.T) {
	_, target := startEmulator(t, emulator.Config{Model: "m"})
	var got []loraParams
	var errs []error
	c := functional.Case{ID: "acme/lora", Suite: "acme", Params: &loraParams{Adapter: "base", Tries: 1},
		Run: func(_ context.Context, tt *functional.T) {
			p := loraParams{Adapter: "base", Tries: 1}
			err := tt.Params(&p)
			got, errs = append(got, p), append(errs, err)
			if err != nil {
				tt.Fatalf("params: %v", err)
			}
		}}
	run := func(doc string) (functional.Status, error) {
		cfg := functional.DefaultConfig()
		if doc != "" {
			// 在 Go 里构造配置只写 YAML 文本：公开类型里没有 YAML 库的类型。
			cfg.Params = map[string]functional.CaseParams{"acme/lora": {YAML: doc, File: "team.yaml", Line: 7, Column: 5}}
		}
		r, err := functional.NewRunner(target, functional.Options{Config: &cfg})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := r.Run(context.Background(), []functional.Case{c})
		if err != nil {
			return "", err
		}
		return rep.Results[0].Status, nil
	}
	if st, err := run("adapter: sql-lora\n"); err != nil || st != functional.StatusPass || got[0] != (loraParams{Adapter: "sql-lora", Tries: 1}) {
		t.Fatalf("status %s err %v params %+v", st, err, got)
	}
	if st, err := run(""); err != nil || st != functional.StatusPass || got[1] != (loraParams{Adapter: "base", Tries: 1}) {
		t.Fatalf("no block: status %s err %v params %+v", st, err, got[1])
	}
	// 拼错的字段在运行任何用例之前就被拒绝（用例声明了 Case.Params）：Run 返回 ErrParams，用例没有运行。
	if st, err := run("adapter: x\ntires: 3\n"); st != "" || len(errs) != 2 || !errors.Is(err, functional.ErrParams) ||
		!strings.Contains(err.Error(), "team.yaml:7:5: params.acme/lora.tires") {
		t.Fatalf("typo: status %s err %v (case ran %d times)", st, err, len(errs))
	}
	// 没有声明 Case.Params 的用例照样能用 T.Params 读参数块，错误在运行时由 T.Params 报告。
	c.Params = nil
	if st, err := run("adapter: x\ntires: 3\n"); err != nil || st != functional.StatusFail || !errors.Is(errs[2], functional.ErrParams) ||
		!strings.Contains(errs[2].Error(), "team.yaml:7:5: params.acme/lora.tires") {
		t.Fatalf("undeclared typo: status %s err %v case err %v", st, err, errs)
	}
}

// TestLoadConfigKeepsParamsAcrossFiles 复现一个缺陷：LoadConfig 按文件名顺序叠加文件，每叠加一个
// 文件都先经 JSON 往返复制配置，而 Params 的 JSON 标签是 "-"——前一个文件写的用例参数在读下一个
// 文件时被悄悄丢掉。参数块还要带着文件与行列，一个不是映射的块是带位置的加载错误。
func TestLoadConfigKeepsParamsAcrossFiles(t *testing.T) {
	fsys := fstest.MapFS{
		"a_team.yaml":  {Data: []byte("params:\n  acme/lora:\n    adapter: sql-lora\n    tries: 2\n")},
		"b_chat.yaml":  {Data: []byte("chat_core:\n  max_tokens: 12\n")},
		"c_other.yaml": {Data: []byte("params:\n  acme/other:\n    x: 1\n")},
	}
	cfg, err := functional.LoadConfig(fsys, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := cfg.Params["acme/lora"]
	if !ok || p.YAML != "adapter: sql-lora\ntries: 2" || p.File != "a_team.yaml" || p.Line != 3 || p.Column != 5 {
		t.Fatalf("params acme/lora = %+v (present %v), all %+v", p, ok, cfg.Params)
	}
	if _, ok := cfg.Params["acme/other"]; !ok || cfg.ChatCore.MaxTokens != 12 {
		t.Fatalf("params %+v, chat_core.max_tokens %d", cfg.Params, cfg.ChatCore.MaxTokens)
	}
	_, err = functional.LoadConfig(fstest.MapFS{"x.yaml": {Data: []byte("params:\n  acme/lora: [1, 2]\n")}}, nil)
	if !errors.Is(err, functional.ErrConfig) || !strings.Contains(err.Error(), "x.yaml:2:14: params.acme/lora: must be a mapping") {
		t.Fatalf("err = %v", err)
	}
}

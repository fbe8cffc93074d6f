package functional_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

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
	run := func(doc string) functional.Status {
		cfg := functional.DefaultConfig()
		if doc != "" {
			var root yaml.Node
			if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
				t.Fatal(err)
			}
			cfg.Params = map[string]yaml.Node{"acme/lora": *root.Content[0]}
		}
		r, err := functional.NewRunner(target, functional.Options{Config: &cfg})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := r.Run(context.Background(), []functional.Case{c})
		if err != nil {
			t.Fatal(err)
		}
		return rep.Results[0].Status
	}
	if st := run("adapter: sql-lora\n"); st != functional.StatusPass || got[0] != (loraParams{Adapter: "sql-lora", Tries: 1}) {
		t.Fatalf("status %s params %+v", st, got)
	}
	if st := run(""); st != functional.StatusPass || got[1] != (loraParams{Adapter: "base", Tries: 1}) {
		t.Fatalf("no block: status %s params %+v", st, got[1])
	}
	if st := run("adapter: x\ntires: 3\n"); st != functional.StatusFail || !errors.Is(errs[2], functional.ErrParams) ||
		!strings.Contains(errs[2].Error(), "params.acme/lora") || !strings.Contains(errs[2].Error(), "tires") {
		t.Fatalf("typo: status %s err %v", st, errs[2])
	}
}

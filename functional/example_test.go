package functional_test

import (
	"context"
	"fmt"
	"os"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/functional"
)

// ExampleCatalog_Add 展示从模块外加入一个自己的用例只需几行：
// 一个 ID、一个套件名和一个用 T 发请求并断言的函数。
func ExampleCatalog_Add() {
	em, _ := emulator.New(emulator.Config{Model: "demo"})
	dep, _ := em.Deploy(context.Background())
	defer dep.Teardown(context.Background())
	ep := dep.Endpoint()

	cat := functional.DefaultCatalog()
	_ = cat.Add(functional.Case{
		ID: "version", Suite: "my_team",
		Run: func(ctx context.Context, t *functional.T) {
			resp, err := t.Get(ctx, "/version")
			if err != nil {
				t.Fatalf("GET /version: %v", err)
			}
			t.Expect("HTTP status", 200, resp.Status)
		},
	})
	cases, _ := cat.Select("my_team")
	r, _ := functional.NewRunner(functional.Target{Endpoint: ep}, functional.Options{})
	rep, _ := r.Run(context.Background(), cases)
	for _, res := range rep.Results {
		fmt.Println(res.CaseID, res.Status)
	}
	// Output: my_team/version pass
}

// ExampleRunner_Run 对模拟器运行两个套件并打印汇总表。
func ExampleRunner_Run() {
	em, _ := emulator.New(emulator.Config{})
	dep, _ := em.Deploy(context.Background())
	defer dep.Teardown(context.Background())
	ep := dep.Endpoint()

	cases, _ := functional.DefaultCatalog().Select("chat_core", "guided")
	r, _ := functional.NewRunner(functional.Target{Endpoint: ep, Features: []functional.Feature{functional.FeatureGuidedDecoding}}, functional.Options{})
	rep, _ := r.Run(context.Background(), cases)
	_ = functional.WriteTable(os.Stdout, rep)
	// Output:
	// SUITE      TOTAL  PASS  FAIL  SKIP  UNSUP  CANCEL  PASS RATIO
	// chat_core  9      9     0     0     0      0       1.00
	// guided     4      2     0     2     0      0       1.00
	// SKIP guided/structured_outputs_json: feature "structured_outputs" not enabled for this scenario
	// SKIP guided/structured_outputs_choice: feature "structured_outputs" not enabled for this scenario
}

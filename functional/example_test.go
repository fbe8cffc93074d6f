package functional_test

import (
	"context"
	"fmt"
	"os"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/functional"
)

// ExampleT_HTTPClient 展示用例用团队自己选定的 SDK（这里是 openai-go v3）发请求：客户端由
// BaseURL、APIKey 与 HTTPClient 构造，SDK 自己的重试关掉（重试由 T 的传输层按 Options 做），
// 于是请求与 Post/Get/Stream 一样受单请求超时与响应上限约束，故障按类别记录。本包的导出
// API 不含任何 SDK 的类型，团队升级 SDK 的大版本不牵连 cibench。
func ExampleT_HTTPClient() {
	em, _ := emulator.New(emulator.Config{Model: "demo", APIKey: "sk-demo"})
	dep, _ := em.Deploy(context.Background())
	defer dep.Teardown(context.Background())

	cat := functional.DefaultCatalog()
	_ = cat.Add(functional.Case{
		ID: "models_via_sdk", Suite: "my_team",
		Run: func(ctx context.Context, t *functional.T) {
			c := openai.NewClient(option.WithBaseURL(t.BaseURL()+"/"), option.WithHTTPClient(t.HTTPClient()),
				option.WithAPIKey(t.APIKey()), option.WithMaxRetries(0))
			page, err := c.Models.List(ctx)
			if err != nil {
				t.Fatalf("list models: %v", err)
			}
			t.Expect("number of models", 1, len(page.Data))
			t.Expect("model id", t.Model(), page.Data[0].ID)
		},
	})
	cases, _ := cat.Select("my_team")
	r, _ := functional.NewRunner(functional.Target{Endpoint: dep.Endpoint()}, functional.Options{})
	rep, _ := r.Run(context.Background(), cases)
	for _, res := range rep.Results {
		fmt.Println(res.CaseID, res.Status, res.Reason)
	}
	// Output: my_team/models_via_sdk pass
}

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

// ExampleFeatures_Register 展示需要厂商能力的用例：先在登记表里登记能力，再用同一张表
// 构建目录与执行器；场景没有开启该能力时用例跳过并写明原因。
func ExampleFeatures_Register() {
	em, _ := emulator.New(emulator.Config{Model: "demo"})
	dep, _ := em.Deploy(context.Background())
	defer dep.Teardown(context.Background())

	feats := functional.DefaultFeatures()
	if err := feats.Register("acme_lora"); err != nil {
		fmt.Println(err)
		return
	}
	cat, _ := functional.NewCatalog(functional.DefaultConfig(), feats)
	_ = cat.Add(functional.Case{ID: "adapter", Suite: "acme", Requires: []functional.Feature{"acme_lora"},
		Run: func(ctx context.Context, t *functional.T) {}})
	cases, _ := cat.Select("acme")
	for _, on := range []bool{true, false} {
		target := functional.Target{Endpoint: dep.Endpoint()}
		if on {
			target.Features = []functional.Feature{"acme_lora"}
		}
		r, _ := functional.NewRunner(target, functional.Options{Features: feats})
		rep, _ := r.Run(context.Background(), cases)
		res := rep.Results[0]
		if res.Reason == "" {
			fmt.Println(res.CaseID, res.Status)
			continue
		}
		fmt.Println(res.CaseID, res.Status, res.Reason)
	}
	fmt.Println(feats.Register("acme_lora"))
	// Output:
	// acme/adapter pass
	// acme/adapter skip feature "acme_lora" not enabled for this scenario
	// functional: duplicate feature: "acme_lora" is already registered
}

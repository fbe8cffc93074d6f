package loadgen_test

import (
	"context"
	"fmt"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/loadgen"
)

// Example 对进程内模拟器跑一组压测，并读取汇总中的确定性部分。
func Example() {
	em, _ := emulator.New(emulator.Config{Model: "demo"})
	dep, err := em.Deploy(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dep.Teardown(context.Background())
	ep := dep.Endpoint()

	profile := loadgen.Profile{
		Concurrency:  []int{2},
		InputLength:  []int{64},
		OutputLength: []int{16},
		NumRequests:  []int{10},
		Goodput:      []string{"ttft:5000,e2e:60000"},
	}
	sums, err := loadgen.Run(context.Background(), loadgen.Target{Endpoint: ep, Provider: "emu"}, profile, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	s := sums[0]
	fmt.Println("requests:", s.NumPrompts, "failed:", s.Failed)
	fmt.Println("prompt tokens:", s.AvgPromptTokens, "completion tokens:", s.CompletionTokens.Avg, "from", s.TokenSource)
	fmt.Println("TPOT_SEC samples:", s.TPOTSec.Count, "goodput measured:", s.Goodput > 0)
	// Output:
	// requests: 10 failed: 0
	// prompt tokens: 64 completion tokens: 16 from usage
	// TPOT_SEC samples: 150 goodput measured: true
}

// ExampleTee 在已有的出口旁边再挂一个导出器：每个出口只写自己关心的钩子，Tee 把每种事件
// 转发给每一个，谁也不会因为别人没实现某个方法而丢事件。
func ExampleTee() {
	em, _ := emulator.New(emulator.Config{Model: "demo"})
	dep, err := em.Deploy(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dep.Teardown(context.Background())

	var records int
	csvLike := &loadgen.Observer{OnRecord: func(*loadgen.Record) error { records++; return nil }}
	exporter := &loadgen.Observer{OnGroupEnd: func(s loadgen.Summary) error {
		fmt.Println("group", s.Concurrency, "succeeded:", s.Succeeded)
		return nil
	}}
	profile := loadgen.Profile{Concurrency: []int{1, 2}, InputLength: []int{16}, OutputLength: []int{4}, NumRequests: []int{3}}
	if _, err := loadgen.Run(context.Background(), loadgen.Target{Endpoint: dep.Endpoint()}, profile, loadgen.Tee(csvLike, exporter)); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("records:", records)
	// Output:
	// group 1 succeeded: 3
	// group 2 succeeded: 3
	// records: 6
}

package loadgen_test

import (
	"context"
	"fmt"
	"strings"

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

// ExampleRandomText 生成可复现、长度精确的中英混合随机文本。
func ExampleRandomText() {
	a := loadgen.RandomText(7, 12)
	fmt.Println(a == loadgen.RandomText(7, 12), a != loadgen.RandomText(8, 12))
	// Output: true true
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

// ExampleReadMooncakeTrace 读入一段 Mooncake 轨迹：hash_ids 相同的块生成相同的文本，
// 最后一块不在 (0, 块大小] 内的行被拒绝并点名文件与行号。
func ExampleReadMooncakeTrace() {
	trace := `{"timestamp": 0, "input_length": 20, "output_length": 4, "hash_ids": [7, 8]}
{"timestamp": 250, "input_length": 12, "output_length": 4, "hash_ids": [7], "session_id": "s1"}
`
	rows, err := loadgen.ReadMooncakeTrace(strings.NewReader(trace), "t.jsonl", 16)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rows {
		fmt.Printf("%s %d %v session=%q\n", r.At, r.InputLength, r.HashIDs, r.SessionID)
	}
	_, err = loadgen.ReadMooncakeTrace(strings.NewReader(`{"timestamp": 0, "input_length": 40, "output_length": 4, "hash_ids": [7, 8]}`), "bad.jsonl", 16)
	fmt.Println(err)
	// Output:
	// 0s 20 [7 8] session=""
	// 250ms 12 [7] session="s1"
	// loadgen: read trace bad.jsonl:1: input_length 40 with 2 hash_ids leaves a last block of 24 tokens at block size 16, want (0, 16] (input_length must be in [17, 32])
}

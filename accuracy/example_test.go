package accuracy_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/vllm-cibench/cibench/accuracy"
)

// capitals 是一个团队自带数据的小评测：两道题，回复的最后一行与答案相同得 1 分。
// 它只用核心包的类型（Eval、Example、Message、SingleResult），不读任何数据文件。
type capitals struct{}

// Name 返回登记名。
func (capitals) Name() string { return "capitals" }

// Examples 返回两道固定的题，Index 即下标，Score 用它找回答案。
func (capitals) Examples(context.Context) ([]accuracy.Example, error) {
	return []accuracy.Example{
		{Index: 0, ID: "capitals/fr", Samples: 1, Messages: []accuracy.Message{{Role: "user", Content: "Capital of France?"}}},
		{Index: 1, ID: "capitals/jp", Samples: 1, Messages: []accuracy.Message{{Role: "user", Content: "Capital of Japan?"}}},
	}, nil
}

// Score 比较回复的最后一行与答案。
func (capitals) Score(_ context.Context, ex accuracy.Example, responses []string) (accuracy.SingleResult, error) {
	want := []string{"Paris", "Tokyo"}[ex.Index]
	lines := strings.Split(strings.TrimSpace(responses[0]), "\n")
	got := lines[len(lines)-1]
	s := 0.0
	if got == want {
		s = 1
	}
	return accuracy.SingleResult{Index: ex.Index, ID: ex.ID, Score: s, Prompt: ex.Messages[0].Content,
		Response: responses[0], Responses: responses, ExtractedAnswer: got, CorrectAnswer: want}, nil
}

// Example 演示只用核心包：把任意函数当作模型，跑一个团队自己的评测，输出与 simple-evals
// 同格式的 JSON 并按阈值判定。程序不链接五个内置数据集（它们在 accuracy/simpleevals）。
func Example() {
	model := accuracy.SamplerFunc(func(ctx context.Context, msgs []accuracy.Message) (string, error) {
		return "Thinking.\nParis", nil
	})
	res, err := accuracy.Run(context.Background(), model, capitals{}, accuracy.Options{Threads: 2, Model: "always-paris"})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = accuracy.WriteJSON(os.Stdout, res)
	fmt.Println()
	threshold := 0.75
	fmt.Println(accuracy.Gate(accuracy.DatasetConfig{Name: "capitals", Threshold: &threshold}, res).Reason)
	// Output:
	// {
	//   "score:std": 0.5,
	//   "score": 0.5
	// }
	// score 0.5000 < threshold 0.7500
}

// ExampleRegistry_Register 演示加一个自己的评测：登记构造函数后，精度配置可以列出它的名字，
// RunStage（以及参考驱动）用同一张表构造它；没登记的表仍拒绝这个名字。要同时用内置的
// 五个评测，从 simpleevals.Registry() 出发而不是 NewRegistry()。
func ExampleRegistry_Register() {
	evals := accuracy.NewRegistry()
	err := evals.Register("capitals", func(accuracy.Source, accuracy.EvalOptions) (accuracy.Eval, error) { return capitals{}, nil })
	fmt.Println(err, evals.Names())
	cfg := accuracy.Config{Datasets: []accuracy.DatasetConfig{{Name: "capitals", ReportOnly: true}}}
	fmt.Println(cfg.Validate(evals))
	fmt.Println(cfg.Validate(accuracy.NewRegistry()))
	fmt.Println(evals.Register("Team Echo", nil))
	// Output:
	// <nil> [capitals]
	// <nil>
	// accuracy: invalid configuration: datasets[0].name: accuracy: unknown dataset (no evals are registered: pass simpleevals.Registry() or your own registry) (got "capitals")
	// accuracy: invalid eval name: "Team Echo": want a lower-case letter followed by [a-z0-9_.-]
}

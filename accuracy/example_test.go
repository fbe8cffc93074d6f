package accuracy_test

import (
	"context"
	"fmt"
	"os"

	"github.com/vllm-cibench/cibench/accuracy"
)

// Example 演示零散使用：把任意函数当作模型，在内置合成数据上跑 GPQA 的 debug
// 子集（random.Random(0) 抽 5 题并打乱选项），输出与 simple-evals 同格式的 JSON。
func Example() {
	model := accuracy.SamplerFunc(func(ctx context.Context, msgs []accuracy.Message) (string, error) {
		return "I always pick the second option.\nAnswer: B", nil
	})
	e, err := accuracy.DefaultRegistry().New("gpqa", accuracy.SampleData(), accuracy.EvalOptions{Debug: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := accuracy.Run(context.Background(), model, e, accuracy.Options{Threads: 2, Model: "always-b"})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = accuracy.WriteJSON(os.Stdout, res)
	fmt.Println()
	threshold := 0.5
	fmt.Println(accuracy.Gate(accuracy.DatasetConfig{Name: "gpqa", Threshold: &threshold}, res).Reason)
	// Output:
	// {
	//   "chars": 42.0,
	//   "chars:std": 0.0,
	//   "score:std": 0.48989794855663565,
	//   "score": 0.4
	// }
	// score 0.4000 < threshold 0.5000
}

// ExampleRegistry_Register 演示加一个自己的评测：登记构造函数后，精度配置可以列出它的名字，
// RunStage（以及参考驱动）用同一张表构造它；没登记的表仍拒绝这个名字。
func ExampleRegistry_Register() {
	evals := accuracy.DefaultRegistry()
	err := evals.Register("team-echo", func(accuracy.Source, accuracy.EvalOptions) (accuracy.Eval, error) { return fixedEval{want: "ok"}, nil })
	fmt.Println(err, evals.Names())
	cfg := accuracy.Config{Datasets: []accuracy.DatasetConfig{{Name: "team-echo", ReportOnly: true}}}
	fmt.Println(cfg.Validate(evals))
	fmt.Println(cfg.Validate(nil))
	fmt.Println(evals.Register("Team Echo", nil))
	// Output:
	// <nil> [gpqa mmlu mgsm drop humaneval team-echo]
	// <nil>
	// accuracy: invalid configuration: datasets[0].name: accuracy: unknown dataset (want one of gpqa, mmlu, mgsm, drop, humaneval) (got "team-echo")
	// accuracy: invalid eval name: "Team Echo": want a lower-case letter followed by [a-z0-9_-]
}

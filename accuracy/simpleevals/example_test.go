package simpleevals_test

import (
	"context"
	"fmt"
	"os"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
)

// Example 演示零散使用：把任意函数当作模型，在内置合成数据上跑 GPQA 的 debug
// 子集（random.Random(0) 抽 5 题并打乱选项），输出与 simple-evals 同格式的 JSON。
func Example() {
	model := accuracy.SamplerFunc(func(ctx context.Context, msgs []accuracy.Message) (string, error) {
		return "I always pick the second option.\nAnswer: B", nil
	})
	e, err := simpleevals.Registry().New("gpqa", simpleevals.SampleData(), accuracy.EvalOptions{Debug: true})
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

// ExampleRegistry 演示在内置五个评测旁边加一个团队评测：在 Registry() 返回的表上登记，
// 精度配置就能同时列出内置与自己的名字；登记项带的校验（gpqa 全量抽子集须 n_repeats: 1）
// 与指标上限（drop 的 f1_score 百分制）在 Config.Validate 中生效。
func ExampleRegistry() {
	evals := simpleevals.Registry()
	err := evals.Register("team-echo", func(accuracy.Source, accuracy.EvalOptions) (accuracy.Eval, error) { return nil, nil })
	fmt.Println(err, evals.Names())
	f1 := 60.0
	ok := accuracy.Config{Datasets: []accuracy.DatasetConfig{{Name: "team-echo", ReportOnly: true}, {Name: "drop", Metric: "f1_score", Threshold: &f1}}}
	fmt.Println(ok.Validate(evals))
	bad := accuracy.Config{Datasets: []accuracy.DatasetConfig{{Name: "gpqa", Examples: 20, ReportOnly: true}}}
	fmt.Println(bad.Validate(evals))
	// Output:
	// <nil> [gpqa mmlu mgsm drop humaneval team-echo]
	// <nil>
	// accuracy: invalid configuration: datasets[0].n_repeats: gpqa with examples=20 in full mode needs n_repeats: 1 (simple-evals asserts this) (got "0")
}

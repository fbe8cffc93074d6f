package accuracy

import (
	"context"
	"errors"
)

// Example 是一个待评测样本：发给模型的消息与需要的回复数。
// Eval 自己保存评分所需的答案等数据，用 Index 对应。
type Example struct {
	// Index 是样本在 Examples 返回序列中的下标，Score 用它找回答案。
	Index int
	// ID 是便于阅读的标识，写入 JSONL/HTML。
	ID string
	// Messages 是请求的消息列表（simple-evals 均为单条 user 消息）。
	Messages []Message
	// Samples 是需要的独立回复数（HumanEval 为 5，其余为 1）。
	Samples int
}

// Eval 是一个数据集评测：Examples 按 simple-evals 的规则加载并抽样，
// Score 对一个样本的全部回复评分。实现必须让 Examples 的结果可复现
// （同样的数据与参数得到同样的序列），Score 可被多个 goroutine 并发调用。
type Eval interface {
	// Name 返回数据集名（gpqa、mmlu、mgsm、drop、humaneval 或自定义）。
	Name() string
	// Examples 加载数据并返回全部待评测样本。
	Examples(ctx context.Context) ([]Example, error)
	// Score 为一个样本评分；responses 的长度等于 Example.Samples。
	// 返回错误只表示评分基础设施故障（如缺少 python3），不表示答错。
	Score(ctx context.Context, ex Example, responses []string) (SingleResult, error)
}

// Sampler 是被测模型：对一组消息返回一条回复文本。实现须可被并发调用。
// 返回错误表示这个请求失败（Run 计入 Errors）；此时返回的文本就是要计分的回复——
// 与 simple-evals 一致，HTTP 400 是 "No response (bad request)."，其余为空串。
type Sampler interface {
	Sample(ctx context.Context, messages []Message) (string, error)
}

// SamplerFunc 让普通函数实现 Sampler，便于测试与脚本化模型。
type SamplerFunc func(ctx context.Context, messages []Message) (string, error)

// Sample 调用 f 本身。
func (f SamplerFunc) Sample(ctx context.Context, messages []Message) (string, error) {
	return f(ctx, messages)
}

// ErrNotLoaded 表示在 Examples 成功返回之前调用了 Score。
var ErrNotLoaded = errors.New("accuracy: Score called before Examples loaded the dataset")

// ErrUnknownDataset 表示数据集名没有在登记表（Registry）中登记。
var ErrUnknownDataset = errors.New("accuracy: unknown dataset")

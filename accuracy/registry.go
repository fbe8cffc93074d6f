package accuracy

import (
	"fmt"
	"time"
)

// Datasets 返回内置数据集名（参考命令行 --dataset 的取值）。
func Datasets() []string { return []string{"gpqa", "mmlu", "mgsm", "drop", "humaneval"} }

// EvalOptions 对应参考命令行中影响样本选择的参数。
type EvalOptions struct {
	// Debug 对应 --debug：GPQA 5 题 × 1 次、MMLU 1 题、MGSM 每语言 10 题、DROP/HumanEval 10 题。
	Debug bool
	// Examples 对应 --examples（0 表示未指定）；与参考实现一样只影响 GPQA、
	// 以及非 debug 时的 MMLU/DROP/HumanEval，MGSM 不受影响。
	Examples int
	// NRepeats 覆盖 GPQA 的重复次数（0 表示按参考：debug 1、全量 10）。
	NRepeats int
	// Interpreter 与 ExecTimeout 传给 HumanEval（见 HumanEvalOptions）。
	Interpreter []string
	ExecTimeout time.Duration
}

// NewEval 按 simple_evals.py 的 get_evals 规则构造内置评测。
func NewEval(name string, src Source, o EvalOptions) (Eval, error) {
	if o.Examples < 0 || o.NRepeats < 0 {
		return nil, optErrf("accuracy: %s: examples=%d n_repeats=%d must be >= 0", name, o.Examples, o.NRepeats)
	}
	// num_examples = args.examples if given else (5 if debug else None)
	num := o.Examples
	if num == 0 && o.Debug {
		num = 5
	}
	debugOr := func(debugN, full int) int {
		if o.Debug {
			return debugN
		}
		return full
	}
	switch name {
	case "gpqa":
		rep := o.NRepeats
		if rep == 0 {
			rep = debugOr(1, 10)
		}
		return NewGPQA(src, GPQAOptions{NRepeats: rep, NumExamples: num})
	case "mmlu":
		return NewMMLU(src, MMLUOptions{NumExamples: debugOr(1, num)})
	case "mgsm":
		return NewMGSM(src, MGSMOptions{NumExamplesPerLang: debugOr(10, 250)})
	case "drop":
		return NewDROP(src, DROPOptions{NumExamples: debugOr(10, num), TrainSamplesPerPrompt: 3})
	case "humaneval":
		return NewHumanEval(src, HumanEvalOptions{NumExamples: debugOr(10, num), Interpreter: o.Interpreter, ExecTimeout: o.ExecTimeout})
	}
	return nil, fmt.Errorf("%w: %q (want one of %v)", ErrUnknownDataset, name, Datasets())
}

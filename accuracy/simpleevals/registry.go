package simpleevals

import (
	"errors"
	"fmt"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/field"
)

// Names 返回内置评测名（新切片），顺序即 Registry 的登记顺序，也是 simple_evals.py 的顺序。
// 它就是 Registry().Names()：名单只写在 Registry 里一处。
func Names() []string { return Registry().Names() }

// Registry 返回登记了五个内置评测（gpqa、mmlu、mgsm、drop、humaneval，按 simple_evals.py 的
// get_evals 规则构造）的新登记表，默认数据来源是 simple-evals 自己读取的上游地址
// （DefaultBaseURL 与 DefaultURLs），dataset: builtin-sample 读 SampleData。每次调用都是
// 独立的值，调用方在上面登记自己的评测（accuracy.Registry.Register）不影响别人。
//
// accuracy.EvalOptions 对内置评测的含义同参考命令行：Debug（--debug）时 GPQA 5 题 × 1 次、
// MMLU 1 题、MGSM 每语言 10 题、DROP/HumanEval 10 题；Examples（--examples）只影响 GPQA，
// 以及非 debug 时的 MMLU/DROP/HumanEval，MGSM 不受影响；NRepeats 覆盖 GPQA 的重复次数
// （0 = debug 1、全量 10）；Interpreter 与 ExecTimeout 交给 HumanEval（见 HumanEvalOptions）。
func Registry() *accuracy.Registry {
	r := accuracy.NewRegistry()
	r.SetData(accuracy.Data{BaseURL: DefaultBaseURL, URLs: DefaultURLs(), Sample: SampleData()})
	for _, b := range []struct {
		name string
		f    accuracy.EvalFactory
		opts []accuracy.RegisterOption
	}{
		{"gpqa", newGPQAEval, []accuracy.RegisterOption{accuracy.WithCheck(checkGPQA)}},
		{"mmlu", newMMLUEval, nil},
		{"mgsm", newMGSMEval, nil},
		{"drop", newDROPEval, []accuracy.RegisterOption{accuracy.WithMetricMax("f1_score", 100)}},
		{"humaneval", newHumanEvalEval, nil},
	} {
		// 名字是合法的常量且互不相同，登记不会失败（TestRegistryBuiltins 核对 Names 与这里一致）。
		_ = r.Register(b.name, b.f, b.opts...)
	}
	return r
}

// checkGPQA 在运行之前拒绝 simple-evals 会断言失败的组合：全量模式下抽子集（examples > 0）
// 必须 n_repeats: 1（GPQAEval.__init__ 的 assert）。
func checkGPQA(d accuracy.DatasetConfig, debug bool) error {
	if d.Examples > 0 && !debug && d.NRepeats != 1 {
		return field.New(accuracy.ErrConfig, "n_repeats", d.NRepeats,
			fmt.Sprintf("gpqa with examples=%d in full mode needs n_repeats: 1 (simple-evals asserts this)", d.Examples))
	}
	return nil
}

// optErrf 按格式构造包装 accuracy.ErrConfig 的错误：构造参数写错（负数、互斥的选项）
// 与运行期失败（数据不可得、网络）由调用方用 errors.Is 区分。
func optErrf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{accuracy.ErrConfig}, args...)...)
}

// numExamples 按 simple_evals.py 计算 num_examples：args.examples if given else (5 if debug else None)。
func numExamples(o accuracy.EvalOptions) int {
	if o.Examples == 0 && o.Debug {
		return 5
	}
	return o.Examples
}

// debugOr 在 debug 时返回 debugN，否则返回 full（simple_evals.py 中各评测的 debug 规则）。
func debugOr(o accuracy.EvalOptions, debugN, full int) int {
	if o.Debug {
		return debugN
	}
	return full
}

// newGPQAEval 是 gpqa 的构造函数：重复次数 debug 1、全量 10，可由 NRepeats 覆盖。
func newGPQAEval(src accuracy.Source, o accuracy.EvalOptions) (accuracy.Eval, error) {
	rep := o.NRepeats
	if rep == 0 {
		rep = debugOr(o, 1, 10)
	}
	return NewGPQA(src, GPQAOptions{NRepeats: rep, NumExamples: numExamples(o)})
}

// newMMLUEval 是 mmlu 的构造函数：debug 1 题。
func newMMLUEval(src accuracy.Source, o accuracy.EvalOptions) (accuracy.Eval, error) {
	return NewMMLU(src, MMLUOptions{NumExamples: debugOr(o, 1, numExamples(o))})
}

// newMGSMEval 是 mgsm 的构造函数：每语言 debug 10、全量 250 题，不受 Examples 影响。
func newMGSMEval(src accuracy.Source, o accuracy.EvalOptions) (accuracy.Eval, error) {
	return NewMGSM(src, MGSMOptions{NumExamplesPerLang: debugOr(o, 10, 250)})
}

// newDROPEval 是 drop 的构造函数：debug 10 题，每个提示 3 个训练样例。
func newDROPEval(src accuracy.Source, o accuracy.EvalOptions) (accuracy.Eval, error) {
	return NewDROP(src, DROPOptions{NumExamples: debugOr(o, 10, numExamples(o)), TrainSamplesPerPrompt: 3})
}

// newHumanEvalEval 是 humaneval 的构造函数：debug 10 题，执行器与时限来自 o。
// 没有解释器时返回同时包装 accuracy.ErrSkip 与 ErrNoPython 的错误：RunStage 跳过该数据集并写明原因。
func newHumanEvalEval(src accuracy.Source, o accuracy.EvalOptions) (accuracy.Eval, error) {
	h, err := NewHumanEval(src, HumanEvalOptions{NumExamples: debugOr(o, 10, numExamples(o)), Interpreter: o.Interpreter, ExecTimeout: o.ExecTimeout})
	if errors.Is(err, ErrNoPython) {
		return nil, fmt.Errorf("%w: python3 interpreter not available (humaneval executes generated code): %w", accuracy.ErrSkip, err)
	}
	return h, err
}

package accuracy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

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

// EvalFactory 按数据来源与选项构造一个评测。内置评测从 src 读取 simple-evals 的数据文件；
// 团队的评测可以读 src 中自己的文件，也可以完全不用它（数据随代码提供）。
// 返回包装 ErrNoPython 的错误时 RunStage 跳过该数据集并写明原因，其余错误记为该数据集出错。
type EvalFactory func(src Source, o EvalOptions) (Eval, error)

// ErrDuplicateEval 表示同一个评测名被登记了两次。
var ErrDuplicateEval = errors.New("accuracy: duplicate eval")

// ErrEvalName 表示评测名写法不合法（空、大写、空白或其他字符）。
var ErrEvalName = errors.New("accuracy: invalid eval name")

// maxEvalName 是评测名的长度上限：它出现在 YAML、结果文件名与指标标签中。
const maxEvalName = 64

// Registry 是评测名到构造函数的登记表：精度配置 datasets[].name 只接受登记过的名字，
// RunStage 用它构造评测。它是普通的值，由调用方构造并传给 Config.Validate、
// StageOptions.Evals 与 matrix.WithEvals，本包没有全局登记表（也没有 init() 登记）。
// 非并发安全：登记完成后再交给使用者，之后只读。
type Registry struct {
	names []string
	m     map[string]EvalFactory
}

// NewRegistry 返回一张空登记表。
func NewRegistry() *Registry { return &Registry{m: map[string]EvalFactory{}} }

// DefaultRegistry 返回登记了五个内置评测（gpqa、mmlu、mgsm、drop、humaneval，按
// simple_evals.py 的 get_evals 规则构造）的新登记表；每次调用都是独立的值，调用方在上面
// 登记自己的评测不影响别人。
func DefaultRegistry() *Registry {
	r := NewRegistry()
	for _, b := range []struct {
		name string
		f    EvalFactory
	}{{"gpqa", newGPQAEval}, {"mmlu", newMMLUEval}, {"mgsm", newMGSMEval}, {"drop", newDROPEval}, {"humaneval", newHumanEvalEval}} {
		r.names = append(r.names, b.name)
		r.m[b.name] = b.f
	}
	return r
}

// Register 登记一个评测。名字必须以小写字母开头，只含小写字母、数字、'_' 与 '-'，不超过
// 64 个字符（它会成为结果文件名 {dataset}_{model}_{ts}.json 的一部分与指标标签，不能含
// 路径分隔符或空白）；f 不能为 nil。写法不合法返回包装 ErrEvalName 的错误，已登记返回
// 包装 ErrDuplicateEval 的错误（覆盖内置评测必须换一个名字，报告里的 gpqa 永远是 gpqa）。
func (r *Registry) Register(name string, f EvalFactory) error {
	if err := checkEvalName(name); err != nil {
		return err
	}
	if f == nil {
		return fmt.Errorf("%w: %q: nil factory", ErrEvalName, name)
	}
	if r.m == nil {
		r.m = map[string]EvalFactory{}
	}
	if _, ok := r.m[name]; ok {
		return fmt.Errorf("%w: %q is already registered", ErrDuplicateEval, name)
	}
	r.m[name] = f
	r.names = append(r.names, name)
	return nil
}

// checkEvalName 校验评测名的写法，错误写明取值与规则。
func checkEvalName(s string) error {
	if s == "" {
		return fmt.Errorf("%w: empty name", ErrEvalName)
	}
	if len(s) > maxEvalName {
		return fmt.Errorf("%w: %q is longer than %d characters", ErrEvalName, s, maxEvalName)
	}
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '-')
		if !ok {
			return fmt.Errorf("%w: %q: want a lower-case letter followed by [a-z0-9_-]", ErrEvalName, s)
		}
	}
	return nil
}

// Names 返回已登记的评测名（新切片），顺序即登记顺序（内置的五个在前）。
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.names)
}

// Known 报告 name 是否已登记。nil 登记表什么也不认识。
func (r *Registry) Known(name string) bool {
	if r == nil {
		return false
	}
	_, ok := r.m[name]
	return ok
}

// check 在 name 未登记时返回包装 ErrUnknownDataset、列出全部已登记名字的错误。
func (r *Registry) check(name string) error {
	if r.Known(name) {
		return nil
	}
	return fmt.Errorf("%w %q (want one of %s)", ErrUnknownDataset, name, strings.Join(r.Names(), ", "))
}

// New 按登记的构造函数创建评测。o 的 Examples 与 NRepeats 不能为负（包装 ErrOptions）；
// 名字未登记时返回包装 ErrUnknownDataset 的错误。
func (r *Registry) New(name string, src Source, o EvalOptions) (Eval, error) {
	if o.Examples < 0 || o.NRepeats < 0 {
		return nil, optErrf("accuracy: %s: examples=%d n_repeats=%d must be >= 0", name, o.Examples, o.NRepeats)
	}
	if err := r.check(name); err != nil {
		return nil, err
	}
	return r.m[name](src, o)
}

// orDefault 返回 r，nil 时返回内置登记表：StageOptions 与 Config.Validate 的 nil 即“只有内置评测”。
func (r *Registry) orDefault() *Registry {
	if r == nil {
		return DefaultRegistry()
	}
	return r
}

// numExamples 按 simple_evals.py 计算 num_examples：args.examples if given else (5 if debug else None)。
func numExamples(o EvalOptions) int {
	if o.Examples == 0 && o.Debug {
		return 5
	}
	return o.Examples
}

// debugOr 在 debug 时返回 debugN，否则返回 full（simple_evals.py 中各评测的 debug 规则）。
func debugOr(o EvalOptions, debugN, full int) int {
	if o.Debug {
		return debugN
	}
	return full
}

// newGPQAEval 是 gpqa 的构造函数：重复次数 debug 1、全量 10，可由 NRepeats 覆盖。
func newGPQAEval(src Source, o EvalOptions) (Eval, error) {
	rep := o.NRepeats
	if rep == 0 {
		rep = debugOr(o, 1, 10)
	}
	return NewGPQA(src, GPQAOptions{NRepeats: rep, NumExamples: numExamples(o)})
}

// newMMLUEval 是 mmlu 的构造函数：debug 1 题。
func newMMLUEval(src Source, o EvalOptions) (Eval, error) {
	return NewMMLU(src, MMLUOptions{NumExamples: debugOr(o, 1, numExamples(o))})
}

// newMGSMEval 是 mgsm 的构造函数：每语言 debug 10、全量 250 题，不受 Examples 影响。
func newMGSMEval(src Source, o EvalOptions) (Eval, error) {
	return NewMGSM(src, MGSMOptions{NumExamplesPerLang: debugOr(o, 10, 250)})
}

// newDROPEval 是 drop 的构造函数：debug 10 题，每个提示 3 个训练样例。
func newDROPEval(src Source, o EvalOptions) (Eval, error) {
	return NewDROP(src, DROPOptions{NumExamples: debugOr(o, 10, numExamples(o)), TrainSamplesPerPrompt: 3})
}

// newHumanEvalEval 是 humaneval 的构造函数：debug 10 题，执行器与时限来自 o。
func newHumanEvalEval(src Source, o EvalOptions) (Eval, error) {
	return NewHumanEval(src, HumanEvalOptions{NumExamples: debugOr(o, 10, numExamples(o)), Interpreter: o.Interpreter, ExecTimeout: o.ExecTimeout})
}

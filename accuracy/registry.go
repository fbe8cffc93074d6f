package accuracy

import (
	"errors"
	"fmt"
	"github.com/vllm-cibench/cibench/internal/regname"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/field"
)

// EvalOptions 是精度配置中影响样本选择的参数，由 RunStage 按 datasets[] 的条目填好交给
// EvalFactory。各字段对一个评测意味着什么由评测自己决定（内置评测的规则见 simpleevals 包），
// 不用的字段忽略即可。
type EvalOptions struct {
	// Debug 对应参考命令行 --debug：评测只取自己规定的小子集（PR 用）。
	Debug bool
	// Examples 对应 --examples（0 表示未指定），NRepeats 对应 --n-repeats（0 表示评测自己的默认值）。
	Examples int
	NRepeats int
	// Interpreter 是执行模型生成代码的命令（如 ["python3"]，来自 StageOptions.Interpreter）；
	// ExecTimeout 是单次执行的时限。只有执行代码的评测（如 humaneval）用它们。
	Interpreter []string
	ExecTimeout time.Duration
}

// EvalFactory 按数据来源与选项构造一个评测。内置评测从 src 读取 simple-evals 的数据文件；
// 团队的评测可以读 src 中自己的文件，也可以完全不用它（数据随代码提供）。
// 返回包装 ErrSkip 的错误时 RunStage 跳过该数据集并以错误文本为原因，其余错误记为该数据集出错。
type EvalFactory func(src Source, o EvalOptions) (Eval, error)

// ErrSkip 由 EvalFactory 包装返回，表示评测在这个环境里做不了（例如缺少执行代码用的
// python3）：RunStage 把数据集记进 StageResult.Skipped 而不是 Errors。
var ErrSkip = errors.New("accuracy: eval skipped")

// ErrDuplicateEval 表示同一个评测名被登记了两次。
var ErrDuplicateEval = errors.New("accuracy: duplicate eval")

// ErrEvalName 表示评测名写法不合法（空、大写、空白或其他字符）。
var ErrEvalName = errors.New("accuracy: invalid eval name")

// DatasetCheck 在任何请求发出之前校验一个 datasets[] 条目中只有该评测才懂的组合
// （例如 gpqa 全量模式下抽子集必须 n_repeats: 1）；debug 是 Config.Debug。返回
// *field.Error 时其 Field 是条目内的相对路径（如 "n_repeats"），Config.Validate 补上
// "datasets[i]." 前缀；其他错误整体记在该条目上。
type DatasetCheck func(d DatasetConfig, debug bool) error

// RegisterOption 是 Register 的可选设置（登记时一并给出，之后只读）。
type RegisterOption func(*entry)

// WithCheck 为评测登记一个配置校验（见 DatasetCheck），Config.Validate 对该评测的
// 每个条目调用它。
func WithCheck(c DatasetCheck) RegisterOption { return func(e *entry) { e.check = c } }

// WithMetricMax 声明评测的某个指标取值上限不是 1（例如 drop 的 f1_score 是百分制，上限 100），
// 使 threshold 的取值范围检查按它进行；未声明的指标都按比例 (0, 1] 检查。
func WithMetricMax(metric string, max float64) RegisterOption {
	return func(e *entry) {
		if e.metricMax == nil {
			e.metricMax = map[string]float64{}
		}
		e.metricMax[metric] = max
	}
}

// entry 是一个登记项：构造函数与可选的校验、指标上限。
type entry struct {
	f         EvalFactory
	check     DatasetCheck
	metricMax map[string]float64
}

// Data 是一组评测数据的默认来源，登记表带着它（见 Registry.SetData）：精度配置的
// dataset 字段在它们之间选择，dataset_path/dataset_url 覆盖下载地址。
type Data struct {
	// BaseURL 与 URLs 是 dataset_path、dataset_url 都没给时的下载地址（URLs 中逐文件的地址
	// 优先）；都为空时这样的配置打开数据文件会失败（包装 ErrDatasetUnavailable）。
	BaseURL string
	URLs    map[string]string
	// Sample 是 dataset: builtin-sample 读取的内置合成样例（见 BuiltinSource）；nil 表示没有，
	// 此时写 builtin-sample 的配置校验失败。
	Sample Source
}

// Registry 是评测名到构造函数的登记表：精度配置 datasets[].name 只接受登记过的名字，
// RunStage 用它构造评测。它是普通的值，由调用方构造并传给 Config.Validate、
// StageOptions.Evals 与 matrix.WithEvals，本包没有全局登记表（也没有 init() 登记）。
// 内置的五个 simple-evals 评测由 simpleevals.Registry() 登记（本包不导入数据集）；
// 只跑自己评测的程序从 NewRegistry() 出发。非并发安全：登记完成后再交给使用者，之后只读。
type Registry struct {
	names []string
	m     map[string]*entry
	data  Data
}

// NewRegistry 返回一张空登记表（没有评测，也没有默认数据来源）。
func NewRegistry() *Registry { return &Registry{m: map[string]*entry{}} }

// Register 登记一个评测。名字必须以小写字母开头，只含小写字母、数字、'_'、'-' 与 '.'，不超过
// 64 个字符（它会成为结果文件名 {dataset}_{model}_{ts}.json 的一部分与指标标签，不能含
// 路径分隔符或空白）；f 不能为 nil。写法不合法返回包装 ErrEvalName 的错误，已登记返回
// 包装 ErrDuplicateEval 的错误（覆盖内置评测必须换一个名字，报告里的 gpqa 永远是 gpqa）。
func (r *Registry) Register(name string, f EvalFactory, opts ...RegisterOption) error {
	if err := checkEvalName(name); err != nil {
		return err
	}
	if f == nil {
		return fmt.Errorf("%w: %q: nil factory", ErrEvalName, name)
	}
	if r.m == nil {
		r.m = map[string]*entry{}
	}
	if _, ok := r.m[name]; ok {
		return fmt.Errorf("%w: %q is already registered", ErrDuplicateEval, name)
	}
	e := &entry{f: f}
	for _, o := range opts {
		o(e)
	}
	r.m[name] = e
	r.names = append(r.names, name)
	return nil
}

// SetData 设置登记表的默认数据来源（见 Data）；URLs 被复制，之后改动调用方的 map 不影响登记表。
func (r *Registry) SetData(d Data) {
	d.URLs = maps.Clone(d.URLs)
	r.data = d
}

// Data 返回登记表的默认数据来源（URLs 是新 map）。nil 登记表没有数据来源。
func (r *Registry) Data() Data {
	if r == nil {
		return Data{}
	}
	d := r.data
	d.URLs = maps.Clone(d.URLs)
	return d
}

// checkEvalName 校验评测名的写法（与能力名、部署方式名同一条规则，见 internal/regname），
// 错误写明取值与规则。
func checkEvalName(s string) error {
	if err := regname.Check(s); err != nil {
		return fmt.Errorf("%w: %v", ErrEvalName, err)
	}
	return nil
}

// Names 返回已登记的评测名（新切片），顺序即登记顺序。
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
	return fmt.Errorf("%w %q (%s)", ErrUnknownDataset, name, r.want())
}

// want 说明可用的名字，供错误信息使用；空登记表明说没有登记任何评测。
func (r *Registry) want() string {
	if len(r.Names()) == 0 {
		return "no evals are registered: pass simpleevals.Registry() or your own registry"
	}
	return "want one of " + strings.Join(r.Names(), ", ")
}

// New 按登记的构造函数创建评测。o 的 Examples 与 NRepeats 不能为负（包装 ErrConfig）；
// 名字未登记时返回包装 ErrUnknownDataset 的错误。构造出的评测的 Name() 必须等于登记名
// （否则返回包装 ErrEvalName 的错误）：结果文件、门禁与指标都按名字配对，登记为 tiny_alias 却
// 自称 tiny_exact 的评测会让配置与结果用两个名字，门禁永远找不到自己的结果。
func (r *Registry) New(name string, src Source, o EvalOptions) (Eval, error) {
	if o.Examples < 0 || o.NRepeats < 0 {
		return nil, optErrf("accuracy: %s: examples=%d n_repeats=%d must be >= 0", name, o.Examples, o.NRepeats)
	}
	if err := r.check(name); err != nil {
		return nil, err
	}
	e, err := r.m[name].f(src, o)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return nil, fmt.Errorf("%w: the factory registered as %q returned a nil Eval", ErrEvalName, name)
	}
	if got := e.Name(); got != name {
		return nil, fmt.Errorf("%w: eval registered as %q names itself %q: register it under %q or make Name() return %q",
			ErrEvalName, name, got, got, name)
	}
	return e, nil
}

// metricMax 返回评测 name 的指标 metric 的取值上限：登记时用 WithMetricMax 声明的值，否则 1。
func (r *Registry) metricMax(name, metric string) float64 {
	if r != nil {
		if e, ok := r.m[name]; ok {
			if v, ok := e.metricMax[metric]; ok {
				return v
			}
		}
	}
	return 1
}

// checkDataset 运行评测登记的 DatasetCheck（没有时什么也不做），把错误定位到 p（"datasets[i]"）下。
func (r *Registry) checkDataset(p string, d DatasetConfig, debug bool) error {
	if r == nil {
		return nil
	}
	e, ok := r.m[d.Name]
	if !ok || e.check == nil {
		return nil
	}
	err := e.check(d, debug)
	if err == nil {
		return nil
	}
	var fe *field.Error
	if errors.As(err, &fe) {
		out := *fe
		out.Field = p + "." + fe.Field
		if fe.Field == "" {
			out.Field = p
		}
		switch {
		case fe.Err == nil:
			out.Err = ErrConfig
		case !errors.Is(fe.Err, ErrConfig):
			out.Err = fmt.Errorf("%w: %w", ErrConfig, fe.Err)
		}
		return &out
	}
	return cfgErr(p, d.Name, "%s", err.Error())
}

package accuracy

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"time"

	"github.com/vllm-cibench/cibench/accuracy/external"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/gate"
)

// BuiltinSample 是 Config.Dataset 的取值之一：使用登记表带的内置合成样例数据（Data.Sample，
// simpleevals.Registry() 带的是 simpleevals.SampleData()）。它只能用于进程内模拟器
// （见 Config.CheckTarget），分数不代表任何模型能力。
const BuiltinSample = "builtin-sample"

// DefaultRetries 是 Config.Retries 与 ChatConfig.Retries 为 0 时的重试次数。
const DefaultRetries = 3

// 取值上限：超过这些值的配置几乎一定是笔误（如 num_threads: 100000000），
// 在运行之前报错，而不是开出上亿个 goroutine 或无限期运行。
const (
	MaxNumThreads = 1024
	// MaxRetries 是 Retries 的上限；Retries 为 0 取 DefaultRetries，负数表示不重试
	// （与 functional、metrics 推送同一语义）。
	MaxRetries   = 10
	MaxMaxTokens = 1 << 20
	MaxExamples  = 1_000_000
	MaxNRepeats  = 1000
)

// 默认值：下载与响应的大小上限、下载时限。
const (
	// DefaultMaxResponseBytes 是单个 /chat/completions 响应体的上限：endpoint.DefaultMaxResponseBytes
	// （远大于任何真实回复；与 functional、loadgen 同一个定义）。
	DefaultMaxResponseBytes = endpoint.DefaultMaxResponseBytes
	// DefaultMaxDownloadBytes 是单个数据文件的下载上限（最大的上游文件 mmlu.csv 约 8 MB）。
	DefaultMaxDownloadBytes = 512 << 20
	// DefaultDownloadTimeout 是单个数据文件下载的时限。
	DefaultDownloadTimeout = 10 * time.Minute
)

// Config 是 configs/tests/accuracy/{pr,daily}.yaml 的结构（matrix 严格解码到它）。
// 零值加 Defaults 即可用；Validate 给出指明字段与取值的错误。
type Config struct {
	// Evaluator 选择评测工具："simple-evals"（默认，内置）；external 中的条目另行运行。
	Evaluator string `yaml:"evaluator"`
	// Debug 对应参考命令行 --debug（PR 用 true，每日全量用 false）。
	Debug bool `yaml:"debug"`
	// MaxTokens 对应 --max-tokens（PR 128，每日 16384）。
	MaxTokens int `yaml:"max_tokens"`
	// Temperature 对应 --temperature（需求为 0.6）；0 即贪心采样。
	Temperature float64 `yaml:"temperature"`
	// ExtraBody 是合并进每个请求体的额外字段（simple-evals 不发任何额外字段；为空时请求体与它
	// 逐字段相同）。典型用途：思考模型在 PR 的 max_tokens 128 内写不出答案，
	// extra_body: {chat_template_kwargs: {enable_thinking: false}} 关掉思考（vLLM 把
	// chat_template_kwargs 交给聊天模板，不认识该参数的模板忽略它）。不能设置 model、messages、
	// temperature、max_tokens、stream。
	ExtraBody map[string]any `yaml:"extra_body"`
	// NumThreads 对应 --num-threads（需求为 32），上限 MaxNumThreads。
	NumThreads int `yaml:"num_threads"`
	// RequestTimeout 是单次请求时限；Retries 是失败重试次数：0 取 DefaultRetries，
	// 负数表示不重试，上限 MaxRetries。
	RequestTimeout time.Duration `yaml:"request_timeout"`
	Retries        int           `yaml:"retries"`
	// Timeout 是整个精度阶段的时限（需求：accuracy 90 分钟，每日可放宽）。
	Timeout time.Duration `yaml:"timeout"`
	// Dataset 选择数据来源的种类：空（默认）表示登记表的默认下载地址（Data.BaseURL 与
	// Data.URLs；内置评测是 simple-evals 自己读取的上游公共地址），下载一次后缓存在
	// CacheDir；BuiltinSample 表示内置合成样例，只能对进程内模拟器使用。
	Dataset string `yaml:"dataset"`
	// DatasetPath 是本地数据目录（参考文件名）；DatasetURL 是替代上游的下载根地址
	// （镜像）；两者互斥，都为空时用上游地址。CacheDir 是下载缓存目录。
	DatasetPath string `yaml:"dataset_path"`
	DatasetURL  string `yaml:"dataset_url"`
	CacheDir    string `yaml:"cache_dir"`
	// DownloadTimeout 与 MaxDownloadBytes 约束每个数据文件的下载（0 取默认值）。
	DownloadTimeout  time.Duration `yaml:"download_timeout"`
	MaxDownloadBytes int64         `yaml:"max_download_bytes"`
	// MaxResponseBytes 是单个模型响应体的上限（0 取 DefaultMaxResponseBytes），超出记为
	// body_too_large 类失败。
	MaxResponseBytes int64 `yaml:"max_response_bytes"`
	// MaxErrorRate 是每个数据集允许的失败请求比例（重试后仍失败、400、空回复都算），
	// 超过即门禁失败，与分数无关。缺省为 0：任何失败的请求都让门禁失败。
	MaxErrorRate *float64 `yaml:"max_error_rate"`
	// Datasets 是要评测的数据集及其阈值。
	Datasets []DatasetConfig `yaml:"datasets"`
	// External 是 OpenCompass/MME 等外部评测（子进程，见 external 包）。
	External []external.Config `yaml:"external"`
}

// DatasetConfig 是一个数据集的评测设置与门禁阈值。
type DatasetConfig struct {
	// Name 是登记表（Registry）中的评测名，如内置的 gpqa、mmlu、mgsm、drop、humaneval。
	Name string `yaml:"name"`
	// Threshold 是门禁阈值：Metric 的值 >= Threshold 为通过。必须能失败：指标在 (0, 1]，
	// 登记时用 WithMetricMax 声明了上限的指标在 (0, 上限]（drop 的 f1_score 是百分制，
	// 在 (0, 100]）；缺省只允许用于内置样例或 report_only。
	Threshold *float64 `yaml:"threshold"`
	// Metric 是参与门禁的指标，默认 "score"（也可用 "f1_score"、"pass@1" 等）。
	// 它只决定门禁比较哪个值，记录的 score 永远是 simple-evals 的总分。
	Metric string `yaml:"metric"`
	// ReportOnly 为 true 时只记录分数、不对分数设门禁（失败请求比例仍然设门禁）；
	// 与 Threshold 互斥。
	ReportOnly bool `yaml:"report_only"`
	// MaxErrorRate 覆盖 Config.MaxErrorRate（WithDefaults 会填入配置级的值）。
	MaxErrorRate *float64 `yaml:"max_error_rate"`
	// Examples 与 NRepeats 对应 --examples 与 --n-repeats（0 = 参考默认）。
	Examples int `yaml:"examples"`
	NRepeats int `yaml:"n_repeats"`
}

// ErrConfig 被所有配置错误（*field.Error、CheckTarget 与各构造函数的参数错误）包装，调用方可据此区分
// "配置写错了"与"运行时失败"。
var ErrConfig = errors.New("accuracy: invalid configuration")

// optError 是构造参数（ChatConfig、各评测的 Options、数据源地址）写错的错误：
// 文本与以前一样，同时 errors.Is(err, ErrConfig) 成立，调用方不必解析文本就能
// 区分"配置写错"与运行期失败。err 非 nil 时它也在错误链上（如 endpoint.ErrInvalid）。
type optError struct {
	msg string
	err error
}

// Error 返回原样的说明。
func (e *optError) Error() string { return e.msg }

// Unwrap 返回被包装的原因（可能为 nil）。
func (e *optError) Unwrap() error { return e.err }

// optWrap 以 prefix 包装 err 构造 *optError，err 留在错误链上。
func optWrap(prefix string, err error) error {
	return &optError{msg: prefix + ": " + err.Error(), err: err}
}

// Is 让 errors.Is(err, ErrConfig) 成立。
func (e *optError) Is(target error) bool { return target == ErrConfig }

// optErrf 按格式构造 *optError。
func optErrf(format string, args ...any) error { return &optError{msg: fmt.Sprintf(format, args...)} }

// cfgErr 构造配置错误 *field.Error：Field 是相对配置根的字段路径（如 "datasets[0].threshold"），
// matrix 用它把错误定位到文件的行列；errors.Is(err, ErrConfig) 成立。
func cfgErr(path string, value any, format string, args ...any) *field.Error {
	return field.New(ErrConfig, path, value, fmt.Sprintf(format, args...))
}

// DefaultConfig 返回与需求 PR 命令一致的默认值（debug、128 tokens、0.6、32 线程、GPQA）。
func DefaultConfig() Config {
	return Config{
		Evaluator: "simple-evals", Debug: true, MaxTokens: 128, Temperature: 0.6, NumThreads: 32,
		RequestTimeout: 10 * time.Minute, Retries: DefaultRetries, Timeout: 90 * time.Minute,
		Datasets: []DatasetConfig{{Name: "gpqa"}},
	}
}

// WithDefaults 为未设置的字段填入默认值（不改变显式给出的值）。
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.Evaluator == "" {
		c.Evaluator = d.Evaluator
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = d.MaxTokens
	}
	if c.NumThreads == 0 {
		c.NumThreads = d.NumThreads
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = d.RequestTimeout
	}
	if c.Retries == 0 {
		c.Retries = d.Retries // 负数（不重试）原样保留，由 ChatSampler 解释
	}
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	if c.DownloadTimeout == 0 {
		c.DownloadTimeout = DefaultDownloadTimeout
	}
	if c.MaxDownloadBytes == 0 {
		c.MaxDownloadBytes = DefaultMaxDownloadBytes
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	rate := 0.0
	if c.MaxErrorRate != nil {
		rate = *c.MaxErrorRate
	}
	c.Datasets = slices.Clone(c.Datasets)
	for i := range c.Datasets {
		if c.Datasets[i].Metric == "" {
			c.Datasets[i].Metric = "score"
		}
		if c.Datasets[i].MaxErrorRate == nil {
			r := rate
			c.Datasets[i].MaxErrorRate = &r
		}
	}
	return c
}

// Validate 检查取值范围、数据来源与门禁阈值，在任何请求发出之前发现写错的配置。
// 返回的错误是 *field.Error（包装 ErrConfig），Field 指明字段路径。datasets[].name 必须在
// evals 中登记（nil 登记表什么也不认识：内置评测要传 simpleevals.Registry()）：YAML 仍拒绝
// 没人登记的评测名；评测登记的 DatasetCheck 与指标上限（WithCheck、WithMetricMax）也在这里生效。
func (c Config) Validate(evals *Registry) error {
	if c.Evaluator != "" && c.Evaluator != "simple-evals" {
		return cfgErr("evaluator", c.Evaluator, "not supported (want simple-evals; use external for others)")
	}
	if c.MaxTokens < 0 || c.MaxTokens > MaxMaxTokens {
		return cfgErr("max_tokens", c.MaxTokens, "must be in [0, %d]", MaxMaxTokens)
	}
	if c.Temperature < 0 || c.Temperature > 2 || math.IsNaN(c.Temperature) {
		return cfgErr("temperature", c.Temperature, "must be in [0, 2]")
	}
	for _, k := range reservedBodyKeys {
		if _, ok := c.ExtraBody[k]; ok {
			return cfgErr("extra_body."+k, c.ExtraBody[k], "set by the evaluator; extra_body adds other fields only")
		}
	}
	if c.NumThreads < 0 || c.NumThreads > MaxNumThreads {
		return cfgErr("num_threads", c.NumThreads, "must be in [1, %d] (0 = default 32)", MaxNumThreads)
	}
	if c.Retries > MaxRetries {
		return cfgErr("retries", c.Retries, "must be at most %d (0 = default %d, negative = no retries)", MaxRetries, DefaultRetries)
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"request_timeout", c.RequestTimeout}, {"timeout", c.Timeout}, {"download_timeout", c.DownloadTimeout}} {
		if f.v < 0 {
			return cfgErr(f.name, f.v, "must be >= 0")
		}
	}
	if c.MaxDownloadBytes < 0 || c.MaxResponseBytes < 0 {
		return cfgErr("max_download_bytes/max_response_bytes", fmt.Sprintf("%d/%d", c.MaxDownloadBytes, c.MaxResponseBytes), "must be >= 0")
	}
	if err := checkRate("max_error_rate", c.MaxErrorRate); err != nil {
		return err
	}
	switch c.Dataset {
	case "", "simple-evals":
	case BuiltinSample:
		if c.DatasetPath != "" || c.DatasetURL != "" {
			return cfgErr("dataset", BuiltinSample, "conflicts with dataset_path/dataset_url: the built-in sample is not read from files")
		}
		if evals.Data().Sample == nil {
			return cfgErr("dataset", BuiltinSample, "the eval registry has no built-in sample data (simpleevals.Registry() has one)")
		}
	default:
		return cfgErr("dataset", c.Dataset, "want empty (simple-evals data from its public URLs) or %q", BuiltinSample)
	}
	if c.DatasetPath != "" && c.DatasetURL != "" {
		return cfgErr("dataset_url", c.DatasetURL, "set either dataset_path or dataset_url, not both (no fallback between sources)")
	}
	if c.DatasetURL != "" {
		if u, err := url.Parse(c.DatasetURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cfgErr("dataset_url", c.DatasetURL, "must be an absolute http(s) URL")
		}
	}
	builtin := c.Dataset == BuiltinSample
	seen := map[string]bool{}
	for i, d := range c.Datasets {
		p := fmt.Sprintf("datasets[%d]", i)
		if !evals.Known(d.Name) {
			return cfgErr(p+".name", d.Name, "%v (%s)", ErrUnknownDataset, evals.want())
		}
		if seen[d.Name] {
			return cfgErr(p+".name", d.Name, "listed twice")
		}
		seen[d.Name] = true
		metric := d.Metric
		if metric == "" {
			metric = "score"
		}
		if err := checkThreshold(p, d.Threshold, d.ReportOnly, builtin, evals.metricMax(d.Name, metric)); err != nil {
			return err
		}
		if err := checkRate(p+".max_error_rate", d.MaxErrorRate); err != nil {
			return err
		}
		if d.Examples < 0 || d.Examples > MaxExamples {
			return cfgErr(p+".examples", d.Examples, "must be in [0, %d]", MaxExamples)
		}
		if d.NRepeats < 0 || d.NRepeats > MaxNRepeats {
			return cfgErr(p+".n_repeats", d.NRepeats, "must be in [0, %d]", MaxNRepeats)
		}
		if err := evals.checkDataset(p, d, c.Debug); err != nil {
			return err
		}
	}
	for i, e := range c.External {
		p := fmt.Sprintf("external[%d]", i)
		if err := e.Validate(); err != nil {
			return cfgErr(p, nil, "%s", err.Error())
		}
		if err := checkThreshold(p, e.Threshold, e.ReportOnly, false, math.Inf(1)); err != nil {
			return err
		}
	}
	return nil
}

// checkRate 检查失败率上限在 [0, 1]。
func checkRate(field string, r *float64) error {
	if r != nil && (math.IsNaN(*r) || *r < 0 || *r > 1) {
		return cfgErr(field, *r, "must be in [0, 1] (a fraction of the requests)")
	}
	return nil
}

// checkThreshold 拒绝不能失败的阈值：0、缺省（除非 report_only 或内置样例）以及
// 超出指标取值范围的值（如 threshold: 7.5 对一个 [0,1] 的分数）。
func checkThreshold(p string, t *float64, reportOnly, builtin bool, scale float64) error {
	switch {
	case t != nil && reportOnly:
		return cfgErr(p+".report_only", true, "conflicts with threshold %v: a report-only dataset has no score gate", *t)
	case t == nil && !reportOnly && !builtin:
		return cfgErr(p+".threshold", "", "missing: every gated dataset needs a threshold that can fail (or report_only: true to only record the score)")
	case t == nil:
		return nil
	case math.IsNaN(*t) || *t < 0 || *t > scale:
		return cfgErr(p+".threshold", *t, "must be in (0, %v]", scale)
	case *t == 0 && !builtin:
		return cfgErr(p+".threshold", *t, "0 can never fail; set the lowest score you accept (or report_only: true)")
	}
	return nil
}

// CheckTarget 检查数据来源与目标是否相容：内置样例只能对进程内模拟器使用
// （emulated 为 true）——对真实服务（包括用 -base-url 改指的模拟器场景）打出的
// 合成分数毫无意义，且会让门禁在没有测量的情况下变绿。
func (c Config) CheckTarget(emulated bool) error {
	if c.Dataset == BuiltinSample && !emulated {
		return cfgErr("dataset", BuiltinSample,
			"%s", "the built-in synthetic sample can only score the in-process emulator, not a real server; remove it to use the simple-evals data (downloaded from its public URLs), or set dataset_path/dataset_url")
	}
	return nil
}

// Verdict 是一个数据集的门禁判定（gate.AccuracyVerdict 的别名：规则与结果类型都在 gate）。
type Verdict = gate.AccuracyVerdict

// Gate 用 d 的门禁设置判定 r：它只把本包的类型交给 gate.JudgeAccuracy（精度门禁规则的唯一
// 实现，RunStage、examples/accuracy 与报告都经这里或直接调用它）。判定依次是：指标缺失、部分
// 运行、没有样本、失败请求比例超过 MaxErrorRate、最后才是 Metric 的值 >= Threshold；它读取
// r.Metrics[metric] 而从不改写 r.Score。
func Gate(d DatasetConfig, r EvalResult) Verdict { return gate.JudgeAccuracy(d.Rule(), r.Outcome()) }

// Rule 返回 d 的门禁规则（gate 的值类型）；MaxErrorRate 为 nil 时是 0（WithDefaults 会填入
// 配置级的值）。
func (d DatasetConfig) Rule() gate.AccuracyRule {
	r := gate.AccuracyRule{Metric: d.Metric, Threshold: d.Threshold}
	if d.MaxErrorRate != nil {
		r.MaxErrorRate = *d.MaxErrorRate
	}
	return r
}

// Outcome 返回 r 交给 gate 判定的部分（映射不复制：判定只读）。
func (r EvalResult) Outcome() gate.AccuracyOutcome {
	return gate.AccuracyOutcome{Dataset: r.Dataset, Score: r.Score, Metrics: r.Metrics, Examples: r.Examples, Planned: r.Planned,
		Partial: r.Partial, Requests: r.Requests, Errors: r.Errors, ErrorClasses: r.ErrorClasses}
}

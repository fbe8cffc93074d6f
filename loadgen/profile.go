package loadgen

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/loadgen/dataset"
)

// 后端、控制方式等取值的类型与常量见 modes.go。
const (
	// ConcurrencyBackend 是本实现唯一的并发后端名（goroutine 池），
	// 沿用 acs-bench 的默认值以保持产物命名一致。
	ConcurrencyBackend = "threading-pool"
)

// ErrInvalidProfile 是 Profile 校验失败时所有错误的哨兵，可用 errors.Is 判断。
var ErrInvalidProfile = errors.New("loadgen: invalid profile")

// Profile 是一次压测的全部参数，字段名与 YAML 键沿用 acs-bench 的参数名
// （configs/tests/perf/profiles/{pr,daily}.yaml 直接解码到这里）。取值有限的字段是
// 具名类型（Backend、ControlMethod……，见 modes.go），解码时就拒绝未知取值。只对命令行
// 有意义的项（数据集文件路径、分词器文件）不在这里：库从不打开文件，调用方把数据集读成
// Prompts、把分词器读成 Target.Tokenizer（examples/bench 的 benchProfile 是那一层）。
//
// 零值加上 WithDefaults 即可用；指针字段用于区分"未设置"与"显式设为 0"
// （例如 temperature: 0 是合法的贪心采样）。
type Profile struct {
	// Backend 为 "openai-chat"（默认）或 "openai"。
	Backend Backend `yaml:"backend"`
	// Concurrency 是并发分组，每个值一组；RequestRate>0 时为并发上限（0 表示不设上限）。
	Concurrency []int `yaml:"concurrency"`
	// InputLength 与 OutputLength 是输入 / 输出 token 长度分组。
	InputLength  []int `yaml:"input_length"`
	OutputLength []int `yaml:"output_length"`
	// NumRequests 是每组的请求数：一个值用于所有并发组，多个值与 Concurrency 一一对应；
	// 为空时取 concurrency × RequestsPerConcurrency。
	NumRequests []int `yaml:"num_requests"`
	// RequestsPerConcurrency 是 NumRequests 为空时的倍数（PR 档 16，每日档 32，默认 16）。
	RequestsPerConcurrency int `yaml:"requests_per_concurrency"`
	// Warmup 是每组开始前发出、不计入统计的预热请求数。
	Warmup int `yaml:"warmup"`
	// Epochs 是每组重复的轮数（默认 1），每轮一行汇总。
	Epochs int `yaml:"epochs"`
	// MaxDuration 是整个档位（全部分组与轮次）的时间预算，思路同 guidellm 的 --max-seconds，
	// 0 表示不限。每组开始时分到"剩余预算 / 剩余组数"，到点后 worker 不再发出新的请求
	// （在途请求照常完成）；但每个 worker 至少完成一个请求，爬坡照常走完，所以每组都达到
	// 它的并发，组合的含义（输入、输出长度、并发）不变，变的只是样本数：汇总行的
	// NumPrompts 是实际请求数，Planned 是计划数，BudgetLimited 标明该组被预算截短。
	// 前面的组超时由后面的组分摊；预算用完后每组只做每个 worker 一个请求。只作用于
	// 闭环与 request_rate 开环；轨迹回放与多轮会话按各自的时刻表走完（不受预算限制）。
	MaxDuration time.Duration `yaml:"max_duration"`

	// ControlMethod 为 "normal"（默认）或 "climb"。
	ControlMethod ControlMethod `yaml:"control_method"`
	// InitConcurrency 是爬坡初始并发：一个值用于所有组，多个值与 Concurrency 对应；为空时等于组并发。
	InitConcurrency []int `yaml:"init_concurrency"`
	// GrowthRate 是每次爬坡增加的并发数。
	GrowthRate int `yaml:"growth_rate"`
	// GrowthInterval 是两次爬坡之间的间隔（YAML 写作 "5000ms" 或 "5s"，默认 1s）。
	GrowthInterval time.Duration `yaml:"growth_interval"`
	// BucketInterval 是实时时间线的采样间隔（acs-bench --bucket-interval），0 表示不采样；
	// 大于 0 且 Observer.OnTimeline 非 nil 时，每个间隔交出一行 Timeline。至少 10ms。
	BucketInterval time.Duration `yaml:"bucket_interval"`
	// ClimbMode 为 "static"（默认，每个间隔跳升 GrowthRate）或 "linear"（在间隔内均匀逐个增加）。
	ClimbMode ClimbMode `yaml:"climb_mode"`

	// RequestRate 是开环到达速率（请求/秒），0 表示不限（闭环，按并发发送）。
	RequestRate float64 `yaml:"request_rate"`
	// Burstiness 是 gamma 到达间隔的形状参数（默认 1 = 泊松）。
	Burstiness float64 `yaml:"burstiness"`

	// Temperature、TopK、TopP 是采样参数；未设置时分别为 0.6、8、1.0（acs-bench 默认）。
	Temperature *float64 `yaml:"temperature"`
	TopK        *int     `yaml:"top_k"`
	TopP        *float64 `yaml:"top_p"`
	// IgnoreEOS 默认 true，保证输出长度等于 max_tokens。
	IgnoreEOS *bool `yaml:"ignore_eos"`
	// Stream 默认 true；false 时 TTFT 取整个响应到达的时间。
	Stream *bool `yaml:"stream"`
	// ContinuousUsageStats 默认 true：请求每个 chunk 带 usage，得到逐 chunk 的精确 token 数；
	// 服务端拒绝（400）时自动降级。
	ContinuousUsageStats *bool `yaml:"continuous_usage_stats"`
	// Timeout 是单个请求的超时（默认 1000s，与 acs-bench 一致）。探测请求用它；/tokenize 与
	// /metrics 这类不生成 token 的小请求用 min(Timeout, IdleTimeout, 10s)。
	Timeout time.Duration `yaml:"timeout"`
	// IdleTimeout 是流式响应相邻两个事件之间允许的最长静默（默认 120s）：服务端发出前几个 chunk
	// 后卡住时，请求在这之后就以 idle_timeout 失败，而不是等满 Timeout。从第一个事件开始计时——
	// 排队与 prefill 的等待由 Timeout 管。120s 远大于 vLLM 抢占重算造成的停顿，又远小于 1000s。
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// MaxEventBytes 是单个 SSE 事件（流式）或整个响应体（非流式）的字节上限（默认 64 MiB，
	// 至少 1 KiB）。超过时该请求以 too_large 失败，内存由配置而不是服务端决定。
	MaxEventBytes int `yaml:"max_event_bytes"`

	// Goodput 是 SLO 列表，形如 "ttft:50"、"tpot:20"、"e2e:1000"（毫秒）。
	Goodput []string `yaml:"goodput"`

	// Seed 是数据集与到达过程的随机种子（默认 0，同种子结果可复现）。
	Seed int64 `yaml:"seed"`
	// DatasetType 为 "random"（默认，内置中英混合随机文本）、"custom"（使用 Prompts），
	// 或真实负载的 mooncake_trace、azure_trace、shared_prefix、prefix_repetition、sharegpt（见 workload.go）。
	DatasetType DatasetType `yaml:"dataset_type"`
	// PrefixLength 是所有 prompt 共享的前缀 token 数（仅 random）。
	PrefixLength int `yaml:"prefix_length"`
	// RangeRatioAbove / RangeRatioBelow 让输入长度在 [L×(1−below), L×(1+above)] 内均匀抖动。
	RangeRatioAbove float64 `yaml:"range_ratio_above"`
	RangeRatioBelow float64 `yaml:"range_ratio_below"`
	// OutputRangeRatioAbove / OutputRangeRatioBelow 对输出长度做同样的抖动。
	OutputRangeRatioAbove float64 `yaml:"output_range_ratio_above"`
	OutputRangeRatioBelow float64 `yaml:"output_range_ratio_below"`
	// ModalType 为 "text"（默认）或 "image-text"（chat 后端，附带一张 PNG 图片）。
	ModalType ModalType `yaml:"modal_type"`
	// ImageWidth / ImageHeight 是 image-text 图片尺寸（默认 512×512）。
	ImageWidth  int `yaml:"image_width"`
	ImageHeight int `yaml:"image_height"`

	// Timestamps 为 "kernel"（默认）或 "read"：响应数据到达时刻的取法，见
	// TimestampsKernel。Target.HTTPClient 由调用方提供时总是 "read" 的效果。
	Timestamps TimestampMode `yaml:"timestamps"`

	// Sweep 是 control_method: sweep（容量扫描）的参数，见 sweep.go。
	Sweep SweepConfig `yaml:"sweep"`

	// Trace、SharedPrefix、PrefixRepetition、ShareGPT、MultiTurn 是真实负载的参数，见 workload.go。
	Trace            dataset.TraceConfig            `yaml:"trace"`
	SharedPrefix     dataset.SharedPrefixConfig     `yaml:"shared_prefix"`
	PrefixRepetition dataset.PrefixRepetitionConfig `yaml:"prefix_repetition"`
	ShareGPT         dataset.ShareGPTConfig         `yaml:"sharegpt"`
	MultiTurn        MultiTurnConfig                `yaml:"multi_turn"`

	// Prompts 是 custom 与 sharegpt 数据集的内容（由 ReadPrompts / ReadShareGPT 读入），不来自 YAML。
	Prompts []dataset.Prompt `yaml:"-"`
	// TraceRequests 是 mooncake_trace / azure_trace 的轨迹（由 ReadMooncakeTrace / ReadAzureTrace
	// 读入），不来自 YAML。
	TraceRequests []dataset.TraceRequest `yaml:"-"`

	// Pacer 非 nil 时替换开环到达过程（RequestRate > 0 时内置的 gamma/泊松到达，见 Burstiness）：
	// 每组调用一次得到该组的 Pacer（见 Pacer 的约定）。它是 Go 代码的接缝，不来自 YAML：
	// 本进程内的分片（shard.RunLocal）照样用它，从 YAML/命令行得到档位的分片进程（Kubernetes
	// 分片 Pod）没有它。参考流水线里由 pipeline.Extensions.PerfShapers 设置。
	Pacer NewPacer `yaml:"-" json:"-"`
	// Source 非 nil 时替换内置的请求（数据集 + chat/completions 请求体），见 Source。
	// 与 Pacer 一样是 Go 代码的接缝，不来自 YAML，只在本进程内有效。
	Source *Source `yaml:"-" json:"-"`
}

// 以下为 acs-bench 的默认值。
const (
	DefaultTemperature    = 0.6
	DefaultTopK           = 8
	DefaultTopP           = 1.0
	DefaultTimeout        = 1000 * time.Second
	DefaultIdleTimeout    = 120 * time.Second
	DefaultMaxEventBytes  = endpoint.DefaultMaxResponseBytes
	DefaultGrowthInterval = time.Second
	// MinBucketInterval 是 BucketInterval 的下限：每个间隔都要抓取一次 /metrics。
	MinBucketInterval             = 10 * time.Millisecond
	DefaultRequestsPerConcurrency = 16
	DefaultImageSize              = 512
)

// Defaults 返回填好默认值的副本；原 Profile 不被修改。
//
// Deprecated: 改名为 WithDefaults，与 accuracy.Config.WithDefaults 同名（本模块“返回填好默认值
// 的副本”的方法只有这一个名字）；行为不变。
func (p Profile) Defaults() Profile { return p.WithDefaults() }

// WithDefaults 返回填好默认值的副本；原 Profile 不被修改（值接收者，切片字段与原值共享底层数组，
// 本方法不写它们）。Run、Validate 之前的默认值都经这里，调用方可以用它预览一次运行的实际参数。
func (p Profile) WithDefaults() Profile {
	if p.Backend == "" {
		p.Backend = BackendChat
	}
	if p.DatasetType == "" {
		p.DatasetType = DatasetRandom
		if len(p.Prompts) > 0 {
			p.DatasetType = DatasetCustom
		}
	}
	if p.ControlMethod == "" {
		p.ControlMethod = ControlNormal
	}
	p.workloadDefaults()
	if len(p.Concurrency) == 0 && p.ControlMethod == ControlSweep {
		p.Concurrency = []int{0} // 扫描默认纯开环：客户端并发上限会掩盖服务端的容量
	}
	if len(p.Concurrency) == 0 {
		p.Concurrency = []int{1}
	}
	if p.RequestsPerConcurrency == 0 {
		p.RequestsPerConcurrency = DefaultRequestsPerConcurrency
	}
	if p.Epochs == 0 {
		p.Epochs = 1
	}
	if p.GrowthInterval == 0 {
		p.GrowthInterval = DefaultGrowthInterval
	}
	if p.ClimbMode == "" {
		p.ClimbMode = ClimbStatic
	}
	if p.Burstiness == 0 {
		p.Burstiness = 1
	}
	if p.Temperature == nil {
		v := DefaultTemperature
		p.Temperature = &v
	}
	if p.TopK == nil {
		v := DefaultTopK
		p.TopK = &v
	}
	if p.TopP == nil {
		v := DefaultTopP
		p.TopP = &v
	}
	t := true
	if p.IgnoreEOS == nil {
		p.IgnoreEOS = &t
	}
	if p.Stream == nil {
		p.Stream = &t
	}
	if p.ContinuousUsageStats == nil {
		p.ContinuousUsageStats = &t
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultTimeout
	}
	if p.IdleTimeout == 0 {
		p.IdleTimeout = DefaultIdleTimeout
	}
	if p.MaxEventBytes == 0 {
		p.MaxEventBytes = DefaultMaxEventBytes
	}
	if p.ModalType == "" {
		p.ModalType = ModalText
	}
	if p.Timestamps == "" {
		p.Timestamps = TimestampsKernel
	}
	if p.ImageWidth == 0 {
		p.ImageWidth = DefaultImageSize
	}
	if p.ImageHeight == 0 {
		p.ImageHeight = DefaultImageSize
	}
	return p
}

// 以下是 Profile 各字段的上限。它们远高于任何真实压测，作用是让打错的数
// （多打几个 0、单位写错）在发出第一个请求之前就报错，而不是跑到阶段超时；
// 也是内存的上界（每组请求数决定记录与直方图的规模）。docs/loadgen.md 列出了它们。
const (
	MaxConcurrency     = 65536               // 每组并发（客户端一个进程的连接数上限量级）
	MaxRequests        = dataset.MaxRequests // 每组请求数（num_requests、concurrency×requests_per_concurrency、warmup）
	MaxTokens          = dataset.MaxTokens   // 输入 / 输出 token 长度、前缀长度
	MaxEpochs          = 10_000              // 每组轮数
	MaxRequestRate     = 1_000_000           // 开环到达速率（请求/秒）
	MaxBurstiness      = 1000                // gamma 形状参数
	MaxTemperature     = 100                 // 采样温度
	MaxTopK            = 1 << 20             // top_k
	MaxTimeout         = 24 * time.Hour      // 单请求超时
	MaxGrowthInterval  = 24 * time.Hour      // 爬坡间隔
	MaxImageSide       = 8192                // image-text 图片边长（像素）
	maxRequestsPerConc = MaxRequests         // requests_per_concurrency 单独的上限
)

// invalid 构造一个带字段名与取值的校验错误（标量字段）：*field.Error，Field 是 YAML 键，
// errors.Is(err, ErrInvalidProfile) 成立。调用方（matrix、examples/bench）据字段把错误
// 定位到 YAML 的行列或命令行参数。
func invalid(name string, value any, why string) error {
	return field.New(ErrInvalidProfile, name, value, why)
}

// invalidAt 构造列表字段第 i 个元素的校验错误：Field 为 "name[i]"（field.Index 可拆开）。
func invalidAt(name string, i int, value any, why string) error {
	return field.New(ErrInvalidProfile, fmt.Sprintf("%s[%d]", name, i), value, why)
}

// finite 报告 v 是有限数（NaN 与 ±Inf 在任何字段里都没有意义）。
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Validate 检查（已填默认值的）Profile；错误是 *field.Error，点名字段与取值，
// 便于定位 YAML 中的问题。除取值范围外，每个数值字段都有上限（见 MaxConcurrency 等），
// 浮点字段拒绝 NaN 与 ±Inf。
func (p Profile) Validate() error {
	if err := p.Backend.Validate(); err != nil {
		return err
	}
	if p.Source != nil {
		if err := p.Source.validate(&p); err != nil {
			return err
		}
	}
	if p.Pacer != nil && p.RequestRate <= 0 {
		// Pacer 设置的错误：ErrSource（见它的文档），同时仍是 ErrInvalidProfile。
		e := field.New(ErrSource, "request_rate", p.RequestRate, "a Pacer paces open-loop arrivals: set request_rate > 0 (it is passed to the Pacer)")
		e.Cause = ErrInvalidProfile
		return e
	}
	if len(p.InputLength) == 0 && p.DatasetType != DatasetCustom {
		return invalid("input_length", p.InputLength, "at least one value required")
	}
	if len(p.OutputLength) == 0 {
		return invalid("output_length", p.OutputLength, "at least one value required")
	}
	if len(p.Concurrency) == 0 {
		return invalid("concurrency", p.Concurrency, "at least one value required")
	}
	if p.MaxDuration < 0 {
		return invalid("max_duration", p.MaxDuration, "must be >= 0 (0 = no budget)")
	}
	if p.MaxDuration > 0 && p.ControlMethod == ControlSweep {
		return invalid("max_duration", p.MaxDuration, "a sweep has its own budget (sweep.budget); max_duration applies to normal and climb profiles")
	}
	for i, c := range p.Concurrency {
		if c < 0 || (c == 0 && p.RequestRate == 0 && p.ControlMethod != ControlSweep && !isTrace(p.DatasetType)) {
			return invalidAt("concurrency", i, c, "must be >= 1 (0 only with request_rate, a trace or control_method sweep)")
		}
		if c > MaxConcurrency {
			return invalidAt("concurrency", i, c, fmt.Sprintf("must be <= %d", MaxConcurrency))
		}
	}
	for i, v := range p.InputLength {
		if ownLengths(p.DatasetType) {
			break // 自带长度的数据集在 validateWorkload 中检查
		}
		if err := bounded("input_length", i, v, 1, MaxTokens); err != nil {
			return err
		}
		if p.PrefixLength >= v && p.DatasetType == DatasetRandom {
			return invalid("prefix_length", p.PrefixLength, fmt.Sprintf("must be < input_length %d", v))
		}
	}
	for i, v := range p.OutputLength {
		if ownLengths(p.DatasetType) {
			break
		}
		if err := bounded("output_length", i, v, 1, MaxTokens); err != nil {
			return err
		}
	}
	if err := matchList("num_requests", p.NumRequests, len(p.Concurrency), 1, MaxRequests); err != nil {
		return err
	}
	if err := matchList("init_concurrency", p.InitConcurrency, len(p.Concurrency), 1, MaxConcurrency); err != nil {
		return err
	}
	if err := p.validateScalars(); err != nil {
		return err
	}
	if len(p.NumRequests) == 0 {
		for i, c := range p.Concurrency {
			if n := max(c, 1) * p.RequestsPerConcurrency; n > MaxRequests {
				return invalid("requests_per_concurrency", p.RequestsPerConcurrency,
					fmt.Sprintf("concurrency[%d]=%d × requests_per_concurrency is %d requests, must be <= %d", i, c, n, MaxRequests))
			}
		}
	}
	if err := p.validateDataset(); err != nil {
		return err
	}
	if _, err := ParseGoodput(p.Goodput); err != nil {
		return err
	}
	if p.ControlMethod == ControlSweep {
		return p.validateSweep()
	}
	return nil
}

// validateScalars 检查标量字段的取值范围与上限。
func (p Profile) validateScalars() error {
	switch {
	case p.RequestsPerConcurrency < 1 || p.RequestsPerConcurrency > maxRequestsPerConc:
		return invalid("requests_per_concurrency", p.RequestsPerConcurrency, fmt.Sprintf("must be in [1, %d]", maxRequestsPerConc))
	case p.Warmup < 0 || p.Warmup > MaxRequests:
		return invalid("warmup", p.Warmup, fmt.Sprintf("must be in [0, %d]", MaxRequests))
	case p.Epochs < 1 || p.Epochs > MaxEpochs:
		return invalid("epochs", p.Epochs, fmt.Sprintf("must be in [1, %d]", MaxEpochs))
	case p.ControlMethod.Validate() != nil:
		return p.ControlMethod.Validate()
	case p.ClimbMode.Validate() != nil:
		return p.ClimbMode.Validate()
	case p.GrowthRate < 0 || p.GrowthRate > MaxConcurrency:
		return invalid("growth_rate", p.GrowthRate, fmt.Sprintf("must be in [0, %d]", MaxConcurrency))
	case p.GrowthInterval < 0 || p.GrowthInterval > MaxGrowthInterval:
		return invalid("growth_interval", p.GrowthInterval, fmt.Sprintf("must be in [0, %s]", MaxGrowthInterval))
	case p.BucketInterval < 0 || (p.BucketInterval > 0 && p.BucketInterval < MinBucketInterval) || p.BucketInterval > MaxGrowthInterval:
		return invalid("bucket_interval", p.BucketInterval, fmt.Sprintf("must be 0 (off) or in [%s, %s]", MinBucketInterval, MaxGrowthInterval))
	case !finite(p.RequestRate) || p.RequestRate < 0 || p.RequestRate > MaxRequestRate:
		return invalid("request_rate", p.RequestRate, fmt.Sprintf("must be in [0, %d] (0 = unlimited)", MaxRequestRate))
	case !finite(p.Burstiness) || p.Burstiness <= 0 || p.Burstiness > MaxBurstiness:
		return invalid("burstiness", p.Burstiness, fmt.Sprintf("must be in (0, %d]", MaxBurstiness))
	case !finite(*p.Temperature) || *p.Temperature < 0 || *p.Temperature > MaxTemperature:
		return invalid("temperature", *p.Temperature, fmt.Sprintf("must be in [0, %d]", MaxTemperature))
	case *p.TopK < -1 || *p.TopK > MaxTopK:
		return invalid("top_k", *p.TopK, fmt.Sprintf("must be in [-1, %d]", MaxTopK))
	case !finite(*p.TopP) || *p.TopP <= 0 || *p.TopP > 1:
		return invalid("top_p", *p.TopP, "must be in (0, 1]")
	case p.Timeout <= 0 || p.Timeout > MaxTimeout:
		return invalid("timeout", p.Timeout, fmt.Sprintf("must be in (0, %s]", MaxTimeout))
	case p.IdleTimeout < 0 || p.IdleTimeout > MaxTimeout:
		return invalid("idle_timeout", p.IdleTimeout, fmt.Sprintf("must be in (0, %s]", MaxTimeout))
	case p.MaxEventBytes < 1024:
		return invalid("max_event_bytes", p.MaxEventBytes, "must be >= 1024")
	case p.PrefixLength < 0 || p.PrefixLength > MaxTokens:
		return invalid("prefix_length", p.PrefixLength, fmt.Sprintf("must be in [0, %d]", MaxTokens))
	case !finite(p.RangeRatioAbove) || p.RangeRatioAbove < 0 || p.RangeRatioAbove > 1:
		return invalid("range_ratio_above", p.RangeRatioAbove, "must be in [0, 1]")
	case !finite(p.RangeRatioBelow) || p.RangeRatioBelow < 0 || p.RangeRatioBelow >= 1:
		return invalid("range_ratio_below", p.RangeRatioBelow, "must be in [0, 1)")
	case !finite(p.OutputRangeRatioAbove) || p.OutputRangeRatioAbove < 0 || p.OutputRangeRatioAbove > 1:
		return invalid("output_range_ratio_above", p.OutputRangeRatioAbove, "must be in [0, 1]")
	case !finite(p.OutputRangeRatioBelow) || p.OutputRangeRatioBelow < 0 || p.OutputRangeRatioBelow >= 1:
		return invalid("output_range_ratio_below", p.OutputRangeRatioBelow, "must be in [0, 1)")
	case p.Timestamps.Validate() != nil:
		return p.Timestamps.Validate()
	}
	return nil
}

// validateDataset 检查数据集、模态与图片尺寸；custom 数据集的每个输入长度都要有 prompt。
func (p Profile) validateDataset() error {
	switch {
	case p.DatasetType.Validate() != nil:
		return p.DatasetType.Validate()
	case p.DatasetType == DatasetCustom && len(p.Prompts) == 0:
		return invalid("dataset_type", p.DatasetType, "custom dataset needs prompts (input_path)")
	case p.ModalType.Validate() != nil:
		return p.ModalType.Validate()
	case p.ModalType == ModalImageText && p.Backend != BackendChat:
		return invalid("modal_type", p.ModalType, "image-text needs backend openai-chat")
	case p.ImageWidth < 1 || p.ImageHeight < 1 || p.ImageWidth > MaxImageSide || p.ImageHeight > MaxImageSide:
		name, v := "image_width", p.ImageWidth
		if p.ImageWidth >= 1 && p.ImageWidth <= MaxImageSide {
			name, v = "image_height", p.ImageHeight
		}
		return invalid(name, v, fmt.Sprintf("must be in [1, %d]", MaxImageSide))
	}
	if err := p.validateWorkload(); err != nil {
		return err
	}
	if p.DatasetType == DatasetCustom {
		for i, L := range p.InputLength {
			if len(dataset.PromptsFor(p.Prompts, L)) == 0 {
				return invalidAt("input_length", i, L, "the custom dataset has no prompt of this input length (input_length "+dataset.LengthsOf(p.Prompts)+")")
			}
		}
	}
	return nil
}

// matchList 校验"一个值用于全部组，或与并发组一一对应"的列表参数。
func matchList(field string, vals []int, groups, minimum, maximum int) error {
	if len(vals) > 1 && len(vals) != groups {
		return invalid(field, vals, fmt.Sprintf("give one value or one per concurrency group (%d)", groups))
	}
	for i, v := range vals {
		if err := bounded(field, i, v, minimum, maximum); err != nil {
			return err
		}
	}
	return nil
}

// bounded 检查列表元素的下界与上界，分别给出 ">= 下界" 与 "<= 上界" 的原因
// （下界的措辞与早期版本相同，调用方可能按它匹配）。
func bounded(field string, i, v, minimum, maximum int) error {
	switch {
	case v < minimum:
		return invalidAt(field, i, v, fmt.Sprintf("must be >= %d", minimum))
	case v > maximum:
		return invalidAt(field, i, v, fmt.Sprintf("must be <= %d", maximum))
	}
	return nil
}

// pick 从"单值或按组对应"的列表中取第 i 组的值，空列表返回 def。
func pick(vals []int, i, def int) int {
	switch len(vals) {
	case 0:
		return def
	case 1:
		return vals[0]
	default:
		return vals[i]
	}
}

// SLO 是 goodput 的服务目标（各项为 0 表示不约束）。
type SLO struct {
	TTFT time.Duration
	TPOT time.Duration
	E2E  time.Duration
}

// Empty 报告是否未配置任何目标（此时 goodput 写作 -1）。
func (s SLO) Empty() bool { return s.TTFT == 0 && s.TPOT == 0 && s.E2E == 0 }

// Met 报告一次成功请求是否满足全部目标；tpot<0 表示该请求没有 TPOT（单 token），不受 TPOT 约束。
func (s SLO) Met(ttft, tpot, e2e time.Duration) bool {
	if s.TTFT > 0 && ttft > s.TTFT {
		return false
	}
	if s.TPOT > 0 && tpot >= 0 && tpot > s.TPOT {
		return false
	}
	if s.E2E > 0 && e2e > s.E2E {
		return false
	}
	return true
}

// ParseGoodput 解析 acs-bench / vllm bench 的 goodput 写法：每项 "名称:毫秒"，
// 可以逗号分隔或多项给出（"ttft:50,e2e:1000"）；名称为 ttft、tpot、e2e（或 e2el）。
func ParseGoodput(items []string) (SLO, error) {
	var s SLO
	for _, item := range items {
		for _, kv := range strings.Split(item, ",") {
			kv = strings.TrimSpace(kv)
			if kv == "" {
				continue
			}
			name, val, ok := strings.Cut(kv, ":")
			if !ok {
				return SLO{}, invalid("goodput", kv, `want "name:milliseconds"`)
			}
			ms, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if err != nil || ms <= 0 {
				return SLO{}, invalid("goodput", kv, "milliseconds must be a positive number")
			}
			d := time.Duration(ms * float64(time.Millisecond))
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "ttft":
				s.TTFT = d
			case "tpot":
				s.TPOT = d
			case "e2e", "e2el":
				s.E2E = d
			default:
				return SLO{}, invalid("goodput", kv, "name must be ttft, tpot or e2e")
			}
		}
	}
	return s, nil
}

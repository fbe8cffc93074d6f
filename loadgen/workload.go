package loadgen

import (
	"fmt"
	"time"
)

// 真实负载的数据集类型（Profile.DatasetType 的新取值）。名字沿用各自的出处，
// 用户从 AIPerf、vLLM bench、inference-perf 迁移过来时不必改写：
//   - mooncake_trace：AIPerf 的 --custom-dataset-type mooncake_trace（Mooncake FAST'25 的 JSONL 轨迹）；
//   - azure_trace：Azure LLM 推理轨迹（AzurePublicDataset 的 CSV：TIMESTAMP, ContextTokens, GeneratedTokens）；
//   - shared_prefix：inference-perf 的 shared_prefix 数据（分组共享系统提示）；
//   - prefix_repetition：vLLM bench 的 prefix_repetition 数据集；
//   - sharegpt：ShareGPT 格式的 JSON 文件（vLLM bench 的 sharegpt）。
//
// 前两个是"轨迹"：请求按轨迹里的时刻到达（见 trace.go）；后三个是"集合"：预先生成的
// 一组 prompt，按并发或 request_rate 发送。它们都自带输入 / 输出长度，所以不用 input_length /
// output_length。
const (
	DatasetMooncakeTrace    DatasetType = "mooncake_trace"
	DatasetAzureTrace       DatasetType = "azure_trace"
	DatasetSharedPrefix     DatasetType = "shared_prefix"
	DatasetPrefixRepetition DatasetType = "prefix_repetition"
	DatasetShareGPT         DatasetType = "sharegpt"
)

// 真实负载参数的默认值与上限。
const (
	// DefaultTraceBlockSize 是 Mooncake 轨迹的 hash_id 块大小（token），与 Mooncake / AIPerf 相同。
	DefaultTraceBlockSize = 512
	// MaxTraceRequests 是一个轨迹文件的行数上限（内存按行线性增长，每行几十字节加 hash_ids）。
	MaxTraceRequests = MaxRequests
	// MaxSetPrompts 是集合类数据集（shared_prefix、prefix_repetition、sharegpt）的 prompt 条数上限。
	MaxSetPrompts = 1_000_000
	// MaxSetTokens 是集合类数据集全部 prompt 的 token 总数上限：集合整个放在内存里
	// （每个 token 约 3 字节），上限让拼错的参数在建集合之前就报错而不是耗尽内存。
	MaxSetTokens = 64 << 20
	// MaxTimeScale 是 trace.time_scale 的上限。
	MaxTimeScale = 1000
	// MaxTurns 是多轮会话单个会话的轮数上限。
	MaxTurns = 1000
	// MaxConversations 是多轮会话每组的会话数上限。
	MaxConversations = 1_000_000
)

// vLLM bench prefix_repetition 的默认值（vllm/benchmarks/datasets 的 PrefixRepetitionRandomDataset）。
const (
	DefaultPrefixRepetitionPrefixLen   = 256
	DefaultPrefixRepetitionSuffixLen   = 256
	DefaultPrefixRepetitionNumPrefixes = 10
	DefaultPrefixRepetitionOutputLen   = 128
)

// shared_prefix 的默认值（cibench 自定：inference-perf 要求显式给出全部参数）。
const (
	DefaultSharedPrefixNumGroups       = 10
	DefaultSharedPrefixPromptsPerGroup = 10
	DefaultSharedPrefixSystemPromptLen = 100
	DefaultSharedPrefixQuestionLen     = 50
	DefaultSharedPrefixOutputLen       = 50
)

// SessionSampling 是多轮会话中客户端挑下一个会话的方式。
type SessionSampling string

// SessionSampling 的取值。
const (
	SamplingRoundRobin SessionSampling = "round_robin" // 从上次的位置往后找第一个就绪的会话（默认）
	SamplingRandom     SessionSampling = "random"      // 在就绪的会话中随机挑一个
)

// sessionSamplingValues 是 SessionSampling 的全部合法取值。
var sessionSamplingValues = []SessionSampling{SamplingRoundRobin, SamplingRandom}

// Validate 报告 s 是否是已知取样方式；错误点名 "multi_turn.sampling"。
func (s SessionSampling) Validate() error {
	return checkMode("multi_turn.sampling", s, sessionSamplingValues)
}

// MarshalText 实现 encoding.TextMarshaler。
func (s SessionSampling) MarshalText() ([]byte, error) { return []byte(s), nil }

// UnmarshalText 实现 encoding.TextUnmarshaler：解码时就拒绝未知取值，空串表示未设置。
func (s *SessionSampling) UnmarshalText(text []byte) error {
	return parseMode("multi_turn.sampling", text, s, sessionSamplingValues)
}

// TraceConfig 是轨迹回放（mooncake_trace、azure_trace）的参数，YAML 键 trace。
type TraceConfig struct {
	// BlockSize 是 Mooncake hash_ids 每块的 token 数（默认 512）：第 k 个 hash_id 对应第 k 块，
	// 最后一块是 input_length − (n−1)·BlockSize，必须在 (0, BlockSize] 内。
	BlockSize int `yaml:"block_size"`
	// Salt 参与每块文本的种子（种子 = Salt 与 hash_id）：换一个 salt 得到与上次不共享任何前缀的
	// 文本（服务端缓存里上一次运行的块不会被命中），同一 salt 的两次运行文本相同。默认 0。
	Salt int64 `yaml:"salt"`
	// TimeScale 把轨迹里的时间间隔乘以它（默认 1；0.5 = 两倍速回放，2 = 放慢一半）。
	TimeScale float64 `yaml:"time_scale"`
	// StartOffset / EndOffset 只回放轨迹时刻落在 [StartOffset, EndOffset) 的请求（EndOffset 为 0
	// 表示到结尾），时刻按轨迹原始时间计，回放从 StartOffset 对应的时刻开始算 0。
	StartOffset time.Duration `yaml:"start_offset"`
	EndOffset   time.Duration `yaml:"end_offset"`
	// MaxIdle 是相邻两次到达的最大间隔（缩放之后）；轨迹里更长的空闲被压到它（0 = 不压缩）。
	MaxIdle time.Duration `yaml:"max_idle"`
}

// SharedPrefixConfig 是 inference-perf shared_prefix 数据的参数（YAML 键 shared_prefix，
// 字段名与 inference-perf 的 data.shared_prefix 相同）：NumGroups 组，每组一个 SystemPromptLen
// token 的系统提示，组内 NumPromptsPerGroup 个 QuestionLen token 的问题；prompt = 系统提示 + 问题，
// 全部打乱后按序发送。
type SharedPrefixConfig struct {
	NumGroups          int    `yaml:"num_groups"`
	NumPromptsPerGroup int    `yaml:"num_prompts_per_group"`
	SystemPromptLen    int    `yaml:"system_prompt_len"`
	QuestionLen        int    `yaml:"question_len"`
	OutputLen          int    `yaml:"output_len"`
	Seed               *int64 `yaml:"seed"` // 为空时用 Profile.Seed
}

// PrefixRepetitionConfig 是 vLLM bench prefix_repetition 的参数（YAML 键 prefix_repetition）：
// NumPrefixes 个 PrefixLen token 的前缀，每个 prompt = 某个前缀 + SuffixLen token 的独有后缀。
type PrefixRepetitionConfig struct {
	PrefixLen   int `yaml:"prefix_len"`
	SuffixLen   int `yaml:"suffix_len"`
	NumPrefixes int `yaml:"num_prefixes"`
	OutputLen   int `yaml:"output_len"`
}

// ShareGPTConfig 是 sharegpt 数据集的参数（YAML 键 sharegpt）。
type ShareGPTConfig struct {
	// OutputLen 非 0 时覆盖每条的输出长度（vLLM 的 --sharegpt-output-len）；为 0 时取
	// 数据里第一条回答的 token 数（按 internal/tokenize 规则计）。
	OutputLen int `yaml:"output_len"`
}

// MultiTurnConfig 是多轮会话的参数（YAML 键 multi_turn）。Conversations > 0 时打开：每组
// 执行 Conversations 个会话，每个会话的轮数取自 N(TurnsMean, TurnsStddev²)（四舍五入，夹到
// [1, MaxTurns]）；每轮的问题是 input_length 个 token 的随机文本，回答最多 output_length 个
// token，服务端的实时回答原样追加进历史（chat messages），下一轮把整段历史再发一次。
// 组的并发是客户端数；同时打开的会话不超过 MaxActiveConversations（默认等于并发）。
type MultiTurnConfig struct {
	Conversations int     `yaml:"conversations"`
	TurnsMean     float64 `yaml:"turns_mean"`
	TurnsStddev   float64 `yaml:"turns_stddev"`
	// ThinkTime 是同一会话收到回答之后、发出下一轮之前的等待（用户的思考时间）。
	ThinkTime time.Duration `yaml:"think_time"`
	// MaxActiveConversations 是同时打开的会话上限（0 = 等于组并发）。
	MaxActiveConversations int `yaml:"max_active_conversations"`
	// Sampling 是客户端挑下一个会话的方式："round_robin"（默认）或 "random"。
	Sampling SessionSampling `yaml:"sampling"`
}

// On 报告多轮会话是否打开。
func (m MultiTurnConfig) On() bool { return m.Conversations > 0 }

// isTrace 报告数据集是否是按时刻回放的轨迹。
func isTrace(dt DatasetType) bool { return dt == DatasetMooncakeTrace || dt == DatasetAzureTrace }

// isSet 报告数据集是否是预先生成（或读入）的一组自带长度的 prompt。
func isSet(dt DatasetType) bool {
	return dt == DatasetSharedPrefix || dt == DatasetPrefixRepetition || dt == DatasetShareGPT
}

// ownLengths 报告数据集的每条请求是否自带输入 / 输出长度（不用 input_length / output_length 分组）。
func ownLengths(dt DatasetType) bool { return isTrace(dt) || isSet(dt) }

// workloadDefaults 填真实负载参数的默认值（由 Profile.Defaults 调用）。自带长度的数据集
// 只有一个长度分组（0 = 按条），轨迹默认不限并发（每个到达一个 goroutine，时刻表不被
// 并发槽位拖慢），请求数默认是整条轨迹。
func (p *Profile) workloadDefaults() {
	if ownLengths(p.DatasetType) {
		if len(p.InputLength) == 0 {
			p.InputLength = []int{0}
		}
		if len(p.OutputLength) == 0 {
			p.OutputLength = []int{0}
		}
	}
	if isTrace(p.DatasetType) {
		if len(p.Concurrency) == 0 {
			p.Concurrency = []int{0}
		}
		if p.Trace.BlockSize == 0 {
			p.Trace.BlockSize = DefaultTraceBlockSize
		}
		if p.Trace.TimeScale == 0 {
			p.Trace.TimeScale = 1
		}
		if len(p.NumRequests) == 0 {
			if n := len(traceWindow(p.TraceRequests, p.Trace)); n > 0 {
				p.NumRequests = []int{n}
			}
		}
	}
	sp := &p.SharedPrefix
	if p.DatasetType == DatasetSharedPrefix {
		if sp.NumGroups == 0 {
			sp.NumGroups = DefaultSharedPrefixNumGroups
		}
		if sp.NumPromptsPerGroup == 0 {
			sp.NumPromptsPerGroup = DefaultSharedPrefixPromptsPerGroup
		}
		if sp.SystemPromptLen == 0 {
			sp.SystemPromptLen = DefaultSharedPrefixSystemPromptLen
		}
		if sp.QuestionLen == 0 {
			sp.QuestionLen = DefaultSharedPrefixQuestionLen
		}
		if sp.OutputLen == 0 {
			sp.OutputLen = DefaultSharedPrefixOutputLen
		}
	}
	pr := &p.PrefixRepetition
	if p.DatasetType == DatasetPrefixRepetition {
		if pr.PrefixLen == 0 {
			pr.PrefixLen = DefaultPrefixRepetitionPrefixLen
		}
		if pr.SuffixLen == 0 {
			pr.SuffixLen = DefaultPrefixRepetitionSuffixLen
		}
		if pr.NumPrefixes == 0 {
			pr.NumPrefixes = DefaultPrefixRepetitionNumPrefixes
		}
		if pr.OutputLen == 0 {
			pr.OutputLen = DefaultPrefixRepetitionOutputLen
		}
	}
	mt := &p.MultiTurn
	if mt.On() {
		if mt.TurnsMean == 0 {
			mt.TurnsMean = 5
		}
		if mt.Sampling == "" {
			mt.Sampling = SamplingRoundRobin
		}
	}
}

// validateWorkload 检查真实负载的参数；错误是 *field.Error，字段名是 YAML 路径（如 trace.block_size）。
func (p Profile) validateWorkload() error {
	dt := p.DatasetType
	if ownLengths(dt) {
		if len(p.InputLength) != 1 || p.InputLength[0] != 0 {
			return invalid("input_length", p.InputLength, "dataset_type "+string(dt)+" brings its own input lengths; leave input_length unset")
		}
		if len(p.OutputLength) != 1 || p.OutputLength[0] != 0 {
			return invalid("output_length", p.OutputLength, "dataset_type "+string(dt)+" brings its own output lengths; leave output_length unset")
		}
		if p.PrefixLength != 0 {
			return invalid("prefix_length", p.PrefixLength, "only the random dataset has prefix_length")
		}
		if p.ModalType != ModalText {
			return invalid("modal_type", p.ModalType, "dataset_type "+string(dt)+" is text only")
		}
	}
	if isTrace(dt) {
		if err := p.validateTrace(); err != nil {
			return err
		}
	}
	switch dt {
	case DatasetSharedPrefix:
		sp := p.SharedPrefix
		for _, f := range []struct {
			name string
			v    int
		}{{"shared_prefix.num_groups", sp.NumGroups}, {"shared_prefix.num_prompts_per_group", sp.NumPromptsPerGroup},
			{"shared_prefix.question_len", sp.QuestionLen}, {"shared_prefix.output_len", sp.OutputLen}} {
			if f.v < 1 || f.v > MaxTokens {
				return invalid(f.name, f.v, fmt.Sprintf("must be in [1, %d]", MaxTokens))
			}
		}
		if sp.SystemPromptLen < 0 || sp.SystemPromptLen > MaxTokens {
			return invalid("shared_prefix.system_prompt_len", sp.SystemPromptLen, fmt.Sprintf("must be in [0, %d]", MaxTokens))
		}
		n := int64(sp.NumGroups) * int64(sp.NumPromptsPerGroup)
		if n > MaxSetPrompts {
			return invalid("shared_prefix.num_groups/num_prompts_per_group", n, fmt.Sprintf("%d prompts, must be <= %d", n, MaxSetPrompts))
		}
		if tok := n * int64(sp.SystemPromptLen+sp.QuestionLen); tok > MaxSetTokens {
			return invalid("shared_prefix.system_prompt_len/question_len", tok, fmt.Sprintf("%d prompt tokens in the set, must be <= %d", tok, MaxSetTokens))
		}
	case DatasetPrefixRepetition:
		pr := p.PrefixRepetition
		switch {
		case pr.PrefixLen < 0 || pr.PrefixLen > MaxTokens:
			return invalid("prefix_repetition.prefix_len", pr.PrefixLen, fmt.Sprintf("must be in [0, %d]", MaxTokens))
		case pr.SuffixLen < 0 || pr.SuffixLen > MaxTokens || pr.PrefixLen+pr.SuffixLen == 0:
			return invalid("prefix_repetition.suffix_len", pr.SuffixLen, fmt.Sprintf("must be in [0, %d] and prefix_len + suffix_len >= 1", MaxTokens))
		case pr.NumPrefixes < 1 || pr.NumPrefixes > MaxSetPrompts:
			return invalid("prefix_repetition.num_prefixes", pr.NumPrefixes, fmt.Sprintf("must be in [1, %d]", MaxSetPrompts))
		case pr.OutputLen < 1 || pr.OutputLen > MaxTokens:
			return invalid("prefix_repetition.output_len", pr.OutputLen, fmt.Sprintf("must be in [1, %d]", MaxTokens))
		}
		for i, c := range p.Concurrency {
			n := int64(pick(p.NumRequests, i, max(c, 1)*p.RequestsPerConcurrency))
			if tok := n * int64(pr.PrefixLen+pr.SuffixLen); n > MaxSetPrompts || tok > MaxSetTokens {
				return invalid("prefix_repetition.prefix_len/suffix_len", tok, fmt.Sprintf("%d prompts of %d tokens, must be <= %d prompts and %d tokens",
					n, pr.PrefixLen+pr.SuffixLen, MaxSetPrompts, MaxSetTokens))
			}
		}
	case DatasetShareGPT:
		if len(p.Prompts) == 0 {
			return invalid("dataset_type", dt, "sharegpt needs a ShareGPT JSON file (input_path)")
		}
		if p.ShareGPT.OutputLen < 0 || p.ShareGPT.OutputLen > MaxTokens {
			return invalid("sharegpt.output_len", p.ShareGPT.OutputLen, fmt.Sprintf("must be in [0, %d] (0 = from the data)", MaxTokens))
		}
	}
	return p.validateMultiTurn()
}

// validateTrace 检查轨迹回放的参数与轨迹本身（已读入 TraceRequests）。
func (p Profile) validateTrace() error {
	t := p.Trace
	switch {
	case len(p.TraceRequests) == 0:
		return invalid("dataset_type", p.DatasetType, "a trace dataset needs a trace file (input_path)")
	case t.BlockSize < 1 || t.BlockSize > MaxTokens:
		return invalid("trace.block_size", t.BlockSize, fmt.Sprintf("must be in [1, %d]", MaxTokens))
	case !finite(t.TimeScale) || t.TimeScale <= 0 || t.TimeScale > MaxTimeScale:
		return invalid("trace.time_scale", t.TimeScale, fmt.Sprintf("must be in (0, %d]", MaxTimeScale))
	case t.StartOffset < 0:
		return invalid("trace.start_offset", t.StartOffset, "must be >= 0")
	case t.EndOffset < 0 || (t.EndOffset > 0 && t.EndOffset <= t.StartOffset):
		return invalid("trace.end_offset", t.EndOffset, fmt.Sprintf("must be 0 (to the end) or > start_offset %s", t.StartOffset))
	case t.MaxIdle < 0:
		return invalid("trace.max_idle", t.MaxIdle, "must be >= 0 (0 = no cap)")
	case p.RequestRate != 0:
		return invalid("request_rate", p.RequestRate, "a trace sets its own arrival times; leave request_rate unset")
	case p.ControlMethod != ControlNormal:
		return invalid("control_method", p.ControlMethod, "a trace is replayed with control_method normal")
	}
	win := traceWindow(p.TraceRequests, t)
	if len(win) == 0 {
		return invalid("trace.start_offset/end_offset", fmt.Sprintf("%s/%s", t.StartOffset, t.EndOffset), "no trace request falls in the window")
	}
	for i, n := range p.NumRequests {
		if n > len(win) {
			return invalidAt("num_requests", i, n, fmt.Sprintf("the trace window has only %d requests", len(win)))
		}
	}
	if p.DatasetType == DatasetMooncakeTrace {
		for _, tr := range win {
			if err := tr.checkBlocks(t.BlockSize); err != nil {
				return invalid("trace.block_size", t.BlockSize, err.Error())
			}
		}
	}
	return nil
}

// validateMultiTurn 检查多轮会话的参数。
func (p Profile) validateMultiTurn() error {
	m := p.MultiTurn
	switch {
	case m.Conversations < 0 || m.Conversations > MaxConversations:
		return invalid("multi_turn.conversations", m.Conversations, fmt.Sprintf("must be in [0, %d] (0 = off)", MaxConversations))
	case !m.On():
		return nil
	case p.Backend != BackendChat:
		return invalid("backend", p.Backend, "multi_turn needs backend openai-chat (the history is a list of chat messages)")
	case p.DatasetType != DatasetRandom:
		return invalid("dataset_type", p.DatasetType, "multi_turn generates its questions: use dataset_type random")
	case p.ModalType != ModalText:
		return invalid("modal_type", p.ModalType, "multi_turn is text only")
	case p.PrefixLength != 0:
		return invalid("prefix_length", p.PrefixLength, "multi_turn shares its prefix through the history, not prefix_length")
	case p.RequestRate != 0 || p.ControlMethod != ControlNormal:
		return invalid("request_rate/control_method", fmt.Sprintf("%g/%s", p.RequestRate, p.ControlMethod), "multi_turn runs closed-loop clients (control_method normal, no request_rate)")
	case !finite(m.TurnsMean) || m.TurnsMean < 1 || m.TurnsMean > MaxTurns:
		return invalid("multi_turn.turns_mean", m.TurnsMean, fmt.Sprintf("must be in [1, %d]", MaxTurns))
	case !finite(m.TurnsStddev) || m.TurnsStddev < 0 || m.TurnsStddev > MaxTurns:
		return invalid("multi_turn.turns_stddev", m.TurnsStddev, fmt.Sprintf("must be in [0, %d]", MaxTurns))
	case m.ThinkTime < 0 || m.ThinkTime > MaxTimeout:
		return invalid("multi_turn.think_time", m.ThinkTime, fmt.Sprintf("must be in [0, %s]", MaxTimeout))
	case m.MaxActiveConversations < 0 || m.MaxActiveConversations > MaxConcurrency:
		return invalid("multi_turn.max_active_conversations", m.MaxActiveConversations, fmt.Sprintf("must be in [0, %d] (0 = concurrency)", MaxConcurrency))
	case m.Sampling.Validate() != nil:
		return m.Sampling.Validate()
	}
	for i, c := range p.Concurrency {
		if c < 1 {
			return invalidAt("concurrency", i, c, "multi_turn needs >= 1 client")
		}
	}
	return nil
}

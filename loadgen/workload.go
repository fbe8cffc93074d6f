package loadgen

import (
	"fmt"
	"time"

	"github.com/vllm-cibench/cibench/loadgen/dataset"
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

// 多轮会话的上限。
const (
	// MaxTurns 是多轮会话单个会话的轮数上限。
	MaxTurns = 1000
	// MaxConversations 是多轮会话每组的会话数上限。
	MaxConversations = 1_000_000
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

// workloadDefaults 填真实负载参数的默认值（由 Profile.WithDefaults 调用）。自带长度的数据集
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
			p.Trace.BlockSize = dataset.DefaultTraceBlockSize
		}
		if p.Trace.TimeScale == 0 {
			p.Trace.TimeScale = 1
		}
		if len(p.NumRequests) == 0 {
			if n := len(dataset.Window(p.TraceRequests, p.Trace)); n > 0 {
				p.NumRequests = []int{n}
			}
		}
	}
	sp := &p.SharedPrefix
	if p.DatasetType == DatasetSharedPrefix {
		if sp.NumGroups == 0 {
			sp.NumGroups = dataset.DefaultSharedPrefixNumGroups
		}
		if sp.NumPromptsPerGroup == 0 {
			sp.NumPromptsPerGroup = dataset.DefaultSharedPrefixPromptsPerGroup
		}
		if sp.SystemPromptLen == 0 {
			sp.SystemPromptLen = dataset.DefaultSharedPrefixSystemPromptLen
		}
		if sp.QuestionLen == 0 {
			sp.QuestionLen = dataset.DefaultSharedPrefixQuestionLen
		}
		if sp.OutputLen == 0 {
			sp.OutputLen = dataset.DefaultSharedPrefixOutputLen
		}
	}
	pr := &p.PrefixRepetition
	if p.DatasetType == DatasetPrefixRepetition {
		if pr.PrefixLen == 0 {
			pr.PrefixLen = dataset.DefaultPrefixRepetitionPrefixLen
		}
		if pr.SuffixLen == 0 {
			pr.SuffixLen = dataset.DefaultPrefixRepetitionSuffixLen
		}
		if pr.NumPrefixes == 0 {
			pr.NumPrefixes = dataset.DefaultPrefixRepetitionNumPrefixes
		}
		if pr.OutputLen == 0 {
			pr.OutputLen = dataset.DefaultPrefixRepetitionOutputLen
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
		if n > dataset.MaxSetPrompts {
			return invalid("shared_prefix.num_groups/num_prompts_per_group", n, fmt.Sprintf("%d prompts, must be <= %d", n, dataset.MaxSetPrompts))
		}
		if tok := n * int64(sp.SystemPromptLen+sp.QuestionLen); tok > dataset.MaxSetTokens {
			return invalid("shared_prefix.system_prompt_len/question_len", tok, fmt.Sprintf("%d prompt tokens in the set, must be <= %d", tok, dataset.MaxSetTokens))
		}
	case DatasetPrefixRepetition:
		pr := p.PrefixRepetition
		switch {
		case pr.PrefixLen < 0 || pr.PrefixLen > MaxTokens:
			return invalid("prefix_repetition.prefix_len", pr.PrefixLen, fmt.Sprintf("must be in [0, %d]", MaxTokens))
		case pr.SuffixLen < 0 || pr.SuffixLen > MaxTokens || pr.PrefixLen+pr.SuffixLen == 0:
			return invalid("prefix_repetition.suffix_len", pr.SuffixLen, fmt.Sprintf("must be in [0, %d] and prefix_len + suffix_len >= 1", MaxTokens))
		case pr.NumPrefixes < 1 || pr.NumPrefixes > dataset.MaxSetPrompts:
			return invalid("prefix_repetition.num_prefixes", pr.NumPrefixes, fmt.Sprintf("must be in [1, %d]", dataset.MaxSetPrompts))
		case pr.OutputLen < 1 || pr.OutputLen > MaxTokens:
			return invalid("prefix_repetition.output_len", pr.OutputLen, fmt.Sprintf("must be in [1, %d]", MaxTokens))
		}
		for i, c := range p.Concurrency {
			n := int64(pick(p.NumRequests, i, max(c, 1)*p.RequestsPerConcurrency))
			if tok := n * int64(pr.PrefixLen+pr.SuffixLen); n > dataset.MaxSetPrompts || tok > dataset.MaxSetTokens {
				return invalid("prefix_repetition.prefix_len/suffix_len", tok, fmt.Sprintf("%d prompts of %d tokens, must be <= %d prompts and %d tokens",
					n, pr.PrefixLen+pr.SuffixLen, dataset.MaxSetPrompts, dataset.MaxSetTokens))
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
	case !finite(t.TimeScale) || t.TimeScale <= 0 || t.TimeScale > dataset.MaxTimeScale:
		return invalid("trace.time_scale", t.TimeScale, fmt.Sprintf("must be in (0, %d]", dataset.MaxTimeScale))
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
	win := dataset.Window(p.TraceRequests, t)
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
			if err := tr.CheckBlocks(t.BlockSize); err != nil {
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

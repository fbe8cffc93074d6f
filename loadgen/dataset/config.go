package dataset

import "time"

// 数据集的上限。它们也是 loadgen.Profile 的上限（loadgen.MaxTokens、loadgen.MaxRequests 就是
// 这里的值）：读入的数据、生成的参数越界时在发出第一个请求之前报错，而不是耗尽内存。
const (
	// MaxTokens 是输入 / 输出 token 长度、前缀长度的上限。
	MaxTokens = 1 << 20
	// MaxRequests 是每组请求数的上限，也是 Generate 一次生成的条数上限。
	MaxRequests = 10_000_000
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

// Prompt 是 custom 数据集中的一条输入，也是 Generate 写出的 JSONL 的一行（loadgen.Profile.Prompts 直接用它）。
type Prompt struct {
	// Text 是提示文本。
	Text string `json:"prompt"`
	// MaxTokens 非 0 时覆盖分组的输出长度。
	MaxTokens int `json:"max_tokens,omitempty"`
	// InputLength 非 0 时是这条 prompt 所属的输入长度组（生成时的 --input-length，
	// 抖动前的名义长度）：只有该长度的分组使用它。0 表示用于所有分组。
	InputLength int `json:"input_length,omitempty"`
	// Tokens 是生成时分词器下的实际 token 数（0 表示未知）；服务端不回 usage 时
	// 作为 prompt_tokens。
	Tokens int `json:"prompt_tokens,omitempty"`
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

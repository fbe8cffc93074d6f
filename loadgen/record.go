package loadgen

import (
	"time"

	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/loadgen/dataset"
)

// Target 描述被压测的服务：嵌入的 endpoint.Endpoint（地址、模型、密钥、HTTP 客户端，
// 约定见 endpoint 包文档）加上压测自己的两项。部署得到的端点原样放进来：
// Target{Endpoint: ep, Provider: "vllm"}。
//
// 本包对嵌入字段的用法：请求按轮询分发到全部 BaseURLs；APIKey 不会出现在任何记录或
// 产物中；HTTPClient 为 nil 时 Run 为本次运行创建一个按最大并发调优连接池的客户端
// （Linux 上还能取得内核收包时间戳，见 Profile.Timestamps），这时若全部 BaseURLs 都是
// 明文 http:// 且环境变量不要求代理，生成请求改走专用的 HTTP/1.1 传输（与 net/http 等价，
// 省去其后台 goroutine 与头部 map，见 docs/loadgen.md）；提供了 HTTPClient 时所有请求都经它发出。
type Target struct {
	endpoint.Endpoint
	// Provider 是 providers.yaml 中的 id，写入汇总的 Provider 列与产物文件名。
	Provider string
	// Tokenizer 在服务端没有 POST /tokenize 时用于校准数据集长度（例如 loadgen/tokenizer 的 Load
	// 读入的 tokenizer.json）；为 nil 时退回 internal/tokenize 的估算。
	Tokenizer dataset.TokenCounter
}

// 错误分类（Record.ErrorClass），取值固定、基数低，可直接作为标签使用。
const (
	ErrClassNone        = ""
	ErrClassHTTP        = "http"         // 非 200 状态码（Status 给出具体值）
	ErrClassStreamError = "stream_error" // 200 里服务端报的错：流内 {"error": …} 事件，或 {"error": …} 响应体（保留原话）
	ErrClassTruncated   = "truncated"    // 流在 [DONE] 之前断开（含在一个事件中途结束）
	ErrClassNoTokens    = "no_tokens"    // 200 且正常结束，但没有任何输出 token
	ErrClassTimeout     = "timeout"      // 超过 Profile.Timeout
	ErrClassIdleTimeout = "idle_timeout" // 流开始后静默超过 Profile.IdleTimeout
	ErrClassTooLarge    = "too_large"    // 单个事件或响应体超过 Profile.MaxEventBytes
	ErrClassTransport   = "transport"    // 连接失败等传输层错误
	ErrClassCanceled    = "canceled"     // 运行被 ctx 取消
	ErrClassBadResponse = "bad_response" // 响应体或流内事件不是可解析的 JSON，或 SSE 响应里根本没有 data 事件
	ErrClassProtocol    = "protocol"     // JSON 合法但违反 vLLM/OpenAI 流协议（重复的 finish、finish 后的内容、[DONE] 后的事件……）
	// ErrClassUnresponsive 是服务停止回答之后没有再发出（或发出后被取消）的请求：接连 unresponsiveAfter 个
	// 请求以 timeout、idle_timeout 或 transport 结束、其间没有任何完成时，本组其余的请求都记为这一类（ErrUnresponsive）。
	ErrClassUnresponsive = "unresponsive"
)

// Token 数来源（Record.TokenSource / Summary.TokenSource）。
const (
	TokenSourceUsage    = "usage"    // 服务端 usage
	TokenSourceEstimate = "estimate" // 按 internal/tokenize 规则从流内容计数
)

// Group 标识一个汇总分组，在分组开始时交给 Observer.OnGroupStart。
type Group struct {
	Index        int // 0 起，按执行顺序
	InputLength  int
	OutputLength int
	Concurrency  int
	Round        int // 1 起的轮次
	Start        time.Time
}

// Record 是一个请求的完整测量结果。所有时长都从该请求的意图发送时刻
// （Intended）量起。
//
// 响应数据的到达时刻（TTFT、各 chunk、E2E）优先取内核接收时间戳：连接由 Run 自己
// 创建且平台支持（Linux 的 SO_TIMESTAMPNS）时，记录的是字节进入本机套接字的时刻，
// 而不是读取它的 goroutine 被调度到的时刻——客户端自己在忙 CPU 上的调度滞后不算作
// 服务端时延，另记在 ClientLag 中。拿不到时间戳时（自带 Target.HTTPClient、非 Linux）
// 退回读取时的 time.Now()，ClientLag 为 -1。内核时间戳是墙上时钟，只用来量“到达套接字
// → 被读到”这一小段滞后；到达时刻按读取时的单调时钟减去滞后得到，整段时延仍在单调时钟上。
//
// Record 及其切片只在 Observer.OnRecord 调用期间有效，接收方需要保留时必须复制。
type Record struct {
	Group    Group
	Index    int  // 组内序号，0 起
	Instance int  // 命中的 BaseURLs 下标
	Warmup   bool // 预热请求（不计入汇总）
	// SessionID 是请求的 X-Session-ID（多轮会话的会话 id、Mooncake 轨迹的 session_id），没有为空。
	SessionID string
	// Turn 是多轮会话中的轮次（1 起），不是多轮会话时为 0。
	Turn     int
	Intended time.Time     // 计划发送时刻（开环为到达时刻，闭环为槽位空出时刻）
	Sent     time.Time     // 实际发出时刻
	SlotWait time.Duration // Sent − Intended：等待并发槽位的时间
	// TTFT 为首个携带内容 / 推理 / 工具调用的 chunk 到达时刻；无则为 -1。
	TTFT time.Duration
	// FirstToSecond 为第二个输出 token 与第一个之间的间隔；不足两个 token 为 -1。
	FirstToSecond time.Duration
	// TPOT 为 (E2E−TTFT)/(CompletionTokens−1)；不足两个 token 为 -1。
	TPOT time.Duration
	// E2E 为响应最后一个字节到达时刻。
	E2E time.Duration
	// ClientLag 为首个输出 chunk 从到达套接字（内核时间戳）到被客户端解析完的时长，
	// 即客户端自身的读取开销，不计入 TTFT；没有内核时间戳时为 -1。
	ClientLag time.Duration
	// Headers 为响应头读完的时刻（相对 Intended）：客户端、网络与服务端接受请求的时间，
	// 流式响应在首 token 之前就到（vLLM 先发响应头）；没有读到响应头（传输错误、一次性的
	// JSON 端点）时为 0。阶段分解在服务端不导出阶段指标时用它把客户端 TTFT 拆成两段。
	Headers time.Duration
	// ChunkTimes 为每个输出 chunk 的到达时刻（相对 Intended），ChunkTokens 为对应的 token 增量。
	// 服务端逐 chunk 给出 usage（continuous_usage_stats）时 ChunkTokens 是精确的；否则把最终的
	// usage.completion_tokens 分摊到各 chunk，使其之和等于 usage：chunk 数与 usage 相等时每个
	// chunk 一个（唯一与"每个 chunk 至少一个 token"相容的分法，视为精确），不等时每个 chunk
	// 至少一个、其余按本地计数规则的比例分摊，ChunkTokensEstimated 为 true。没有 usage 时
	// ChunkTokens 是本地计数，同样标为估算。
	ChunkTimes  []time.Duration
	ChunkTokens []int32
	// ChunkTokensEstimated 报告 ChunkTokens 是推断而非服务端给出的（见 ChunkTokens）。
	// 估算的分摊不会产生零长度的间隔：FirstToSecond 此时量到第二个 chunk。
	ChunkTokensEstimated bool

	PromptTokens int
	// CachedTokens 是服务端报告的命中前缀缓存的 prompt token 数
	// （usage.prompt_tokens_details.cached_tokens）；服务端没有给出时为 -1。
	CachedTokens     int
	CompletionTokens int
	ReasoningTokens  int
	TokenSource      string // "usage" 或 "estimate"
	FinishReason     string

	OK         bool
	Status     int    // HTTP 状态码，未收到响应为 0
	ErrorClass string // 见 ErrClass* 常量
	Error      string // 简短错误信息（不含密钥）
}

// Progress 是运行中的实时进度快照（交给 Observer.OnProgress），供示例程序在 stderr 打印进度行。
type Progress struct {
	Group       Group
	Done, Total int     // 本组已完成 / 总请求数
	Failed      int     // 本组失败数
	Active      int     // 当前在途请求数（爬坡时即当前并发）
	Rate        float64 // 本组迄今的完成速率（请求/秒）
}

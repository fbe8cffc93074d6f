package loadgen

import (
	"time"

	"github.com/vllm-cibench/cibench/explain"
)

// Latency 是一组时延样本的统计摘要。Count 为 0 表示无法测量，
// 导出为 CSV 时所有字段写作 -1（而不是 0）。
type Latency struct {
	Count              int64
	P75, P90, P95, P99 time.Duration
	// P50 是中位数（CSV 表头没有这一列，供保真度报告与门禁使用）。
	P50           time.Duration
	Min, Max, Avg time.Duration
}

// Valid 报告该摘要是否有样本。
func (l Latency) Valid() bool { return l.Count > 0 }

// Values 是一组无量纲数值（token 数、接受率等）的统计摘要。
// 与 Latency 不同，单个字段可以独立地不可测：值为 -1 表示不可测
// （例如推测解码只有服务端总计数时，仅 Avg 有值）。
type Values struct {
	Count              int64
	P75, P90, P95, P99 float64
	Min, Max, Avg      float64
}

// Unmeasured 返回全部字段为 -1 的 Values。
func Unmeasured() Values {
	return Values{P75: -1, P90: -1, P95: -1, P99: -1, Min: -1, Max: -1, Avg: -1}
}

// Summary 是一个压测分组（输入长度 × 输出长度 × 并发 × 轮次）的汇总，
// 与 acs-bench 汇总 CSV 的一行一一对应（列定义见 README 与
// docs/loadgen.md）。
type Summary struct {
	// 分组键
	ExecutionTime      time.Time // 分组开始的墙钟时间
	InputLength        int
	OutputLength       int
	Concurrency        int
	Round              int // 1 起的轮次（epoch）
	Provider           string
	Backend            string // "openai-chat" 或 "openai"
	Temperature        float64
	TopK               int
	TopP               float64
	ControlMethod      string // "climb" 或 "normal"
	GrowthRate         int    // 爬坡增量，非爬坡为 0
	ConcurrencyBackend string // 固定为 "threading-pool"，用于产物命名
	DatasetType        string // "random"、"custom" 等，用于产物命名

	// 计数与吞吐
	NumPrompts int // 本行统计的请求数（不含预热）
	// Planned 是本组计划的请求数（num_requests）；BudgetLimited 为 true 表示 Profile.MaxDuration
	// 的预算先到，实际请求数 NumPrompts 少于计划。Epochs 是该组合计划的轮数：门禁据此判断
	// 一个组合在被截断的运行里是否完整（见 gate.Select）。三者只在 JSON 里，不是 acs-bench 的列。
	Planned               int           `json:",omitempty"`
	BudgetLimited         bool          `json:",omitempty"`
	Epochs                int           `json:",omitempty"`
	Succeeded, Failed     int           // 成功与失败请求数
	TotalTime             time.Duration // 首个请求发出 → 最后一个请求完成
	TotalTokenThroughput  float64       // tokens/s
	OutputTokenThroughput float64       // tokens/s
	QPS                   float64       // 完成请求数 / TotalTime
	FailRate              float64       // 失败 / 发出，[0,1]
	Goodput               float64       // 满足全部 SLO 的请求数 / TotalTime；未配置 SLO 时为 -1

	// 客户端侧时延
	TTFT               Latency // 意图发送时刻 → 首个携带内容/推理/工具调用的 token
	TPOT               Latency // 每请求 (E2E−TTFT)/(completion_tokens−1)
	TPOTSec            Latency // 相邻输出 token 间隔（token 级，全部请求合并）
	FirstToSecondToken Latency // 第二个 token 到达 − 第一个 token 到达
	E2E                Latency // 意图发送时刻 → 响应最后一个字节
	SlotWait           Latency // 等待并发槽位的时间（协调遗漏的可见化）
	// ClientLag 是客户端自身的读取开销：首个输出 chunk 到达套接字（内核时间戳）→
	// 被解析完。TTFT 等时延不含这一段（见 Record）；Count 为 0 表示没有内核时间戳。
	ClientLag Latency

	// token 统计
	CompletionTokens   Values
	AvgReasoningTokens float64
	AvgContentTokens   float64
	AvgPromptTokens    float64
	TokenSource        string // "usage"、"tokenize"、"tokenizer" 或 "estimate"

	// 服务端指标（来自 /metrics 直方图在本组前后的差值）；Count 为 0 表示不可得
	ServerTTFT Latency
	ServerTPOT Latency
	ServerE2E  Latency

	// 推测解码接受率，[0,1]；不可得的字段为 -1
	SpecAcceptRate Values

	// Phases 是本组的阶段分解（客户端 TTFT 拆成客户端、前端、排队、prefill，解码、缓存、
	// 抢占、KV；多实例与 PD 时每个实例一份），由 /metrics 在本组前后的差值与客户端逐请求样本
	// 算出，门禁与 compare 据它归因（见 explain 包）。服务端不可抓取时为 nil；服务端不导出
	// 阶段直方图时各阶段为 nil。不是 acs-bench 的列，只在 JSON 里。
	Phases *explain.Breakdown `json:",omitempty"`

	// Workload 是真实负载（轨迹、集合、多轮会话）与服务端缓存的汇总，不属于 acs-bench 的列，
	// 写进单独的文件（见 workload_csv.go）。
	Workload WorkloadStats

	// FailureClasses 是失败请求按 Record.ErrorClass 的计数（没有失败时为 nil），
	// 例如 {"timeout": 3, "too_large": 1}；各项之和等于 Failed。
	FailureClasses map[string]int
	// Incomplete 为 true 表示该组被中断（ctx 取消），本行只汇总中断前已完成的请求；
	// 被中断的在途请求（canceled）不计入任何统计，只出现在逐请求记录里。
	// 分片合并的行缺了分片时也为 true，缺的分片与原因在 MissingShards 里。
	Incomplete bool
	// MissingShards 只在分片合并的行上非空：该组缺失的分片序号与原因（被杀、OOMKilled、
	// 连不上服务、被取消……）。它随汇总行进入 summary.json 与 HTML 报告。
	MissingShards []ShardLoss `json:",omitempty"`
}

package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-cibench/cibench/loadgen"
)

// 指标族的基名（不含前缀）。看板、基线读取与文档都引用这些常量，
// 避免三处各写一份字符串而悄悄漂移。
const (
	NameRunInfo = "run_info"

	NamePerfInfo                  = "perf_info"
	NamePerfTTFT                  = "perf_ttft_seconds"
	NamePerfTPOT                  = "perf_tpot_seconds"
	NamePerfITL                   = "perf_itl_seconds"
	NamePerfFirstToSecondToken    = "perf_time_between_first_and_second_token_seconds"
	NamePerfE2E                   = "perf_e2e_seconds"
	NamePerfSlotWait              = "perf_slot_wait_seconds"
	NamePerfClientLag             = "perf_client_lag_seconds"
	NamePerfServerTTFT            = "perf_server_ttft_seconds"
	NamePerfServerTPOT            = "perf_server_tpot_seconds"
	NamePerfServerE2E             = "perf_server_e2e_seconds"
	NamePerfCompletionTokens      = "perf_completion_tokens"
	NamePerfSpecAccept            = "perf_spec_accept_ratio"
	NamePerfExecutionTimestamp    = "perf_execution_timestamp_seconds"
	NamePerfTotalTokenThroughput  = "perf_total_token_throughput_tokens_per_second"
	NamePerfOutputTokenThroughput = "perf_output_token_throughput_tokens_per_second"
	NamePerfTotalTime             = "perf_total_time_seconds"
	NamePerfQPS                   = "perf_requests_per_second"
	NamePerfFailRatio             = "perf_fail_ratio"
	NamePerfGoodput               = "perf_goodput_requests_per_second"
	NamePerfPrompts               = "perf_prompts_total"
	NamePerfSucceeded             = "perf_requests_succeeded_total"
	NamePerfFailed                = "perf_requests_failed_total"
	NamePerfAvgReasoningTokens    = "perf_avg_reasoning_tokens"
	NamePerfAvgContentTokens      = "perf_avg_content_tokens"
	NamePerfAvgPromptTokens       = "perf_avg_prompt_tokens"
	// 真实负载与服务端缓存（loadgen.Summary.Workload，见 docs/loadgen.md）。
	NamePerfDispatchLag         = "perf_dispatch_lag_seconds"
	NamePerfPrefixCacheHitRatio = "perf_prefix_cache_hit_ratio"
	NamePerfPreemptions         = "perf_server_preemptions"
	// NamePerfTTFTPhase 与 NamePerfE2EPhase 是客户端平均 TTFT、E2E 按阶段的拆分（explain 包），
	// 多一个 phase 标签（client、frontend、queue、prefill、decode；PD 部署带实例前缀）。
	NamePerfTTFTPhase        = "perf_ttft_phase_seconds"
	NamePerfE2EPhase         = "perf_e2e_phase_seconds"
	NamePerfPeakKVCacheUsage = "perf_peak_kv_cache_usage_ratio"
	NamePerfAvgCachedTokens  = "perf_avg_cached_tokens"
	NamePerfTurnTTFT         = "perf_turn_ttft_seconds"

	NameFunctionalPassRatio    = "functional_pass_ratio"
	NameFunctionalCasesTotal   = "functional_cases_total"
	NameFunctionalCasesFailed  = "functional_cases_failed"
	NameFunctionalCasesPassed  = "functional_cases_passed"
	NameFunctionalCasesSkipped = "functional_cases_skipped"
	NameFunctionalCasePass     = "functional_case_pass"
	NameFunctionalCaseDuration = "functional_case_duration_seconds"
	NameFunctionalDuration     = "functional_duration_seconds"

	NameAccuracyScore    = "accuracy_score_ratio"
	NameAccuracyExamples = "accuracy_examples_total"
	NameAccuracyMetric   = "accuracy_metric"
	// NameAccuracyDataInfo 每个数据集读取的每个数据文件一条，值恒为 1：标签给出来源种类、
	// 位置、文件名与 sha256，让看板上的每个分数都能追溯到所用数据的字节。
	NameAccuracyDataInfo = "accuracy_data_source_info"
	// NameAccuracyRequests 与 NameAccuracyFailedRequests 是采样请求数与其中失败的数
	// （重试后仍失败、HTTP 400、null/空 content）。
	NameAccuracyRequests       = "accuracy_requests_total"
	NameAccuracyFailedRequests = "accuracy_requests_failed_total"
)

// 统一标签名（需求 §7（docs/requirements.md）），加上本实现额外的 round、suite、case_id、metric。
const (
	LabelModel         = "model"
	LabelQuant         = "quant"
	LabelScenario      = "scenario"
	LabelRunType       = "run_type"
	LabelCommit        = "commit"
	LabelBranch        = "branch"
	LabelRunID         = "run_id"
	LabelModelRaw      = "model_raw"
	LabelBackend       = "backend"
	LabelDataset       = "dataset"
	LabelInputLen      = "input_len"
	LabelOutputLen     = "output_len"
	LabelConcurrency   = "concurrency"
	LabelControlMethod = "control_method"
	LabelGrowthRate    = "growth_rate"
	LabelRound         = "round"
	LabelSuite         = "suite"
	LabelCaseID        = "case_id"
	LabelMetric        = "metric"
	LabelQuantile      = "quantile"
	LabelSourceKind    = "source_kind"
	LabelSourceLoc     = "source_location"
	LabelFile          = "file"
	LabelSHA256        = "sha256"
)

// GroupingLabels 是 Pushgateway 分组键中除 job 之外的标签，顺序固定。
// 它们在一个场景的每日运行之间保持不变，所以 PUT 会替换昨天的整组。
var groupingLabels = []string{LabelModel, LabelQuant, LabelScenario, LabelRunType}

// GroupingLabels 返回分组键标签名的副本（不含 job），供文档与调用方核对。
func GroupingLabels() []string { return append([]string(nil), groupingLabels...) }

// comboLabels 是每个压测分组序列在运行标签之外携带的标签，顺序固定。
var comboLabels = []string{
	LabelBackend, LabelDataset, LabelInputLen, LabelOutputLen, LabelConcurrency,
	LabelControlMethod, LabelGrowthRate, LabelRound,
}

// Quantiles 是导出与看板使用的分位点（需求 §5（docs/requirements.md）：0.75/0.9/0.95/0.99）。
var quantiles = []float64{0.75, 0.9, 0.95, 0.99}

// Quantiles 返回导出的分位点副本。
func Quantiles() []float64 { return append([]float64(nil), quantiles...) }

// stat 是分布的一个统计量：分位点之一，或 min/max/avg。
type stat int

// 统计量取值；顺序与 quantiles 对齐，便于按下标取值。
const (
	statP75 stat = iota
	statP90
	statP95
	statP99
	statMin
	statMax
	statAvg
)

// csvStatPrefix 是 acs-bench CSV 列名中各统计量的前缀（TP99 表示 P99）。
var csvStatPrefix = map[stat]string{
	statP75: "TP75_", statP90: "TP90_", statP95: "TP95_", statP99: "TP99_",
	statMin: "MIN_", statMax: "MAX_", statAvg: "AVG_",
}

// distSpec 描述一个分布（时延或数值）如何成为一组指标族，以及它在
// acs-bench CSV 中的列名词干。lat 与 val 恰有一个非 nil，指针访问器
// 让导出（读）与基线重建（写）共用同一张表。
type distSpec struct {
	name    string  // 带单位的完整基名，如 perf_ttft_seconds
	help    string  // HELP 文本的主体
	csvStem string  // CSV 列名词干，如 "TTFT(s)"、"SERVER_TTFT(ms)"；空表示 CSV 中没有
	csvUnit float64 // CSV 数值 × csvUnit = 基本单位（ms 列为 1e-3）
	lat     func(*loadgen.Summary) *loadgen.Latency
	val     func(*loadgen.Summary) *loadgen.Values
}

// statName 返回 min/max/avg 统计量的指标名：在 "perf_" 之后插入统计量，
// 与 CSV 的 MAX_TTFT(s) → perf_max_ttft_seconds 一一对应。
func (d distSpec) statName(s stat) string {
	word := map[stat]string{statMin: "min_", statMax: "max_", statAvg: "avg_"}[s]
	return "perf_" + word + d.name[len("perf_"):]
}

// distSpecs 是全部分布型字段。顺序即文档与暴露顺序。
var distSpecs = []distSpec{
	{name: NamePerfTTFT, help: "Time to first token (intended send → first content/reasoning/tool token)", csvStem: "TTFT(s)", csvUnit: 1,
		lat: func(s *loadgen.Summary) *loadgen.Latency { return &s.TTFT }},
	{name: NamePerfTPOT, help: "Time per output token per request ((E2E-TTFT)/(completion_tokens-1))", csvStem: "TPOT(s)", csvUnit: 1,
		lat: func(s *loadgen.Summary) *loadgen.Latency { return &s.TPOT }},
	{name: NamePerfITL, help: "Token-level gap between adjacent output tokens, pooled over requests (CSV TPOT_SEC)", csvStem: "TPOT_SEC(s)", csvUnit: 1,
		lat: func(s *loadgen.Summary) *loadgen.Latency { return &s.TPOTSec }},
	{name: NamePerfFirstToSecondToken, help: "Arrival of the second output token minus arrival of the first", csvStem: "TIME_BETWEEN_FIRST_AND_SECOND_TOKEN(s)", csvUnit: 1,
		lat: func(s *loadgen.Summary) *loadgen.Latency { return &s.FirstToSecondToken }},
	{name: NamePerfE2E, help: "End-to-end request latency (intended send → last byte)", csvStem: "E2E(s)", csvUnit: 1,
		lat: func(s *loadgen.Summary) *loadgen.Latency { return &s.E2E }},
	{name: NamePerfSlotWait, help: "Time spent waiting for a concurrency slot (coordinated omission made visible)", csvUnit: 1,
		lat: func(s *loadgen.Summary) *loadgen.Latency { return &s.SlotWait }},
	{name: NamePerfClientLag, help: "Load generator's own read lag: first output chunk in the socket (kernel receive timestamp) to parsed; not part of TTFT (absent without kernel timestamps)", csvUnit: 1,
		lat: func(s *loadgen.Summary) *loadgen.Latency { return &s.ClientLag }},
	{name: NamePerfDispatchLag, help: "Trace replay: actual send minus the trace schedule's intended send (a median above 1ms means the client did not keep the schedule)", csvUnit: 1,
		lat: func(s *loadgen.Summary) *loadgen.Latency { return &s.Workload.DispatchLag }},
	{name: NamePerfServerTTFT, help: "Server-side TTFT from the server's histograms, converted from ms", csvStem: "SERVER_TTFT(ms)", csvUnit: 1e-3,
		lat: func(s *loadgen.Summary) *loadgen.Latency { return &s.ServerTTFT }},
	{name: NamePerfServerTPOT, help: "Server-side TPOT from the server's histograms, converted from ms", csvStem: "SERVER_TPOT(ms)", csvUnit: 1e-3,
		lat: func(s *loadgen.Summary) *loadgen.Latency { return &s.ServerTPOT }},
	{name: NamePerfServerE2E, help: "Server-side E2E latency from the server's histograms, converted from ms", csvStem: "SERVER_E2E(ms)", csvUnit: 1e-3,
		lat: func(s *loadgen.Summary) *loadgen.Latency { return &s.ServerE2E }},
	{name: NamePerfCompletionTokens, help: "Completion tokens per request", csvStem: "COMPLETION_TOKENS", csvUnit: 1,
		val: func(s *loadgen.Summary) *loadgen.Values { return &s.CompletionTokens }},
	{name: NamePerfSpecAccept, help: "Speculative decoding acceptance rate in [0,1]", csvStem: "SPEC_ACCEPT_RATE", csvUnit: 1,
		val: func(s *loadgen.Summary) *loadgen.Values { return &s.SpecAcceptRate }},
}

// latencyField 返回 Latency 的统计量字段指针，读（导出、CSV）写（基线重建）共用。
func latencyField(l *loadgen.Latency, s stat) *time.Duration {
	switch s {
	case statP75:
		return &l.P75
	case statP90:
		return &l.P90
	case statP95:
		return &l.P95
	case statP99:
		return &l.P99
	case statMin:
		return &l.Min
	case statMax:
		return &l.Max
	default:
		return &l.Avg
	}
}

// latencyStat 取 Latency 的一个统计量（秒）。
func latencyStat(l *loadgen.Latency, s stat) float64 { return latencyField(l, s).Seconds() }

// setLatencyStat 把秒数写回 Latency 的一个统计量（基线重建用）。
func setLatencyStat(l *loadgen.Latency, s stat, sec float64) {
	*latencyField(l, s) = time.Duration(sec * float64(time.Second))
}

// valuesStat 返回 Values 的统计量指针，读写共用。
func valuesStat(v *loadgen.Values, s stat) *float64 {
	switch s {
	case statP75:
		return &v.P75
	case statP90:
		return &v.P90
	case statP95:
		return &v.P95
	case statP99:
		return &v.P99
	case statMin:
		return &v.Min
	case statMax:
		return &v.Max
	default:
		return &v.Avg
	}
}

// valuesMeasured 区分"零值"与"测得 0"：Values 的零值（Count 为 0 且全部字段为 0）
// 说明生产方根本没填，视为不可测；否则逐字段以 -1 表示不可测。
func valuesMeasured(v *loadgen.Values) bool {
	return !(v.Count == 0 && *v == loadgen.Values{})
}

// scalarSpec 描述一个标量字段：一条序列，可选对应一个 CSV 列。
type scalarSpec struct {
	name    string
	help    string
	typ     prometheus.ValueType
	csvCol  string // 空表示 CSV 中没有此列
	get     func(*loadgen.Summary) float64
	set     func(*loadgen.Summary, float64)
	present func(float64) bool // nil 表示 v >= 0 才导出（-1 = 不可测）
}

// cacheField 返回服务端缓存的一个字段；生产方没有填 Workload.Cache（零值，例如手写的汇总）时
// 为 -1（不可测），而不是把"没有数据"导出成命中率 0。
func cacheField(s *loadgen.Summary, v float64) float64 {
	if s.Workload.Cache == (loadgen.ServerCache{}) {
		return -1
	}
	return v
}

// nonNegative 是标量默认的可测判定：acs-bench 以 -1 表示不可测。
func nonNegative(v float64) bool { return v >= 0 }

// scalarSpecs 是全部标量字段，顺序即文档顺序。
var scalarSpecs = []scalarSpec{
	{name: NamePerfExecutionTimestamp, help: "Wall-clock start of the group as a Unix timestamp", typ: prometheus.GaugeValue,
		get: func(s *loadgen.Summary) float64 {
			if s.ExecutionTime.IsZero() {
				return -1
			}
			return float64(s.ExecutionTime.UnixNano()) / 1e9
		},
		set: func(s *loadgen.Summary, v float64) {
			s.ExecutionTime = time.Unix(0, int64(v*1e9))
		}},
	{name: NamePerfTotalTokenThroughput, help: "Sum of prompt and completion tokens divided by the group's total time", typ: prometheus.GaugeValue,
		csvCol: "Total_Token_Throughput(tokens/s)",
		get:    func(s *loadgen.Summary) float64 { return s.TotalTokenThroughput },
		set:    func(s *loadgen.Summary, v float64) { s.TotalTokenThroughput = v }},
	{name: NamePerfOutputTokenThroughput, help: "Completion tokens divided by the group's total time", typ: prometheus.GaugeValue,
		csvCol: "Output_Token_Throughput(tokens/s)",
		get:    func(s *loadgen.Summary) float64 { return s.OutputTokenThroughput },
		set:    func(s *loadgen.Summary, v float64) { s.OutputTokenThroughput = v }},
	{name: NamePerfTotalTime, help: "First send of the group to last completion, warm-up excluded", typ: prometheus.GaugeValue,
		csvCol: "Total_Time(s)",
		get:    func(s *loadgen.Summary) float64 { return s.TotalTime.Seconds() },
		set:    func(s *loadgen.Summary, v float64) { s.TotalTime = time.Duration(v * float64(time.Second)) }},
	{name: NamePerfQPS, help: "Completed requests divided by the group's total time (CSV QPS)", typ: prometheus.GaugeValue,
		csvCol: "QPS",
		get:    func(s *loadgen.Summary) float64 { return s.QPS },
		set:    func(s *loadgen.Summary, v float64) { s.QPS = v }},
	{name: NamePerfFailRatio, help: "Failed requests divided by sent requests, in [0,1] (CSV Fail_Rate)", typ: prometheus.GaugeValue,
		csvCol: "Fail_Rate",
		get:    func(s *loadgen.Summary) float64 { return s.FailRate },
		set:    func(s *loadgen.Summary, v float64) { s.FailRate = v }},
	{name: NamePerfGoodput, help: "Requests meeting every SLO divided by the group's total time", typ: prometheus.GaugeValue,
		get: func(s *loadgen.Summary) float64 { return s.Goodput },
		set: func(s *loadgen.Summary, v float64) { s.Goodput = v }},
	{name: NamePerfPrompts, help: "Requests counted in the group, warm-up excluded (CSV Num_Prompts)", typ: prometheus.CounterValue,
		csvCol: "Num_Prompts",
		get:    func(s *loadgen.Summary) float64 { return float64(s.NumPrompts) },
		set:    func(s *loadgen.Summary, v float64) { s.NumPrompts = int(v) }},
	{name: NamePerfPrefixCacheHitRatio, help: "Server prefix cache hit rate in the group: delta vllm:prefix_cache_hits_total / delta vllm:prefix_cache_queries_total (tokens)", typ: prometheus.GaugeValue,
		get: func(s *loadgen.Summary) float64 { return cacheField(s, s.Workload.Cache.HitRate) },
		set: func(s *loadgen.Summary, v float64) { s.Workload.Cache.HitRate = v }},
	{name: NamePerfPreemptions, help: "Server preemptions in the group: delta vllm:num_preemptions_total", typ: prometheus.GaugeValue,
		get: func(s *loadgen.Summary) float64 { return cacheField(s, s.Workload.Cache.Preemptions) },
		set: func(s *loadgen.Summary, v float64) { s.Workload.Cache.Preemptions = v }},
	{name: NamePerfPeakKVCacheUsage, help: "Highest vllm:kv_cache_usage_perc sampled during the group, in [0,1]", typ: prometheus.GaugeValue,
		get: func(s *loadgen.Summary) float64 { return cacheField(s, s.Workload.Cache.PeakKVUsage) },
		set: func(s *loadgen.Summary, v float64) { s.Workload.Cache.PeakKVUsage = v }},
	{name: NamePerfAvgCachedTokens, help: "Average usage.prompt_tokens_details.cached_tokens of successful requests", typ: prometheus.GaugeValue,
		get: func(s *loadgen.Summary) float64 {
			if s.Workload.CachedTokensCount == 0 {
				return -1
			}
			return s.Workload.AvgCachedTokens
		},
		set: func(s *loadgen.Summary, v float64) { s.Workload.AvgCachedTokens = v }},
	{name: NamePerfSucceeded, help: "Successful requests in the group", typ: prometheus.CounterValue,
		get: func(s *loadgen.Summary) float64 { return float64(s.Succeeded) },
		set: func(s *loadgen.Summary, v float64) { s.Succeeded = int(v) }},
	{name: NamePerfFailed, help: "Failed requests in the group", typ: prometheus.CounterValue,
		get: func(s *loadgen.Summary) float64 { return float64(s.Failed) },
		set: func(s *loadgen.Summary, v float64) { s.Failed = int(v) }},
	{name: NamePerfAvgReasoningTokens, help: "Average reasoning tokens per request", typ: prometheus.GaugeValue,
		csvCol: "AVG_REASONING_TOKENS",
		get:    func(s *loadgen.Summary) float64 { return s.AvgReasoningTokens },
		set:    func(s *loadgen.Summary, v float64) { s.AvgReasoningTokens = v }},
	{name: NamePerfAvgContentTokens, help: "Average content tokens per request (completion minus reasoning)", typ: prometheus.GaugeValue,
		csvCol: "AVG_CONTENT_TOKENS",
		get:    func(s *loadgen.Summary) float64 { return s.AvgContentTokens },
		set:    func(s *loadgen.Summary, v float64) { s.AvgContentTokens = v }},
	{name: NamePerfAvgPromptTokens, help: "Average prompt tokens per request (server usage)", typ: prometheus.GaugeValue,
		csvCol: "AVG_PROMPT_TOKENS",
		get:    func(s *loadgen.Summary) float64 { return s.AvgPromptTokens },
		set:    func(s *loadgen.Summary, v float64) { s.AvgPromptTokens = v }},
}

package emulator

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics 是模拟器暴露在 /metrics 上的 vllm:* 指标族，名称、类型、标签
// （model_name）与 vLLM 一致，由真实流量更新。每个模拟器一个私有注册表，没有全局状态。
//
// 并发约定：全部方法并发安全（底层是 client_golang 的原子实现）。
type Metrics struct {
	reg *prometheus.Registry

	Running, Waiting, KVCacheUsage prometheus.GaugeFunc
	PromptTokens, GenerationTokens prometheus.Counter
	success                        *prometheus.CounterVec
	successStop, successLength     prometheus.Counter
	successAbort                   prometheus.Counter
	TTFT, TPOT, ITL, E2E, Queue    prometheus.Observer
	// Prefill、Decode、Inference 是 vLLM v1 的请求阶段直方图（见 ObservePhases）。
	Prefill, Decode, Inference prometheus.Observer
	SpecAccepted, SpecDraft    prometheus.Counter
	SpecDrafts                 prometheus.Counter
	PrefixQueries, PrefixHits  prometheus.CounterFunc
	Preemptions                prometheus.CounterFunc
}

// latencyBuckets 与 vLLM 的 time_to_first_token_seconds 桶一致。
var ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}

// itlBuckets 与 vLLM 的 inter_token_latency_seconds 桶一致。
var itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}

// e2eBuckets 与 vLLM 的 e2e_request_latency_seconds 桶一致。
var e2eBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}

// QueueFunc 返回当前运行数、排队数与 max_num_seqs（0 表示不限）。
type QueueFunc func() (running, waiting, limit int)

// NewMetrics 在 reg 上注册全部指标，标签 model_name=model。运行/排队/KV cache
// gauge 在每次采集时调用 queue 取值，因此无论通过 /metrics 还是直接 Gather 注册表，
// 看到的都是当下的值。
//
// perf 非 nil 时（性能模型打开），注册前缀缓存与抢占计数器（取自 perf），KV cache
// 使用率取块的使用率（容量有限时）。perf 为 nil 时不注册这三个计数器：默认的模拟器
// 不模拟缓存与抢占，导出恒为 0 的计数器会让抓取方（loadgen 的服务端指标、缓存命中率）
// 把“没有模拟”误读成“命中率 0、从不抢占”；缺失时它们如实报告为缺失。
func NewMetrics(reg *prometheus.Registry, model string, queue QueueFunc, perf func() PerfStats) *Metrics {
	lbl := prometheus.Labels{"model_name": model}
	m := &Metrics{reg: reg}
	gauge := func(name, help string, f func() float64) prometheus.GaugeFunc {
		g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: lbl}, f)
		reg.MustRegister(g)
		return g
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: lbl})
		reg.MustRegister(c)
		return c
	}
	hist := func(name, help string, b []float64) prometheus.Observer {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, ConstLabels: lbl, Buckets: b})
		reg.MustRegister(h)
		return h
	}
	m.Running = gauge("vllm:num_requests_running", "Number of requests in model execution batches.", func() float64 {
		r, _, _ := queue()
		return float64(r)
	})
	m.Waiting = gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", func() float64 {
		_, w, _ := queue()
		return float64(w)
	})
	// 只有给了 KV 容量（num_kv_blocks）时才有块的使用率；不模拟 KV 时报 0（没有 KV 压力）。以前这里
	// 用 running / max_num_seqs 代替，并发一满它就是 1.0，报告于是声称“KV cache became full”——
	// 一个服务从没处于过的状态。
	m.KVCacheUsage = gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", func() float64 {
		if perf != nil {
			if st := perf(); !st.UnlimitedKV {
				return st.KVUsage
			}
		}
		return 0
	})
	m.PromptTokens = counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.")
	m.GenerationTokens = counter("vllm:generation_tokens_total", "Number of generation tokens processed.")
	m.success = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total",
		Help: "Count of successfully processed requests.", ConstLabels: lbl}, []string{"finished_reason"})
	reg.MustRegister(m.success)
	m.successStop = m.success.WithLabelValues("stop")
	m.successLength = m.success.WithLabelValues("length")
	m.successAbort = m.success.WithLabelValues("abort")
	m.TTFT = hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets)
	m.TPOT = hist("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", itlBuckets)
	m.ITL = hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets)
	m.E2E = hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", e2eBuckets)
	// 阶段直方图：名称、说明与桶（request_latency_buckets，与 E2E 相同）取自 vLLM v1 的
	// PrometheusStatLogger。
	m.Queue = hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", e2eBuckets)
	m.Inference = hist("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", e2eBuckets)
	m.Prefill = hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", e2eBuckets)
	m.Decode = hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", e2eBuckets)
	m.SpecAccepted = counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.")
	m.SpecDraft = counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.")
	m.SpecDrafts = counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.")
	if perf == nil {
		return m
	}
	counterFunc := func(name, help string, f func(PerfStats) uint64) prometheus.CounterFunc {
		c := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: lbl}, func() float64 {
			return float64(f(perf()))
		})
		reg.MustRegister(c)
		return c
	}
	// 名称、说明与 vLLM v1 的 PrometheusStatLogger 相同（Python 客户端给计数器加 _total 后缀）。
	m.PrefixQueries = counterFunc("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.",
		func(s PerfStats) uint64 { return s.PrefixQueries })
	m.PrefixHits = counterFunc("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.",
		func(s PerfStats) uint64 { return s.PrefixHits })
	m.Preemptions = counterFunc("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.",
		func(s PerfStats) uint64 { return s.Preemptions })
	return m
}

// Registry 返回私有注册表。
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Success 按 finish_reason 累加成功请求数（tool_calls 归入 stop，与 vLLM 一致）。
func (m *Metrics) Success(finish string) {
	switch finish {
	case "length":
		m.successLength.Inc()
	case "abort":
		m.successAbort.Inc()
	default:
		m.successStop.Inc()
	}
}

// ObservePhases 记录一个已完成请求的各阶段时长，口径与 vLLM v1 的
// FinishedRequestStats 相同（时刻都是该请求的第一次）：
//
//	queue     = 第一次被调度 − 进入等待队列（WAITING；vLLM 的 queued_ts 是引擎收到请求的时刻，
//	            API server 解析请求的时间不在其中，而在服务端 TTFT 的“前端”那一段）
//	prefill   = 首 token − 第一次被调度（被抢占后的重算若发生在首 token 之前也算在这里）
//	decode    = 最后一个 token − 首 token
//	inference = 最后一个 token − 第一次被调度（= prefill + decode）
//
// 与 vLLM 一样只在请求结束时记录一次，于是五个阶段直方图与 E2E 的样本数相同。
// 负的时长（首 token 的计划时刻晚于实际结束，见 serve）按 0 记。
func (m *Metrics) ObservePhases(queued, scheduled, first, last time.Time) {
	sec := func(a, b time.Time) float64 { return max(0, b.Sub(a).Seconds()) }
	m.Queue.Observe(sec(queued, scheduled))
	m.Prefill.Observe(sec(scheduled, first))
	m.Decode.Observe(sec(first, last))
	m.Inference.Observe(sec(scheduled, last))
}

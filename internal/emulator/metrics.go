package emulator

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics 是模拟器暴露在 /metrics 上的 vllm:* 指标族，名称、类型、标签
// （model_name）与 vLLM 一致，由真实流量更新。每个模拟器一个私有注册表，没有全局状态。
//
// 并发约定：全部方法并发安全（底层是 client_golang 的原子实现）。
type Metrics struct {
	reg *prometheus.Registry

	Running, Waiting, KVCacheUsage prometheus.Gauge
	PromptTokens, GenerationTokens prometheus.Counter
	success                        *prometheus.CounterVec
	successStop, successLength     prometheus.Counter
	successAbort                   prometheus.Counter
	TTFT, TPOT, ITL, E2E, Queue    prometheus.Observer
	SpecAccepted, SpecDraft        prometheus.Counter
	SpecDrafts                     prometheus.Counter
}

// latencyBuckets 与 vLLM 的 time_to_first_token_seconds 桶一致。
var ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}

// itlBuckets 与 vLLM 的 inter_token_latency_seconds 桶一致。
var itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}

// e2eBuckets 与 vLLM 的 e2e_request_latency_seconds 桶一致。
var e2eBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}

// NewMetrics 在 reg 上注册全部指标，标签 model_name=model。
func NewMetrics(reg *prometheus.Registry, model string) *Metrics {
	lbl := prometheus.Labels{"model_name": model}
	m := &Metrics{reg: reg}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: lbl})
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
	m.Running = gauge("vllm:num_requests_running", "Number of requests in model execution batches.")
	m.Waiting = gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.")
	m.KVCacheUsage = gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage (emulated: running/max_num_seqs).")
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
	m.Queue = hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", e2eBuckets)
	m.SpecAccepted = counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.")
	m.SpecDraft = counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.")
	m.SpecDrafts = counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.")
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

// SetQueue 更新运行/排队 gauge 与模拟的 KV cache 使用率。
func (m *Metrics) SetQueue(running, waiting, maxNumSeqs int) {
	m.Running.Set(float64(running))
	m.Waiting.Set(float64(waiting))
	if maxNumSeqs > 0 {
		m.KVCacheUsage.Set(float64(running) / float64(maxNumSeqs))
	} else {
		m.KVCacheUsage.Set(0)
	}
}

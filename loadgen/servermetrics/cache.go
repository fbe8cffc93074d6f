package servermetrics

import (
	"context"
	"math"
	"sync"
	"time"
)

// 本文件是服务端缓存真相的读取部分：前缀缓存计数器、KV-cache 占用与组内峰值采样。由此
// 算出的 loadgen.ServerCache（命中率、抢占、峰值）在 loadgen 里组装，那里拥有汇总的类型。

// 服务端缓存真相用到的 vLLM 计数器（v1 的名字在前，v0 的 gpu_ 前缀名在后）。单位是 token：
// queries 是查询前缀缓存的 prompt token 数，hits 是其中命中的。
var (
	metricPrefixHits    = []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"}
	metricPrefixQueries = []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"}
)

// KVUsage 返回一次抓取的 KV-cache 占用（各实例平均，0..1）；s 为 nil 或没有该指标时为 NaN。
func (s *Snapshot) KVUsage() float64 {
	if s == nil || s.KVN == 0 {
		return math.NaN()
	}
	return s.KVSum / float64(s.KVN)
}

// kvSampleInterval 是组内 KV 占用峰值的采样间隔。
const kvSampleInterval = 200 * time.Millisecond

// Peak 在一个分组期间定时抓取 /metrics，记下 KV-cache 占用的最大值（见 Scraper.StartPeak）。
type Peak struct {
	mu      sync.Mutex
	peak    float64
	waiting float64 // 组内采样到的最大排队数（NaN 为没有）
	stop    context.CancelFunc
	done    chan struct{}
}

// StartPeak 以 before 的 KV 占用为起点，每 kvSampleInterval 抓取一次，记下组内峰值
// （before 没有 KV 指标时不启动：服务端不暴露它，采样只是白白抓取）。采样 goroutine 由
// StartPeak 启动、由 Finish 停止并等待退出：调用方必须调用 Finish（可重复调用）。ctx 结束时
// 采样也停止。
func (s *Scraper) StartPeak(ctx context.Context, before *Snapshot) *Peak {
	ps := &Peak{peak: before.KVUsage(), waiting: math.NaN(), done: make(chan struct{})}
	if before != nil {
		ps.waiting = before.Waiting
	}
	if math.IsNaN(ps.peak) {
		close(ps.done)
		ps.stop = func() {}
		return ps
	}
	ctx, ps.stop = context.WithCancel(ctx)
	go func() {
		defer close(ps.done)
		for sleep(ctx, kvSampleInterval) {
			ps.observe(s.Scrape(ctx))
		}
	}()
	return ps
}

// observe 把一次抓取计入峰值（s 为 nil 或没有 KV 指标时不计）。
func (ps *Peak) observe(s *Snapshot) {
	v := s.KVUsage()
	if math.IsNaN(v) {
		return
	}
	ps.mu.Lock()
	if w := s.Waiting; !math.IsNaN(w) && (math.IsNaN(ps.waiting) || w > ps.waiting) {
		ps.waiting = w
	}
	if math.IsNaN(ps.peak) || v > ps.peak {
		ps.peak = v
	}
	ps.mu.Unlock()
}

// Finish 停止采样并等待采样 goroutine 退出，计入组后的抓取 after（可为 nil），返回峰值
// （没有时为 NaN）。可重复调用：提前返回的路径先以 nil 调用回收 goroutine 也无妨。
func (ps *Peak) Finish(after *Snapshot) float64 {
	ps.stop()
	<-ps.done
	ps.observe(after)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.peak
}

// Waiting 返回组内采样到的 vllm:num_requests_waiting 最大值（各实例之和）；没有时为 NaN。
// 在 Finish 之后调用才包括组后的抓取。
func (ps *Peak) Waiting() float64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.waiting
}

package loadgen

import (
	"context"
	"math"
	"sync"
	"time"
)

// 服务端缓存真相用到的 vLLM 计数器（v1 的名字在前，v0 的 gpu_ 前缀名在后）。单位是 token：
// queries 是查询前缀缓存的 prompt token 数，hits 是其中命中的。
var (
	metricPrefixHits    = []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"}
	metricPrefixQueries = []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"}
)

// ServerCache 是一个分组期间服务端自己报告的缓存状态（/metrics 在组前、组后的差值与组内峰值）。
// 这是"服务端的真相"：客户端的 cached_tokens 只在服务端打开 prompt token 详情时才有，
// 而且看不到抢占与 KV 占用。不可得的字段为 -1。
type ServerCache struct {
	// HitRate = ΔPrefixHits / ΔPrefixQueries，[0,1]；查询数没有增加或计数器缺失时为 -1。
	HitRate float64
	// PrefixHits / PrefixQueries 是本组的 Δvllm:prefix_cache_hits_total / Δvllm:prefix_cache_queries_total（token）。
	PrefixHits, PrefixQueries float64
	// Preemptions 是本组的 Δvllm:num_preemptions_total。
	Preemptions float64
	// PeakKVUsage 是组内采样到的最大 vllm:kv_cache_usage_perc（0..1，多实例取平均后的最大值）。
	PeakKVUsage float64
}

// unmeasuredCache 返回全部不可得的 ServerCache。
func unmeasuredCache() ServerCache {
	return ServerCache{HitRate: -1, PrefixHits: -1, PrefixQueries: -1, Preemptions: -1, PeakKVUsage: -1}
}

// WorkloadStats 是真实负载在 acs-bench 列之外的汇总（写进新的 CSV 文件与 JSON，acs-bench 的
// 汇总 CSV 不变）。
type WorkloadStats struct {
	// DispatchLag 是轨迹回放中每个请求的发出滞后（实际发出 − 时刻表上的意图时刻）的分布；
	// 不是轨迹时 Count 为 0。中位数在 1ms 以上说明客户端跟不上时刻表，结果不能当作轨迹的回放。
	DispatchLag Latency
	// Cache 是服务端报告的前缀缓存命中率、抢占次数与 KV 占用峰值。
	Cache ServerCache
	// AvgCachedTokens 是成功请求 usage 里 cached_tokens 的平均值，CachedTokensCount 是给出了
	// 它的请求数（为 0 时 AvgCachedTokens 为 -1）。
	AvgCachedTokens   float64
	CachedTokensCount int
	// Turns 是多轮会话按轮次的汇总（不是多轮会话时为 nil）。
	Turns []TurnSummary
}

// delta 返回 after − before；任一为 NaN 或差为负（服务重启）时返回 -1。
func counterDelta(before, after float64) float64 {
	d := after - before
	if math.IsNaN(d) || d < 0 {
		return -1
	}
	return d
}

// applyCache 由组前、组后的抓取与组内峰值算出 ServerCache。
func applyCache(before, after *metricsSnap, peak float64) ServerCache {
	c := unmeasuredCache()
	if !math.IsNaN(peak) {
		c.PeakKVUsage = peak
	}
	if before == nil || after == nil {
		return c
	}
	c.PrefixHits = counterDelta(before.prefixHits, after.prefixHits)
	c.PrefixQueries = counterDelta(before.prefixQueries, after.prefixQueries)
	if c.PrefixHits >= 0 && c.PrefixQueries > 0 {
		c.HitRate = c.PrefixHits / c.PrefixQueries
	}
	c.Preemptions = counterDelta(before.preempt, after.preempt)
	return c
}

// kvUsage 返回一次抓取的 KV-cache 占用（各实例平均），没有时为 NaN。
func (s *metricsSnap) kvUsage() float64 {
	if s == nil || s.kvN == 0 {
		return math.NaN()
	}
	return s.kvSum / float64(s.kvN)
}

// kvSampleInterval 是组内 KV 占用峰值的采样间隔。
const kvSampleInterval = 200 * time.Millisecond

// peakSampler 在一个分组期间定时抓取 /metrics，记下 KV-cache 占用的最大值。
type peakSampler struct {
	mu   sync.Mutex
	peak float64
	stop context.CancelFunc
	done chan struct{}
}

// startPeak 启动采样（before 没有 KV 指标时不启动：服务端不暴露它，采样只是白白抓取）。
// 调用方必须调用 finish 回收 goroutine。
func (r *runner) startPeak(ctx context.Context, before *metricsSnap) *peakSampler {
	ps := &peakSampler{peak: before.kvUsage(), done: make(chan struct{})}
	if math.IsNaN(ps.peak) {
		close(ps.done)
		ps.stop = func() {}
		return ps
	}
	ctx, ps.stop = context.WithCancel(ctx)
	go func() {
		defer close(ps.done)
		for sleepUntil(ctx, kvSampleInterval, nil) {
			ps.observe(r.scraper.scrape(ctx))
		}
	}()
	return ps
}

// observe 把一次抓取计入峰值。
func (ps *peakSampler) observe(s *metricsSnap) {
	v := s.kvUsage()
	if math.IsNaN(v) {
		return
	}
	ps.mu.Lock()
	if math.IsNaN(ps.peak) || v > ps.peak {
		ps.peak = v
	}
	ps.mu.Unlock()
}

// finish 停止采样、计入组后的抓取 after，返回峰值（没有时为 NaN）。
func (ps *peakSampler) finish(after *metricsSnap) float64 {
	ps.stop()
	<-ps.done
	ps.observe(after)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.peak
}

// applyWorkload 把真实负载的汇总写进 s.Workload：轨迹的发出滞后、服务端缓存、cached_tokens
// 与按轮次的汇总。
func (r *runner) applyWorkload(s *Summary, gr *groupRun, before, after *metricsSnap, peak float64) {
	w := WorkloadStats{Cache: applyCache(before, after, peak), AvgCachedTokens: -1}
	if gr.pool != nil && gr.pool.Trace != nil {
		w.DispatchLag = s.SlotWait
	}
	if n := gr.cachedN.Load(); n > 0 {
		w.CachedTokensCount = int(n)
		w.AvgCachedTokens = float64(gr.cachedT.Load()) / float64(n)
	}
	if gr.turns != nil {
		w.Turns = gr.turns.summaries()
	}
	s.Workload = w
}

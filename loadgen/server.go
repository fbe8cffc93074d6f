package loadgen

import (
	"math"
	"time"

	"github.com/vllm-cibench/cibench/loadgen/servermetrics"
)

// 本文件把 servermetrics 的抓取结果换算成汇总（Summary）里的服务端字段：服务端时延直方图的
// 差值、推测解码接受率、服务端缓存真相。抓取与解析在 loadgen/servermetrics；汇总的类型
// （Latency、ServerCache、WorkloadStats）属于 loadgen，换算就在这里做，servermetrics 不依赖
// loadgen。

// applyServer 把前后两次抓取的差值写入汇总；任一次缺失则全部为 -1 / 不可得。
func applyServer(sum *Summary, before, after *servermetrics.Snapshot) {
	sum.SpecAcceptRate = Unmeasured()
	if before == nil || after == nil {
		return
	}
	sum.ServerTTFT = serverLatency(after.Hist[servermetrics.HistTTFT].Delta(before.Hist[servermetrics.HistTTFT]))
	sum.ServerTPOT = serverLatency(after.Hist[servermetrics.HistTPOT].Delta(before.Hist[servermetrics.HistTPOT]))
	sum.ServerE2E = serverLatency(after.Hist[servermetrics.HistE2E].Delta(before.Hist[servermetrics.HistE2E]))
	da, dd := after.Accept-before.Accept, after.Draft-before.Draft
	if !math.IsNaN(da) && !math.IsNaN(dd) && dd > 0 && da >= 0 {
		sum.SpecAcceptRate.Avg = da / dd
		sum.SpecAcceptRate.Count = 1
	}
}

// serverLatency 把一个秒为单位的增量直方图转成 Latency；nil 或无样本返回零值（导出为 -1）。
// 分位数按 Prometheus histogram_quantile 计算（见 servermetrics.Histogram.Quantile），MIN 不可得。
func serverLatency(h *servermetrics.Histogram) Latency {
	if h == nil || h.Count <= 0 {
		return Latency{}
	}
	sec := func(v float64) time.Duration {
		if math.IsNaN(v) {
			return -1
		}
		return time.Duration(math.Round(v * float64(time.Second))) // 四舍五入到纳秒，0.3×0.75 不会截成 224.999999ms
	}
	return Latency{
		Count: int64(h.Count),
		P50:   sec(h.Quantile(0.50)),
		P75:   sec(h.Quantile(0.75)), P90: sec(h.Quantile(0.90)), P95: sec(h.Quantile(0.95)), P99: sec(h.Quantile(0.99)),
		Min: -1, Max: sec(h.MaxBound()), Avg: sec(h.Sum / h.Count),
	}
}

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

// counterDelta 返回计数器的 after − before；任一为 NaN 或差为负（服务重启）时返回 -1。
func counterDelta(before, after float64) float64 {
	d := after - before
	if math.IsNaN(d) || d < 0 {
		return -1
	}
	return d
}

// applyCache 由组前、组后的抓取与组内峰值（servermetrics.Peak 给出，NaN 为没有）算出 ServerCache。
func applyCache(before, after *servermetrics.Snapshot, peak float64) ServerCache {
	c := unmeasuredCache()
	if !math.IsNaN(peak) {
		c.PeakKVUsage = peak
	}
	if before == nil || after == nil {
		return c
	}
	c.PrefixHits = counterDelta(before.PrefixHits, after.PrefixHits)
	c.PrefixQueries = counterDelta(before.PrefixQueries, after.PrefixQueries)
	if c.PrefixHits >= 0 && c.PrefixQueries > 0 {
		c.HitRate = c.PrefixHits / c.PrefixQueries
	}
	c.Preemptions = counterDelta(before.Preemptions, after.Preemptions)
	return c
}

// applyWorkload 把真实负载的汇总写进 s.Workload：轨迹的发出滞后、服务端缓存、cached_tokens
// 与按轮次的汇总。
func (r *runner) applyWorkload(s *Summary, gr *groupRun, before, after *servermetrics.Snapshot, peak float64) {
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

package loadgen

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/explain"

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

// phaseBreakdown 由组前、组后的抓取、组内峰值与客户端统计算出本组的阶段分解（见 explain）。
// 任一次抓取缺失时（服务端没有 /metrics：非 vLLM 服务、网关）只有客户端那一部分，
// 比较时如实报告“不可归因”。多个实例时各实例另有一份；实例带 PD 角色时顶层不放服务端
// 阶段（每个请求在两个实例上各记一次，相加没有意义）。
func phaseBreakdown(tot *stats, before, after *servermetrics.Snapshot, peak *servermetrics.Peak) *explain.Breakdown {
	if before == nil || after == nil {
		return &explain.Breakdown{ClientTTFT: tot.ttft.moments(), ClientE2E: tot.e2e.moments(), ClientHeaders: tot.headerMoments()}
	}
	b := snapshotBreakdown(before, after)
	b.ClientTTFT, b.ClientE2E, b.ClientHeaders = tot.ttft.moments(), tot.e2e.moments(), tot.headerMoments()
	if peak != nil {
		b.Cache.PeakKVUsage = finitePtr(peak.Finish(after))
		b.Cache.PeakWaiting = finitePtr(peak.Waiting())
	}
	if len(after.Parts) > 1 && len(after.Parts) == len(before.Parts) {
		pd := false
		for i, p := range after.Parts {
			in := snapshotBreakdown(before.Parts[i], p)
			in.Instance, in.Role = p.Name, p.Role
			pd = pd || p.Role != ""
			b.Instances = append(b.Instances, *in)
		}
		if pd {
			b.ServerTTFT, b.Queue, b.Prefill, b.Decode, b.Inference, b.ServerE2E, b.ITL = nil, nil, nil, nil, nil, nil, nil
		}
	}
	return b
}

// snapshotBreakdown 把一对抓取（同一实例或同一组实例之和）的差值换算成服务端的那部分分解。
func snapshotBreakdown(before, after *servermetrics.Snapshot) *explain.Breakdown {
	b := &explain.Breakdown{
		ServerTTFT: phaseDist(after.Hist[servermetrics.HistTTFT].Delta(before.Hist[servermetrics.HistTTFT])),
		ITL:        phaseDist(after.Hist[servermetrics.HistTPOT].Delta(before.Hist[servermetrics.HistTPOT])),
		ServerE2E:  phaseDist(after.Hist[servermetrics.HistE2E].Delta(before.Hist[servermetrics.HistE2E])),
		Queue:      phaseDist(after.Phase[servermetrics.PhaseQueue].Delta(before.Phase[servermetrics.PhaseQueue])),
		Prefill:    phaseDist(after.Phase[servermetrics.PhasePrefill].Delta(before.Phase[servermetrics.PhasePrefill])),
		Decode:     phaseDist(after.Phase[servermetrics.PhaseDecode].Delta(before.Phase[servermetrics.PhaseDecode])),
		Inference:  phaseDist(after.Phase[servermetrics.PhaseInference].Delta(before.Phase[servermetrics.PhaseInference])),
	}
	c := applyCache(before, after, math.NaN())
	if c.PrefixQueries >= 0 && c.PrefixHits >= 0 {
		b.Cache.PrefixHits, b.Cache.PrefixQueries = finitePtr(c.PrefixHits), finitePtr(c.PrefixQueries)
	}
	if c.HitRate >= 0 {
		b.Cache.HitRate = finitePtr(c.HitRate)
	}
	if c.Preemptions >= 0 {
		b.Cache.Preemptions = finitePtr(c.Preemptions)
	}
	return b
}

// finitePtr 返回 v 的指针；v 为 NaN 或无穷时返回 nil（JSON 里省略，表示不可得）。
func finitePtr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// phaseDist 把一个增量直方图换算成 explain.Dist：均值来自 Sum/Count（精确）；P50、P99 只在
// 所在的桶分得开（上界不超过下界的两倍）时给出，否则在 Resolution 里写明桶的范围。
// h 为 nil（服务端不导出，或前后桶布局不同）时返回 nil；窗口内没有样本时 Count 为 0。
func phaseDist(h *servermetrics.Histogram) *explain.Dist {
	if h == nil {
		return nil
	}
	d := &explain.Dist{Count: h.Count, Sum: h.Sum}
	if h.Count <= 0 {
		return d
	}
	var unresolved []string
	var where string
	for _, q := range []struct {
		name string
		p    float64
		dst  **float64
	}{{"p50", 0.50, &d.P50}, {"p99", 0.99, &d.P99}} {
		v := h.Quantile(q.p)
		lo, hi := bucketOf(h, q.p)
		if math.IsNaN(v) || lo <= 0 || hi > 2*lo || math.IsInf(hi, 1) {
			unresolved = append(unresolved, q.name)
			where = fmt.Sprintf("(%g, %g] s", lo, hi)
			continue
		}
		*q.dst = &v
	}
	if len(unresolved) > 0 {
		d.Resolution = strings.Join(unresolved, ", ") + " inside bucket " + where
	}
	return d
}

// bucketOf 返回 q 分位所在桶的下界与上界（按 histogram_quantile 的秩规则）。
func bucketOf(h *servermetrics.Histogram, q float64) (lo, hi float64) {
	if len(h.Cum) == 0 {
		return 0, math.Inf(1)
	}
	total := h.Cum[len(h.Cum)-1]
	rank := q * total
	for i, c := range h.Cum {
		if c >= rank && c > 0 {
			if i > 0 {
				lo = h.Upper[i-1]
			}
			return lo, h.Upper[i]
		}
	}
	return 0, math.Inf(1)
}

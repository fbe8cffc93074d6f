package loadgen

import (
	"math"
	"runtime"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// dist 是一个分布：HDR 直方图给分位数（3 位有效数字），精确的计数、和、
// 最小值、最大值另行累计，避免 HDR 桶等价值带来的 MAX/AVG 偏差。
// 值的单位由使用者决定（时延为微秒，token 数为个）。
type dist struct {
	h        *hdrhistogram.Histogram
	n        int64
	sum      float64
	min, max int64
}

// 直方图的量程：时延以微秒计，最大约 2.7 小时（超过 Profile.Timeout 上限的余量）。
const (
	histLowest  = 1
	histHighest = 10_000_000_000
	histSigFigs = 3
)

// newDist 创建空分布。
func newDist() *dist {
	return &dist{h: hdrhistogram.New(histLowest, histHighest, histSigFigs), min: math.MaxInt64, max: math.MinInt64}
}

// add 记录 count 个值 v（v 会被夹到直方图量程内，精确统计不受影响）。
func (d *dist) add(v, count int64) {
	if count <= 0 {
		return
	}
	hv := min(max(v, 0), histHighest)
	_ = d.h.RecordValues(hv, count) // 已夹到量程内，不会出错
	d.n += count
	d.sum += float64(v) * float64(count)
	d.min = min(d.min, v)
	d.max = max(d.max, v)
}

// merge 把 o 合并进 d。
func (d *dist) merge(o *dist) {
	if o.n == 0 {
		return
	}
	d.h.Merge(o.h)
	d.n += o.n
	d.sum += o.sum
	d.min = min(d.min, o.min)
	d.max = max(d.max, o.max)
}

// latency 把以微秒记录的分布转成 Latency；没有样本时返回零值（Count=0，导出为 -1）。
func (d *dist) latency() Latency {
	if d.n == 0 {
		return Latency{}
	}
	// HDR 返回桶内的最高等价值，可能略超出真实极值，故夹到 [min, max]。
	us := func(v int64) time.Duration { return time.Duration(min(max(v, d.min), d.max)) * time.Microsecond }
	return Latency{
		Count: d.n,
		P50:   us(d.h.ValueAtQuantile(50)),
		P75:   us(d.h.ValueAtQuantile(75)), P90: us(d.h.ValueAtQuantile(90)),
		P95: us(d.h.ValueAtQuantile(95)), P99: us(d.h.ValueAtQuantile(99)),
		Min: us(d.min), Max: us(d.max),
		Avg: time.Duration(d.sum / float64(d.n) * float64(time.Microsecond)),
	}
}

// values 把计数类分布转成 Values；没有样本时全部为 -1。
func (d *dist) values() Values {
	if d.n == 0 {
		return Unmeasured()
	}
	q := func(p float64) float64 { return float64(min(max(d.h.ValueAtQuantile(p), d.min), d.max)) }
	return Values{
		Count: d.n,
		P75:   q(75), P90: q(90), P95: q(95), P99: q(99),
		Min: float64(d.min), Max: float64(d.max), Avg: d.sum / float64(d.n),
	}
}

// stats 是一个 worker 分片的统计。同一分片由固定的一组 worker 共享并以 mu 保护；
// 分片数与 CPU 数相当，因此锁几乎无竞争，而内存与请求数、并发数都无关。
type stats struct {
	mu                             sync.Mutex
	ttft, tpot, tpotSec, f2s, e2e  *dist
	slot, compl, lag               *dist
	sent, ok, failed, good         int64
	promptTok, complTok, reasonTok int64
	usageTok                       int64 // token 数来自服务端 usage 的成功请求数
	firstSent, lastEnd             time.Time
}

// newStats 创建空分片。
func newStats() *stats {
	return &stats{ttft: newDist(), tpot: newDist(), tpotSec: newDist(), f2s: newDist(), e2e: newDist(), slot: newDist(), compl: newDist(), lag: newDist()}
}

// micros 把时长转成直方图使用的微秒整数（四舍五入）。
func micros(d time.Duration) int64 { return (int64(d) + 500) / 1000 }

// observe 把一条记录计入分片；slo 为空时不计 goodput。
func (s *stats) observe(r *Record, slo SLO) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	if s.firstSent.IsZero() || r.Sent.Before(s.firstSent) {
		s.firstSent = r.Sent
	}
	if end := r.Intended.Add(r.E2E); end.After(s.lastEnd) {
		s.lastEnd = end
	}
	s.slot.add(micros(r.SlotWait), 1)
	if !r.OK {
		s.failed++
		return
	}
	s.ok++
	s.ttft.add(micros(r.TTFT), 1)
	if r.ClientLag >= 0 {
		s.lag.add(micros(r.ClientLag), 1)
	}
	s.e2e.add(micros(r.E2E), 1)
	if r.TPOT >= 0 {
		s.tpot.add(micros(r.TPOT), 1)
	}
	if r.FirstToSecond >= 0 {
		s.f2s.add(micros(r.FirstToSecond), 1)
	}
	// token 级间隔：第一个输出 chunk 之后，每个 chunk 的间隔按其 token 数平分。
	for i := 1; i < len(r.ChunkTimes); i++ {
		k := int64(r.ChunkTokens[i])
		if k <= 0 {
			continue
		}
		gap := r.ChunkTimes[i] - r.ChunkTimes[i-1]
		s.tpotSec.add(micros(gap/time.Duration(k)), k)
	}
	s.compl.add(int64(r.CompletionTokens), 1)
	s.promptTok += int64(r.PromptTokens)
	s.complTok += int64(r.CompletionTokens)
	s.reasonTok += int64(r.ReasoningTokens)
	if r.TokenSource == TokenSourceUsage {
		s.usageTok++
	}
	if !slo.Empty() && slo.Met(r.TTFT, r.TPOT, r.E2E) {
		s.good++
	}
}

// merge 把 o 合并进 s（调用时 o 已不再被写入）。
func (s *stats) merge(o *stats) {
	for _, p := range [][2]*dist{{s.ttft, o.ttft}, {s.tpot, o.tpot}, {s.tpotSec, o.tpotSec}, {s.f2s, o.f2s}, {s.e2e, o.e2e}, {s.slot, o.slot}, {s.compl, o.compl}, {s.lag, o.lag}} {
		p[0].merge(p[1])
	}
	s.sent += o.sent
	s.ok += o.ok
	s.failed += o.failed
	s.good += o.good
	s.promptTok += o.promptTok
	s.complTok += o.complTok
	s.reasonTok += o.reasonTok
	s.usageTok += o.usageTok
	if !o.firstSent.IsZero() && (s.firstSent.IsZero() || o.firstSent.Before(s.firstSent)) {
		s.firstSent = o.firstSent
	}
	if o.lastEnd.After(s.lastEnd) {
		s.lastEnd = o.lastEnd
	}
}

// shardSet 是一组分片；worker i 固定使用分片 i mod len。
type shardSet []*stats

// newShardSet 按 CPU 数创建分片（至少 4 个），与并发数无关以保证内存有界。
func newShardSet() shardSet {
	n := max(4, 2*runtime.GOMAXPROCS(0))
	out := make(shardSet, n)
	for i := range out {
		out[i] = newStats()
	}
	return out
}

// total 合并全部分片。
func (ss shardSet) total() *stats {
	t := newStats()
	for _, s := range ss {
		s.mu.Lock()
		t.merge(s)
		s.mu.Unlock()
	}
	return t
}

// fill 把合并后的统计写入汇总行。
func (s *stats) fill(sum *Summary, slo SLO) {
	sum.NumPrompts = int(s.sent)
	sum.Succeeded, sum.Failed = int(s.ok), int(s.failed)
	if !s.firstSent.IsZero() && s.lastEnd.After(s.firstSent) {
		sum.TotalTime = s.lastEnd.Sub(s.firstSent)
	}
	sec := sum.TotalTime.Seconds()
	if sec > 0 {
		sum.TotalTokenThroughput = float64(s.promptTok+s.complTok) / sec
		sum.OutputTokenThroughput = float64(s.complTok) / sec
		sum.QPS = float64(s.ok) / sec
	}
	if s.sent > 0 {
		sum.FailRate = float64(s.failed) / float64(s.sent)
	}
	sum.Goodput = -1
	if !slo.Empty() && sec > 0 {
		sum.Goodput = float64(s.good) / sec
	}
	sum.TTFT = s.ttft.latency()
	sum.TPOT = s.tpot.latency()
	sum.TPOTSec = s.tpotSec.latency()
	sum.FirstToSecondToken = s.f2s.latency()
	sum.E2E = s.e2e.latency()
	sum.SlotWait = s.slot.latency()
	sum.ClientLag = s.lag.latency()
	sum.CompletionTokens = s.compl.values()
	sum.AvgReasoningTokens, sum.AvgContentTokens, sum.AvgPromptTokens = -1, -1, -1
	if s.ok > 0 {
		n := float64(s.ok)
		sum.AvgReasoningTokens = float64(s.reasonTok) / n
		sum.AvgContentTokens = float64(s.complTok-s.reasonTok) / n
		sum.AvgPromptTokens = float64(s.promptTok) / n
	}
	switch {
	case s.ok == 0:
		sum.TokenSource = ""
	case s.usageTok == s.ok:
		sum.TokenSource = TokenSourceUsage
	default:
		sum.TokenSource = TokenSourceEstimate
	}
}

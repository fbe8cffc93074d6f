package loadgen

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/vllm-cibench/cibench/explain"
)

// dist 是一个分布。样本数不超过共享预算（exactCap）时保留全部精确样本，分位数与
// numpy.percentile 的默认 linear 方法逐位一致（vLLM benchmark_serving / vllm bench serve
// 用它算 P50/P90/P99）；超出预算后改用 HDR 直方图（3 位有效数字），内存因此与请求数无关。
// 计数、和、最小值、最大值始终精确累计。
//
// 值的单位由使用者决定：时延为纳秒（HDR 按 unit=1000 以微秒记录），token 数为个（unit=1）。
type dist struct {
	budget *atomic.Int64 // 同一分组、同一指标的各分片共享的精确样本预算；nil 表示不限
	exact  []int64       // 精确样本（h 为 nil 时有效）
	sorted bool          // exact 是否已排序
	h      *hdrhistogram.Histogram
	unit   int64 // HDR 记录 v/unit（四舍五入）
	n      int64
	sum    float64
	min    int64
	max    int64
}

// 直方图的量程：时延以微秒计，最大约 2.7 小时（超过 Profile.Timeout 上限的余量）。
const (
	histLowest  = 1
	histHighest = 10_000_000_000
	histSigFigs = 3
)

// exactCap 是每个分组每个指标保留的精确样本数上限（每个 8 字节，约 2 MB）。
// 5,000 个 32-token 请求的 token 级间隔（160,000 个）仍在其内；超过后改用 HDR，
// 此时分位数的误差见 quantiles。
const exactCap = 1 << 18

// newBudget 返回一个容量为 n 的精确样本预算，供同一指标的各分片共享。
func newBudget(n int64) *atomic.Int64 {
	b := new(atomic.Int64)
	b.Store(n)
	return b
}

// newDist 创建空分布；unit 为 HDR 的记录单位，budget 为 nil 时精确样本不限量（仅用于合并目标）。
func newDist(unit int64, budget *atomic.Int64) *dist {
	return &dist{unit: unit, budget: budget, min: math.MaxInt64, max: math.MinInt64}
}

// spill 把精确样本转入 HDR 直方图（预算用完或与 HDR 分布合并时）。
func (d *dist) spill() {
	if d.h != nil {
		return
	}
	d.h = hdrhistogram.New(histLowest, histHighest, histSigFigs)
	for _, v := range d.exact {
		d.record(v, 1)
	}
	d.exact, d.sorted = nil, false
}

// record 把 count 个 v 记入 HDR（夹到量程内，精确统计不受影响）。
func (d *dist) record(v, count int64) {
	hv := min(max((v+d.unit/2)/d.unit, 0), histHighest)
	_ = d.h.RecordValues(hv, count) // 已夹到量程内，不会出错
}

// add 记录 count 个值 v。
func (d *dist) add(v, count int64) {
	if count <= 0 {
		return
	}
	if d.h == nil && (d.budget == nil || d.budget.Add(-count) >= 0) {
		for range count {
			d.exact = append(d.exact, v)
		}
		d.sorted = false
	} else {
		d.spill()
		d.record(v, count)
	}
	d.n += count
	d.sum += float64(v) * float64(count)
	d.min = min(d.min, v)
	d.max = max(d.max, v)
}

// merge 把 o 合并进 d：两边都是精确样本时拼接，否则合并为 HDR。
func (d *dist) merge(o *dist) {
	if o.n == 0 {
		return
	}
	switch {
	case d.h == nil && o.h == nil:
		d.exact = append(d.exact, o.exact...)
		d.sorted = false
	case o.h == nil:
		for _, v := range o.exact {
			d.record(v, 1)
		}
	default:
		d.spill()
		d.h.Merge(o.h)
	}
	d.n += o.n
	d.sum += o.sum
	d.min = min(d.min, o.min)
	d.max = max(d.max, o.max)
}

// reset 清空分布以便复用（时间线每个间隔一次），保留精确样本的底层数组。
func (d *dist) reset() {
	d.exact, d.sorted, d.h = d.exact[:0], false, nil
	d.n, d.sum, d.min, d.max = 0, 0, math.MaxInt64, math.MinInt64
}

// lerp 按 numpy 的 _lerp 计算 a+(b−a)·t：t ≥ 0.5 时从 b 端回算，结果与 numpy 逐位一致。
func lerp(a, b, t float64) float64 {
	diff := b - a
	if t >= 0.5 {
		return b - diff*(1-t)
	}
	return a + diff*t
}

// quantiles 按 numpy.percentile(samples, p) 的 linear 方法（Hyndman–Fan 第 7 种）计算各百分位：
// 升序样本 x[0..n−1]，虚拟下标 h=(n−1)·p/100，结果为 x[⌊h⌋] 与 x[⌊h⌋+1] 之间按 h−⌊h⌋ 的线性插值。
// 精确样本时与 numpy 一致（浮点舍入内）。HDR 时每个次序统计量取其所在 HDR 桶的中点，
// 3 位有效数字的桶宽不超过值的 1/1024，所以误差不超过 numpy 值的 1/2048（约 0.05%）
// 再加单位舍入（时延 0.5µs），并夹在精确的最小、最大值之间。
func (d *dist) quantiles(ps ...float64) []float64 {
	out := make([]float64, len(ps))
	if d.n == 0 {
		return out
	}
	var at func(k int64) float64 // 第 k 个（0 起）次序统计量
	if d.h == nil {
		if !d.sorted {
			slices.Sort(d.exact)
			d.sorted = true
		}
		at = func(k int64) float64 { return float64(d.exact[k]) }
	} else {
		bars := d.h.Distribution()
		at = func(k int64) float64 {
			seen := int64(0)
			for _, b := range bars {
				seen += b.Count
				if seen > k {
					mid := float64(b.From+b.To) / 2 * float64(d.unit)
					return min(max(mid, float64(d.min)), float64(d.max))
				}
			}
			return float64(d.max)
		}
	}
	for i, p := range ps {
		h := float64(d.n-1) * (p / 100)
		lo := math.Floor(h)
		k := int64(lo)
		out[i] = lerp(at(k), at(min(k+1, d.n-1)), h-lo)
	}
	return out
}

// latency 把以纳秒记录的分布转成 Latency；没有样本时返回零值（Count=0，导出为 -1）。
func (d *dist) latency() Latency {
	if d.n == 0 {
		return Latency{}
	}
	q := d.quantiles(50, 75, 90, 95, 99)
	ns := func(v float64) time.Duration { return time.Duration(math.Round(v)) }
	return Latency{
		Count: d.n,
		P50:   ns(q[0]), P75: ns(q[1]), P90: ns(q[2]), P95: ns(q[3]), P99: ns(q[4]),
		Min: time.Duration(d.min), Max: time.Duration(d.max),
		Avg: ns(d.sum / float64(d.n)),
	}
}

// moments 返回以纳秒记录的时延分布的个数、均值与无偏方差（秒），供阶段分解的区间使用。
// 只在分组结束时调用一次：精确样本时逐个求平方离差，HDR 时用直方图的标准差（桶中点，
// 3 位有效数字）；请求热路径上不多做任何事。
func (d *dist) moments() explain.Moments {
	if d.n == 0 {
		return explain.Moments{}
	}
	mean := d.sum / float64(d.n)
	m := explain.Moments{N: d.n, Mean: mean / 1e9}
	if d.n < 2 {
		return m
	}
	if d.h == nil {
		ss := 0.0
		for _, v := range d.exact {
			x := float64(v) - mean
			ss += x * x
		}
		m.Var = ss / float64(d.n-1) / 1e18
		return m
	}
	sd := d.h.StdDev() * float64(d.unit) / 1e9
	m.Var = sd * sd * float64(d.n) / float64(d.n-1)
	return m
}

// headerMoments 返回“到响应头”时长的矩（秒）；没有样本时为零值。
func (s *stats) headerMoments() explain.Moments {
	if s.hdrN == 0 {
		return explain.Moments{}
	}
	n := float64(s.hdrN)
	m := explain.Moments{N: s.hdrN, Mean: s.hdrSum / n}
	if s.hdrN > 1 {
		m.Var = max(0, (s.hdrSq-n*m.Mean*m.Mean)/(n-1))
	}
	return m
}

// values 把计数类分布转成 Values；没有样本时全部为 -1。
func (d *dist) values() Values {
	if d.n == 0 {
		return Unmeasured()
	}
	q := d.quantiles(75, 90, 95, 99)
	return Values{
		Count: d.n,
		P75:   q[0], P90: q[1], P95: q[2], P99: q[3],
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
	iv                             *interval // 时间线当前间隔的累计；未开启时间线时为 nil
	// hdrN、hdrSum、hdrSq 是成功请求“到响应头”时长（秒）的个数、和与平方和：阶段分解只要它的
	// 均值与方差，不留样本（每个请求两次浮点加法）。
	hdrN          int64
	hdrSum, hdrSq float64
}

// interval 是时间线一个间隔内完成的请求的累计（按完成时刻归入间隔），由分片锁保护。
type interval struct {
	done, failed, tokens int64
	ttft, itl            *dist
}

// ivCap 是时间线每个间隔、每个指标保留的精确样本数上限，超过后改用 HDR（内存有界）。
const ivCap = 1 << 15

// newInterval 创建一个间隔累计；b 为同一间隔各分片共享的预算（ttft, itl）。
func newInterval(b *[2]*atomic.Int64) *interval {
	return &interval{ttft: newDist(1000, b[0]), itl: newDist(1000, b[1])}
}

// budgets 是一个分组内各指标的精确样本预算（按 stats 的分布顺序），由全部分片共享。
type budgets [8]*atomic.Int64

// newBudgets 为一个分组创建预算，每个指标 exactCap 个样本。
func newBudgets() *budgets {
	var b budgets
	for i := range b {
		b[i] = newBudget(exactCap)
	}
	return &b
}

// newStats 创建空分片；b 为 nil 时精确样本不限量（合并目标）。
func newStats(b *budgets) *stats {
	if b == nil {
		b = &budgets{}
	}
	return &stats{ttft: newDist(1000, b[0]), tpot: newDist(1000, b[1]), tpotSec: newDist(1000, b[2]), f2s: newDist(1000, b[3]),
		e2e: newDist(1000, b[4]), slot: newDist(1000, b[5]), compl: newDist(1, b[6]), lag: newDist(1000, b[7])}
}

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
	s.slot.add(int64(r.SlotWait), 1)
	iv := s.iv
	if iv != nil {
		iv.done++
	}
	if !r.OK {
		s.failed++
		if iv != nil {
			iv.failed++
		}
		return
	}
	if iv != nil {
		iv.tokens += int64(r.CompletionTokens)
		iv.ttft.add(int64(r.TTFT), 1)
	}
	s.ok++
	s.ttft.add(int64(r.TTFT), 1)
	if r.Headers > 0 {
		h := r.Headers.Seconds()
		s.hdrN++
		s.hdrSum += h
		s.hdrSq += h * h
	}
	if r.ClientLag >= 0 {
		s.lag.add(int64(r.ClientLag), 1)
	}
	s.e2e.add(int64(r.E2E), 1)
	if r.TPOT >= 0 {
		s.tpot.add(int64(r.TPOT), 1)
	}
	if r.FirstToSecond >= 0 {
		s.f2s.add(int64(r.FirstToSecond), 1)
	}
	// token 级间隔：第一个输出 chunk 之后，每个 chunk 的间隔按其 token 数平分。
	for i := 1; i < len(r.ChunkTimes); i++ {
		k := int64(r.ChunkTokens[i])
		if k <= 0 {
			continue
		}
		gap := int64((r.ChunkTimes[i] - r.ChunkTimes[i-1]) / time.Duration(k))
		s.tpotSec.add(gap, k)
		if iv != nil {
			iv.itl.add(gap, k)
		}
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
	od := statsDists(o)
	for k, d := range statsDists(s) {
		d.merge(od[k])
	}
	s.sent += o.sent
	s.ok += o.ok
	s.failed += o.failed
	s.good += o.good
	s.promptTok += o.promptTok
	s.complTok += o.complTok
	s.reasonTok += o.reasonTok
	s.usageTok += o.usageTok
	s.hdrN += o.hdrN
	s.hdrSum += o.hdrSum
	s.hdrSq += o.hdrSq
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
	b := newBudgets()
	for i := range out {
		out[i] = newStats(b)
	}
	return out
}

// total 合并全部分片。
func (ss shardSet) total() *stats {
	t := newStats(nil)
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

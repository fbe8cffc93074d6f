package loadgen

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/vllm-cibench/cibench/loadgen/servermetrics"
)

// Timeline 是实时时间线的一行（acs-bench --bucket-interval）：一个分组内每个采样间隔一行，
// 分组结束时再补最后一行（覆盖最后一个不完整的间隔），所以各行的 Started/Completed/Failed/
// OutputTokens 之和等于该组汇总的请求数、失败数与输出 token 数。
//
// 完成类字段（Completed、Failed、OutputTokens、TTFT、ITL）按请求的完成时刻归入间隔：
// 请求在完成时才有完整的测量，这样每个请求恰好计入一行。服务端字段在同一时刻抓取
// /metrics 得到，缺失（没有 /metrics、抓取失败、没有该指标）时为 -1。
type Timeline struct {
	Group   Group
	Time    time.Time     // 采样时刻（墙钟）
	Elapsed time.Duration // 采样时刻距分组开始
	// Interval 是本行实际覆盖的时长（距上一行或分组开始）；繁忙机器上可能略长于设定值，
	// 最后一行通常更短。
	Interval time.Duration
	// TargetConcurrency 是此刻按计划应已启动的 worker 数（爬坡时即台阶）；开环且不限并发时为 -1。
	TargetConcurrency int
	InFlight          int // 采样时刻在途的请求数
	Started           int // 本间隔发出的请求数
	Completed         int // 本间隔完成的请求数（含失败）
	Failed            int // 本间隔失败的请求数
	OutputTokens      int64
	// OutputTokenThroughput 为 OutputTokens / Interval（tokens/s）。
	OutputTokenThroughput float64
	// 本间隔完成的成功请求的 TTFT 与 token 级间隔（ITL）的中位数与 P99（numpy linear 口径）；
	// 没有样本时为 -1。
	TTFTP50, TTFTP99, ITLP50, ITLP99 time.Duration
	// 服务端：vllm:num_requests_running、num_requests_waiting 之和，KV-cache 用量（0..1，
	// 各实例平均），本间隔的抢占次数（vllm:num_preemptions 计数器的差）；缺失为 -1。
	ServerRunning, ServerWaiting, ServerKVCacheUsage, ServerPreemptions float64
}

// timeline 是一个分组的时间线采样器：一个 goroutine 按间隔采样，分组结束时补最后一行。
type timeline struct {
	r        *runner
	gr       *groupRun
	cancel   context.CancelCauseFunc
	conc     int
	initC    int
	rate     float64
	budgets  [2]*atomic.Int64
	ttft     *dist
	itl      *dist
	lastT    time.Time
	lastSent int64
	prev     *servermetrics.Snapshot
	stop     chan struct{}
	done     chan struct{}
}

// startTimeline 为分组装上间隔累计并启动采样 goroutine；before 是分组开始前的 /metrics，
// 作为第一个间隔抢占次数的基准。OnTimeline 出错时以 cancel 终止分组。
func (r *runner) startTimeline(ctx context.Context, cancel context.CancelCauseFunc, gr *groupRun, before *servermetrics.Snapshot, conc, initC int, rate float64) *timeline {
	if initC <= 0 || initC > conc {
		initC = conc
	}
	t := &timeline{r: r, gr: gr, cancel: cancel, conc: conc, initC: initC, rate: rate,
		budgets: [2]*atomic.Int64{newBudget(ivCap), newBudget(ivCap)},
		ttft:    newDist(1000, nil), itl: newDist(1000, nil), lastT: gr.started, prev: before,
		stop: make(chan struct{}), done: make(chan struct{})}
	for _, s := range gr.shards {
		s.mu.Lock()
		s.iv = newInterval(&t.budgets)
		s.mu.Unlock()
	}
	go func() {
		defer close(t.done)
		tick := time.NewTicker(r.p.BucketInterval)
		defer tick.Stop()
		for {
			select {
			case now := <-tick.C:
				t.emit(ctx, now)
			case <-t.stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return t
}

// finish 停止采样 goroutine 并补上最后一行（分组的全部请求此时都已计入）。
func (t *timeline) finish(ctx context.Context) {
	close(t.stop)
	<-t.done
	t.emit(ctx, time.Now())
}

// emit 取走各分片本间隔的累计、抓取 /metrics，写出一行。
func (t *timeline) emit(ctx context.Context, now time.Time) {
	row := Timeline{Group: t.gr.g, Time: now, Elapsed: now.Sub(t.gr.started), Interval: now.Sub(t.lastT),
		InFlight: int(t.gr.active.Load()), TargetConcurrency: t.target(now.Sub(t.gr.started))}
	for _, s := range t.gr.shards {
		s.mu.Lock()
		iv := s.iv
		row.Completed += int(iv.done)
		row.Failed += int(iv.failed)
		row.OutputTokens += iv.tokens
		t.ttft.merge(iv.ttft)
		t.itl.merge(iv.itl)
		iv.done, iv.failed, iv.tokens = 0, 0, 0
		iv.ttft.reset()
		iv.itl.reset()
		s.mu.Unlock()
	}
	for _, b := range t.budgets {
		b.Store(ivCap)
	}
	sent := t.gr.sent.Load()
	row.Started, t.lastSent, t.lastT = int(sent-t.lastSent), sent, now
	if sec := row.Interval.Seconds(); sec > 0 {
		row.OutputTokenThroughput = float64(row.OutputTokens) / sec
	}
	row.TTFTP50, row.TTFTP99 = p50p99(t.ttft)
	row.ITLP50, row.ITLP99 = p50p99(t.itl)
	t.ttft.reset()
	t.itl.reset()
	t.server(ctx, &row)

	t.r.obsMu.Lock()
	err := t.r.obs.OnTimeline(row)
	t.r.obsMu.Unlock()
	if err != nil {
		t.cancel(fmt.Errorf("loadgen: observer: timeline: %w", err))
	}
}

// server 在采样时刻抓取 /metrics，填写服务端字段；期限不超过一个间隔（至少 1 秒），
// 慢的 /metrics 因此不会让采样越积越多。
func (t *timeline) server(ctx context.Context, row *Timeline) {
	row.ServerRunning, row.ServerWaiting, row.ServerKVCacheUsage, row.ServerPreemptions = -1, -1, -1, -1
	sctx, cancel := context.WithTimeout(ctx, max(t.r.p.BucketInterval, time.Second))
	snap := t.r.scraper.Scrape(sctx)
	cancel()
	prev := t.prev
	t.prev = snap
	if snap == nil {
		return
	}
	orNeg := func(v float64) float64 {
		if math.IsNaN(v) {
			return -1
		}
		return v
	}
	row.ServerRunning, row.ServerWaiting = orNeg(snap.Running), orNeg(snap.Waiting)
	if snap.KVN > 0 {
		row.ServerKVCacheUsage = orNeg(snap.KVUsage())
	}
	if prev != nil {
		if d := snap.Preemptions - prev.Preemptions; d >= 0 { // NaN 与计数回退（重启）都不满足
			row.ServerPreemptions = d
		}
	}
}

// target 返回分组开始 el 之后按计划应已启动的 worker 数（与 drive 的 startOffset 一致）。
func (t *timeline) target(el time.Duration) int {
	if t.rate > 0 && t.conc == 0 {
		return -1
	}
	n := 0
	for i := range t.conc {
		if off := t.r.startOffset(i, t.initC); off >= 0 && off <= el {
			n++
		}
	}
	return n
}

// p50p99 返回分布的中位数与 P99；没有样本时两者都为 -1。
func p50p99(d *dist) (time.Duration, time.Duration) {
	if d.n == 0 {
		return -1, -1
	}
	q := d.quantiles(50, 99)
	return time.Duration(math.Round(q[0])), time.Duration(math.Round(q[1]))
}

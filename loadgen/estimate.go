package loadgen

import (
	"container/heap"
	"fmt"
	"time"
)

// 档位时长估算：在不发任何请求的情况下，按服务端的速度模拟一遍 Run 的调度（分组顺序、
// 预热、爬坡时刻、闭环 worker 取请求、Profile.MaxDuration 的分摊与截止），得到每组与整个
// 档位的时长。CI 驱动用它在运行之前说出"这个阶段在超时内跑不完"以及什么能跑完
// （docs/ci.md 的 "Time budget"）。

// Speed 是服务端的速度模型。E2E 不为 nil 时直接给出组合的平均端到端时延（例如取自上一次
// 运行的汇总行）；返回 0 表示不知道，改用线性模型 TTFT + 输入 × PrefillPerToken +
// (输出 − 1) × ITL。线性模型不含批处理变慢，对高并发是偏乐观的下限。
type Speed struct {
	E2E             func(in, out, c int) time.Duration
	TTFT            time.Duration
	PrefillPerToken time.Duration
	ITL             time.Duration
}

// e2e 返回组合 (in, out, c) 的平均端到端时延。
func (s Speed) e2e(in, out, c int) time.Duration {
	if s.E2E != nil {
		if d := s.E2E(in, out, c); d > 0 {
			return d
		}
	}
	return s.TTFT + time.Duration(in)*s.PrefillPerToken + time.Duration(max(out-1, 0))*s.ITL
}

// GroupEstimate 是一组的估算：计划与预计完成的请求数、时长，以及是否会被预算截短。
type GroupEstimate struct {
	Group
	Planned, Requests int
	Duration          time.Duration
	BudgetLimited     bool
}

// ProfileEstimate 是整个档位的估算。Duration 按 Profile（含 MaxDuration）的规则；
// Unbudgeted 是不设预算时的时长；Floor 是预算再小也省不掉的部分（每组每个 worker 一个
// 请求、爬坡走完、预热）：Profile.MaxDuration 小于它时档位仍会超出预算。
type ProfileEstimate struct {
	Groups     []GroupEstimate
	Duration   time.Duration
	Unbudgeted time.Duration
	Floor      time.Duration
}

// EstimateProfile 估算 p 在速度 s 下的时长。只支持闭环（normal、climb）档位；开环、扫描、
// 轨迹回放与多轮会话返回错误（它们的时长由到达时刻表或扫描预算决定，不由服务端速度决定）。
func EstimateProfile(p Profile, s Speed) (ProfileEstimate, error) {
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		return ProfileEstimate{}, err
	}
	switch {
	case p.ControlMethod == ControlSweep:
		return ProfileEstimate{}, fmt.Errorf("loadgen: estimate: a sweep's duration is set by sweep.budget")
	case p.RequestRate > 0 || isTrace(p.DatasetType) || p.MultiTurn.On() || p.DatasetType == DatasetCustom:
		return ProfileEstimate{}, fmt.Errorf("loadgen: estimate: only closed-loop random-dataset profiles are estimated")
	}
	var out ProfileEstimate
	full := p
	full.MaxDuration = 0
	floor := p
	floor.MaxDuration = time.Nanosecond
	out.Groups, out.Duration = simulate(p, s)
	_, out.Unbudgeted = simulate(full, s)
	_, out.Floor = simulate(floor, s)
	return out, nil
}

// simulate 按 Run 的分组顺序与预算规则推演档位，返回每组估算与总时长。
func simulate(p Profile, s Speed) ([]GroupEstimate, time.Duration) {
	groups := len(p.InputLength) * len(p.OutputLength) * len(p.Concurrency) * p.Epochs
	var now time.Duration
	end := p.MaxDuration
	var out []GroupEstimate
	gi := 0
	r := &runner{p: p}
	for _, in := range p.InputLength {
		for _, o := range p.OutputLength {
			for ci, c := range p.Concurrency {
				n := pick(p.NumRequests, ci, max(c, 1)*p.RequestsPerConcurrency)
				initC := pick(p.InitConcurrency, ci, c)
				e2e := s.e2e(in, o, c)
				for round := 1; round <= p.Epochs; round++ {
					if round == 1 && p.Warmup > 0 {
						wc := max(1, min(c, p.Warmup))
						now += time.Duration((p.Warmup+wc-1)/wc) * s.e2e(in, o, wc)
					}
					stop := time.Duration(-1)
					if end > 0 {
						stop = max(0, end-now) / time.Duration(groups-gi)
					}
					done, d := closedLoop(r, c, initC, n, e2e, stop)
					out = append(out, GroupEstimate{Group: Group{Index: gi, InputLength: in, OutputLength: o, Concurrency: c, Round: round},
						Planned: n, Requests: done, Duration: d, BudgetLimited: done < n})
					now += d
					gi++
				}
			}
		}
	}
	return out, now
}

// closedLoop 推演一组闭环请求：worker 按 startOffset 启动，每个请求耗时 e2e，空闲的
// worker 领下一个请求；stop ≥ 0 时到点后不再领（每个 worker 至少一个）。返回完成的请求数与时长。
func closedLoop(r *runner, c, initC, n int, e2e, stop time.Duration) (int, time.Duration) {
	if initC <= 0 || initC > c {
		initC = c
	}
	h := &durHeap{}
	for i := range c {
		off := r.startOffset(i, initC)
		if off < 0 {
			continue
		}
		heap.Push(h, worker{free: off})
	}
	done := 0
	var last time.Duration
	for done < n && h.Len() > 0 {
		w := heap.Pop(h).(worker)
		if w.did > 0 && stop >= 0 && w.free >= stop {
			continue // 预算到了：这个 worker 不再领请求
		}
		w.free += e2e
		w.did++
		done++
		last = max(last, w.free)
		heap.Push(h, w)
	}
	return done, last
}

// worker 是推演中的一个闭环 worker：下次空闲的时刻与已完成的请求数。
type worker struct {
	free time.Duration
	did  int
}

// durHeap 是按空闲时刻排序的 worker 小顶堆。
type durHeap []worker

// Len 实现 heap.Interface。
func (h durHeap) Len() int { return len(h) }

// Less 实现 heap.Interface。
func (h durHeap) Less(i, j int) bool { return h[i].free < h[j].free }

// Swap 实现 heap.Interface。
func (h durHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

// Push 实现 heap.Interface。
func (h *durHeap) Push(x any) { *h = append(*h, x.(worker)) }

// Pop 实现 heap.Interface。
func (h *durHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// FitBudget 返回让 p 在速度 s 下的估算时长不超过 limit 的最大 MaxDuration（二分，精度 1 秒）。
// 不设预算就放得下时返回 0 与 true；即使预算趋于 0 也放不下（下限 Floor 超过 limit）时返回
// false：只能缩小档位（组合、并发、轮数）。
func FitBudget(p Profile, s Speed, limit time.Duration) (time.Duration, bool, error) {
	e, err := EstimateProfile(p, s)
	if err != nil {
		return 0, false, err
	}
	if e.Unbudgeted <= limit {
		return 0, true, nil
	}
	if e.Floor > limit {
		return 0, false, nil
	}
	lo, hi := time.Duration(0), e.Unbudgeted
	for hi-lo > time.Second {
		mid := (lo + hi) / 2
		q := p.WithDefaults()
		q.MaxDuration = mid
		if _, d := simulate(q, s); d <= limit {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo.Truncate(time.Second), lo > 0, nil
}

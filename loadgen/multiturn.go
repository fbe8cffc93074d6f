package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vllm-cibench/cibench/loadgen/dataset"
)

// TurnSummary 是多轮会话中同一轮次（第 Turn 轮）全部请求的汇总。第 k 轮的 prompt 带着前
// k−1 轮的问答，所以 TTFT 与 CachedTokens 随轮次的变化直接显示服务端前缀缓存的效果。
type TurnSummary struct {
	Turn              int
	Requests          int
	Succeeded         int
	TTFT, ITL, E2E    Latency // ITL 是每请求的 TPOT（(E2E−TTFT)/(completion_tokens−1)）
	AvgPromptTokens   float64 // 成功请求的平均 prompt token 数；没有成功请求为 -1
	AvgCachedTokens   float64 // 服务端报告的平均 cached_tokens；服务端不报告时为 -1
	CachedTokensCount int     // 报告了 cached_tokens 的成功请求数
}

// turnStats 按轮次累计多轮会话的请求；observe 可被多个 worker 并发调用。
type turnStats struct {
	mu     sync.Mutex
	byTurn map[int]*turnAcc
}

// turnAcc 是一个轮次的累计值。
type turnAcc struct {
	n, ok, cachedN     int64
	promptTok, cachedT int64
	ttft, itl, e2e     *dist
}

// newTurnStats 创建空的按轮次累计器。
func newTurnStats() *turnStats { return &turnStats{byTurn: map[int]*turnAcc{}} }

// observe 计入一条会话记录（Turn 为 0 的记录忽略）。
func (t *turnStats) observe(r *Record) {
	if r.Turn <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.byTurn[r.Turn]
	if a == nil {
		a = &turnAcc{ttft: newDist(1000, nil), itl: newDist(1000, nil), e2e: newDist(1000, nil)}
		t.byTurn[r.Turn] = a
	}
	a.n++
	if !r.OK {
		return
	}
	a.ok++
	a.ttft.add(int64(r.TTFT), 1)
	a.e2e.add(int64(r.E2E), 1)
	if r.TPOT >= 0 {
		a.itl.add(int64(r.TPOT), 1)
	}
	a.promptTok += int64(r.PromptTokens)
	if r.CachedTokens >= 0 {
		a.cachedN++
		a.cachedT += int64(r.CachedTokens)
	}
}

// summaries 返回按轮次升序的汇总。
func (t *turnStats) summaries() []TurnSummary {
	t.mu.Lock()
	defer t.mu.Unlock()
	turns := make([]int, 0, len(t.byTurn))
	for k := range t.byTurn {
		turns = append(turns, k)
	}
	sort.Ints(turns)
	out := make([]TurnSummary, 0, len(turns))
	for _, k := range turns {
		a := t.byTurn[k]
		s := TurnSummary{Turn: k, Requests: int(a.n), Succeeded: int(a.ok), TTFT: a.ttft.latency(), ITL: a.itl.latency(), E2E: a.e2e.latency(),
			AvgPromptTokens: -1, AvgCachedTokens: -1, CachedTokensCount: int(a.cachedN)}
		if a.ok > 0 {
			s.AvgPromptTokens = float64(a.promptTok) / float64(a.ok)
		}
		if a.cachedN > 0 {
			s.AvgCachedTokens = float64(a.cachedT) / float64(a.cachedN)
		}
		out = append(out, s)
	}
	return out
}

// planTurns 返回第 group 组每个会话的轮数：N(TurnsMean, TurnsStddev²) 四舍五入并夹到
// [1, MaxTurns]，由种子与组号决定（每组是一批新的会话，上一组的缓存不会被本组命中）。
func planTurns(p *Profile, group int) []int {
	m := p.MultiTurn
	rng := rand.New(rand.NewPCG(uint64(p.Seed)^0x7d1a, uint64(group)))
	out := make([]int, m.Conversations)
	for i := range out {
		v := m.TurnsMean + m.TurnsStddev*rng.NormFloat64()
		out[i] = min(max(int(math.Round(v)), 1), MaxTurns)
	}
	return out
}

// session 是一个多轮会话的状态。history 是已完成各轮的 chat messages（JSON 对象以逗号结尾
// 依次相连），下一轮在它后面接上新问题。
type session struct {
	id      string
	idx     int
	turns   int
	done    int
	history []byte
	readyAt time.Time
	busy    bool
}

// sessionSched 把会话分给客户端：最多 maxActive 个会话同时打开，客户端按轮询或随机挑一个
// 空闲且思考时间已过的会话发下一轮。全部字段由 mu 保护；状态变化时关闭 wake 并换一个新的，
// 等待中的客户端因此醒来重新挑选（广播）。
type sessionSched struct {
	mu        sync.Mutex
	pending   []*session
	active    []*session
	maxActive int
	random    bool
	rng       *rand.Rand
	cursor    int
	wake      chan struct{}
}

// admit 在打开的会话不足 maxActive 时从待开始的会话中补上（调用方持有 mu）。
func (s *sessionSched) admit() {
	for len(s.active) < s.maxActive && len(s.pending) > 0 {
		s.active = append(s.active, s.pending[0])
		s.pending = s.pending[1:]
	}
}

// next 挑一个可以发下一轮的会话并标为忙；没有时返回 nil 与最早的就绪时刻（零值表示要等别的
// 客户端交回会话）与当时的唤醒通道；全部会话都结束时 finished 为 true。
func (s *sessionSched) next(now time.Time) (c *session, wait time.Time, wake <-chan struct{}, finished bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.admit()
	if len(s.active) == 0 {
		return nil, time.Time{}, s.wake, true
	}
	var ready []int
	for i, a := range s.active {
		if a.busy {
			continue
		}
		if !a.readyAt.After(now) {
			ready = append(ready, i)
		} else if wait.IsZero() || a.readyAt.Before(wait) {
			wait = a.readyAt
		}
	}
	if len(ready) == 0 {
		return nil, wait, s.wake, false
	}
	pick := ready[0]
	if s.random {
		pick = ready[s.rng.IntN(len(ready))]
	} else {
		// 轮询：从游标处往后找第一个就绪的会话。
		for _, i := range ready {
			if i >= s.cursor {
				pick = i
				break
			}
		}
		s.cursor = pick + 1
	}
	c = s.active[pick]
	c.busy = true
	return c, time.Time{}, nil, false
}

// release 交回一个会话：readyAt 之后才能发下一轮；ended 为 true（轮数用完或本轮失败）时
// 关闭会话并补上待开始的会话。随后唤醒等待中的客户端。
func (s *sessionSched) release(c *session, readyAt time.Time, ended bool) {
	s.mu.Lock()
	c.busy, c.readyAt = false, readyAt
	if ended {
		i := slices.Index(s.active, c)
		s.active = slices.Delete(s.active, i, i+1)
		if i < s.cursor {
			s.cursor--
		}
		s.admit()
	}
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
}

// chatHead 返回请求体模板中 messages 数组开始之前（含 "messages":[）的部分。
func (t *bodyTemplate) chatHead() []byte {
	return bytes.TrimSuffix(t.head, []byte(`{"role":"user","content":`))
}

// driveSessions 以 conc 个客户端执行第 gr.g 组的多轮会话（本分片的会话）。每个客户端反复：
// 挑一个就绪的会话 → 发"历史 + 新问题" → 收到回答后把问题与实时回答追加进历史 → 会话思考
// ThinkTime 后才能再被挑中。请求的意图时刻是客户端挑中会话的时刻（闭环），X-Session-ID 是
// 会话 id。一轮失败时会话结束：没有回答就没有下一轮的历史。
//
// 并发约定：driveSessions 启动并回收全部客户端 goroutine；ctx 结束时等待中的客户端立即退出，
// 在途请求按 canceled 记下。
func (r *runner) driveSessions(ctx context.Context, gr *groupRun, conc int, turns []int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	gr.cancel = cancel
	m := r.p.MultiTurn
	maxActive := m.MaxActiveConversations
	if maxActive == 0 {
		maxActive = conc
	}
	sc := &sessionSched{maxActive: maxActive, random: m.Sampling == SamplingRandom,
		rng: rand.New(rand.NewPCG(uint64(r.p.Seed), 0x5e55+uint64(gr.g.Index))), wake: make(chan struct{})}
	for i, n := range turns {
		if r.sh.mine(i) {
			sc.pending = append(sc.pending, &session{id: fmt.Sprintf("cibench-g%d-c%d", gr.g.Index, i), idx: i, turns: n})
		}
	}
	head := r.tmpl.chatHead()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range r.sh.part(conc) {
		shard := w % len(gr.shards)
		wg.Go(func() {
			x := r.newExchange()
			defer x.h1.Release()
			x.keepText = true
			defer func() { x.keepText, x.session, x.turn = false, "", 0 }()
			timer := time.NewTimer(time.Hour)
			defer timer.Stop()
			for ctx.Err() == nil {
				c, wait, wake, finished := sc.next(time.Now())
				if finished {
					return
				}
				if c == nil {
					var tc <-chan time.Time
					if !wait.IsZero() {
						timer.Reset(time.Until(wait))
						tc = timer.C
					}
					select {
					case <-tc:
					case <-wake:
					case <-ctx.Done():
						return
					}
					if tc != nil && !timer.Stop() {
						select { // 定时器已触发但没被读：排空，下次 Reset 不会立刻返回
						case <-timer.C:
						default:
						}
					}
					continue
				}
				r.sessionTurn(ctx, gr, x, c, head, shard, int(next.Add(1)-1))
				ended := !x.rec.OK || c.done >= c.turns
				sc.release(c, time.Now().Add(m.ThinkTime), ended)
			}
		})
	}
	wg.Wait()
	if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
		return c
	}
	return nil
}

// sessionTurn 发出会话 c 的下一轮：问题是 input_length 个 token 的随机文本（由种子、组、会话、
// 轮次决定），请求体是 head + 历史 + 新问题；成功时把问题与实时回答追加进历史。
func (r *runner) sessionTurn(ctx context.Context, gr *groupRun, x *exchange, c *session, head []byte, shard, idx int) {
	turn := c.done + 1
	q := dataset.RandomText(r.p.Seed*1_000_003+int64(gr.g.Index)*7919+int64(c.idx)*104_729+int64(turn), gr.g.InputLength)
	qq, _ := jsonString(q)
	b := append(x.body[:0], head...)
	b = append(b, c.history...)
	b = append(b, `{"role":"user","content":`...)
	b = append(b, qq...)
	b = append(b, r.tmpl.mid...)
	b = strconv.AppendInt(b, int64(gr.g.OutputLength), 10)
	x.body = append(b, r.tmpl.tail...)
	x.session, x.turn = c.id, turn
	r.exchangeAndRecord(ctx, gr, x, shard, job{idx: idx, intended: time.Now()}, 0)
	if !x.rec.OK {
		return
	}
	aq, _ := jsonString(string(x.text))
	c.history = append(c.history, `{"role":"user","content":`...)
	c.history = append(c.history, qq...)
	c.history = append(c.history, `},{"role":"assistant","content":`...)
	c.history = append(c.history, aq...)
	c.history = append(c.history, `},`...)
	c.done = turn
}

// sessionPlan 在多轮会话打开时为分组定下每个会话的轮数，并把分组的请求数改成本分片会话的
// 轮数之和（global 为全部会话）；不是多轮会话时返回 nil。
func (r *runner) sessionPlan(gr *groupRun) []int {
	if !r.p.MultiTurn.On() {
		return nil
	}
	turns := planTurns(&r.p, gr.g.Index)
	gr.total, gr.global = 0, 0
	for i, n := range turns {
		gr.global += n
		if r.sh.mine(i) {
			gr.total += n
		}
	}
	gr.turns = newTurnStats()
	return turns
}

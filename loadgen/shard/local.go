package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/vllm-cibench/cibench/loadgen"
)

// ErrBarrier 是本机屏障不能放行时（分片已离开屏障、ctx 取消）的哨兵。
var ErrBarrier = errors.New("shard: barrier")

// LocalBarrier 是同一进程内 n 个分片的组间屏障：每个分组开始之前，所有还在运行的分片都到达后
// 在同一时刻（关闭同一个通道）一起放行。离开的分片（跑完、出错、ctx 取消）不再被等待，
// 所以一个分片死掉不会让其余分片永远等下去；它缺的分组由 Merge 点名并标为不完整。
type LocalBarrier struct {
	mu      sync.Mutex
	alive   []bool
	waiting []bool
	release chan struct{} // 当前这一轮的放行信号
}

// NewLocalBarrier 为 n 个分片（序号 0..n−1）创建屏障。
func NewLocalBarrier(n int) *LocalBarrier {
	b := &LocalBarrier{alive: make([]bool, n), waiting: make([]bool, n), release: make(chan struct{})}
	for i := range b.alive {
		b.alive[i] = true
	}
	return b
}

// For 返回分片 i 的 Shard.Barrier：报告分片 i 到达第 group 组之前，等所有还在运行的分片都到达。
// ctx 取消时以 ctx 的错误返回，并把分片 i 移出屏障（它的运行随之结束）。
func (b *LocalBarrier) For(i int) func(ctx context.Context, group int) error {
	return func(ctx context.Context, group int) error {
		b.mu.Lock()
		if i < 0 || i >= len(b.alive) || !b.alive[i] {
			b.mu.Unlock()
			return fmt.Errorf("%w: shard %d is not (or no longer) part of the barrier", ErrBarrier, i)
		}
		b.waiting[i] = true
		ch := b.release
		b.releaseLocked()
		b.mu.Unlock()
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			b.mu.Lock()
			select {
			case <-ch: // 恰好在取消的同时放行：当作放行
				b.mu.Unlock()
				return nil
			default:
			}
			b.waiting[i] = false
			b.mu.Unlock()
			b.Leave(i)
			return fmt.Errorf("%w: shard %d before group %d: %w", ErrBarrier, i, group, ctx.Err())
		}
	}
}

// Leave 把分片 i 移出屏障（它跑完或失败了）：其余分片不再等它；若它们都已到达，立即放行。
func (b *LocalBarrier) Leave(i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i < 0 || i >= len(b.alive) || !b.alive[i] {
		return
	}
	b.alive[i], b.waiting[i] = false, false
	b.releaseLocked()
}

// releaseLocked 在所有还在运行的分片都到达时关闭本轮的通道（一起放行）并开始新的一轮。
func (b *LocalBarrier) releaseLocked() {
	anyAlive := false
	for i, a := range b.alive {
		if a {
			if !b.waiting[i] {
				return
			}
			anyAlive = true
		}
	}
	if !anyAlive {
		return
	}
	close(b.release)
	b.release = make(chan struct{})
	for i := range b.waiting {
		b.waiting[i] = false
	}
}

// LocalResult 是 RunLocal 的结果：合并后的分组与各分片的原始结果（按序号，失败的分片为 nil）。
type LocalResult struct {
	Groups []MergedGroup
	Shards []*Result
}

// Summaries 返回合并后的汇总行（每组一行，按分组顺序）。
func (r *LocalResult) Summaries() []loadgen.Summary {
	if r == nil {
		return nil
	}
	out := make([]loadgen.Summary, len(r.Groups))
	for i, g := range r.Groups {
		out[i] = g.Summary
	}
	return out
}

// RunLocal 在本进程里把 Profile 拆成 n 片并发运行（每片一个 Run：独立的 worker 与连接池），
// 用 LocalBarrier 让每一组（含第一组）在所有分片都就绪后同时开始，最后用 MergeGroups 合并。
//
// obs 可以为 nil。各分片的逐请求记录串行地交给 OnRecord（钩子不必是并发安全的；Record.Index 是组内
// 全局序号）；每组开始时 OnGroupStart 收到一次（由第一个被放行的分片发出——这时所有分片都已
// 写完上一组的记录），全部分片结束后 OnGroupEnd 按分组顺序收到合并后的汇总；Profile.BucketInterval > 0
// 时 OnTimeline 最后收到 MergeTimeline 合并的时间线。各分片的局部汇总行与进度不转发（OnProgress 不被调用）。
//
// 某个分片失败（或它的运行被取消）时它离开屏障，其余分片照常跑完；它缺的分组 Incomplete 为真，
// 错误是 *MissingError，按序号点名该分片与它的错误。ctx 取消时全部分片停下、不会卡在屏障上。
// Profile 或 n 无效时在发出任何请求之前返回错误。
func RunLocal(ctx context.Context, target loadgen.Target, profile loadgen.Profile, n int, obs *loadgen.Observer) (*LocalResult, error) {
	return runLocal(ctx, target, profile, n, obs, nil)
}

// runLocal 是 RunLocal 的实现；shardCtx 非 nil 时为分片 i 换一个上下文（测试用它
// 单独取消某一片）。
func runLocal(ctx context.Context, target loadgen.Target, profile loadgen.Profile, n int, obs *loadgen.Observer, shardCtx func(i int, ctx context.Context) context.Context) (*LocalResult, error) {
	p := profile.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := (loadgen.Shard{Index: 0, Count: n}).Check(p); err != nil {
		return nil, err
	}
	bar := NewLocalBarrier(n)
	inner := loadgen.Observer{}
	if obs != nil {
		inner = *obs // 持有副本：运行期间调用方修改原值不会造成数据竞争
	}
	fw := newLocalForward(inner)
	results := make([]*Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			defer bar.Leave(i)
			sctx := ctx
			if shardCtx != nil {
				sctx = shardCtx(i, ctx)
			}
			res, err := Run(sctx, target, profile, loadgen.Shard{Index: i, Count: n, Barrier: bar.For(i)}, fw.shard)
			if err != nil {
				err = fmt.Errorf("shard %d: %w", i, err)
			}
			results[i], errs[i] = res, err
		})
	}
	wg.Wait()
	out, err := mergeLocal(results, errs, fw.inner, p)
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		// 整个运行被取消：已完成与被中断的分组照常合并（后者标为不完整），错误里带上 ctx 的错误。
		err = errors.Join(err, cerr)
	}
	return out, err
}

// mergeLocal 合并各分片的结果，并把合并后的汇总行与时间线交给 obs。
func mergeLocal(results []*Result, errs []error, obs loadgen.Observer, p loadgen.Profile) (*LocalResult, error) {
	var got []*Result
	for _, r := range results {
		if r != nil {
			got = append(got, r)
		}
	}
	if len(got) == 0 {
		return nil, errors.Join(errs...)
	}
	groups, err := MergeGroups(MergeOptions{}, got...)
	out := &LocalResult{Groups: groups, Shards: results}
	if err != nil && !errors.Is(err, ErrMissing) {
		return out, err
	}
	if obs.OnGroupEnd != nil {
		for _, g := range groups {
			if werr := obs.OnGroupEnd(g.Summary); werr != nil {
				return out, errors.Join(err, fmt.Errorf("shard: observer: group end: %w", werr))
			}
		}
	}
	if obs.OnTimeline != nil && p.BucketInterval > 0 {
		for _, t := range MergeTimeline(got...) {
			if werr := obs.OnTimeline(t); werr != nil {
				return out, errors.Join(err, fmt.Errorf("shard: observer: timeline: %w", werr))
			}
		}
	}
	return out, err
}

// localForward 把各分片的事件串行地转给调用方的 Observer：记录在锁内转发，每组只转发一次
// OnGroupStart。shard 是每个分片看到的 Observer：故意不带 OnProgress 与 OnTimeline（局部的
// 进度与时间线没有意义，合并后的时间线在最后写出），也不带 OnGroupEnd（局部汇总行丢弃，
// 合并后的行在全部分片结束后交给调用方）。
type localForward struct {
	mu    sync.Mutex
	inner loadgen.Observer
	begun map[int]bool
	shard *loadgen.Observer
}

// newLocalForward 为调用方的 Observer 建立转发器。
func newLocalForward(inner loadgen.Observer) *localForward {
	l := &localForward{inner: inner, begun: map[int]bool{}, shard: &loadgen.Observer{}}
	if inner.OnRecord != nil {
		l.shard.OnRecord = l.record
	}
	if inner.OnGroupStart != nil {
		l.shard.OnGroupStart = l.groupStart
	}
	return l
}

// record 在锁内转发记录（各分片的 worker 并发地调用它）。
func (l *localForward) record(r *loadgen.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inner.OnRecord(r)
}

// groupStart 对每组只转发第一次：屏障保证此刻所有分片都已写完上一组的记录。
func (l *localForward) groupStart(g loadgen.Group) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.begun[g.Index] {
		return nil
	}
	l.begun[g.Index] = true
	return l.inner.OnGroupStart(g)
}

package emulator

import (
	"context"
	"sync"
)

// Scheduler 模拟 vLLM 的 max_num_seqs：最多 limit 个请求同时“运行”，其余按到达
// 顺序（FIFO）排队。排队时间由调用方计入 TTFT，从而让饱和在客户端可见。
//
// 并发约定：全部方法并发安全；Acquire 成功后调用方必须恰好调用一次 Release。
type Scheduler struct {
	mu      sync.Mutex
	limit   int // 0 表示不限
	running int
	waiters []chan struct{}
}

// NewScheduler 返回上限为 limit（0 不限）的调度器。
func NewScheduler(limit int) *Scheduler { return &Scheduler{limit: limit} }

// SetLimit 在运行中修改上限；放宽时立即唤醒能运行的排队者。
func (s *Scheduler) SetLimit(limit int) {
	s.mu.Lock()
	s.limit = limit
	s.wakeLocked()
	s.mu.Unlock()
}

// wakeLocked 在持锁时把队头的等待者转为运行，直到达到上限。
func (s *Scheduler) wakeLocked() {
	for len(s.waiters) > 0 && (s.limit == 0 || s.running < s.limit) {
		ch := s.waiters[0]
		s.waiters[0] = nil
		s.waiters = s.waiters[1:]
		s.running++
		close(ch)
	}
}

// Acquire 占用一个运行名额，必要时排队；ctx 结束时放弃排队并返回 ctx.Err()。
func (s *Scheduler) Acquire(ctx context.Context) error {
	s.mu.Lock()
	if len(s.waiters) == 0 && (s.limit == 0 || s.running < s.limit) {
		s.running++
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for i, w := range s.waiters {
			if w == ch {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				s.mu.Unlock()
				return ctx.Err()
			}
		}
		s.mu.Unlock()
		// 已被唤醒（名额已记在我们名下），归还后再报告取消。
		s.Release()
		return ctx.Err()
	}
}

// Release 归还名额并唤醒下一个排队者。
func (s *Scheduler) Release() {
	s.mu.Lock()
	s.running--
	s.wakeLocked()
	s.mu.Unlock()
}

// Counts 返回当前运行数与排队数（供 /metrics 的 gauge 使用）。
func (s *Scheduler) Counts() (running, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running, len(s.waiters)
}

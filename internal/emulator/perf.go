package emulator

import (
	"context"
	"slices"
	"sync"
)

// PerfConfig 配置 Perf（模拟器的性能模型）。
type PerfConfig struct {
	// MaxNumSeqs 是同时运行的请求上限（vLLM --max-num-seqs），0 不限。
	MaxNumSeqs int
	// BlockSize 是每个 KV 块的 token 数，0 为 DefaultBlockSize。
	BlockSize int
	// NumBlocks 是 KV cache 的总块数（vLLM --num-gpu-blocks-override），0 不限。
	NumBlocks int
	// PrefixCaching 打开自动前缀缓存。
	PrefixCaching bool
}

// Seq 是 Perf 调度的一个请求（vLLM 的 Request）：提示的块哈希、提示与已生成的 token 数、
// 持有的 KV 块，以及它与处理 goroutine 之间的两个信号（被调度、被抢占）。
//
// 并发约定：字段只在 Perf 的锁内读写；处理 goroutine 通过 Perf 的方法访问。
type Seq struct {
	hashes    []uint64
	prompt    int
	generated int
	blocks    []*kvBlock
	ready     chan struct{} // 被调度（进入 running）时关闭；每次入队重新创建
	preempt   chan struct{} // 被抢占时关闭；每次被调度时重新创建
	running   bool
	queued    bool
	done      bool
	preempts  int
	cached    int // 第一次调度时命中的 token 数（usage.prompt_tokens_details.cached_tokens）
	compute   int // 最近一次调度时需要（重新）计算的 token 数
}

// NewSeq 返回一个提示为 prompt 个 token、完整块哈希为 hashes 的请求（hashes 可为空：
// 不开前缀缓存时不需要哈希）。
func NewSeq(hashes []uint64, prompt int) *Seq { return &Seq{hashes: hashes, prompt: prompt} }

// Perf 是模拟器的调度与 KV cache 模型，按 vLLM v1 调度器的规则：
//
//   - 等待队列 FCFS：队头放不下（运行数达到 MaxNumSeqs 或 KV 块不够）时整个队列等待，
//     不跳过队头（vLLM 的 `if new_blocks is None: break`）。
//   - 调度时先查前缀缓存，只为未命中的部分分配新块；需要计算的 token 数 = 提示 + 已生成
//     − 命中（被抢占后重新调度的请求按 recompute 模式重算未命中的全部 token）。
//   - 运行中的请求每生成一步要为新 token 分配槽位；分配失败时抢占最近被调度的运行请求
//     （running 列表末尾，可能就是自己），释放它的块、把它放回等待队列的队头，直到分配
//     成功或自己被抢占（vLLM 的 `preempted_req = self.running.pop()` 循环）。
//   - 前缀缓存的查询/命中计数只统计首次调度，被抢占后重新调度的查找另计（与 vLLM 新版
//     PrefixCacheStats.record(preempted=…) 相同，不混入 vllm:prefix_cache_* 计数器）。
//
// 并发约定：全部方法并发安全（一把互斥锁）；每个 Seq 由一个处理 goroutine 驱动：
// Admit 成功后必须恰好调用一次 Release（被抢占后再次 Admit 也不例外）。
type Perf struct {
	mu          sync.Mutex
	limit       int
	kv          *KVCache
	running     []*Seq
	waiting     []*Seq
	queries     uint64
	hits        uint64
	preemptions uint64
}

// NewPerf 按 cfg 构造性能模型。
func NewPerf(cfg PerfConfig) *Perf {
	return &Perf{limit: cfg.MaxNumSeqs, kv: NewKVCache(cfg.BlockSize, cfg.NumBlocks, cfg.PrefixCaching)}
}

// BlockSize 返回 KV 块大小。
func (p *Perf) BlockSize() int { return p.kv.BlockSize() }

// SetLimit 在运行中修改 max_num_seqs；放宽时立即调度能运行的排队者。
func (p *Perf) SetLimit(limit int) {
	p.mu.Lock()
	p.limit = limit
	p.scheduleLocked()
	p.mu.Unlock()
}

// Admit 把 s 放入等待队列（被抢占的请求已在队头，不重复入队），等到它被调度；
// ctx 结束时放弃排队并返回 ctx.Err()。成功返回后，s 持有容纳提示 + 已生成 token 的块。
func (p *Perf) Admit(ctx context.Context, s *Seq) error {
	p.mu.Lock()
	if !s.queued && !s.running {
		s.queued = true
		s.ready = make(chan struct{})
		p.waiting = append(p.waiting, s)
		p.scheduleLocked()
	}
	ready := s.ready
	p.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// scheduleLocked 在持锁时按 FCFS 把队头转为运行，直到运行数满或队头的块分配失败。
func (p *Perf) scheduleLocked() {
	for len(p.waiting) > 0 && (p.limit == 0 || len(p.running) < p.limit) {
		s := p.waiting[0]
		total := p.clamp(s.prompt + s.generated)
		hits := p.kv.Hit(s.hashes, total)
		if !p.kv.Allocate(&s.blocks, hits, total) {
			return
		}
		p.kv.Commit(s.blocks, s.hashes)
		hit := len(hits) * p.kv.BlockSize()
		// 前缀缓存关闭时 vLLM 不做查找，也不记查询（KVCacheManager.get_computed_blocks 在
		// enable_caching 为假时直接返回）：计数器停在 0，命中率不可得，而不是 0。
		if s.preempts == 0 && p.kv.caching {
			p.queries += uint64(total)
			p.hits += uint64(hit)
			s.cached = hit
		}
		s.compute = total - hit
		p.waiting[0] = nil
		p.waiting = p.waiting[1:]
		s.queued, s.running = false, true
		s.preempt = make(chan struct{})
		p.running = append(p.running, s)
		close(s.ready)
	}
}

// clamp 把一个请求占用的 token 数限制在 KV 总容量内。单条 vLLM 请求不会超过
// max_model_len（配置校验保证容量至少放得下一条），但模拟器把多提示的 completions
// 批量请求与 n > 1 记成一条序列，它们可能更长；不限制的话这样的请求永远调度不上，
// 还会以队头阻塞卡住整个等待队列。限制后它最多独占全部 KV，代价仍然可见。
func (p *Perf) clamp(tokens int) int {
	if p.kv.total > 0 {
		return min(tokens, p.kv.total*p.kv.blockSize)
	}
	return tokens
}

// Grow 为 s 的下一步分配槽位，使它持有容纳 tokens（提示 + 已生成）个 token 的块。
// 块不够时按 vLLM 的规则抢占最近被调度的运行请求；返回 false 表示 s 自己被抢占了
// （或此前已被别人抢占），调用方应等待重新调度（Admit）后重算。
func (p *Perf) Grow(s *Seq, tokens int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !s.running {
		return false
	}
	s.generated = tokens - s.prompt
	for !p.kv.Allocate(&s.blocks, nil, p.clamp(tokens)) {
		victim := p.running[len(p.running)-1]
		p.preemptLocked(victim)
		if victim == s {
			return false
		}
	}
	return true
}

// preemptLocked 抢占 v：释放它的块（已登记的块留在前缀缓存里，重新调度时大多会命中），
// 放回等待队列队头，并通知它的处理 goroutine。
func (p *Perf) preemptLocked(v *Seq) {
	p.kv.Free(v.blocks)
	v.blocks = v.blocks[:0]
	if i := slices.Index(p.running, v); i >= 0 {
		p.running = slices.Delete(p.running, i, i+1)
	}
	v.running, v.queued = false, true
	v.preempts++
	v.ready = make(chan struct{})
	p.waiting = slices.Insert(p.waiting, 0, v)
	p.preemptions++
	close(v.preempt)
}

// CommitGenerated 把 hashes（提示 + 已生成 token 的链式块哈希）中 s 持有的完整块登记进
// 前缀缓存——vLLM 在解码填满一块时同样登记它。s 不在运行时（已被抢占）什么都不做。
func (p *Perf) CommitGenerated(s *Seq, hashes []uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.running {
		p.kv.Commit(s.blocks, hashes)
	}
}

// Preempted 返回在 s 当前这次运行期间被抢占时关闭的通道（处理 goroutine 在等待
// 下一步的时刻时同时监听它）。
func (p *Perf) Preempted(s *Seq) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return s.preempt
}

// Release 结束 s：释放块、移出运行或等待队列，并调度等待者。可重复调用。
func (p *Perf) Release(s *Seq) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.done {
		return
	}
	s.done = true
	if s.running {
		p.kv.Free(s.blocks)
		s.blocks = nil
		if i := slices.Index(p.running, s); i >= 0 {
			p.running = slices.Delete(p.running, i, i+1)
		}
		s.running = false
	}
	if s.queued {
		if i := slices.Index(p.waiting, s); i >= 0 {
			p.waiting = slices.Delete(p.waiting, i, i+1)
		}
		s.queued = false
	}
	p.scheduleLocked()
}

// Cached 返回 s 首次调度时前缀命中的 token 数；Compute 返回最近一次调度时需要计算的
// token 数；Preempts 返回 s 被抢占的次数。
func (p *Perf) Cached(s *Seq) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return s.cached
}

// Compute 见 Cached。
func (p *Perf) Compute(s *Seq) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return s.compute
}

// Preempts 见 Cached。
func (p *Perf) Preempts(s *Seq) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return s.preempts
}

// PerfStats 是 Perf 的一次快照（/metrics 的 gauge 与计数器取自它）。
type PerfStats struct {
	Running, Waiting int
	KVUsage          float64 // ref > 0 的块 / 总块数；容量不限时为 0
	BlocksInUse      int
	CachedBlocks     int
	PrefixQueries    uint64 // token
	PrefixHits       uint64 // token
	Preemptions      uint64
	Limit            int
	UnlimitedKV      bool
}

// Stats 返回当前快照。
func (p *Perf) Stats() PerfStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PerfStats{Running: len(p.running), Waiting: len(p.waiting), KVUsage: p.kv.Usage(),
		BlocksInUse: p.kv.InUse(), CachedBlocks: p.kv.Cached(), PrefixQueries: p.queries, PrefixHits: p.hits,
		Preemptions: p.preemptions, Limit: p.limit, UnlimitedKV: p.kv.total <= 0}
}

// Running 返回当前运行数（批大小，供批相关时序使用）。
func (p *Perf) Running() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.running)
}

// BatchScale 返回批大小为 running 时的时长倍数：
// 1 + (factor − 1)·(running − 1)/(maxNumSeqs − 1)，与 llm-d-inference-sim 的
// time-factor-under-load 相同——单个请求时为 1，运行数达到 maxNumSeqs 时为 factor，
// 中间线性。factor ≤ 1、maxNumSeqs ≤ 1 或 running ≤ 1 时为 1；running 超过
// maxNumSeqs（不会发生，除非上限在运行中调低）时按 maxNumSeqs 计。
func BatchScale(factor float64, running, maxNumSeqs int) float64 {
	if factor <= 1 || maxNumSeqs <= 1 || running <= 1 {
		return 1
	}
	running = min(running, maxNumSeqs)
	return 1 + (factor-1)*float64(running-1)/float64(maxNumSeqs-1)
}

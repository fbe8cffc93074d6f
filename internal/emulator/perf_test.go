package emulator

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// seqHashes 返回由 ids 决定的链式块哈希：相同前缀的 ids 得到相同前缀的哈希。
func seqHashes(bs int, ids ...uint64) []uint64 {
	h := NewTokenHasher(bs)
	for _, id := range ids {
		for i := 0; i < bs; i++ {
			h.Token(id*1000 + uint64(i))
		}
	}
	return h.Hashes
}

// TestTokenHasherChained 验证哈希是链式的：相同的块内容在不同前缀之后哈希不同，
// 不满一块的尾部不产出哈希，Text 与 tokenize 的切分一致。
func TestTokenHasherChained(t *testing.T) {
	a := seqHashes(4, 1, 2, 3)
	b := seqHashes(4, 1, 2, 4)
	c := seqHashes(4, 9, 2, 3)
	if len(a) != 3 || a[0] != b[0] || a[1] != b[1] || a[2] == b[2] {
		t.Fatalf("shared prefix must share hashes: %x %x", a, b)
	}
	if c[1] == a[1] || c[2] == a[2] {
		t.Fatal("same block content after a different prefix must hash differently")
	}
	h := NewTokenHasher(4)
	h.Text("one two three four five six seven") // 7 个 token：一个完整块
	if len(h.Hashes) != 1 {
		t.Fatalf("7 tokens at block size 4 = 1 full block, got %d", len(h.Hashes))
	}
}

// TestKVCacheHitNeverWholePrompt 验证命中上限 (tokens−1)/B：整段提示都已缓存时，
// 恰为块倍数长度的提示少命中一个块（vLLM 要重算最后一个 token）。
func TestKVCacheHitNeverWholePrompt(t *testing.T) {
	c := NewKVCache(16, 0, true)
	hs := seqHashes(16, 1, 2, 3, 4)
	var seq []*kvBlock
	if !c.Allocate(&seq, nil, 64) {
		t.Fatal("alloc")
	}
	c.Commit(seq, hs)
	c.Free(seq)
	for _, tc := range []struct{ tokens, want int }{{64, 3}, {65, 4}, {80, 4}, {17, 1}, {16, 0}, {1, 0}} {
		if got := len(c.Hit(hs, tc.tokens)); got != tc.want {
			t.Errorf("tokens %d: hit %d blocks, want %d", tc.tokens, got, tc.want)
		}
	}
	// 第二块不同：链式哈希让其后的块都不命中。
	other := seqHashes(16, 1, 9, 3, 4)
	if got := len(c.Hit(other, 65)); got != 1 {
		t.Fatalf("divergent second block: hit %d, want 1", got)
	}
	if got := len(NewKVCache(16, 0, false).Hit(hs, 65)); got != 0 {
		t.Fatalf("caching off must never hit, got %d", got)
	}
}

// TestKVCacheRefCountAndLRU 验证引用计数（共享块只占一份容量）、使用率只算 ref>0 的块、
// 驱逐先用从未登记的空闲块、再按 LRU 驱逐 ref 为 0 的缓存块。
func TestKVCacheRefCountAndLRU(t *testing.T) {
	c := NewKVCache(4, 6, true)
	ha := seqHashes(4, 1, 2)
	var a []*kvBlock
	if !c.Allocate(&a, nil, 9) { // 3 块：两个满块 + 尾块
		t.Fatal("alloc a")
	}
	c.Commit(a, ha)
	var b []*kvBlock
	hits := c.Hit(ha, 9)
	if len(hits) != 2 || !c.Allocate(&b, hits, 9) {
		t.Fatalf("b should hit 2 blocks, got %d", len(hits))
	}
	if c.InUse() != 4 || c.Usage() != 4.0/6 {
		t.Fatalf("shared blocks counted once: in use %d usage %v", c.InUse(), c.Usage())
	}
	c.Free(a)
	c.Free(b)
	if c.InUse() != 0 || c.Usage() != 0 || c.Cached() != 2 {
		t.Fatalf("after free: in use %d, cached %d", c.InUse(), c.Cached())
	}
	// 6 块容量、2 块缓存着：分配 4 块用掉从未登记的块，缓存仍在。
	var d []*kvBlock
	if !c.Allocate(&d, nil, 16) || c.Cached() != 2 {
		t.Fatalf("pristine blocks first: cached %d", c.Cached())
	}
	// 再要 1 块：驱逐 LRU 头。a 逆序释放后 b 又逆序释放，第二块（较晚的前缀块）先被驱逐。
	var e []*kvBlock
	if !c.Allocate(&e, nil, 1) || c.Cached() != 1 {
		t.Fatalf("evict one: cached %d", c.Cached())
	}
	if got := len(c.Hit(ha, 9)); got != 1 {
		t.Fatalf("the first prefix block survives eviction, hit %d", got)
	}
	// 容量用尽：再分配失败且不改变状态。
	var f []*kvBlock
	if c.Allocate(&f, nil, 8) || len(f) != 0 || c.InUse() != 5 {
		t.Fatalf("over capacity must fail cleanly: %d blocks, in use %d", len(f), c.InUse())
	}
	// 复活 ref 为 0 的命中块也要占空闲额度。
	hits = c.Hit(ha, 9)
	var g []*kvBlock
	if c.Allocate(&g, hits, 9) { // 命中 1 块（需复活）+ 新 2 块 > 剩余 1 块
		t.Fatal("reviving a cached block needs a free slot too")
	}
}

// TestPerfPrefixStats 验证前缀缓存计数的解析值：N 个请求共享 k 个完整块的前缀、
// 各自有不同的尾部，依次执行：查询 = Σ 提示长度，命中 = (N−1)·k·B。
func TestPerfPrefixStats(t *testing.T) {
	const bs, k, n, tail = 16, 3, 5, 10
	p := NewPerf(PerfConfig{BlockSize: bs, PrefixCaching: true})
	ctx := context.Background()
	for i := 0; i < n; i++ {
		ids := []uint64{1, 2, 3, uint64(100 + i)} // 3 个共享块 + 1 个各自的块
		s := NewSeq(seqHashes(bs, ids...), k*bs+bs+tail)
		if err := p.Admit(ctx, s); err != nil {
			t.Fatal(err)
		}
		want := 0
		if i > 0 {
			want = k * bs
		}
		if p.Cached(s) != want || p.Compute(s) != k*bs+bs+tail-want {
			t.Fatalf("request %d: cached %d compute %d, want cached %d", i, p.Cached(s), p.Compute(s), want)
		}
		p.Release(s)
	}
	st := p.Stats()
	if st.PrefixQueries != n*(k*bs+bs+tail) || st.PrefixHits != (n-1)*k*bs {
		t.Fatalf("queries %d hits %d", st.PrefixQueries, st.PrefixHits)
	}
	if st.Running != 0 || st.Waiting != 0 || st.Preemptions != 0 || !st.UnlimitedKV {
		t.Fatalf("stats %+v", st)
	}
}

// TestPerfPreemptsMostRecent 用同步调用走一遍 vLLM 的抢占规则：块不够时抢占最近被调度
// 的运行请求，它回到等待队列队头；释放后它被重新调度并按（提示 + 已生成 − 命中）重算；
// 重新调度的前缀查找不计入 prefix_cache 计数器。
func TestPerfPreemptsMostRecent(t *testing.T) {
	const bs = 4
	p := NewPerf(PerfConfig{BlockSize: bs, NumBlocks: 6, PrefixCaching: true})
	ctx := context.Background()
	a := NewSeq(seqHashes(bs, 1, 2), 8) // 2 块
	b := NewSeq(seqHashes(bs, 3, 4), 8) // 2 块
	for _, s := range []*Seq{a, b} {
		if err := p.Admit(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if st := p.Stats(); st.Running != 2 || st.BlocksInUse != 4 || st.KVUsage != 4.0/6 {
		t.Fatalf("after admit: %+v", st)
	}
	// a 生成到 12、16、20 个 token（3、4、5 块）：第三次没有空闲块，抢占 b（最近调度）。
	if !p.Grow(a, 12) || !p.Grow(a, 16) || !p.Grow(a, 20) {
		t.Fatal("a must keep running")
	}
	select {
	case <-p.Preempted(b):
	default:
		t.Fatal("b must be preempted")
	}
	if st := p.Stats(); st.Running != 1 || st.Waiting != 1 || st.Preemptions != 1 {
		t.Fatalf("after preemption: %+v", st)
	}
	if p.Grow(b, 9) {
		t.Fatal("a preempted request cannot grow")
	}
	// b 释放的两个块逆序进入 LRU，a 的第 5 块驱逐了 LRU 头（b 的第二块）；b 的第一块
	// 仍在缓存里。a 结束后 b 被重新调度：命中 1 块，需重算 8 − 4 = 4 个 token。
	p.Release(a)
	if err := p.Admit(ctx, b); err != nil {
		t.Fatal(err)
	}
	if p.Preempts(b) != 1 || p.Compute(b) != 4 || p.Cached(b) != 0 {
		t.Fatalf("b resumed: preempts %d compute %d cached %d", p.Preempts(b), p.Compute(b), p.Cached(b))
	}
	st := p.Stats()
	if st.PrefixQueries != 16 || st.PrefixHits != 0 {
		t.Fatalf("re-admission lookups are not counted: %+v", st)
	}
	p.Release(b)
	p.Release(b) // 可重复调用
	if st := p.Stats(); st.Running != 0 || st.BlocksInUse != 0 {
		t.Fatalf("end: %+v", st)
	}
}

// TestPerfSelfPreemption 验证自己是最近被调度的请求时，分配失败抢占的是自己。
func TestPerfSelfPreemption(t *testing.T) {
	p := NewPerf(PerfConfig{BlockSize: 4, NumBlocks: 4})
	ctx := context.Background()
	a, b := NewSeq(nil, 8), NewSeq(nil, 8)
	_ = p.Admit(ctx, a)
	_ = p.Admit(ctx, b)
	if p.Grow(b, 9) {
		t.Fatal("b is the most recent: it must preempt itself")
	}
	if !p.Grow(a, 9) { // b 的块已释放
		t.Fatal("a grows into b's freed blocks")
	}
	p.Release(a)
	p.Release(b)
}

// TestPerfFCFSAndLimit 验证 max_num_seqs 与队头阻塞：放不下的队头挡住后面的请求；
// ctx 取消的排队者被 Release 移出队列；SetLimit 放宽后立即调度。
func TestPerfFCFSAndLimit(t *testing.T) {
	p := NewPerf(PerfConfig{MaxNumSeqs: 1, BlockSize: 4, NumBlocks: 4})
	a := NewSeq(nil, 4)
	if err := p.Admit(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	b := NewSeq(nil, 4)
	if err := p.Admit(ctx, b); err == nil {
		t.Fatal("limit 1: b must wait")
	}
	if st := p.Stats(); st.Waiting != 1 {
		t.Fatalf("b waits: %+v", st)
	}
	p.Release(b)
	if st := p.Stats(); st.Waiting != 0 {
		t.Fatalf("cancelled b leaves the queue: %+v", st)
	}
	big := NewSeq(nil, 16) // 需要 4 块，a 占着 1 块
	small := NewSeq(nil, 1)
	p.SetLimit(0)
	done := make(chan struct{})
	go func() {
		_ = p.Admit(context.Background(), big)
		close(done)
	}()
	waitFor(t, func() bool { return p.Stats().Waiting == 1 })
	go func() { _ = p.Admit(context.Background(), small) }()
	waitFor(t, func() bool { return p.Stats().Waiting == 2 })
	if p.Stats().Running != 1 {
		t.Fatal("small must not overtake the blocked head")
	}
	p.Release(a)
	<-done
	waitFor(t, func() bool { st := p.Stats(); return st.Running == 1 && st.Waiting == 1 })
	p.Release(big)
	waitFor(t, func() bool { return p.Stats().Running == 1 })
	p.Release(small)
}

// waitFor 轮询 cond 直到为真（最多 5 秒，机器再忙也足够）。
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBatchScale 验证批倍数公式的取值。
func TestBatchScale(t *testing.T) {
	for _, tc := range []struct {
		f       float64
		run, mx int
		want    float64
	}{
		{3, 1, 5, 1}, {3, 5, 5, 3}, {3, 3, 5, 2}, {2, 2, 3, 1.5}, {1, 5, 5, 1}, {0, 5, 5, 1},
		{3, 9, 5, 3}, {3, 2, 1, 1}, {3, 0, 5, 1},
	} {
		if got := BatchScale(tc.f, tc.run, tc.mx); got != tc.want {
			t.Errorf("BatchScale(%v,%d,%d)=%v want %v", tc.f, tc.run, tc.mx, got, tc.want)
		}
	}
}

// TestPerfOversizedSequenceFits 验证超过 KV 总容量的序列（多提示批量请求记成的一条序列）
// 被限制在容量内：单独运行时能调度、能增长，不会永久卡住队列。
func TestPerfOversizedSequenceFits(t *testing.T) {
	p := NewPerf(PerfConfig{BlockSize: 4, NumBlocks: 4})
	s := NewSeq(nil, 40)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Admit(ctx, s); err != nil {
		t.Fatalf("oversized prompt must be admitted alone: %v", err)
	}
	if !p.Grow(s, 50) || p.Stats().BlocksInUse != 4 || p.Stats().KVUsage != 1 {
		t.Fatalf("oversized sequence grows within capacity: %+v", p.Stats())
	}
	p.Release(s)
}

// TestMetricsFromPerf 验证性能模型打开时三个计数器与 KV 使用率取自 Perf 的快照，
// 容量不限时 KV 使用率退回 running / max_num_seqs。
func TestMetricsFromPerf(t *testing.T) {
	st := PerfStats{KVUsage: 0.25, PrefixQueries: 100, PrefixHits: 48, Preemptions: 3}
	m := NewMetrics(prometheus.NewRegistry(), "m", func() (int, int, int) { return 1, 0, 4 }, func() PerfStats { return st })
	if testutil.ToFloat64(m.PrefixQueries) != 100 || testutil.ToFloat64(m.PrefixHits) != 48 ||
		testutil.ToFloat64(m.Preemptions) != 3 || testutil.ToFloat64(m.KVCacheUsage) != 0.25 {
		t.Fatal("perf-backed metrics")
	}
	st.UnlimitedKV, st.KVUsage = true, 0.9
	// 不模拟 KV 时不报一个服务没有的使用率（issue 37：曾回退为 running/max_num_seqs，满并发即 1.0）。
	if v := testutil.ToFloat64(m.KVCacheUsage); v != 0 {
		t.Fatalf("unlimited KV reports usage %v, want 0", v)
	}
	off := NewMetrics(prometheus.NewRegistry(), "m", func() (int, int, int) { return 0, 0, 0 }, nil)
	if off.PrefixQueries != nil || off.Preemptions != nil {
		t.Fatal("model off: no perf counters")
	}
}

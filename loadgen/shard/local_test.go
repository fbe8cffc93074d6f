package shard

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
)

// localProfile 是本机分片测试的三组闭环 Profile：三个并发档（预热、输出长度抖动、goodput SLO），
// 组间的请求数互不整除 4，各分片因此在每组领到不同数目的请求、在不同时刻跑完。
func localProfile() loadgen.Profile {
	return loadgen.Profile{InputLength: []int{32}, OutputLength: []int{16}, Seed: 11, Goodput: []string{"ttft:40"},
		OutputRangeRatioAbove: 0.5, OutputRangeRatioBelow: 0.5,
		Concurrency: []int{4, 8, 12}, NumRequests: []int{41, 66, 30}, Warmup: 5}
}

// collectSink 收下记录与分组回调；它本身不加锁——RunLocal 保证串行调用，-race 会抓住违反。
type collectSink struct {
	recs   []loadgen.Record
	begins []loadgen.Group
	ends   []loadgen.Summary
	onRec  func(*loadgen.Record) error
}

// WriteRecord 保存记录的副本，并在设置了 onRec 时交给它决定是否出错。
func (c *collectSink) WriteRecord(r *loadgen.Record) error {
	// 深拷贝（运行器复用 chunk 切片），并像分片结果的编码一样去掉单调时钟读数：Merge 看到的是墙钟时刻。
	cp := *r
	cp.ChunkTimes, cp.ChunkTokens = slices.Clone(r.ChunkTimes), slices.Clone(r.ChunkTokens)
	cp.Intended, cp.Sent, cp.Group.Start = r.Intended.Round(0), r.Sent.Round(0), r.Group.Start.Round(0)
	c.recs = append(c.recs, cp)
	if c.onRec != nil {
		return c.onRec(r)
	}
	return nil
}

// BeginGroup 记下开始的分组。
func (c *collectSink) BeginGroup(g loadgen.Group) error { c.begins = append(c.begins, g); return nil }

// EndGroup 记下合并后的汇总行。
func (c *collectSink) EndGroup(s loadgen.Summary) error { c.ends = append(c.ends, s); return nil }

// observer 把 collectSink 的方法接成钩子。
func (c *collectSink) observer() *loadgen.Observer {
	return &loadgen.Observer{OnRecord: c.WriteRecord, OnGroupStart: c.BeginGroup, OnGroupEnd: c.EndGroup}
}

// TestRunLocalShardsMatchesSingleProcess 是本机（进程内）分片的 1 对 4 比较，与
// TestShardedRunMatchesSingleProcess（真实子进程）相同的标准：三组的 Profile 先单进程跑一次，
// 再以 RunLocal 4 片跑一次。没有组间屏障时后两组按各分片跑完上一组的先后开始，
// 合并以 ErrSkew 拒绝（issue 16 的 driver 问题）；有屏障时：
//   - 合并成功，每组的偏差在默认界内，Merge 的行与"单进程对这 4 片全部记录的汇总"逐字段相等；
//   - 与真正的单进程运行相比，每个计数与和的列（请求、成功、失败、输出 token 分布、平均 prompt token、
//     TTFT/TPOT 样本数）完全相等；
//   - sink 每组恰好收到一次 BeginGroup（按组序）与一行合并后的 EndGroup，记录的全局序号不重不漏。
func TestRunLocalShardsMatchesSingleProcess(t *testing.T) {
	tgt := startShardEmulator(t)
	p := localProfile()
	single, err := loadgen.Run(context.Background(), tgt, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := &collectSink{}
	res, err := RunLocal(context.Background(), tgt, p, 4, sink.observer())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) != 3 || len(single) != 3 {
		t.Fatalf("merged %d groups, single %d; want 3", len(res.Groups), len(single))
	}
	for gi, mg := range res.Groups {
		got := mg.Summary
		if len(mg.HDR) != 0 || !slices.Equal(mg.Shards, []int{0, 1, 2, 3}) || len(mg.Missing) != 0 || got.Incomplete {
			t.Errorf("group %d: hdr=%v shards=%v missing=%v incomplete=%v", gi, mg.HDR, mg.Shards, mg.Missing, got.Incomplete)
		}
		if mg.Skew > DefaultMaxSkew {
			t.Errorf("group %d: skew %s over %s", gi, mg.Skew, DefaultMaxSkew)
		}
		one := single[gi]
		if got.NumPrompts != one.NumPrompts || got.Succeeded != one.Succeeded || got.Failed != one.Failed ||
			got.CompletionTokens != one.CompletionTokens || got.AvgPromptTokens != one.AvgPromptTokens || got.AvgContentTokens != one.AvgContentTokens ||
			got.Concurrency != one.Concurrency || got.TTFT.Count != one.TTFT.Count || got.TPOT.Count != one.TPOT.Count || got.TPOTSec.Count != one.TPOTSec.Count {
			t.Errorf("group %d: sharded %+v\nsingle %+v", gi, got, one)
		}
		// 吞吐的分母是各分片窗口之并（最早首发 → 最晚完成），不短于任何一个分片自己的窗口。
		var longest time.Duration
		for _, r := range res.Shards {
			first, last := r.Groups[gi].Stats.Window()
			longest = max(longest, last.Sub(first))
		}
		if got.TotalTime < longest {
			t.Errorf("group %d: union window %s shorter than shard window %s", gi, got.TotalTime, longest)
		}
		t.Logf("group %d: skew %s; window union %s (longest shard %s, single process %s); TTFT p50/p99 single %s/%s sharded %s/%s; out tok/s single %.0f sharded %.0f",
			gi, mg.Skew, got.TotalTime, longest, one.TotalTime, one.TTFT.P50, one.TTFT.P99, got.TTFT.P50, got.TTFT.P99, one.OutputTokenThroughput, got.OutputTokenThroughput)
	}
	if len(sink.begins) != 3 || len(sink.ends) != 3 {
		t.Fatalf("sink saw %d BeginGroup and %d EndGroup, want 3 each", len(sink.begins), len(sink.ends))
	}
	for i := range 3 {
		if sink.begins[i].Index != i || sink.begins[i].Concurrency != p.Concurrency[i] || !reflect.DeepEqual(sink.ends[i], res.Groups[i].Summary) {
			t.Errorf("group %d: begin %+v, end row %+v", i, sink.begins[i], sink.ends[i])
		}
	}
	seen := map[[2]int]bool{}
	for _, r := range sink.recs {
		k := [2]int{r.Group.Index, r.Index}
		if seen[k] {
			t.Fatalf("request %v written twice", k)
		}
		seen[k] = true
	}
	if len(seen) != 41+66+30 {
		t.Fatalf("%d distinct records, want %d", len(seen), 41+66+30)
	}
}

// TestRunLocalShardsWithoutBarrierIsRefused 钉住屏障为什么必要：同样的三组 Profile，4 个 RunShard
// 只对齐第一组的 StartAt（driver 原来的做法），被拖慢的分片 0 让后面的分组相差超过 MaxSkew，
// 合并以 ErrSkew 拒绝。分片 0 的每个请求经一个慢 sink 多花 30ms，使偏差与机器忙闲无关。
func TestRunLocalShardsWithoutBarrierIsRefused(t *testing.T) {
	tgt := startShardEmulator(t)
	p := localProfile()
	start := time.Now().Add(500 * time.Millisecond)
	results := make([]*Result, 4)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			var sink *loadgen.Observer
			if i == 0 {
				sink = (&collectSink{onRec: func(*loadgen.Record) error { time.Sleep(30 * time.Millisecond); return nil }}).observer()
			}
			results[i], _ = Run(context.Background(), tgt, p, loadgen.Shard{Index: i, Count: 4, StartAt: start}, sink)
		})
	}
	wg.Wait()
	if _, err := MergeGroups(MergeOptions{MaxSkew: 200 * time.Millisecond}, results...); !errors.Is(err, ErrSkew) {
		t.Fatalf("merge without a barrier: %v, want ErrSkew", err)
	}
}

// TestRunLocalShardsShardDies 验证一个分片中途死掉（它的 ctx 被取消，或它的记录写入失败）时：
// 其余分片不会卡在屏障上、照常跑完后面的分组；死掉的分片在它中断的分组与之后的分组里被点名为缺失，
// 这些分组 Incomplete；错误是 *MissingError，写着该分片的序号与它自己的错误。
func TestRunLocalShardsShardDies(t *testing.T) {
	tgt := startShardEmulator(t)
	p := localProfile()
	for _, tc := range []struct {
		name, why, reason string
		victim            int
	}{
		{"ctx-cancelled", "context canceled", loadgen.LossCancelled, 2},
		{"sink-fails", "disk full", loadgen.LossFailed, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // 卡死时以超时失败而不是挂起
			defer cancel()
			victimCtx, kill := context.WithCancel(ctx)
			defer kill()
			var fired atomic.Bool
			sink := &collectSink{onRec: func(r *loadgen.Record) error {
				// 第 1 组第三个属于受害分片的请求完成时让它死掉（此时它已交回过记录，中断的组有数据）。
				if r.Group.Index != 1 || r.Index%4 != tc.victim || r.Index/4 < 2 || !fired.CompareAndSwap(false, true) {
					return nil
				}
				if tc.name == "ctx-cancelled" {
					kill()
					return nil
				}
				return errors.New("disk full")
			}}
			res, err := runLocal(ctx, tgt, p, 4, sink.observer(), func(i int, c context.Context) context.Context {
				if i == tc.victim {
					return victimCtx
				}
				return c
			})
			if ctx.Err() != nil {
				t.Fatalf("the run hit the 2-minute guard (a shard stuck at the barrier?): %v", err)
			}
			var me *MissingError
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want a MissingError", err)
			}
			if len(me.Lost) != 1 || me.Lost[0].Shard != tc.victim || me.Lost[0].Reason != tc.reason || !strings.Contains(me.Lost[0].Detail, tc.why) {
				t.Fatalf("lost shards %v, want only shard %d, %s, with %q", me.Lost, tc.victim, tc.reason, tc.why)
			}
			// 缺分片的行自己带着缺失的分片与原因（summary.json / HTML 从这里读）。
			if ms := res.Groups[1].Summary.MissingShards; len(ms) != 1 || ms[0].Shard != tc.victim || ms[0].Reason != tc.reason {
				t.Fatalf("group 1 MissingShards %v, want shard %d (%s)", ms, tc.victim, tc.reason)
			}
			if _, ok := me.Groups[0]; ok || !slices.Equal(me.Groups[1], []int{tc.victim}) || !slices.Equal(me.Groups[2], []int{tc.victim}) {
				t.Fatalf("missing by group %v, want shard %d missing from groups 1 and 2 only", me.Groups, tc.victim)
			}
			if len(res.Groups) != 3 || res.Groups[0].Summary.Incomplete || !res.Groups[1].Summary.Incomplete || !res.Groups[2].Summary.Incomplete {
				t.Fatalf("incomplete flags: %d groups %+v", len(res.Groups), res.Summaries())
			}
			// 其余三片跑完了第 2 组：它们的请求一个不少。
			others := 0
			for i := range 4 {
				if i != tc.victim {
					others += (30 - i + 3) / 4 // 全局序号 i, i+4, … < 30 属于分片 i
				}
			}
			if g := res.Groups[2].Summary; g.NumPrompts != others || !slices.Equal(res.Groups[2].Shards, slices.DeleteFunc([]int{0, 1, 2, 3}, func(i int) bool { return i == tc.victim })) {
				t.Fatalf("group 2: %d requests from shards %v, want %d from the three live shards", g.NumPrompts, res.Groups[2].Shards, others)
			}
			if !strings.Contains(err.Error(), "shard "+string(rune('0'+tc.victim))) {
				t.Fatalf("error does not name shard %d: %v", tc.victim, err)
			}
		})
	}
}

// TestRunLocalShardsCancelled 验证整个运行被取消时不会卡在屏障上：全部分片停下，错误带着
// context.Canceled，已开始的分组标为不完整。
func TestRunLocalShardsCancelled(t *testing.T) {
	tgt := startShardEmulator(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int64
	sink := &collectSink{onRec: func(r *loadgen.Record) error {
		if r.Group.Index == 1 && n.Add(1) == 10 {
			cancel()
		}
		return nil
	}}
	done := make(chan struct{})
	var res *LocalResult
	var err error
	go func() {
		defer close(done)
		res, err = RunLocal(ctx, tgt, localProfile(), 4, sink.observer())
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("RunLocal did not return within 2 minutes of a cancelled ctx")
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrMissing) {
		t.Fatalf("err = %v, want context.Canceled and ErrMissing", err)
	}
	if res == nil || len(res.Groups) < 2 || res.Groups[0].Summary.Incomplete || !res.Groups[1].Summary.Incomplete {
		t.Fatalf("groups after cancel: %+v", res)
	}
	// issue 22：取消的分片被点名、原因是 cancelled（不是 failed 或 killed），缺失的分组行自己也带着。
	var me *MissingError
	if !errors.As(err, &me) {
		t.Fatalf("err = %v, want a MissingError", err)
	}
	assertAllCancelled(t, "MissingError.Lost", me.Lost, 4)
	assertAllCancelled(t, "group 1 MissingShards", res.Groups[1].Summary.MissingShards, 4)
	if !slices.Equal(me.Groups[1], []int{0, 1, 2, 3}) {
		t.Fatalf("missing by group %v, want all four shards missing from group 1", me.Groups)
	}
}

// TestRunLocalShardsCancelledBeforeStart 验证 ctx 在开始前就已取消（例如 Ctrl-C 落在启动的瞬间）时，
// 错误仍是点名全部分片、原因为 cancelled 的 *MissingError（errors.Is 为 ErrMissing 与
// context.Canceled），而不只是几个拼起来的 "context canceled"。
func TestRunLocalShardsCancelledBeforeStart(t *testing.T) {
	tgt := startShardEmulator(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := RunLocal(ctx, tgt, localProfile(), 3, nil)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrMissing) {
		t.Fatalf("err = %v, want context.Canceled and ErrMissing", err)
	}
	var me *MissingError
	if !errors.As(err, &me) {
		t.Fatalf("err = %v, want a MissingError", err)
	}
	assertAllCancelled(t, "MissingError.Lost", me.Lost, 3)
	for i := range 3 {
		if !strings.Contains(err.Error(), fmt.Sprintf("shard %d: cancelled", i)) {
			t.Fatalf("error does not name shard %d as cancelled: %v", i, err)
		}
	}
}

// assertAllCancelled 检查 lost 恰好是分片 0..n-1、原因都是 LossCancelled。
func assertAllCancelled(t *testing.T, what string, lost []loadgen.ShardLoss, n int) {
	t.Helper()
	if len(lost) != n {
		t.Fatalf("%s: %v, want all %d shards", what, lost, n)
	}
	for i, l := range lost {
		if l.Shard != i || l.Reason != loadgen.LossCancelled {
			t.Fatalf("%s[%d] = %+v, want shard %d reason %q", what, i, l, i, loadgen.LossCancelled)
		}
	}
}

// TestLocalBarrier 验证屏障本身：所有还在运行的分片都到达才放行，且一起放行；离开的分片不再被等待；
// 等待中被取消的分片得到 ErrBarrier 与 ctx 的错误并离开屏障；离开后再调用立即报错。
func TestLocalBarrier(t *testing.T) {
	b := NewLocalBarrier(3)
	released := make(chan int, 3)
	wait := func(i, group int) {
		go func() {
			if err := b.For(i)(context.Background(), group); err != nil {
				t.Errorf("shard %d: %v", i, err)
			}
			released <- i
		}()
	}
	wait(0, 1)
	wait(2, 1)
	select {
	case i := <-released:
		t.Fatalf("shard %d released before shard 1 arrived", i)
	case <-time.After(50 * time.Millisecond):
	}
	b.Leave(1) // 分片 1 死掉：其余两片不再等它
	got := []int{<-released, <-released}
	slices.Sort(got)
	if !slices.Equal(got, []int{0, 2}) {
		t.Fatalf("released %v", got)
	}
	if err := b.For(1)(context.Background(), 2); !errors.Is(err, ErrBarrier) {
		t.Fatalf("shard that left: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- b.For(0)(ctx, 2) }()
	cancel()
	if err := <-errc; !errors.Is(err, ErrBarrier) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "shard 0 before group 2") {
		t.Fatalf("cancelled wait: %v", err)
	}
	// 分片 0 被取消后离开：剩下的分片 2 独自到达即放行。
	if err := b.For(2)(context.Background(), 2); err != nil {
		t.Fatalf("last shard: %v", err)
	}
}

// TestShardGroupsRunsOnlyThoseGroups 验证 Shard.Groups（每组一个 Job 的做法）：只跑第 k 组的分片
// 结果里只有第 k 组，请求数与输出 token 分布（由全局序号与分组序号决定）与跑全部分组时的那一组相同；
// 越界或重复的分组在发请求之前被拒绝；ReadResultOf 按序号与分组挑出结果行。
func TestShardGroupsRunsOnlyThoseGroups(t *testing.T) {
	tgt := startShardEmulator(t)
	p := localProfile()
	full, err := Run(context.Background(), tgt, p, loadgen.Shard{Index: 1, Count: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	for _, k := range []int{2, 0} {
		res, err := Run(context.Background(), tgt, p, loadgen.Shard{Index: 1, Count: 4, Groups: []int{k}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Groups) != 1 || res.Groups[0].Group != k || !slices.Equal(res.Only, []int{k}) {
			t.Fatalf("groups %v: got %d groups (first %d), only %v", []int{k}, len(res.Groups), res.Groups[0].Group, res.Only)
		}
		got, _, err1 := loadgen.MergeShardGroups([]*loadgen.ShardGroup{&res.Groups[0]}, loadgen.SLO{})
		want, _, err2 := loadgen.MergeShardGroups([]*loadgen.ShardGroup{&full.Groups[k]}, loadgen.SLO{})
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		if got.NumPrompts != want.NumPrompts || got.CompletionTokens != want.CompletionTokens || got.Concurrency != want.Concurrency || got.NumPrompts == 0 {
			t.Fatalf("group %d alone: %d requests, tokens %+v, c%d; in the full run: %d requests, tokens %+v, c%d", k,
				got.NumPrompts, got.CompletionTokens, got.Concurrency, want.NumPrompts, want.CompletionTokens, want.Concurrency)
		}
		if err := WriteResult(&buf, res); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []int{0, 2} {
		r, err := ReadResultOf(strings.NewReader(buf.String()), 1, []int{k})
		if err != nil || r.Groups[0].Group != k {
			t.Fatalf("ReadResultOf groups [%d]: %v", k, err)
		}
	}
	if _, err := ReadResultOf(strings.NewReader(buf.String()), 1, []int{1}); !errors.Is(err, loadgen.ErrBadShardResult) || !strings.Contains(err.Error(), "groups [1]") {
		t.Fatalf("no line for group 1: %v", err)
	}
	for _, g := range [][]int{{3}, {-1}, {1, 1}} {
		if _, err := Run(context.Background(), tgt, p, loadgen.Shard{Index: 0, Count: 4, Groups: g}, nil); !errors.Is(err, loadgen.ErrInvalidShard) {
			t.Errorf("groups %v: %v, want loadgen.ErrInvalidShard", g, err)
		}
	}
}

package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMergeHDRMatchesSingleDist 检查 HDR 路径：一个分片超出精确样本预算（改用 HDR）时，合并的
// 分位数与把全部样本记进同一个分布（同样超出预算）的结果逐位相同，并且 HDR 列出了该分布。
func TestMergeHDRMatchesSingleDist(t *testing.T) {
	single := newDist(1000, newBudget(10))
	parts := [2]*dist{newDist(1000, newBudget(10)), newDist(1000, newBudget(100))}
	for i := range 40 {
		v := int64(1000 + i*i*997)
		single.add(v, 1)
		parts[i%2].add(v, 1)
	}
	mk := func(d *dist) *ShardGroup {
		s := newStats(nil)
		s.e2e = d
		return &ShardGroup{Stats: encodeStats(s)}
	}
	tot, hdr, err := mergeStats([]*ShardGroup{mk(parts[0]), mk(parts[1])})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(hdr, []string{"e2e"}) {
		t.Fatalf("hdr %v", hdr)
	}
	all := newDist(1000, nil)
	all.merge(single)
	if got, want := tot.e2e.latency(), all.latency(); got != want {
		t.Fatalf("merged %+v\nsingle %+v", got, want)
	}
}

// TestMergeRefusesAndReports 检查合并的拒绝与报告：分片数或 Profile 不同、重复序号、开始时刻
// 相差超过界限都被拒绝；缺一个分片时返回不完整的行与点名该分片的错误；结果行能往返编码。
func TestMergeRefusesAndReports(t *testing.T) {
	em := startShardEmulator(t)
	p := Profile{Concurrency: []int{2}, InputLength: []int{8}, OutputLength: []int{4}, NumRequests: []int{9}, BucketInterval: 20 * time.Millisecond}
	start := time.Now().Add(200 * time.Millisecond)
	var res [3]*ShardResult
	tl := &tlCollect{}
	for i := range res {
		var sink *Observer
		if i == 0 {
			sink = tl.observer()
		}
		r, err := RunShard(context.Background(), em, Profile{Concurrency: []int{3}, InputLength: p.InputLength, OutputLength: p.OutputLength,
			NumRequests: p.NumRequests, BucketInterval: p.BucketInterval}, Shard{Index: i, Count: 3, StartAt: start}, sink)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteShardResult(&buf, r); err != nil {
			t.Fatal(err)
		}
		if res[i], err = ReadShardResultFor(strings.NewReader("noise\n"+buf.String()+"PASS\n"), i); err != nil {
			t.Fatal(err)
		}
	}
	// 分片 0 的调用方钩子照样收到它的 3 条记录、1 次分组开始与时间线行（分片自己也保留了时间线）。
	if tl.recs != 3 || tl.groups != 1 || tl.rows == 0 || tl.rows != len(res[0].Timeline) {
		t.Fatalf("shard 0 observer got %d records, %d group starts, %d timeline rows (result has %d)", tl.recs, tl.groups, tl.rows, len(res[0].Timeline))
	}
	rows, err := Merge(res[0], res[2])
	var me *MissingShardsError
	if !errors.As(err, &me) || !errors.Is(err, ErrShardMissing) || !reflect.DeepEqual(me.Groups[0], []int{1}) || !strings.Contains(err.Error(), "group 0 misses shards [1]") {
		t.Fatalf("missing shard: %v", err)
	}
	if len(rows) != 1 || !rows[0].Incomplete || rows[0].NumPrompts != 6 {
		t.Fatalf("rows %+v", rows)
	}
	full, err := Merge(res[:]...)
	if err != nil || full[0].NumPrompts != 9 || full[0].Incomplete {
		t.Fatalf("full merge %v %+v", err, full)
	}
	if tl := MergeTimeline(res[:]...); len(tl) == 0 {
		t.Fatal("no merged timeline rows")
	} else {
		done := 0
		for _, r := range tl {
			done += r.Completed
		}
		if done != 9 {
			t.Fatalf("timeline completed %d, want 9", done)
		}
	}
	other := *res[1]
	other.Profile = "x"
	dup := *res[1]
	late := *res[1]
	late.Groups = append([]ShardGroup(nil), res[1].Groups...)
	late.Groups[0].Config.ExecutionTime = late.Groups[0].Config.ExecutionTime.Add(5 * time.Second)
	for _, tc := range []struct {
		in   []*ShardResult
		want error
		msg  string
	}{
		{[]*ShardResult{res[0], &other}, ErrShardMismatch, "ran profile x"},
		{[]*ShardResult{res[0], res[1], &dup}, ErrShardMismatch, "shard 1 given twice"},
		{[]*ShardResult{res[0], &late, res[2]}, ErrShardSkew, "started 5."},
		{nil, ErrShardMismatch, "no shard results"},
	} {
		if _, err := Merge(tc.in...); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v, want %v %q", err, tc.want, tc.msg)
		}
	}
	if _, err := ReadShardResult(strings.NewReader("just logs\n")); !errors.Is(err, ErrBadShardResult) {
		t.Fatalf("no result line: %v", err)
	}
}

// observer 把 tlCollect 的方法接成全部钩子。
func (c *tlCollect) observer() *Observer {
	return &Observer{OnRecord: c.WriteRecord, OnGroupStart: c.BeginGroup, OnGroupEnd: c.EndGroup, OnProgress: c.Progress, OnTimeline: c.WriteTimeline}
}

// tlCollect 是接上了全部钩子的接收器，检查分片运行照样转发给调用方。
type tlCollect struct{ recs, groups, rows int }

// WriteRecord 计数。
func (c *tlCollect) WriteRecord(*Record) error { c.recs++; return nil }

// BeginGroup 计数。
func (c *tlCollect) BeginGroup(Group) error { c.groups++; return nil }

// EndGroup 不做事。
func (c *tlCollect) EndGroup(Summary) error { return nil }

// Progress 不做事。
func (c *tlCollect) Progress(Progress) {}

// WriteTimeline 计数。
func (c *tlCollect) WriteTimeline(Timeline) error { c.rows++; return nil }

// TestMergeErrorMeasured 测量合并的分位数误差（docs/loadgen.md "Merge error" 的数字来自这里）：
// 400,000 个确定的长尾时延样本（超过精确样本预算 exactCap，于是走 HDR）轮流分给 4 个分片，
// 各分片的统计经 JSON 编码往返后合并。合并结果与单进程（同一预算、同一批样本）逐位相同；
// 与全部样本的精确 numpy linear 分位数相比，最大相对误差不超过 HDR 的分辨率界 1/2048
// 再加 0.5µs 的单位舍入。计数、和、极值精确。
func TestMergeErrorMeasured(t *testing.T) {
	const n = 400_000
	single := newStats(newBudgets())
	parts := [4]*stats{}
	b := newBudgets()
	for i := range parts {
		parts[i] = newStats(b)
	}
	exact := make([]int64, 0, n)
	x := uint64(12345)
	for i := range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		// 1ms 起的长尾：u ∈ (0,1]，v = 1ms / u^0.7，最大约数秒。
		u := float64(x%1_000_000+1) / 1_000_000
		v := int64(1e6 / math.Pow(u, 0.7))
		single.e2e.add(v, 1)
		parts[i%4].e2e.add(v, 1)
		exact = append(exact, v)
	}
	var sgs []*ShardGroup
	for _, p := range parts {
		b, err := json.Marshal(encodeStats(p))
		if err != nil {
			t.Fatal(err)
		}
		var w statsWire
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		sgs = append(sgs, &ShardGroup{Stats: w})
	}
	tot, hdr, err := mergeStats(sgs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(hdr, "e2e") {
		t.Fatalf("hdr %v, want e2e (n=%d over exactCap=%d)", hdr, n, exactCap)
	}
	one := newStats(nil)
	one.merge(single)
	got, want := tot.e2e.latency(), one.e2e.latency()
	if got != want {
		t.Fatalf("merged %+v\nsingle process %+v", got, want)
	}
	ref := newDist(1000, nil)
	for _, v := range exact {
		ref.add(v, 1)
	}
	ps := []float64{50, 75, 90, 95, 99}
	gq, rq := tot.e2e.quantiles(ps...), ref.quantiles(ps...)
	worst := 0.0
	for i, p := range ps {
		rel := math.Abs(gq[i]-rq[i]) / rq[i]
		worst = max(worst, rel)
		if bound := 1.0/2048 + 500/rq[i]; rel > bound {
			t.Errorf("p%.0f: merged %.0fns, exact %.0fns: relative error %.2e over the bound %.2e", p, gq[i], rq[i], rel, bound)
		}
		t.Logf("p%.0f: merged %.0fns exact %.0fns relative error %.2e", p, gq[i], rq[i], rel)
	}
	if got.Count != n || got.Min != time.Duration(slices.Min(exact)) || got.Max != time.Duration(slices.Max(exact)) || tot.e2e.sum != ref.sum {
		t.Fatalf("count/min/max/sum: %d %s %s %g, want %d %d %d %g", got.Count, got.Min, got.Max, tot.e2e.sum, n, slices.Min(exact), slices.Max(exact), ref.sum)
	}
	t.Logf("max relative percentile error over p50..p99: %.2e (HDR bound 1/2048 = %.2e)", worst, 1.0/2048)
}

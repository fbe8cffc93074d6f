package loadgen

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
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
		return &ShardGroup{Stats: GroupStats{w: groupWire{statsWire: encodeStats(s)}}}
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
		b, err := json.Marshal(GroupStats{w: groupWire{statsWire: encodeStats(p)}})
		if err != nil {
			t.Fatal(err)
		}
		var w GroupStats
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

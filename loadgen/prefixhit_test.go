package loadgen_test

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/dataset"
)

// TestTraceReplayPrefixHitRateOnEmulator 是轨迹回放的完成条件：一个块共享已知的 Mooncake 轨迹
// 回放到打开前缀缓存的模拟器（块大小与轨迹一致，16），服务端报告的命中率、cached_tokens 与
// 首 token 时间的缩短都等于解析值。6 行依次到达（间隔 300ms，足够前一个请求结束），每行
// hash_ids = [1, 2, 3, 100+i]、53 个 token：前 3 块（48 token）共享，第 4 块是 5 个 token 的独有尾部。
// 第一行全部未命中，其余 5 行各命中 48 个 token：查询 6×53 = 318，命中 5×48 = 240，
// 命中率 240/318；其余各行少 prefill 48 个 token，首 token 时间短 48 × PrefillPerToken
// （4ms/token：冷 212ms、热 20ms，差 192ms）。
func TestTraceReplayPrefixHitRateOnEmulator(t *testing.T) {
	const perToken = 4 * time.Millisecond
	_, tgt := startEmulator(t, emulator.Config{Model: "m", EnablePrefixCaching: true, BlockSize: 16,
		EnablePromptTokensDetails: true, PrefillPerToken: perToken})
	var sb strings.Builder
	for i := range 6 {
		fmt.Fprintf(&sb, `{"timestamp": %d, "input_length": 53, "output_length": 2, "hash_ids": [1, 2, 3, %d]}`+"\n", i*300, 100+i)
	}
	trace, err := dataset.ReadMooncakeTrace(strings.NewReader(sb.String()), "shared.jsonl", 16)
	if err != nil {
		t.Fatal(err)
	}
	c := &collect{}
	sums, err := loadgen.Run(context.Background(), tgt, loadgen.Profile{DatasetType: loadgen.DatasetMooncakeTrace, TraceRequests: trace,
		Backend: loadgen.BackendCompletion, Trace: dataset.TraceConfig{BlockSize: 16}}, c.observer())
	if err != nil {
		t.Fatal(err)
	}
	w := sums[0].Workload
	if w.Cache.PrefixQueries != 318 || w.Cache.PrefixHits != 240 || math.Abs(w.Cache.HitRate-240.0/318) > 1e-12 {
		t.Fatalf("server cache %+v, want queries 318, hits 240, hit rate %.6f", w.Cache, 240.0/318)
	}
	if w.CachedTokensCount != 5 || w.AvgCachedTokens != 48 {
		t.Fatalf("cached_tokens: %d requests, avg %v; want 5 × 48", w.CachedTokensCount, w.AvgCachedTokens)
	}
	var first time.Duration
	var rest []time.Duration
	for _, r := range c.recs {
		if r.Index == 0 {
			first = r.TTFT
			if r.CachedTokens != -1 {
				t.Fatalf("cold request reports cached_tokens %d", r.CachedTokens)
			}
			continue
		}
		if r.CachedTokens != 48 {
			t.Fatalf("request %d: cached_tokens %d, want 48", r.Index, r.CachedTokens)
		}
		rest = append(rest, r.TTFT)
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i] < rest[j] })
	// 解析值是缩短 192ms；忙机器上只要求中位数至少缩短一半（不是定时断言，是方向与量级）。
	t.Logf("TTFT cold %s, warm median %s (analytic: 212ms vs 20ms plus overhead)", first, rest[len(rest)/2])
	if d := first - rest[len(rest)/2]; d < 24*perToken {
		t.Fatalf("TTFT cold %s vs warm median %s: reduction %s, want about %s", first, rest[len(rest)/2], d, 48*perToken)
	}
}

// TestMultiTurnCachedTokensOnEmulator：多轮会话回放到打开前缀缓存的模拟器。问题 32 个 token、
// 回答 16 个 token、块 16：第 k 轮的 prompt 恰为 32 + 48·(k−1) 个 token（上一轮的 prompt + 实时
// 回答 + 新问题）；它至少命中上一轮 prompt 的全部整块（32 + 48·(k−2) 个 token），至多命中到
// 上一轮的回答为止（48·(k−1)）；客户端从 usage 读到的 cached_tokens 之和等于服务端计数器的
// Δhits，prompt 之和等于 Δqueries——客户端与服务端两本账对得上。
func TestMultiTurnCachedTokensOnEmulator(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m", EnablePrefixCaching: true, BlockSize: 16, EnablePromptTokensDetails: true})
	sums, err := loadgen.Run(context.Background(), tgt, loadgen.Profile{Concurrency: []int{2}, InputLength: []int{32}, OutputLength: []int{16},
		MultiTurn: loadgen.MultiTurnConfig{Conversations: 2, TurnsMean: 3}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	turns := sums[0].Workload.Turns
	if len(turns) != 3 {
		t.Fatalf("turns %+v", turns)
	}
	queries, hits := 0.0, 0.0
	for _, ts := range turns {
		k := ts.Turn
		if want := float64(32 + 48*(k-1)); ts.AvgPromptTokens != want {
			t.Fatalf("turn %d: avg prompt %v, want %v", k, ts.AvgPromptTokens, want)
		}
		queries += 2 * ts.AvgPromptTokens
		if k == 1 {
			if ts.CachedTokensCount != 0 {
				t.Fatalf("turn 1 reports cached tokens: %+v", ts)
			}
			continue
		}
		lo, hi := float64(32+48*(k-2)), float64(48*(k-1))
		if ts.AvgCachedTokens < lo || ts.AvgCachedTokens > hi || ts.CachedTokensCount != 2 {
			t.Fatalf("turn %d: cached %v over %d requests, want in [%v, %v]", k, ts.AvgCachedTokens, ts.CachedTokensCount, lo, hi)
		}
		hits += 2 * ts.AvgCachedTokens
	}
	if c := sums[0].Workload.Cache; c.PrefixQueries != queries || c.PrefixHits != hits {
		t.Fatalf("server cache %+v, want queries %v hits %v (the client's prompt and cached_tokens sums)", c, queries, hits)
	}
}

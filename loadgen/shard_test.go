package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
)

// 子进程协议的环境变量：父测试以它们重新执行测试二进制，子进程只跑一个分片。
const (
	shardChildEnv   = "CIBENCH_SHARD_CHILD"   // "index/count"
	shardURLEnv     = "CIBENCH_SHARD_URL"     // 模拟器 base URL
	shardStartEnv   = "CIBENCH_SHARD_START"   // 约定开始时刻（Unix 纳秒）
	shardRecordsEnv = "CIBENCH_SHARD_RECORDS" // 逐请求记录 JSONL 的路径
	shardProfileEnv = "CIBENCH_SHARD_PROFILE" // "closed" 或 "open"
)

// shardProfile 返回父子进程共用的测试 Profile：closed 是两组闭环（带预热、输出长度抖动、
// goodput SLO），open 是一组开环（gamma 到达、不限并发）。
func shardProfile(kind string) Profile {
	p := Profile{InputLength: []int{32}, OutputLength: []int{16}, Seed: 7, Goodput: []string{"ttft:40"},
		OutputRangeRatioAbove: 0.5, OutputRangeRatioBelow: 0.5}
	switch kind {
	case "open":
		p.Concurrency, p.RequestRate, p.Burstiness, p.NumRequests = []int{0}, 300, 0.5, []int{61}
	default:
		p.Concurrency, p.NumRequests, p.Warmup = []int{4, 8}, []int{41, 64}, 5
	}
	return p
}

// shardEmulator 是测试用的模拟器配置：有固定的首 token 与 token 间隔，时延分布不退化。
var shardEmulator = emulator.Config{Model: "m", TTFT: 3 * time.Millisecond, ITL: 500 * time.Microsecond}

// jsonRecords 把记录写成 JSONL（子进程用），测试据此在父进程里按单进程的方式重算汇总。
type jsonRecords struct {
	enc *json.Encoder
}

// WriteRecord 写一行 JSON。
func (j *jsonRecords) WriteRecord(r *Record) error { return j.enc.Encode(r) }

// TestShardChildProcess 不是测试：TestShardedRunMatchesSingleProcess 以 shardChildEnv 重新执行
// 测试二进制时，它在子进程里跑一个分片，把记录写到文件、把分片结果作为 stdout 的一行交回
// （后面还会有 go test 自己的 PASS 行，正如 Pod 日志里结果行之外还有别的行）。平时直接跳过。
func TestShardChildProcess(t *testing.T) {
	spec := os.Getenv(shardChildEnv)
	if spec == "" {
		t.Skip("helper process for TestShardedRunMatchesSingleProcess")
	}
	var sh Shard
	if _, err := fmt.Sscanf(spec, "%d/%d", &sh.Index, &sh.Count); err != nil {
		t.Fatal(err)
	}
	ns, err := strconv.ParseInt(os.Getenv(shardStartEnv), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	sh.StartAt = time.Unix(0, ns)
	f, err := os.Create(os.Getenv(shardRecordsEnv))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	tgt := Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{os.Getenv(shardURLEnv)}, Model: "m"}, Provider: "emu"}
	groups, err := RunShard(context.Background(), tgt, shardProfile(os.Getenv(shardProfileEnv)), sh, &Observer{OnRecord: (&jsonRecords{enc: json.NewEncoder(w)}).WriteRecord})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(groups)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s%s\n", shardGroupsLine, b)
}

// shardGroupsLine 是子进程 stdout 里原始测量行的前缀（后面是 []ShardGroup 的 JSON）。
const shardGroupsLine = "SHARD-GROUPS "

// mergeByGroup 按单进程的做法逐组合并各分片的原始测量（MergeShardGroups），返回每组的汇总行、
// 用了 HDR 的分布名与各分片开始时刻之差。打包、缺分片与偏差检查是 loadgen/shard 的事，在那里测。
func mergeByGroup(t *testing.T, shards [][]ShardGroup, p Profile) ([]Summary, [][]string, []time.Duration) {
	t.Helper()
	slo, err := ParseGoodput(p.WithDefaults().Goodput)
	if err != nil {
		t.Fatal(err)
	}
	byGroup := map[int][]*ShardGroup{}
	n := 0
	for _, gs := range shards {
		for i := range gs {
			byGroup[gs[i].Group] = append(byGroup[gs[i].Group], &gs[i])
			n = max(n, gs[i].Group+1)
		}
	}
	sums, hdrs, skews := make([]Summary, n), make([][]string, n), make([]time.Duration, n)
	for gi := range n {
		parts := byGroup[gi]
		if len(parts) != len(shards) {
			t.Fatalf("group %d: %d of %d shards", gi, len(parts), len(shards))
		}
		s, hdr, err := MergeShardGroups(parts, slo)
		if err != nil {
			t.Fatal(err)
		}
		var lo, hi time.Time
		for _, sg := range parts {
			if e := sg.Config.ExecutionTime; lo.IsZero() || e.Before(lo) {
				lo = e
			}
			hi = maxTime(hi, sg.Config.ExecutionTime)
		}
		sums[gi], hdrs[gi], skews[gi] = s, hdr, hi.Sub(lo)
	}
	return sums, hdrs, skews
}

// maxTime 返回较晚的时刻。
func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// startShardEmulator 在本进程启动模拟器（子进程经回环地址访问它）。
func startShardEmulator(t *testing.T) Target {
	t.Helper()
	_, ep := emulator.Start(t, shardEmulator)
	return Target{Endpoint: endpoint.Endpoint{BaseURLs: ep.BaseURLs, Model: ep.Model}, Provider: "emu"}
}

// runShardProcesses 以 n 个真实子进程跑 Profile kind 的各分片，返回分片结果与全部记录。
func runShardProcesses(t *testing.T, url, kind string, n int) ([][]ShardGroup, []Record) {
	t.Helper()
	dir := t.TempDir()
	start := time.Now().Add(3 * time.Second)
	type out struct {
		res []ShardGroup
		err error
	}
	outs := make([]out, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestShardChildProcess$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), shardChildEnv+"="+fmt.Sprintf("%d/%d", i, n), shardURLEnv+"="+url,
				shardStartEnv+"="+strconv.FormatInt(start.UnixNano(), 10), shardProfileEnv+"="+kind,
				shardRecordsEnv+"="+filepath.Join(dir, fmt.Sprintf("records-%d.jsonl", i)))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				outs[i].err = fmt.Errorf("shard %d: %w\n%s%s", i, err, stdout.String(), stderr.String())
				return
			}
			for line := range strings.SplitSeq(stdout.String(), "\n") {
				if rest, ok := strings.CutPrefix(line, shardGroupsLine); ok {
					outs[i].err = json.Unmarshal([]byte(rest), &outs[i].res)
					return
				}
			}
			outs[i].err = fmt.Errorf("shard %d: no %q line in\n%s", i, shardGroupsLine, stdout.String())
		})
	}
	wg.Wait()
	var results [][]ShardGroup
	var recs []Record
	for i, o := range outs {
		if o.err != nil {
			t.Fatal(o.err)
		}
		results = append(results, o.res)
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("records-%d.jsonl", i)))
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
			var r Record
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			recs = append(recs, r)
		}
	}
	return results, recs
}

// rebuild 按单进程的做法（共享精确样本预算的分片统计 → 合并 → fill）从一批记录算出每组的汇总，
// 这是 MergeShardGroups 必须逐位重现的结果。服务端列与 ExecutionTime 不来自记录，留空。
func rebuild(recs []Record, p Profile) map[int]Summary {
	p = p.WithDefaults()
	slo, _ := ParseGoodput(p.Goodput)
	byGroup := map[int]*stats{}
	keys := map[int]Group{}
	classes := map[int]map[string]int{}
	for i := range recs {
		r := &recs[i]
		if r.Warmup || r.ErrorClass == ErrClassCanceled {
			continue
		}
		s, ok := byGroup[r.Group.Index]
		if !ok {
			s = newStats(newBudgets())
			byGroup[r.Group.Index], keys[r.Group.Index] = s, r.Group
		}
		s.observe(r, slo)
		if !r.OK {
			if classes[r.Group.Index] == nil {
				classes[r.Group.Index] = map[string]int{}
			}
			classes[r.Group.Index][r.ErrorClass]++
		}
	}
	out := map[int]Summary{}
	for gi, s := range byGroup {
		t := newStats(nil)
		t.merge(s)
		rr := &runner{p: p, t: Target{Provider: "emu"}}
		sum := rr.summary(keys[gi])
		t.fill(&sum, slo)
		sum.FailureClasses = classes[gi]
		out[gi] = sum
	}
	return out
}

// comparable 去掉不来自记录的列（开始时刻、服务端直方图），以便与 rebuild 逐字段比较。
func comparable(s Summary) Summary {
	s.ExecutionTime = time.Time{}
	s.ServerTTFT, s.ServerTPOT, s.ServerE2E, s.SpecAcceptRate = Latency{}, Latency{}, Latency{}, Values{}
	s.Phases = nil // 服务端窗口的分解另行检查（见 TestShardedRunMatchesSingleProcess）
	// 计划列（请求数、轮数）不能从记录重建：另行与单进程运行比较。
	s.Planned, s.Epochs = 0, 0
	return s
}

// TestShardedRunMatchesSingleProcess 是 issue 16 的验收测试：同一 Profile 先在本进程跑一次，
// 再以 4 个真实子进程（重新执行的测试二进制）分片跑一次，对着同一个模拟器。
//
//   - 逐组 MergeShardGroups 的结果与"单进程对这 4 个进程的全部记录做汇总"逐字段相等（计数、token 之和、
//     分位数、均值、吞吐、goodput、失败分类）：全部分布都在精确样本预算内，分位数是合并后的
//     精确样本的 numpy linear 值，MergedGroup.HDR 为空；
//   - 与真正的单进程运行相比，确定的列（请求数、成功/失败数、输出 token 分布、平均 prompt token）
//     完全相等——分片按全局序号取 prompt 与输出长度抖动，合起来就是单进程的那批请求；
//   - 各分片对齐到约定的开始时刻，偏差在界内；开环时各分片的到达时刻之并是单进程的时刻表
//     （见 TestShardScheduleIsDisjointSliceOfSingle）。
func TestShardedRunMatchesSingleProcess(t *testing.T) {
	tgt := startShardEmulator(t)
	for _, kind := range []string{"closed", "open"} {
		t.Run(kind, func(t *testing.T) {
			p := shardProfile(kind)
			single, err := Run(context.Background(), tgt, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			results, recs := runShardProcesses(t, tgt.BaseURLs[0], kind, 4)
			merged, hdrs, skews := mergeByGroup(t, results, p)
			want := rebuild(recs, p)
			if len(merged) != len(single) || len(merged) != len(want) {
				t.Fatalf("merged %d groups, single process %d, rebuilt %d", len(merged), len(single), len(want))
			}
			for gi, got := range merged {
				if len(hdrs[gi]) != 0 || skews[gi] > 2*time.Second {
					t.Errorf("group %d: hdr=%v skew=%s", gi, hdrs[gi], skews[gi])
				}
				if !reflect.DeepEqual(comparable(got), comparable(want[gi])) {
					t.Errorf("group %d: merged row differs from the single-process summary of the same records\n got %+v\nwant %+v", gi, comparable(got), comparable(want[gi]))
				}
				one := single[gi]
				// 阶段分解随分片编码：合并的行带着服务端阶段，客户端矩覆盖全部成功请求。
				if ph := got.Phases; ph == nil || !ph.HasPhases() || ph.ClientTTFT.N != int64(got.Succeeded) ||
					ph.Queue.Count < float64(got.Succeeded) {
					t.Errorf("group %d: merged phases %+v, want server phases and %d client samples", gi, ph, got.Succeeded)
				}
				if got.Planned != one.Planned || got.Epochs != one.Epochs || got.BudgetLimited != one.BudgetLimited {
					t.Errorf("group %d: plan columns Planned/Epochs/BudgetLimited %d/%d/%v, single process %d/%d/%v", gi,
						got.Planned, got.Epochs, got.BudgetLimited, one.Planned, one.Epochs, one.BudgetLimited)
				}
				if got.NumPrompts != one.NumPrompts || got.Succeeded != one.Succeeded || got.Failed != one.Failed ||
					got.CompletionTokens != one.CompletionTokens || got.AvgPromptTokens != one.AvgPromptTokens ||
					got.Concurrency != one.Concurrency || got.TTFT.Count != one.TTFT.Count || got.TPOTSec.Count != one.TPOTSec.Count {
					t.Errorf("group %d: sharded %+v\nsingle %+v", gi, got, one)
				}
				// 服务端列取各分片窗口之并：最后一组之后没有别的请求，差值至少包含本组的全部成功请求。
				if !got.ServerE2E.Valid() || (gi == len(merged)-1 && got.ServerE2E.Count < int64(got.Succeeded)) {
					t.Errorf("group %d: server E2E count %d, want >= %d", gi, got.ServerE2E.Count, got.Succeeded)
				}
				t.Logf("group %d: skew %s; TTFT p50/p99 single %s/%s sharded %s/%s; E2E p99 single %s sharded %s; tokens/s single %.0f sharded %.0f",
					gi, skews[gi], one.TTFT.P50, one.TTFT.P99, got.TTFT.P50, got.TTFT.P99, one.E2E.P99, got.E2E.P99,
					one.OutputTokenThroughput, got.OutputTokenThroughput)
			}
			seen := map[[2]int]bool{}
			for _, r := range recs {
				if r.Warmup {
					continue
				}
				k := [2]int{r.Group.Index, r.Index}
				if seen[k] {
					t.Fatalf("request %v sent by two shards", k)
				}
				seen[k] = true
			}
			total := 0
			for _, s := range single {
				total += s.NumPrompts
			}
			if len(seen) != total {
				t.Fatalf("shards sent %d distinct requests, single process %d", len(seen), total)
			}
		})
	}
}

// TestShardScheduleIsDisjointSliceOfSingle 检查开环时刻表的划分：每个分片从同一种子生成整张表，
// 只发出序号 ≡ Index (mod Count) 的到达，相对时刻与单进程的表逐个相同。
func TestShardScheduleIsDisjointSliceOfSingle(t *testing.T) {
	p := Profile{Seed: 3, Burstiness: 0.7}.WithDefaults()
	const n = 50
	schedule := func(sh *shardRun) map[int]time.Time {
		r := &runner{p: p, sh: sh}
		gr := &groupRun{g: Group{Index: 2}, global: n, total: sh.part(n)}
		jobs := make(chan job, n)
		r.dispatch(context.Background(), gr, 1e6, jobs)
		out := map[int]time.Time{}
		for j := range jobs {
			out[j.idx] = j.intended
		}
		return out
	}
	single := schedule(nil)
	union := map[int]bool{}
	for i := range 4 {
		part := schedule(&shardRun{Shard: Shard{Index: i, Count: 4}})
		if len(part) != (&shardRun{Shard: Shard{Index: i, Count: 4}}).part(n) {
			t.Fatalf("shard %d got %d arrivals", i, len(part))
		}
		for idx, at := range part {
			if idx%4 != i || union[idx] {
				t.Fatalf("shard %d got arrival %d", i, idx)
			}
			union[idx] = true
			// 相对本分片第一个到达（序号 i）的间隔与单进程的相同。
			if got, want := at.Sub(part[i]), single[idx].Sub(single[i]); got != want {
				t.Fatalf("arrival %d: shard offset %s, single %s", idx, got, want)
			}
		}
	}
	if len(union) != n {
		t.Fatalf("union has %d arrivals, want %d", len(union), n)
	}
}

// TestShardPartitionsWorkersAndClimb 检查 worker 的划分：各分片的 worker 全局序号互不相交、
// 并起来是 0..c−1，于是爬坡的每个启动时刻恰好属于一个分片。
func TestShardPartitionsWorkersAndClimb(t *testing.T) {
	p := Profile{ControlMethod: ControlClimb, GrowthRate: 2, GrowthInterval: time.Second}.WithDefaults()
	var all []int
	for i := range 3 {
		r := &runner{p: p, sh: &shardRun{Shard: Shard{Index: i, Count: 3}}}
		ids := r.workerIDs(10)
		if len(ids) != r.sh.part(10) {
			t.Fatalf("shard %d: %d workers, part says %d", i, len(ids), r.sh.part(10))
		}
		all = append(all, ids...)
	}
	slices.Sort(all)
	if !slices.Equal(all, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("workers %v", all)
	}
	if got := (&shardRun{Shard: Shard{Index: 3, Count: 4}}).part(3); got != 0 {
		t.Fatalf("part(3) for shard 3/4 = %d, want 0", got)
	}
}

// TestShardValidate 检查分片参数与 Profile 的相容性：错误点名字段与取值。
func TestShardValidate(t *testing.T) {
	p := Profile{Concurrency: []int{8, 2}}.WithDefaults()
	for _, tc := range []struct {
		sh   Shard
		want string
	}{
		{Shard{Index: 0, Count: 0}, "count 0"},
		{Shard{Index: 4, Count: 4}, "index 4"},
		{Shard{Index: 0, Count: MaxShards + 1}, "count 1025"},
		{Shard{Index: 0, Count: 4}, "concurrency[1]=2 is smaller than the 4 shards"},
	} {
		err := tc.sh.Check(p)
		if !errors.Is(err, ErrInvalidShard) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.sh, err, tc.want)
		}
	}
	open := Profile{Concurrency: []int{0}, RequestRate: 10}.WithDefaults()
	if err := (Shard{Index: 1, Count: 4}).Check(open); err != nil {
		t.Fatal(err)
	}
	if _, err := RunShard(context.Background(), Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{"http://127.0.0.1:1/v1"}, Model: "m"}},
		Profile{InputLength: []int{8}, OutputLength: []int{4}, Concurrency: []int{2}}, Shard{Count: 4}, nil); !errors.Is(err, ErrInvalidShard) {
		t.Fatalf("RunShard with too few workers: %v", err)
	}
}

// TestShardBarrierBetweenGroups 验证 Shard.Barrier：第一组只对齐 StartAt（不调用 Barrier），
// 之后每组开始前按顺序各调用一次、参数是该组的 Group.Index；组在 Barrier 返回之后才开始，
// Skew 相对放行时刻（第一组相对 StartAt）；Barrier 出错时运行在该组之前结束，错误可被 errors.Is
// 识别，已完成的分组照常交回。
func TestShardBarrierBetweenGroups(t *testing.T) {
	tgt := startShardEmulator(t)
	p := Profile{InputLength: []int{32}, OutputLength: []int{4}, Concurrency: []int{2, 4}, NumRequests: []int{4, 8}, Epochs: 2, Seed: 3}
	var calls []int
	released := map[int]time.Time{}
	start := time.Now().Add(150 * time.Millisecond)
	sh := Shard{Index: 1, Count: 2, StartAt: start, Barrier: func(ctx context.Context, group int) error {
		calls = append(calls, group)
		released[group] = time.Now()
		return ctx.Err()
	}}
	groups, err := RunShard(context.Background(), tgt, p, sh, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 2, 3}; !slices.Equal(calls, want) {
		t.Fatalf("barrier calls %v, want %v (once per group after the first, in order)", calls, want)
	}
	if len(groups) != 4 {
		t.Fatalf("%d groups, want 4", len(groups))
	}
	for _, g := range groups {
		began := g.Config.ExecutionTime
		ref, ok := released[g.Group]
		if g.Group == 0 {
			ref, ok = start, true
		}
		if !ok || g.Skew < 0 || began.Before(ref) || g.Skew > began.Sub(ref) {
			t.Errorf("group %d began %s, reference %s: skew %s must be in [0, %s]", g.Group, began.Format(time.RFC3339Nano), ref.Format(time.RFC3339Nano), g.Skew, began.Sub(ref))
		}
	}

	stop := errors.New("coordinator gone")
	calls = nil
	sh.StartAt = time.Now()
	sh.Barrier = func(_ context.Context, group int) error {
		calls = append(calls, group)
		if group == 2 {
			return stop
		}
		return nil
	}
	groups, err = RunShard(context.Background(), tgt, p, sh, nil)
	if !errors.Is(err, stop) || !strings.Contains(err.Error(), "barrier before group 2") {
		t.Fatalf("err = %v, want the barrier's error before group 2", err)
	}
	if !slices.Equal(calls, []int{1, 2}) || len(groups) != 2 || groups[1].Group != 1 {
		t.Fatalf("after a barrier error: calls %v, %d groups", calls, len(groups))
	}

	// 没有 StartAt 时第一组也由 Barrier 放行。
	calls = nil
	sh.StartAt = time.Time{}
	sh.Barrier = func(_ context.Context, group int) error { calls = append(calls, group); return nil }
	if _, err := RunShard(context.Background(), tgt, p, sh, nil); err != nil || !slices.Equal(calls, []int{0, 1, 2, 3}) {
		t.Fatalf("without StartAt: calls %v, err %v; want the barrier before every group", calls, err)
	}
}

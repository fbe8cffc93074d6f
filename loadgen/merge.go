package loadgen

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/loadgen/servermetrics"
)

// 合并的错误哨兵，可用 errors.Is 判断。
var (
	// ErrShardMismatch：分片结果不属于同一次分片压测（格式、分片数、Profile 指纹或 StartAt 不同，
	// 或同一序号出现两次）。
	ErrShardMismatch = errors.New("loadgen: shard results do not belong together")
	// ErrShardSkew：同一分组在各分片上的开始时刻相差超过 MergeOptions.MaxSkew。
	ErrShardSkew = errors.New("loadgen: shard start skew too large")
	// ErrShardMissing：有分片缺失或失败；返回的行照样给出，但相应分组标为 Incomplete。
	ErrShardMissing = errors.New("loadgen: shard missing or failed")
)

// DefaultMaxSkew 是 MergeOptions.MaxSkew 的默认值：同一分组各分片开始时刻的最大差。
const DefaultMaxSkew = time.Second

// MergeOptions 调整 MergeGroups 的检查。
type MergeOptions struct {
	// MaxSkew 是同一分组在各分片上开始时刻（墙钟）之差的上限，超过时拒绝合并；0 取 DefaultMaxSkew。
	MaxSkew time.Duration
	// Lost 是调用方知道的、没有交回结果的分片为什么缺失（子进程被 SIGKILL、Pod 被 OOMKilled……）；
	// 没有列出的缺失分片记为 LossNoResult。交回了结果的分片的原因取自结果本身（ShardResult.Reason）。
	Lost []ShardLoss
}

// distNames 是 statsWire.Dists 各分布在 MergedGroup.HDR 里的名字。
var distNames = [8]string{"ttft", "tpot", "tpot_sec", "first_to_second", "e2e", "slot_wait", "completion_tokens", "client_lag"}

// MergedGroup 是一个分组的合并结果与它的来历。
type MergedGroup struct {
	Summary Summary
	// Shards 是提供了该组数据的分片序号（升序）；Missing 是缺失、失败或该组被中断的分片序号。
	Shards, Missing []int
	// Lost 与 Missing 一一对应：每个缺失分片的原因（同样写进 Summary.MissingShards）。
	Lost []ShardLoss
	// Skew 是各分片该组开始时刻（墙钟）的最大差；Late 是各分片相对约定 StartAt 的最大迟到。
	Skew, Late time.Duration
	// HDR 列出分位数来自 HDR 直方图的分布（名字见 docs/loadgen.md）；其余分布的分位数由合并后的
	// 全部精确样本按 numpy linear 算出。两种情况都与单进程对同一批记录的结果一致：单进程也只在
	// 样本总数超过精确样本预算时改用 HDR，而 HDR 桶计数按分片相加正是单进程的桶计数。
	HDR []string
}

// 分片缺失的原因（ShardLoss.Reason）：取值固定、基数低，读者据此区分"分片死了"与"运行被取消"。
const (
	LossKilled      = "killed"      // 分片进程被信号杀死（SIGKILL、SIGTERM……），没有交回结果
	LossOOMKilled   = "oom_killed"  // 分片容器因内存超限被杀（Kubernetes 的 OOMKilled）
	LossUnreachable = "unreachable" // 分片连不上被测服务（能力探测的传输错误，ErrUnreachable）
	LossCancelled   = "cancelled"   // 分片（或整个运行）被取消：ctx 取消、Ctrl-C、协调者叫停
	LossFailed      = "failed"      // 分片以其它错误结束（写产物失败、屏障失败、Pod 失败……）
	LossNoResult    = "no_result"   // 没有交回结果，调用方也不知道原因
)

// ShardLoss 说明一个分片为什么缺失：序号、原因（Loss* 常量之一）与细节（分片自己的错误、
// 退出状态或 Pod 状态，已不含密钥——分片结果里的错误文本经过 Run 的脱敏）。
type ShardLoss struct {
	Shard  int    `json:"shard"`
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// String 写成 "shard 1: killed (signal: killed)"。
func (l ShardLoss) String() string {
	if l.Detail == "" {
		return fmt.Sprintf("shard %d: %s", l.Shard, l.Reason)
	}
	return fmt.Sprintf("shard %d: %s (%s)", l.Shard, l.Reason, l.Detail)
}

// MissingShardsError 报告哪些分组缺了哪些分片、各分片为什么缺失；errors.Is(err, ErrShardMissing) 成立。
type MissingShardsError struct {
	Count  int           // 分片总数
	Groups map[int][]int // 分组序号 → 缺失或失败的分片序号
	// Lost 是每个缺失或失败的分片（按序号升序）与它的原因。
	Lost []ShardLoss
}

// Error 逐组列出缺失的分片序号，再逐个分片写出原因与细节。
func (e *MissingShardsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v (of %d shards):", ErrShardMissing, e.Count)
	keys := make([]int, 0, len(e.Groups))
	for g := range e.Groups {
		keys = append(keys, g)
	}
	sort.Ints(keys)
	for _, g := range keys {
		fmt.Fprintf(&b, " group %d misses shards %v;", g, e.Groups[g])
	}
	for _, l := range e.Lost {
		fmt.Fprintf(&b, " %s;", l)
	}
	return strings.TrimSuffix(b.String(), ";")
}

// Unwrap 让 errors.Is(err, ErrShardMissing) 成立。
func (e *MissingShardsError) Unwrap() error { return ErrShardMissing }

// Merge 把各分片的结果合并成单进程会得到的汇总行（每组一行，按分组顺序），用默认的 MaxSkew。
// 见 MergeGroups。
func Merge(results ...*ShardResult) ([]Summary, error) {
	gs, err := MergeGroups(MergeOptions{}, results...)
	out := make([]Summary, len(gs))
	for i, g := range gs {
		out[i] = g.Summary
	}
	return out, err
}

// MergeGroups 合并分片结果。计数、token 之和、失败分类逐项相加（精确）；时长分布把各分片的
// 精确样本或 HDR 桶合起来，分位数与单进程对同一批记录的结果一致（见 MergedGroup.HDR）；
// TotalTime 与各吞吐列取全部分片窗口之并（最早的首发 → 最晚的完成）；服务端列取各分片
// 分组前最早的 /metrics 快照与分组后最晚的快照之差。
//
// 分片不属于同一次压测时返回 ErrShardMismatch，某组开始时刻之差超过 MaxSkew 时返回
// ErrShardSkew（都不返回行）。有分片缺失或失败时仍返回全部行，相应分组 Incomplete 为 true，
// 错误是 *MissingShardsError（逐组点名分片序号）——结果不会悄悄变成一个更小的分组。
func MergeGroups(opts MergeOptions, results ...*ShardResult) ([]MergedGroup, error) {
	if opts.MaxSkew <= 0 {
		opts.MaxSkew = DefaultMaxSkew
	}
	byIdx, err := checkShards(results)
	if err != nil {
		return nil, err
	}
	count := results[0].Count
	slo, err := ParseGoodput(results[0].Goodput)
	if err != nil {
		return nil, fmt.Errorf("%w: goodput: %v", ErrBadShardResult, err)
	}
	ngroups := 0
	for _, r := range byIdx {
		if r == nil {
			continue // 缺失的分片
		}
		for _, g := range r.Groups {
			if g.Group < 0 || g.Group > MaxEpochs*MaxConcurrency {
				return nil, fmt.Errorf("%w: shard %d: group index %d", ErrBadShardResult, r.Index, g.Group)
			}
			ngroups = max(ngroups, g.Group+1)
		}
	}
	missing := &MissingShardsError{Count: count, Groups: map[int][]int{}}
	known := map[int]ShardLoss{}
	for _, l := range opts.Lost {
		known[l.Shard] = l
	}
	lost := map[int]ShardLoss{}
	for i, r := range byIdx {
		switch {
		case r == nil:
			l, ok := known[i]
			if !ok || l.Reason == "" {
				l = ShardLoss{Shard: i, Reason: LossNoResult, Detail: l.Detail}
			}
			lost[i] = l
		case r.Error != "":
			reason := r.Reason
			if reason == "" {
				reason = LossFailed
			}
			lost[i] = ShardLoss{Shard: i, Reason: reason, Detail: r.Error}
		}
	}
	out := make([]MergedGroup, 0, ngroups)
	for gi := range ngroups {
		mg, err := mergeGroup(gi, byIdx, slo, opts)
		if err != nil {
			return nil, err
		}
		if len(mg.Missing) > 0 {
			missing.Groups[gi] = mg.Missing
			for _, i := range mg.Missing {
				l, ok := lost[i]
				if !ok {
					// 分片交回了结果、没有报错，却有一组被中断：只有取消会这样。
					l = ShardLoss{Shard: i, Reason: LossCancelled, Detail: fmt.Sprintf("group %d interrupted", gi)}
					lost[i] = l
				}
				mg.Lost = append(mg.Lost, l)
			}
			mg.Summary.MissingShards = mg.Lost
		}
		out = append(out, mg)
	}
	for _, i := range slices.Sorted(maps.Keys(lost)) {
		missing.Lost = append(missing.Lost, lost[i])
	}
	if len(missing.Groups) > 0 || len(missing.Lost) > 0 {
		if len(missing.Groups) == 0 {
			// 出错的分片完成了全部已开始的分组，但没跑完 Profile：后面的分组整组都缺。
			missing.Groups[ngroups] = slices.Sorted(maps.Keys(lost))
		}
		return out, missing
	}
	return out, nil
}

// checkShards 检查各结果属于同一次分片压测，并按分片序号排好（缺失的位置为 nil）。
func checkShards(results []*ShardResult) ([]*ShardResult, error) {
	if len(results) == 0 || results[0] == nil {
		return nil, fmt.Errorf("%w: no shard results", ErrShardMismatch)
	}
	first := results[0]
	if first.Count < 1 || first.Count > MaxShards {
		return nil, fmt.Errorf("%w: shard count %d", ErrShardMismatch, first.Count)
	}
	byIdx := make([]*ShardResult, first.Count)
	for _, r := range results {
		switch {
		case r == nil:
			return nil, fmt.Errorf("%w: nil result", ErrShardMismatch)
		case r.Format != ShardResultFormat:
			return nil, fmt.Errorf("%w: shard %d: format %q, want %q", ErrShardMismatch, r.Index, r.Format, ShardResultFormat)
		case r.Count != first.Count:
			return nil, fmt.Errorf("%w: shard %d says %d shards, shard %d says %d", ErrShardMismatch, r.Index, r.Count, first.Index, first.Count)
		case r.Profile != first.Profile:
			return nil, fmt.Errorf("%w: shard %d ran profile %s, shard %d ran %s", ErrShardMismatch, r.Index, r.Profile, first.Index, first.Profile)
		case !r.StartAt.Equal(first.StartAt):
			return nil, fmt.Errorf("%w: shard %d start_at %s, shard %d %s", ErrShardMismatch, r.Index, r.StartAt, first.Index, first.StartAt)
		case r.Index < 0 || r.Index >= r.Count:
			return nil, fmt.Errorf("%w: shard index %d of %d", ErrShardMismatch, r.Index, r.Count)
		case byIdx[r.Index] != nil:
			return nil, fmt.Errorf("%w: shard %d given twice", ErrShardMismatch, r.Index)
		}
		byIdx[r.Index] = r
	}
	return byIdx, nil
}

// mergeGroup 合并第 gi 组。
func mergeGroup(gi int, byIdx []*ShardResult, slo SLO, opts MergeOptions) (MergedGroup, error) {
	var mg MergedGroup
	var parts []*ShardGroup
	for i, r := range byIdx {
		var sg *ShardGroup
		if r != nil {
			for k := range r.Groups {
				if r.Groups[k].Group == gi {
					sg = &r.Groups[k]
					break
				}
			}
		}
		if sg == nil || sg.Incomplete {
			mg.Missing = append(mg.Missing, i)
		}
		if sg != nil {
			parts = append(parts, sg)
			mg.Shards = append(mg.Shards, i)
		}
	}
	if len(parts) == 0 {
		mg.Summary = Summary{Incomplete: true, TotalTokenThroughput: 0, Goodput: -1,
			CompletionTokens: Unmeasured(), SpecAcceptRate: Unmeasured(), AvgReasoningTokens: -1, AvgContentTokens: -1, AvgPromptTokens: -1}
		return mg, nil
	}
	cfg := parts[0].Config
	var earliest, latest time.Time
	for k, sg := range parts {
		c := sg.Config
		if c.InputLength != cfg.InputLength || c.OutputLength != cfg.OutputLength || c.Concurrency != cfg.Concurrency || c.Round != cfg.Round {
			return MergedGroup{}, fmt.Errorf("%w: group %d is %d/%d/c%d/r%d on shard %d but %d/%d/c%d/r%d on shard %d", ErrShardMismatch, gi,
				c.InputLength, c.OutputLength, c.Concurrency, c.Round, mg.Shards[k], cfg.InputLength, cfg.OutputLength, cfg.Concurrency, cfg.Round, mg.Shards[0])
		}
		if earliest.IsZero() || c.ExecutionTime.Before(earliest) {
			earliest = c.ExecutionTime
		}
		if c.ExecutionTime.After(latest) {
			latest = c.ExecutionTime
		}
		mg.Late = max(mg.Late, sg.Skew)
	}
	mg.Skew = latest.Sub(earliest)
	if mg.Skew > opts.MaxSkew {
		return MergedGroup{}, fmt.Errorf("%w: group %d (input %d, output %d, concurrency %d, round %d) started %s apart on its shards (earliest %s, latest %s), bound %s",
			ErrShardSkew, gi, cfg.InputLength, cfg.OutputLength, cfg.Concurrency, cfg.Round, mg.Skew, earliest.Format(time.RFC3339Nano), latest.Format(time.RFC3339Nano), opts.MaxSkew)
	}
	tot, hdr, err := mergeStats(parts)
	if err != nil {
		return MergedGroup{}, fmt.Errorf("group %d: %w", gi, err)
	}
	mg.HDR = hdr
	s := cfg
	s.ExecutionTime = earliest
	tot.fill(&s, slo)
	before, after := serverWindow(parts)
	applyServer(&s, before, after)
	for _, sg := range parts {
		for k, v := range sg.FailureClasses {
			if s.FailureClasses == nil {
				s.FailureClasses = map[string]int{}
			}
			s.FailureClasses[k] += v
		}
	}
	s.Incomplete = len(mg.Missing) > 0
	mg.Summary = s
	return mg, nil
}

// mergeStats 把各分片的统计合成一份。每个分布在样本总数不超过精确样本预算、且各分片都带着
// 精确样本时保持精确，否则全部转入 HDR——与单进程共享预算时的结果相同。计数、token 之和与
// 首发/末完成时刻的合并与单进程合并 worker 分片时是同一段代码（stats.merge）。
func mergeStats(parts []*ShardGroup) (*stats, []string, error) {
	t := newStats(nil)
	dists := statsDists(t)
	var exact [8]bool
	var hdr []string
	for k := range dists {
		var n int64
		exact[k] = true
		for _, sg := range parts {
			w := sg.Stats.Dists[k]
			n += w.N
			if w.HDR != "" {
				exact[k] = false
			}
		}
		exact[k] = exact[k] && n <= exactCap
		if !exact[k] {
			hdr = append(hdr, distNames[k])
			dists[k].spill()
		}
	}
	for _, sg := range parts {
		p, err := sg.Stats.decode(exact, dists)
		if err != nil {
			return nil, nil, err
		}
		t.merge(p)
	}
	return t, hdr, nil
}

// serverWindow 选出服务端窗口的两端。"后"快照取最晚的（计数器只增不减，E2E 直方图总数最大的
// 最晚）。"前"快照取在最早开始施压的分片开始之前抓到的快照里最晚的那个：各分片抓完"前"快照才
// 等待屏障或 StartAt，所以这些快照都早于本组的任何请求，其中最晚的一个已经包含了全部分片的能力
// 探测、预热与上一组的尾巴——取最早的（以前的做法）会把慢一步的分片的探测与预热请求算进本组
// （issue 22：服务端列偏差达 1.4%）。迟到的分片（在别的分片开始之后才抓快照）不参与挑选；
// 没有一个快照符合时（或快照没有时刻）退回最早的。任何一边缺失时返回 nil。
func serverWindow(parts []*ShardGroup) (before, after *servermetrics.Snapshot) {
	count := func(s *servermetrics.Snapshot) float64 {
		if s.Hist[servermetrics.HistE2E] == nil {
			return 0
		}
		return s.Hist[servermetrics.HistE2E].Count
	}
	var start time.Time
	for _, sg := range parts {
		if t := sg.Config.ExecutionTime; start.IsZero() || t.Before(start) {
			start = t
		}
	}
	var earliest *servermetrics.Snapshot
	for _, sg := range parts {
		b, a := sg.Before.decode(), sg.After.decode()
		if b == nil || a == nil {
			return nil, nil
		}
		if earliest == nil || count(b) < count(earliest) {
			earliest = b
		}
		if !b.At.IsZero() && !b.At.After(start) && (before == nil || count(b) > count(before)) {
			before = b
		}
		if after == nil || count(a) > count(after) {
			after = a
		}
	}
	if before == nil {
		before = earliest
	}
	return before, after
}

// MergeTimeline 合并各分片的时间线：同一分组的第 k 行相加（请求数、失败数、token 数、在途数），
// 吞吐按合并后的 token 数与最长的间隔重算。各分片的间隔只在约定的开始时刻对齐，行与行之间可能
// 相差一个调度滞后，所以这是近似的。分位数列无法从各分片的行精确合并：只有一个分片时保留，
// 否则写 -1（不可测）；服务端列取序号最小的分片（它们抓的是同一个服务）。
func MergeTimeline(results ...*ShardResult) []Timeline {
	type key struct{ g, k int }
	rows := map[key]*Timeline{}
	contrib := map[key]int{}
	var keys []key
	sorted := slices.Clone(results)
	slices.SortFunc(sorted, func(a, b *ShardResult) int { return a.Index - b.Index })
	for _, r := range sorted {
		seen := map[int]int{}
		for _, t := range r.Timeline {
			k := key{t.Group.Index, seen[t.Group.Index]}
			seen[t.Group.Index]++
			m, ok := rows[k]
			if !ok {
				cp := t
				rows[k] = &cp
				contrib[k] = 1
				keys = append(keys, k)
				continue
			}
			contrib[k]++
			m.InFlight += t.InFlight
			m.Started += t.Started
			m.Completed += t.Completed
			m.Failed += t.Failed
			m.OutputTokens += t.OutputTokens
			m.Interval = max(m.Interval, t.Interval)
			m.Elapsed = max(m.Elapsed, t.Elapsed)
			if t.Time.After(m.Time) {
				m.Time = t.Time
			}
			m.TargetConcurrency = max(m.TargetConcurrency, t.TargetConcurrency)
			m.TTFTP50, m.TTFTP99, m.ITLP50, m.ITLP99 = -1, -1, -1, -1
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.g != b.g {
			return a.g - b.g
		}
		return a.k - b.k
	})
	out := make([]Timeline, 0, len(keys))
	for _, k := range keys {
		m := rows[k]
		if sec := m.Interval.Seconds(); sec > 0 {
			m.OutputTokenThroughput = float64(m.OutputTokens) / sec
		}
		out = append(out, *m)
	}
	return out
}

package shard

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
)

// 合并的错误哨兵，可用 errors.Is 判断。
var (
	// ErrMismatch：分片结果不属于同一次分片压测（格式、分片数、Profile 指纹或 StartAt 不同，
	// 或同一序号出现两次）。
	ErrMismatch = errors.New("shard: results do not belong together")
	// ErrSkew：同一分组在各分片上的开始时刻相差超过 MergeOptions.MaxSkew。
	ErrSkew = errors.New("shard: start skew too large")
	// ErrMissing：有分片缺失或失败；返回的行照样给出，但相应分组标为 Incomplete。
	ErrMissing = errors.New("shard: missing or failed")
)

// DefaultMaxSkew 是 MergeOptions.MaxSkew 的默认值：同一分组各分片开始时刻的最大差。
const DefaultMaxSkew = time.Second

// MergeOptions 调整 MergeGroups 的检查。
type MergeOptions struct {
	// MaxSkew 是同一分组在各分片上开始时刻（墙钟）之差的上限，超过时拒绝合并；0 取 DefaultMaxSkew。
	MaxSkew time.Duration
	// Lost 是调用方知道的、没有交回结果的分片为什么缺失（子进程被 SIGKILL、Pod 被 OOMKilled……）；
	// 没有列出的缺失分片记为 loadgen.LossNoResult。交回了结果的分片的原因取自结果本身（Result.Reason）。
	Lost []loadgen.ShardLoss
}

// MergedGroup 是一个分组的合并结果与它的来历。
type MergedGroup struct {
	Summary loadgen.Summary
	// Shards 是提供了该组数据的分片序号（升序）；Missing 是缺失、失败或该组被中断的分片序号。
	Shards, Missing []int
	// Lost 与 Missing 一一对应：每个缺失分片的原因（同样写进 Summary.MissingShards）。
	Lost []loadgen.ShardLoss
	// Skew 是各分片该组开始时刻（墙钟）的最大差；Late 是各分片相对约定 StartAt 的最大迟到。
	Skew, Late time.Duration
	// HDR 列出分位数来自 HDR 直方图的分布（名字见 docs/loadgen.md）；其余分布的分位数由合并后的
	// 全部精确样本按 numpy linear 算出。两种情况都与单进程对同一批记录的结果一致：单进程也只在
	// 样本总数超过精确样本预算时改用 HDR，而 HDR 桶计数按分片相加正是单进程的桶计数。
	HDR []string
}

// MissingError 报告哪些分组缺了哪些分片、各分片为什么缺失；errors.Is(err, ErrMissing) 成立。
type MissingError struct {
	Count  int           // 分片总数
	Groups map[int][]int // 分组序号 → 缺失或失败的分片序号
	// Lost 是每个缺失或失败的分片（按序号升序）与它的原因。
	Lost []loadgen.ShardLoss
}

// Error 逐组列出缺失的分片序号，再逐个分片写出原因与细节。
func (e *MissingError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v (of %d shards):", ErrMissing, e.Count)
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

// Unwrap 让 errors.Is(err, ErrMissing) 成立。
func (e *MissingError) Unwrap() error { return ErrMissing }

// Merge 把各分片的结果合并成单进程会得到的汇总行（每组一行，按分组顺序），用默认的 MaxSkew。
// 见 MergeGroups。
func Merge(results ...*Result) ([]loadgen.Summary, error) {
	gs, err := MergeGroups(MergeOptions{}, results...)
	out := make([]loadgen.Summary, len(gs))
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
// 分片不属于同一次压测时返回 ErrMismatch，某组开始时刻之差超过 MaxSkew 时返回
// ErrSkew（都不返回行）。有分片缺失或失败时仍返回全部行，相应分组 Incomplete 为 true，
// 错误是 *MissingError（逐组点名分片序号）——结果不会悄悄变成一个更小的分组。
func MergeGroups(opts MergeOptions, results ...*Result) ([]MergedGroup, error) {
	if opts.MaxSkew <= 0 {
		opts.MaxSkew = DefaultMaxSkew
	}
	byIdx, err := checkShards(results)
	if err != nil {
		return nil, err
	}
	count := results[0].Count
	slo, err := loadgen.ParseGoodput(results[0].Goodput)
	if err != nil {
		return nil, fmt.Errorf("%w: goodput: %v", loadgen.ErrBadShardResult, err)
	}
	ngroups := 0
	for _, r := range byIdx {
		if r == nil {
			continue // 缺失的分片
		}
		for _, g := range r.Groups {
			if g.Group < 0 || g.Group > loadgen.MaxEpochs*loadgen.MaxConcurrency {
				return nil, fmt.Errorf("%w: shard %d: group index %d", loadgen.ErrBadShardResult, r.Index, g.Group)
			}
			ngroups = max(ngroups, g.Group+1)
		}
	}
	missing := &MissingError{Count: count, Groups: map[int][]int{}}
	known := map[int]loadgen.ShardLoss{}
	for _, l := range opts.Lost {
		known[l.Shard] = l
	}
	lost := map[int]loadgen.ShardLoss{}
	for i, r := range byIdx {
		switch {
		case r == nil:
			l, ok := known[i]
			if !ok || l.Reason == "" {
				l = loadgen.ShardLoss{Shard: i, Reason: loadgen.LossNoResult, Detail: l.Detail}
			}
			lost[i] = l
		case r.Error != "":
			reason := r.Reason
			if reason == "" {
				reason = loadgen.LossFailed
			}
			lost[i] = loadgen.ShardLoss{Shard: i, Reason: reason, Detail: r.Error}
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
					l = loadgen.ShardLoss{Shard: i, Reason: loadgen.LossCancelled, Detail: fmt.Sprintf("group %d interrupted", gi)}
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
func checkShards(results []*Result) ([]*Result, error) {
	if len(results) == 0 || results[0] == nil {
		return nil, fmt.Errorf("%w: no shard results", ErrMismatch)
	}
	first := results[0]
	if first.Count < 1 || first.Count > loadgen.MaxShards {
		return nil, fmt.Errorf("%w: shard count %d", ErrMismatch, first.Count)
	}
	byIdx := make([]*Result, first.Count)
	for _, r := range results {
		switch {
		case r == nil:
			return nil, fmt.Errorf("%w: nil result", ErrMismatch)
		case r.Format != Format:
			return nil, fmt.Errorf("%w: shard %d: format %q, want %q", ErrMismatch, r.Index, r.Format, Format)
		case r.Count != first.Count:
			return nil, fmt.Errorf("%w: shard %d says %d shards, shard %d says %d", ErrMismatch, r.Index, r.Count, first.Index, first.Count)
		case r.Profile != first.Profile:
			return nil, fmt.Errorf("%w: shard %d ran profile %s, shard %d ran %s", ErrMismatch, r.Index, r.Profile, first.Index, first.Profile)
		case !r.StartAt.Equal(first.StartAt):
			return nil, fmt.Errorf("%w: shard %d start_at %s, shard %d %s", ErrMismatch, r.Index, r.StartAt, first.Index, first.StartAt)
		case r.Index < 0 || r.Index >= r.Count:
			return nil, fmt.Errorf("%w: shard index %d of %d", ErrMismatch, r.Index, r.Count)
		case byIdx[r.Index] != nil:
			return nil, fmt.Errorf("%w: shard %d given twice", ErrMismatch, r.Index)
		}
		byIdx[r.Index] = r
	}
	return byIdx, nil
}

// mergeGroup 合并第 gi 组。
func mergeGroup(gi int, byIdx []*Result, slo loadgen.SLO, opts MergeOptions) (MergedGroup, error) {
	var mg MergedGroup
	var parts []*loadgen.ShardGroup
	for i, r := range byIdx {
		var sg *loadgen.ShardGroup
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
		mg.Summary = loadgen.Summary{Incomplete: true, TotalTokenThroughput: 0, Goodput: -1,
			CompletionTokens: loadgen.Unmeasured(), SpecAcceptRate: loadgen.Unmeasured(), AvgReasoningTokens: -1, AvgContentTokens: -1, AvgPromptTokens: -1}
		return mg, nil
	}
	cfg := parts[0].Config
	var earliest, latest time.Time
	for k, sg := range parts {
		c := sg.Config
		if c.InputLength != cfg.InputLength || c.OutputLength != cfg.OutputLength || c.Concurrency != cfg.Concurrency || c.Round != cfg.Round {
			return MergedGroup{}, fmt.Errorf("%w: group %d is %d/%d/c%d/r%d on shard %d but %d/%d/c%d/r%d on shard %d", ErrMismatch, gi,
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
			ErrSkew, gi, cfg.InputLength, cfg.OutputLength, cfg.Concurrency, cfg.Round, mg.Skew, earliest.Format(time.RFC3339Nano), latest.Format(time.RFC3339Nano), opts.MaxSkew)
	}
	s, hdr, err := loadgen.MergeShardGroups(parts, slo)
	if err != nil {
		return MergedGroup{}, fmt.Errorf("group %d: %w", gi, err)
	}
	mg.HDR = hdr
	s.Incomplete = len(mg.Missing) > 0
	mg.Summary = s
	return mg, nil
}

// MergeTimeline 合并各分片的时间线：同一分组的第 k 行相加（请求数、失败数、token 数、在途数），
// 吞吐按合并后的 token 数与最长的间隔重算。各分片的间隔只在约定的开始时刻对齐，行与行之间可能
// 相差一个调度滞后，所以这是近似的。分位数列无法从各分片的行精确合并：只有一个分片时保留，
// 否则写 -1（不可测）；服务端列取序号最小的分片（它们抓的是同一个服务）。
func MergeTimeline(results ...*Result) []loadgen.Timeline {
	type key struct{ g, k int }
	rows := map[key]*loadgen.Timeline{}
	contrib := map[key]int{}
	var keys []key
	sorted := slices.Clone(results)
	slices.SortFunc(sorted, func(a, b *Result) int { return a.Index - b.Index })
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
	out := make([]loadgen.Timeline, 0, len(keys))
	for _, k := range keys {
		m := rows[k]
		if sec := m.Interval.Seconds(); sec > 0 {
			m.OutputTokenThroughput = float64(m.OutputTokens) / sec
		}
		out = append(out, *m)
	}
	return out
}

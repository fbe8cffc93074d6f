package loadgen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vllm-cibench/cibench/loadgen/servermetrics"
)

// MaxShards 是一个 Profile 最多拆成的分片数（Indexed Job 的 completions 远小于它）。
const MaxShards = 1024

// ErrInvalidShard 是分片参数与 Profile 不相容时的哨兵（例如闭环并发小于分片数）。
var ErrInvalidShard = errors.New("loadgen: invalid shard")

// Shard 指定本进程执行一个 Profile 的哪一片：Count 个进程各执行 Index = 0..Count−1，
// 合起来恰好是单进程会执行的全部请求（见 docs/loadgen.md "Sharding"）。
//
// 划分规则是确定的、只依赖 (Index, Count)：组内第 k 个请求（全局序号）与第 w 个 worker
// （全局序号，含爬坡的启动时刻）属于分片 k mod Count 与 w mod Count；开环时每个分片按同一
// 种子生成整张到达时刻表，只发出属于自己的那些到达，所以各分片的到达时刻之并正是单进程的
// 时刻表。prompt、输出长度抖动、图片都按全局序号取，预热请求数同样按序号划分。
type Shard struct {
	Index int
	Count int
	// StartAt 是各分片约定的开始时刻（墙钟）：第一个分组在预热之后等到这一刻才开始计时，
	// 实际开始与它的差记为 Skew。零值表示不等待（各分片的偏差仍会被记录并在合并时检查）。
	StartAt time.Time
	// Barrier 可选：协调者的组间信号。第一个分组之后的每个分组开始之前（预热与 /metrics 抓取之后）
	// 以该组的 Group.Index 调用它，它返回时该组开始计时；各分片的 Barrier 应在同一时刻返回
	// （例如协调者等所有分片都报告就绪后一起放行），否则后面的分组按各分片跑完上一组的时刻
	// 先后开始，合并因开始时刻相差过大而拒绝（loadgen/shard 的 ErrSkew）。返回错误时 RunShard 以该错误
	// 结束（已完成分组的结果照常返回）。nil 表示不等待。StartAt 非零时第一组仍对齐到 StartAt；
	// StartAt 为零时第一组也由 Barrier 放行（本机分片用它：子进程建好 prompt 池的时刻难以预估）。
	Barrier func(ctx context.Context, group int) error
	// Groups 非空时本分片只执行这些分组（Group.Index），其余分组整组跳过——不预热、不发请求、
	// 不出现在结果里。每组一个 Indexed Job 时用它：第 k 个 Job 的 Pod 只跑第 k 组，第一个被执行的
	// 分组对齐到该 Job 的 StartAt。请求、prompt 与到达时刻只依赖全局序号与分组序号，所以与整体
	// 运行里的那一组相同；预热只在并发档的第一轮，跳过第一轮时也就没有预热（与单进程一致）。
	Groups []int
}

// Check 检查分片参数，以及（已填默认值的）Profile 能否被这样拆开：闭环（以及有并发上限的开环）时
// 每组并发至少要有 Count 个 worker，否则有分片领到请求却没有 worker，会静默少发。
func (s Shard) Check(p Profile) error {
	if s.Count < 1 || s.Count > MaxShards {
		return fmt.Errorf("%w: count %d must be in [1, %d]", ErrInvalidShard, s.Count, MaxShards)
	}
	if s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("%w: index %d must be in [0, %d)", ErrInvalidShard, s.Index, s.Count)
	}
	n := GroupCount(p)
	seen := map[int]bool{}
	for _, g := range s.Groups {
		if g < 0 || g >= n || seen[g] {
			return fmt.Errorf("%w: groups %v: group %d is out of [0, %d) or repeated", ErrInvalidShard, s.Groups, g, n)
		}
		seen[g] = true
	}
	for i, c := range p.Concurrency {
		if c == 0 && p.RequestRate > 0 {
			continue // 开环、不限并发：每个到达一个 goroutine
		}
		if c < s.Count {
			return fmt.Errorf("%w: concurrency[%d]=%d is smaller than the %d shards (each shard needs at least one worker)", ErrInvalidShard, i, c, s.Count)
		}
	}
	return nil
}

// GroupCount 返回（已填默认值的）Profile 的分组数：输入长度 × 输出长度 × 并发档 × 轮数
// （custom 数据集没有输入长度时算一个），与 Run 的执行顺序相同，分组序号为 0..GroupCount−1。
func GroupCount(p Profile) int {
	inputs := len(p.InputLength)
	if p.DatasetType == DatasetCustom && inputs == 0 {
		inputs = 1
	}
	return inputs * len(p.OutputLength) * len(p.Concurrency) * max(p.Epochs, 1)
}

// runs 报告本分片是否执行第 group 组（未分片、或没有限定 Groups 时执行全部）。
func (s *shardRun) runs(group int) bool {
	return s == nil || len(s.Groups) == 0 || slices.Contains(s.Groups, group)
}

// shardRun 是一次分片运行的状态：划分规则与逐组收集的结果。
type shardRun struct {
	Shard
	started bool      // 第一个分组是否已对齐到 StartAt
	release time.Time // 当前分组的约定开始时刻（StartAt 或屏障放行时刻），零值表示没有约定
	groups  []ShardGroup
}

// part 返回 total 个按序号轮流划分的对象中属于本分片的个数。
func (s *shardRun) part(total int) int {
	if s == nil {
		return total
	}
	if total <= s.Index {
		return 0
	}
	return (total-s.Index-1)/s.Count + 1
}

// global 把本分片内第 k 个请求转成组内全局序号。
func (s *shardRun) global(k int) int {
	if s == nil {
		return k
	}
	return s.Index + k*s.Count
}

// mine 报告全局序号 i 的请求或 worker 是否属于本分片。
func (s *shardRun) mine(i int) bool { return s == nil || i%s.Count == s.Index }

// workerIDs 返回本进程要启动的 worker 的全局序号（未分片时为 0..conc−1）。
func (r *runner) workerIDs(conc int) []int {
	ids := make([]int, 0, r.sh.part(conc))
	for i := range conc {
		if r.sh.mine(i) {
			ids = append(ids, i)
		}
	}
	return ids
}

// alignStart 在分组开始计时之前对齐各分片：第一组等到约定的 StartAt（未约定而有 Barrier 时
// 等它放行），之后的组等 Barrier 放行
// （未分片时不等）。对齐的参照时刻记在 release 里，capture 以它计算该组的 Skew。
func (r *runner) alignStart(ctx context.Context, group int) error {
	if r.sh == nil {
		return nil
	}
	if !r.sh.started && (!r.sh.StartAt.IsZero() || r.sh.Barrier == nil) {
		r.sh.started = true
		r.sh.release = r.sh.StartAt
		if d := time.Until(r.sh.StartAt); !r.sh.StartAt.IsZero() && d > 0 {
			if !sleepUntil(ctx, d, nil) {
				return ctx.Err()
			}
		}
		return nil
	}
	r.sh.started = true
	r.sh.release = time.Time{}
	if r.sh.Barrier == nil {
		return nil
	}
	if err := r.sh.Barrier(ctx, group); err != nil {
		return fmt.Errorf("loadgen: shard %d: barrier before group %d: %w", r.sh.Index, group, err)
	}
	r.sh.release = time.Now()
	return nil
}

// capture 把一组的原始统计（而不是汇总行）存进本分片的结果，供 loadgen/shard 的合并重建单进程的汇总。
func (r *runner) capture(g Group, tot *stats, before, after *servermetrics.Snapshot, classes map[string]int, incomplete bool, plan func(*Summary)) {
	if r.sh == nil {
		return
	}
	sg := ShardGroup{Group: g.Index, Config: r.summary(g), Stats: GroupStats{w: groupWire{statsWire: encodeStats(tot),
		Before: encodeSnap(before), After: encodeSnap(after)}}, FailureClasses: classes, Incomplete: incomplete}
	plan(&sg.Config) // 计划的请求数、轮数与本分片是否被预算截短（合并时任一分片截短即截短）
	if !r.sh.release.IsZero() {
		sg.Skew = g.Start.Sub(r.sh.release)
	}
	r.sh.groups = append(r.sh.groups, sg)
}

// ShardGroup 是一个分片在一个分组上的原始测量：分组键与配置列、开始时刻的偏差、不透明的原始统计
// （GroupStats）、失败分类与是否被中断。它是分片结果（loadgen/shard.Result）的一部分，按 JSON 交回。
type ShardGroup struct {
	// Group 是分组序号（Group.Index，0 起，按执行顺序），各分片相同。
	Group int `json:"group"`
	// Config 是该组的分组键与配置列（不含任何测量值）；Config.ExecutionTime 是本分片的实际开始时刻。
	Config Summary `json:"config"`
	// Skew 是本分片实际开始时刻减去约定时刻：第一组相对 StartAt，之后的组相对 Shard.Barrier
	// 放行的时刻（未约定 StartAt、或没有 Barrier 时为 0）。
	Skew           time.Duration  `json:"skew_ns"`
	Stats          GroupStats     `json:"stats"`
	FailureClasses map[string]int `json:"failure_classes,omitempty"`
	Incomplete     bool           `json:"incomplete,omitempty"`
}

// RunShard 执行 Profile 的第 shard.Index 片（共 shard.Count 片），返回本分片已完成分组的原始测量
// （按执行顺序）；逐请求记录照常交给 obs（可为 nil；Record.Index 是组内全局序号），OnGroupEnd 收到的是
// 本分片的局部汇总。出错时仍返回已完成分组（被中断的那组 Incomplete 为真）与错误。Profile 或分片参数
// 无效时在发出任何请求之前返回 nil 与错误。
//
// 这是分片的执行一侧（按全局序号取模划分请求、worker 与到达，见 Shard）；把结果打包、交回、合并成
// 单进程汇总的是 loadgen/shard 包（shard.Run、shard.MergeGroups、shard.RunLocal）。
func RunShard(ctx context.Context, target Target, profile Profile, shard Shard, obs *Observer) ([]ShardGroup, error) {
	p := profile.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := shard.Check(p); err != nil {
		return nil, err
	}
	sh := &shardRun{Shard: shard, groups: []ShardGroup{}}
	_, err := run(ctx, target, profile, obs, sh)
	return sh.groups, err
}

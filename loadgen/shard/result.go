package shard

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/tidwall/gjson"

	"github.com/vllm-cibench/cibench/loadgen"
)

// Format 是分片结果的格式标识，写在每个结果的 format 字段里（v2：每组的 /metrics 快照放进 stats）。
const Format = "cibench.shard/v2"

// MaxResultBytes 是一个分片结果（一行 JSON）的字节上限：8 个指标各至多精确样本预算个样本，
// 按差分变长编码远小于它；上限让一个坏掉的 Pod 日志不能耗尽合并方的内存。
const MaxResultBytes = 256 << 20

// Result 是一个分片运行的自包含结果：每组的原始测量（loadgen.ShardGroup：分布、计数、token 之和、
// 首发/末完成时刻、/metrics 快照与失败分类），足以让 MergeGroups 重建单进程的汇总行。
// 它用 JSON 编码成一行（WriteResult），可以作为 Pod 日志的最后一行或一个文件交回。
type Result struct {
	Format  string    `json:"format"`
	Index   int       `json:"index"`
	Count   int       `json:"count"`
	StartAt time.Time `json:"start_at"`
	// Profile 是已填默认值的 Profile（含 custom prompt）的 JSON 的 SHA-256 的前 12 字节（24 个十六进制字符）：
	// 只用于认出同一次压测（MergeGroups 据此拒绝混合不同压测的分片），不是安全用途，96 位足够。
	Profile string `json:"profile"`
	// Goodput 是 Profile 的 SLO 写法，MergeGroups 用它决定 goodput 列（未配置时为 -1）。
	Goodput []string             `json:"goodput,omitempty"`
	Groups  []loadgen.ShardGroup `json:"groups"`
	// Timeline 是本分片的时间线行（Profile.BucketInterval > 0 时）。
	Timeline []loadgen.Timeline `json:"timeline,omitempty"`
	// Only 是本分片限定执行的分组（Shard.Groups），空表示全部。
	Only []int `json:"only,omitempty"`
	// Error 非空表示本分片没有跑完（只含已完成的分组），合并后的相应分组标为不完整。
	Error string `json:"error,omitempty"`
	// Reason 是 Error 的类别（loadgen.LossCancelled、LossUnreachable 或 LossFailed），合并时写进缺失分片的说明。
	Reason string `json:"reason,omitempty"`
}

// profileHash 返回已填默认值的 Profile 的指纹；分片数与 StartAt 不在 Profile 里，所以各分片相同。
func profileHash(p loadgen.Profile) string {
	b, _ := json.Marshal(p) // Profile 只含可编码的字段
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12])
}

// Run 执行 Profile 的第 sh.Index 片（共 sh.Count 片，loadgen.RunShard）并返回自包含的分片结果；
// 逐请求记录照常交给 obs（可为 nil；Record.Index 是组内全局序号），OnGroupEnd 收到的是本分片的局部汇总。
// 要把记录交回父进程，把 RecordWriter 的 Observer 经 loadgen.Tee 挂上。
//
// 出错时仍返回已完成分组的结果，并把错误写进 Result.Error——调用方应当照样交回它，
// 合并方据此把相应分组标为不完整，而不是当作一个更小的分组。Profile 或分片参数无效时
// 返回 nil 结果与错误。
func Run(ctx context.Context, target loadgen.Target, profile loadgen.Profile, sh loadgen.Shard, obs *loadgen.Observer) (*Result, error) {
	p := profile.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := sh.Check(p); err != nil {
		return nil, err
	}
	res := &Result{Format: Format, Index: sh.Index, Count: sh.Count, StartAt: sh.StartAt,
		Profile: profileHash(p), Goodput: p.Goodput, Groups: []loadgen.ShardGroup{}, Only: slices.Clone(sh.Groups)}
	// 本分片的时间线行总要收进结果（合并方据此画整体时间线），调用方的钩子照常转发。
	keep := &loadgen.Observer{OnTimeline: func(t loadgen.Timeline) error {
		res.Timeline = append(res.Timeline, t)
		return nil
	}}
	groups, err := loadgen.RunShard(ctx, target, profile, sh, loadgen.Tee(obs, keep))
	if groups != nil {
		res.Groups = groups
	}
	if err != nil {
		res.Error, res.Reason = err.Error(), LossReason(ctx, err)
	}
	return res, err
}

// LossReason 把一个分片运行的错误归类为 loadgen.ShardLoss.Reason：ctx 已结束或错误是取消时为
// LossCancelled，连不上服务（loadgen.ErrUnreachable）时为 LossUnreachable，其余为 LossFailed。
func LossReason(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return ""
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return loadgen.LossCancelled
	case errors.Is(err, loadgen.ErrUnreachable):
		return loadgen.LossUnreachable
	}
	return loadgen.LossFailed
}

// WriteResult 把分片结果写成一行 JSON（以换行结尾），适合作为 Pod 日志的最后一行。
func WriteResult(w io.Writer, res *Result) error {
	b, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("shard: encode result: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("shard: write result: %w", err)
	}
	return nil
}

// ReadResult 从 r 中读出最后一个分片结果行（以 {"format":"cibench.shard/v2" 开头的行），
// 前面的日志行被忽略；r 超过 MaxResultBytes 或没有结果行时报错。
func ReadResult(r io.Reader) (*Result, error) { return ReadResultFor(r, -1) }

// ReadResultFor 与 ReadResult 相同，但只取 index 字段等于 index 的结果行（index<0 时不限）：
// 收集方知道每个 Pod 是第几片，别的分片的结果行（例如共享的日志文件）不会被误认。
func ReadResultFor(r io.Reader, index int) (*Result, error) {
	return readResult(r, index, nil, false)
}

// ReadResultOf 与 ReadResultFor 相同，另外只取限定分组（Result.Only，即 Shard.Groups）
// 恰为 groups 的结果行：每组一个 Job 时，第 k 个 Job 的 Pod 交回的必须是第 k 组的结果。
func ReadResultOf(r io.Reader, index int, groups []int) (*Result, error) {
	return readResult(r, index, groups, true)
}

// readResult 取最后一个符合条件的结果行：index ≥ 0 时 index 字段相等，byGroups 时 only 字段等于 groups。
func readResult(r io.Reader, index int, groups []int, byGroups bool) (*Result, error) {
	sc := bufio.NewScanner(io.LimitReader(r, MaxResultBytes+1))
	sc.Buffer(make([]byte, 64<<10), MaxResultBytes)
	var last []byte
	match := resultMatcher(index, groups, byGroups)
	for sc.Scan() {
		if line := sc.Bytes(); match(line) {
			last = append(last[:0], line...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: read: %v", loadgen.ErrBadShardResult, err)
	}
	return decodeResult(last, index, groups, byGroups)
}

// resultPrefix 是结果行的开头：结果行总以 format 字段开始（json.Marshal 按字段顺序编码）。
var resultPrefix = []byte(`{"format":"` + Format + `"`)

// isResultLine 报告一行是不是（任一分片的）结果行。
func isResultLine(line []byte) bool { return bytes.HasPrefix(line, resultPrefix) }

// resultMatcher 返回挑选结果行的条件：是结果行，index ≥ 0 时 index 字段相等，byGroups 时 only 字段等于 groups。
func resultMatcher(index int, groups []int, byGroups bool) func(line []byte) bool {
	return func(line []byte) bool {
		if !isResultLine(line) {
			return false
		}
		if index >= 0 && gjson.GetBytes(line, "index").Int() != int64(index) {
			return false
		}
		if !byGroups {
			return true
		}
		only := gjson.GetBytes(line, "only").Array()
		if len(only) != len(groups) {
			return false
		}
		for i, g := range only {
			if g.Int() != int64(groups[i]) {
				return false
			}
		}
		return true
	}
}

// decodeResult 解码挑出的结果行；last 为 nil（没有符合条件的行）时报错，点名分片与分组。
func decodeResult(last []byte, index int, groups []int, byGroups bool) (*Result, error) {
	if last == nil {
		if byGroups {
			return nil, fmt.Errorf("%w: no %s line (shard %d, groups %v) in the output", loadgen.ErrBadShardResult, Format, index, groups)
		}
		return nil, fmt.Errorf("%w: no %s line (shard %d) in the output", loadgen.ErrBadShardResult, Format, index)
	}
	var res Result
	if err := json.Unmarshal(last, &res); err != nil {
		return nil, fmt.Errorf("%w: %v", loadgen.ErrBadShardResult, err)
	}
	return &res, nil
}

package loadgen

import (
	"fmt"
	"time"

	"github.com/vllm-cibench/cibench/loadgen/servermetrics"
)

// distNames 是 statsWire.Dists 各分布的名字（MergeShardGroups 返回的 HDR 列表用它们）。
var distNames = [8]string{"ttft", "tpot", "tpot_sec", "first_to_second", "e2e", "slot_wait", "completion_tokens", "client_lag"}

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

// MergeShardGroups 把各分片同一分组的原始测量（parts，至少一个，分组键相同）合成单进程对同一批记录
// 会得到的汇总行：配置列取 parts[0].Config，ExecutionTime 取各分片最早的开始时刻；计数、token 之和、
// 失败分类逐项相加（精确）；时长分布把各分片的精确样本或 HDR 桶合起来（见 mergeStats），分位数与
// 单进程一致；TotalTime 与各吞吐列取全部分片窗口之并；服务端列取 serverWindow 选出的两端快照之差。
// hdr 列出分位数来自 HDR 直方图的分布名（见 docs/loadgen.md）。分片的原始统计自相矛盾时返回
// ErrBadShardResult。Incomplete、MissingShards 与开始时刻之差的检查由调用方（loadgen/shard）负责。
func MergeShardGroups(parts []*ShardGroup, slo SLO) (s Summary, hdr []string, err error) {
	if len(parts) == 0 {
		return Summary{}, nil, fmt.Errorf("%w: no shard groups to merge", ErrBadShardResult)
	}
	tot, hdr, err := mergeStats(parts)
	if err != nil {
		return Summary{}, nil, err
	}
	s = parts[0].Config
	var earliest time.Time
	for _, sg := range parts {
		if t := sg.Config.ExecutionTime; earliest.IsZero() || t.Before(earliest) {
			earliest = t
		}
	}
	s.ExecutionTime = earliest
	tot.fill(&s, slo)
	before, after := serverWindow(parts)
	applyServer(&s, before, after)
	s.Phases = phaseBreakdown(tot, before, after, nil)
	for _, sg := range parts {
		s.BudgetLimited = s.BudgetLimited || sg.Config.BudgetLimited
		for k, v := range sg.FailureClasses {
			if s.FailureClasses == nil {
				s.FailureClasses = map[string]int{}
			}
			s.FailureClasses[k] += v
		}
	}
	return s, hdr, nil
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
			w := sg.Stats.w.Dists[k]
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
		p, err := sg.Stats.w.decode(exact, dists)
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
		b, a := sg.Stats.w.Before.decode(), sg.Stats.w.After.decode()
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

package gate

import (
	"time"

	"github.com/vllm-cibench/cibench/explain"
)

// 阶段名（与 report 的产物目录名一致）。门禁只认这几个：部署失败让功能门禁失败，
// 功能、精度阶段被中断时对应门禁记为 interrupted。其余阶段名照样产生 stage 门禁。
const (
	StageDeploy     = "deploy"
	StageFunctional = "functional"
	StageAccuracy   = "accuracy"
)

// Scenario 是一个场景交给门禁的全部输入。字段都是值，不引用任何阶段包的类型：
// 阶段结果由调用方适配（report 各阶段子包的 Renderer.Gate，经 report.Scenario.GateInput，是参考实现）。
type Scenario struct {
	Name    string
	Model   string
	Quant   string
	Backend string // 压测行没写后端时用它（与基线键的 Backend 一致）

	// Errors 是各阶段无法完成（或被中断）的记录，每条产生一项 stage 门禁。
	Errors []StageError
	// Functional 为 nil 表示功能阶段没有产生报告。
	Functional *Functional
	Accuracy   []Accuracy
	// Perf 是压测汇总行（每轮一行），按组合分组后判定；Samples 是各组合的逐请求样本。
	Perf    []PerfRow
	Samples []Samples
}

// StageError 是某阶段无法完成的原因。Interrupted 为 true 表示被中断而不是失败。
type StageError struct {
	Stage       string
	Message     string
	Interrupted bool
}

// interrupted 报告场景的 stage 阶段是否被中断。
func (sc Scenario) interrupted(stage string) bool {
	for _, e := range sc.Errors {
		if e.Stage == stage && e.Interrupted {
			return true
		}
	}
	return false
}

// CaseStatus 是一个功能用例的结论，取值与 functional.Status 相同。
type CaseStatus string

// 用例结论取值。不认识的取值（更新的生产者）按失败处理：不认识的结论不能算通过。
const (
	CasePass        CaseStatus = "pass"
	CaseFail        CaseStatus = "fail"
	CaseSkip        CaseStatus = "skip"
	CaseUnsupported CaseStatus = "unsupported"
	CaseCancelled   CaseStatus = "cancelled"
)

// notRun 报告结论是否为"没有执行"（skip 或 unsupported）。
func (s CaseStatus) notRun() bool { return s == CaseSkip || s == CaseUnsupported }

// Case 是一个功能用例的结论。ID 可以已带 "<suite>/" 前缀。
type Case struct {
	ID     string
	Suite  string
	Status CaseStatus
	// PassedAfterRetry 为 true 表示用例通过了，但只在重试（429/5xx 等）之后：
	// 不改变判定，只让每日趋势逐次数出不稳定的服务。
	PassedAfterRetry bool
}

// Functional 是一个场景的功能阶段结果。
type Functional struct {
	Cases []Case
	// InScope 报告基线里的用例是否在本次选择范围内（用例消失时据此判断是漂移还是没选）；
	// nil 表示全部在范围内。
	InScope func(id, suite string) bool
}

// Accuracy 是一个数据集的精度结论：JudgeAccuracy 的判定加上评测的样本数（由
// AccuracyVerdict.Input 合成）；AccuracyGate 把它变成与其他门禁同一形状的 Gate，并在阶段
// 被中断、只评了部分样本时改判 interrupted。
type Accuracy struct {
	Dataset string
	// Metric、Value 是比较的指标与取值；Threshold 为 nil 表示分数不设门禁。
	Metric    string
	Value     float64
	Threshold *float64
	// Pass 是阶段的判定；ScoreGated 为 false 表示只判定了失败请求比例；Reason 说明原因。
	Pass       bool
	ScoreGated bool
	Reason     string
	// Partial 为 true 表示只评了 Examples / Planned 个样本。
	Partial  bool
	Examples int
	Planned  int
}

// Latency 是一组时延的统计摘要（与 loadgen.Latency 同口径）。Count 为 0 表示不可测。
type Latency struct {
	Count                   int64
	P50, P75, P90, P95, P99 time.Duration
	Min, Max, Avg           time.Duration
}

// Valid 报告摘要是否可用（至少有一个样本）。
func (l Latency) Valid() bool { return l.Count > 0 }

// at 返回 q 分位的值（只支持摘要里有的分位点）。
func (l Latency) at(q float64) time.Duration {
	switch q {
	case 0.99:
		return l.P99
	case 0.95:
		return l.P95
	case 0.90:
		return l.P90
	case 0.75:
		return l.P75
	case 0.5:
		return l.P50
	}
	return 0
}

// PerfRow 是压测一个组合一轮的汇总（loadgen.Summary 中门禁用到的部分）。
type PerfRow struct {
	Backend       string
	ControlMethod string
	InputLength   int
	OutputLength  int
	Concurrency   int
	TTFT, E2E     Latency
	// QPS 为负表示不可测；FailRate 是失败请求比例 [0,1]。
	QPS       float64
	FailRate  float64
	Succeeded int64
	// OutputThroughput 是输出 token 吞吐（tokens/s；0 表示没有记录）。只给报告的吞吐图画基线用。
	OutputThroughput float64
	// Time 是这一轮的开始时间（基线的时间取各轮最早者）。
	Time time.Time
	// Round 是 1 起的轮次，Epochs 是该组合计划的轮数（0 表示不知道，旧数据）；Incomplete 为
	// true 表示这一轮被截断（运行被中断、阶段超时、分片缺失）。Select 据此判断一个组合在
	// 一次没跑完的每日运行里是否完整：完整的组合照样成为基线。
	Round      int
	Epochs     int
	Incomplete bool
	// Phases 是这一轮的阶段分解（loadgen.Summary.Phases；没有时为 nil）。性能门禁与每日趋势
	// 据它说明变化来自哪个阶段（见 explain 包）。
	Phases *explain.Breakdown
}

// Samples 是一个压测组合（多轮合并）的有界逐请求样本，性能门禁用它计算置信区间。
// perfreport.Samples（samples.json 的格式）是它的别名。
type Samples struct {
	Backend       string `json:"backend,omitempty"`
	ControlMethod string `json:"control_method,omitempty"`
	InputLength   int    `json:"input_len"`
	OutputLength  int    `json:"output_len"`
	Concurrency   int    `json:"concurrency"`
	// Seen 是观察到的成功请求总数；大于切片长度时说明样本经过了蓄水池抽样。
	Seen int64 `json:"seen"`
	// TTFTMicros、E2EMicros 是成功请求的 TTFT 与 E2E（微秒）。
	TTFTMicros []int64 `json:"ttft_us"`
	E2EMicros  []int64 `json:"e2e_us"`
	// GapMicros 是同组内相邻两次成功完成之间的间隔（微秒），其均值的倒数即完成速率。
	GapMicros []int64 `json:"gap_us"`
}

// matches 报告样本是否属于键 k 所指的组合（字符串字段一方为空时不区分）。
func (s *Samples) matches(k Key) bool {
	return s.InputLength == k.InputLength && s.OutputLength == k.OutputLength && s.Concurrency == k.Concurrency &&
		looseEq(s.Backend, k.Backend) && looseEq(s.ControlMethod, k.ControlMethod)
}

// findSamples 返回 sets 中属于 k 的样本，没有时为 nil。
func findSamples(sets []Samples, k Key) *Samples {
	for i := range sets {
		if sets[i].matches(k) {
			return &sets[i]
		}
	}
	return nil
}

// seconds 把微秒切片转换为秒。
func seconds(us []int64) []float64 {
	out := make([]float64, len(us))
	for i, v := range us {
		out[i] = float64(v) / 1e6
	}
	return out
}

// Run 是一次运行交给基线选取与趋势分析的输入。
type Run struct {
	RunID string
	// Daily 为 true 表示每日运行；Complete 为 true 表示运行正常结束（Finish）。
	// 只有两者都为 true 的运行才会被 Select 与 DailyTrend 当作基线。
	Daily     bool
	Complete  bool
	Started   time.Time
	Scenarios []Scenario
}

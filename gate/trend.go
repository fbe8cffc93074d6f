package gate

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/vllm-cibench/cibench/explain"
)

// 每日趋势的默认参数：30 个每日结果（约一个月，与每日产物的保留期一致）、每段至少
// 4 个点（一次偶发的慢跑不会单独成段）、显著性 0.01、499 次置换（p 的最小值 0.002）。
const (
	DefaultTrendWindow       = 30
	DefaultTrendMinSegment   = 4
	DefaultTrendSignificance = 0.01
	DefaultTrendPermutations = 499
)

// TrendOptions 配置每日趋势的变点检测。零值字段取默认值。
type TrendOptions struct {
	// Window 是参与检测的最近每日结果数（含本次）。
	Window int
	// MinSegment 是变点两侧各自至少需要的结果数（≥ 2）。
	MinSegment int
	// Significance 是置换检验的显著性水平。
	Significance float64
	// Permutations 是置换次数；Seed 决定置换（同样的历史永远给出同样的变点）。
	Permutations int
	Seed         uint64
}

// withDefaults 返回填好默认值的副本。
func (o TrendOptions) withDefaults() TrendOptions {
	if o.Window == 0 {
		o.Window = DefaultTrendWindow
	}
	if o.MinSegment == 0 {
		o.MinSegment = DefaultTrendMinSegment
	}
	if o.Significance == 0 {
		o.Significance = DefaultTrendSignificance
	}
	if o.Permutations == 0 {
		o.Permutations = DefaultTrendPermutations
	}
	return o
}

// ChangePoint 是一条被跟踪序列上的一个变点。
type ChangePoint struct {
	// Series 是序列名：场景/组合/指标，如 "emulator/in128-out64-c4-openai-chat/ttft_p99_seconds"。
	Series   string `json:"series"`
	Scenario string `json:"scenario"`
	Metric   string `json:"metric"`
	Key      *Key   `json:"key,omitempty"`
	// RunID 与 Time 是变化后的第一次每日运行。
	RunID string    `json:"run_id"`
	Time  time.Time `json:"time"`
	// Before、After 是变点前后两段（到相邻变点为止）的均值，DeltaPct 是相对变化。
	Before   float64 `json:"before"`
	After    float64 `json:"after"`
	DeltaPct float64 `json:"delta_pct"`
	PValue   float64 `json:"p_value"`
	// New 为 true 表示这个变点是本次每日结果带来的：不含本次的历史上检测不到它。
	New bool `json:"new"`
	// Explain 与 Attribution 是变点前最后一次与变点后第一次每日运行的阶段分解比较（两侧都
	// 没有分解时为空），含义同 Gate 的同名字段。
	Explain     *explain.Explanation `json:"explain,omitempty"`
	Attribution string               `json:"attribution,omitempty"`
}

// Trend 是每日报告里的趋势分析。
type Trend struct {
	Window       int           `json:"window"`
	Runs         int           `json:"runs"`   // 窗口内实际的每日结果数
	Series       int           `json:"series"` // 被跟踪的序列数
	ChangePoints []ChangePoint `json:"change_points,omitempty"`
	// Retried 是窗口内每次每日运行、每个场景里只在重试之后才通过的功能用例（没有的不列）：
	// 不稳定的服务是一项发现，趋势里逐次计数，一夜偶发与持续变差一眼可分。
	Retried []RetriedCases `json:"retried,omitempty"`
}

// RetriedCases 是一次每日运行中一个场景重试后才通过的功能用例。
type RetriedCases struct {
	RunID    string    `json:"run_id"`
	Time     time.Time `json:"time"`
	Scenario string    `json:"scenario"`
	// PassedAfterRetry 是重试后才通过的用例数，Cases 是它们的 ID。
	PassedAfterRetry int      `json:"passed_after_retry"`
	Cases            []string `json:"cases"`
}

// retriedCases 数出 r 中每个场景重试后才通过的功能用例。
func retriedCases(r Run) []RetriedCases {
	var out []RetriedCases
	for _, sc := range r.Scenarios {
		if sc.Functional == nil {
			continue
		}
		rc := RetriedCases{RunID: r.RunID, Time: r.Started, Scenario: sc.Name}
		for _, c := range sc.Functional.Cases {
			if c.PassedAfterRetry && c.Status == CasePass {
				rc.PassedAfterRetry++
				rc.Cases = append(rc.Cases, c.ID)
			}
		}
		if rc.PassedAfterRetry > 0 {
			out = append(out, rc)
		}
	}
	return out
}

// NewChangePoints 返回本次新出现的变点。
func (t *Trend) NewChangePoints() []ChangePoint {
	if t == nil {
		return nil
	}
	var out []ChangePoint
	for _, c := range t.ChangePoints {
		if c.New {
			out = append(out, c)
		}
	}
	return out
}

// trendPoint 是一条序列上的一个每日值。
type trendPoint struct {
	runID  string
	at     time.Time
	v      float64
	phases *explain.Breakdown
}

// DailyTrend 在 runs 中已完成的每日运行（与 Select 同一规则）加上 current（本次运行，
// 不要求已完成）上，对每条被跟踪的序列（场景 × 组合 × {TTFT P99, E2E P99, QPS}，
// 多轮取中位数，与性能门禁同口径）在最近 Window 个结果上做 E-divisive 变点检测。
// 变点在去掉本次结果后检测不到时标为 New——这就是每日报告要列出的"新变点"。
func DailyTrend(runs []Run, current Run, opt TrendOptions) (*Trend, error) {
	opt = opt.withDefaults()
	if opt.MinSegment < 2 || opt.Window < 2*opt.MinSegment || opt.Significance <= 0 || opt.Significance >= 1 || opt.Permutations < 1 {
		return nil, fmt.Errorf("%w: trend options %+v", ErrInvalidThresholds, opt)
	}
	var kept []Run
	for _, r := range completedDaily(runs) {
		// 趋势是"截至本次"的：比本次晚开始的运行（重新汇总旧运行时）不参与。
		if r.RunID != current.RunID && !r.Started.After(current.Started) {
			kept = append(kept, r)
		}
	}
	runs = append(kept, current)
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Started.Before(runs[j].Started) })
	if len(runs) > opt.Window {
		runs = runs[len(runs)-opt.Window:]
	}
	type sid struct {
		scenario, metric string
		key              Key
	}
	series := map[sid][]trendPoint{}
	var order []sid
	for _, r := range runs {
		for k, b := range FromRun(r) {
			for _, m := range []struct {
				name string
				v    float64
			}{{MetricTTFTP99, b.TTFTP99.Seconds()}, {MetricE2EP99, b.E2EP99.Seconds()}, {MetricQPS, b.QPS}} {
				if !(m.v > 0) || math.IsInf(m.v, 0) {
					continue
				}
				id := sid{k.Scenario, m.name, k}
				if _, ok := series[id]; !ok {
					order = append(order, id)
				}
				series[id] = append(series[id], trendPoint{runID: r.RunID, at: r.Started, v: m.v, phases: b.Phases})
			}
		}
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.scenario != b.scenario {
			return a.scenario < b.scenario
		}
		if a.key.String() != b.key.String() {
			return a.key.String() < b.key.String()
		}
		return a.metric < b.metric
	})
	t := &Trend{Window: opt.Window, Runs: len(runs), Series: len(order)}
	for _, r := range runs {
		t.Retried = append(t.Retried, retriedCases(r)...)
	}
	for _, id := range order {
		pts := series[id]
		name := id.scenario + "/" + id.key.String() + "/" + id.metric
		z := make([]float64, len(pts))
		for i, p := range pts {
			z[i] = p.v
		}
		h := fnv.New64a()
		_, _ = h.Write([]byte(name))
		detect := func(xs []float64) []cpResult {
			return eDivisive(xs, opt.MinSegment, opt.Significance, opt.Permutations, rand.New(rand.NewPCG(opt.Seed, h.Sum64())))
		}
		cps := detect(z)
		if len(cps) == 0 {
			continue
		}
		var prev map[string]bool
		if pts[len(pts)-1].runID == current.RunID {
			prev = map[string]bool{}
			for _, c := range detect(z[:len(z)-1]) {
				prev[pts[c.idx].runID] = true
			}
		}
		key := id.key
		for i, c := range cps {
			lo, hi := 0, len(z)
			if i > 0 {
				lo = cps[i-1].idx
			}
			if i+1 < len(cps) {
				hi = cps[i+1].idx
			}
			before, after := mean(z[lo:c.idx]), mean(z[c.idx:hi])
			cp := ChangePoint{Series: name, Scenario: id.scenario, Metric: id.metric, Key: &key, RunID: pts[c.idx].runID, Time: pts[c.idx].at,
				Before: before, After: after, PValue: c.pValue, New: prev != nil && !prev[pts[c.idx].runID]}
			if before != 0 {
				cp.DeltaPct = (after - before) / before * 100
			}
			// 归因：变点前最后一次与变点后第一次每日运行的阶段分解之比较。
			if pb, pa := pts[c.idx-1].phases, pts[c.idx].phases; pb != nil || pa != nil {
				ex := explain.Compare(pb, pa, explain.Options{})
				cp.Explain = &ex
				cp.Attribution = ex.Summary(attributionMetric(id.metric))
			}
			t.ChangePoints = append(t.ChangePoints, cp)
		}
	}
	return t, nil
}

// mean 返回 xs 的算术平均。
func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

package gate

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/vllm-cibench/cibench/explain"
)

// Key 标识"同场景同组合"：性能门禁只与键完全相同的每日基线比较。
// Model、Quant、Backend、ControlMethod 为空表示调用方不区分。
type Key struct {
	Scenario      string `json:"scenario"`
	Model         string `json:"model,omitempty"`
	Quant         string `json:"quant,omitempty"`
	Backend       string `json:"backend,omitempty"`
	ControlMethod string `json:"control_method,omitempty"`
	InputLength   int    `json:"input_len"`
	OutputLength  int    `json:"output_len"`
	Concurrency   int    `json:"concurrency"`
}

// String 返回便于人读的键描述，用于报告与门禁名。
func (k Key) String() string {
	s := fmt.Sprintf("in%d-out%d-c%d", k.InputLength, k.OutputLength, k.Concurrency)
	if k.Backend != "" {
		s += "-" + k.Backend
	}
	return s
}

// Baseline 是一个组合在基线运行中的关键数值，也是当前运行聚合后的数值——项目里唯一的
// 基线类型：产物目录（report.ArtifactBaselines）、Prometheus 与汇总 CSV（metrics 的读取器）
// 给出的都是它。时延为 0、QPS 为负表示该项不可得（不参与比较，门禁记为 no_baseline）。
type Baseline struct {
	RunID    string        `json:"run_id,omitempty"`
	Time     time.Time     `json:"time,omitzero"`
	TTFTP99  time.Duration `json:"ttft_p99_ns"`
	E2EP99   time.Duration `json:"e2e_p99_ns"`
	QPS      float64       `json:"qps"`
	FailRate float64       `json:"fail_rate"`
	// OutputThroughput 是输出 token 吞吐（tokens/s，各轮中位数；0 表示没有记录）。它不参与判定，
	// 只随 QPS 门禁进入报告（Gate.BaselineOutputThroughput），吞吐图因此能画出基线。
	OutputThroughput float64 `json:"output_throughput,omitempty"`
	// TTFT、E2E 是各轮时延摘要按字段的中位数（含 Count），用于判断样本是否支撑分位数
	// 与 lower_quantile；Succeeded 是各轮成功请求数的中位数。
	TTFT      Latency `json:"-"`
	E2E       Latency `json:"-"`
	Succeeded int64   `json:"-"`
	// Samples 是该组合的逐请求样本（没有时为 nil：置信区间不可得）。
	Samples *Samples `json:"-"`
	// Phases 是各轮阶段分解的合并（explain.Merge；没有时为 nil）：性能门禁拿它与当前运行的
	// 合并分解比较，说明时间花在哪个阶段。
	Phases *explain.Breakdown `json:"phases,omitempty"`
}

// Source 提供最近一次每日运行中同键的基线。found 为 false 表示没有基线（不是错误）；
// err 表示查询本身失败（如 Prometheus 不可达），门禁记为 no_baseline 并附上原因。
// Baselines、Static、metrics 的 PromBaseline 与 CSVBaseline 实现它。
type Source interface {
	Lookup(ctx context.Context, key Key) (b Baseline, found bool, err error)
}

// SourceFunc 让普通函数满足 Source。
type SourceFunc func(ctx context.Context, key Key) (Baseline, bool, error)

// Lookup 调用 f 本身。
func (f SourceFunc) Lookup(ctx context.Context, key Key) (Baseline, bool, error) {
	return f(ctx, key)
}

// Static 是内存中的基线表，由 FromRun 或 Select 构建。查找时先精确匹配；找不到时
// 忽略字符串字段中一方为空的差异。
type Static map[Key]Baseline

var _ Source = Static(nil)

// Lookup 按键查找基线。
func (s Static) Lookup(_ context.Context, key Key) (Baseline, bool, error) {
	if b, ok := s[key]; ok {
		return b, true, nil
	}
	for k, b := range s {
		if k.Scenario == key.Scenario && k.InputLength == key.InputLength && k.OutputLength == key.OutputLength &&
			k.Concurrency == key.Concurrency && looseEq(k.Model, key.Model) && looseEq(k.Quant, key.Quant) &&
			looseEq(k.Backend, key.Backend) && looseEq(k.ControlMethod, key.ControlMethod) {
			return b, true, nil
		}
	}
	return Baseline{}, false, nil
}

// looseEq 在任一方为空时视为相等。
func looseEq(a, b string) bool { return a == "" || b == "" || a == b }

// keyOf 返回压测汇总行所属的基线键（行没写后端时用场景的后端）。
func keyOf(sc Scenario, row PerfRow) Key {
	backend := row.Backend
	if backend == "" {
		backend = sc.Backend
	}
	return Key{Scenario: sc.Name, Model: sc.Model, Quant: sc.Quant, Backend: backend, ControlMethod: row.ControlMethod,
		InputLength: row.InputLength, OutputLength: row.OutputLength, Concurrency: row.Concurrency}
}

// Aggregate 把同一组合的多轮（epochs）汇总行合成一个数值：各指标取各轮的
// 中位数，避免单轮抖动主导门禁。时延不可测（Count 为 0）的轮次不参与该项。
func Aggregate(rows []PerfRow) Baseline {
	var ttft, e2e, qps, fr, tput []float64
	for _, r := range rows {
		if r.OutputThroughput > 0 {
			tput = append(tput, r.OutputThroughput)
		}
		if r.TTFT.Valid() {
			ttft = append(ttft, float64(r.TTFT.P99))
		}
		if r.E2E.Valid() {
			e2e = append(e2e, float64(r.E2E.P99))
		}
		qps = append(qps, r.QPS)
		fr = append(fr, r.FailRate)
	}
	b := Baseline{QPS: -1, Succeeded: medianSucceeded(rows)}
	b.TTFT = aggregateLatency(rows, func(s *PerfRow) Latency { return s.TTFT })
	b.E2E = aggregateLatency(rows, func(s *PerfRow) Latency { return s.E2E })
	if len(ttft) > 0 {
		b.TTFTP99 = time.Duration(median(ttft))
	}
	if len(e2e) > 0 {
		b.E2EP99 = time.Duration(median(e2e))
	}
	if len(qps) > 0 {
		b.QPS, b.FailRate = median(qps), median(fr)
	}
	if len(tput) > 0 {
		b.OutputThroughput = median(tput)
	}
	for _, r := range rows {
		if b.Time.IsZero() || r.Time.Before(b.Time) {
			b.Time = r.Time
		}
		b.Phases = explain.Merge(b.Phases, r.Phases)
	}
	return b
}

// median 返回 xs 的中位数（偶数个取中间两者均值）；会重排 xs。
func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// groupPerf 按基线键分组场景的压测行，保持首次出现的顺序。
func groupPerf(sc Scenario) ([]Key, map[Key][]PerfRow) {
	var keys []Key
	groups := map[Key][]PerfRow{}
	for _, row := range sc.Perf {
		k := keyOf(sc, row)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], row)
	}
	return keys, groups
}

// FromRun 把一次运行的压测结果转换成基线表（不看它是否每日、是否完成：选取由 Select 做）。
func FromRun(run Run) Static {
	return baselinesOf(run, func([]PerfRow) bool { return true })
}

// baselinesOf 把运行中 keep 接受的组合聚合成基线表（FromRun 全收，Select 只收完整的组合）。
func baselinesOf(run Run, keep func([]PerfRow) bool) Static {
	out := Static{}
	for _, sc := range run.Scenarios {
		keys, groups := groupPerf(sc)
		for _, k := range keys {
			if !keep(groups[k]) {
				continue
			}
			b := Aggregate(groups[k])
			b.RunID = run.RunID
			b.Samples = findSamples(sc.Samples, k)
			if b.Time.IsZero() {
				b.Time = run.Started
			}
			out[k] = b
		}
	}
	return out
}

// FunctionalBaseline 是最近一次已完成的每日运行中一个场景的逐用例功能状态，
// 功能门禁用它发现 pass → skip 漂移。
type FunctionalBaseline struct {
	RunID    string                `json:"run_id"`
	Statuses map[string]CaseStatus `json:"statuses"`
}

// FunctionalSource 是 Source 的可选扩展：实现它时 Evaluate 比较功能用例与每日基线。
// found 为 false 表示该场景没有每日功能结果（不是错误）。
type FunctionalSource interface {
	FunctionalBaseline(ctx context.Context, scenario string) (b FunctionalBaseline, found bool, err error)
}

// FunctionalBaselines 是按场景名索引的功能基线表。
type FunctionalBaselines map[string]FunctionalBaseline

// FunctionalBaseline 实现 FunctionalSource。
func (f FunctionalBaselines) FunctionalBaseline(_ context.Context, scenario string) (FunctionalBaseline, bool, error) {
	b, ok := f[scenario]
	return b, ok, nil
}

// WithFunctional 把性能基线来源 perf 与功能基线来源 fn 合成一个 Source：性能查询交给
// perf（nil 时没有性能基线），功能查询交给 fn。例如性能基线来自 Prometheus、功能基线
// 来自产物目录。
func WithFunctional(perf Source, fn FunctionalSource) Source {
	return withFunctional{perf: perf, fn: fn}
}

// withFunctional 是 WithFunctional 的实现。
type withFunctional struct {
	perf Source
	fn   FunctionalSource
}

// Lookup 把性能查询交给内层来源（内层为 nil 时没有基线）。
func (w withFunctional) Lookup(ctx context.Context, key Key) (Baseline, bool, error) {
	if w.perf == nil {
		return Baseline{}, false, nil
	}
	return w.perf.Lookup(ctx, key)
}

// FunctionalBaseline 把功能查询交给 fn。
func (w withFunctional) FunctionalBaseline(ctx context.Context, scenario string) (FunctionalBaseline, bool, error) {
	return w.fn.FunctionalBaseline(ctx, scenario)
}

// Baselines 是 Select 选出的全部基线：性能（按组合）与功能（按场景）。它同时实现
// Source 与 FunctionalSource，可直接交给 Evaluate。
type Baselines struct {
	Perf       Static
	Functional FunctionalBaselines
}

var (
	_ Source           = Baselines{}
	_ FunctionalSource = Baselines{}
)

// Lookup 实现 Source。
func (b Baselines) Lookup(ctx context.Context, key Key) (Baseline, bool, error) {
	return b.Perf.Lookup(ctx, key)
}

// FunctionalBaseline 实现 FunctionalSource。
func (b Baselines) FunctionalBaseline(ctx context.Context, scenario string) (FunctionalBaseline, bool, error) {
	return b.Functional.FunctionalBaseline(ctx, scenario)
}

// Select 是基线选取规则的唯一实现。性能基线按组合选取：每个组合取开始时间最新的、在其中
// 完整的每日运行的数值。一个组合"完整"是指它每一轮都在（有计划轮数 Epochs 时轮次
// 1..Epochs 都有行）且没有一轮被截断（PerfRow.Incomplete）。已完成的每日运行（Complete）
// 中的组合照此检查；没跑完的每日运行（超时、被中断）中只有计划轮数已知且完整的组合才算——
// 一次在预算或超时前做完了一部分组合的每日运行仍为这些组合提供基线，其余组合缺失
// （门禁为 no_baseline），从不当作通过。功能基线只取已完成的每日运行，每个场景取最新一次
// 带功能结果的逐用例状态。
func Select(runs []Run) Baselines {
	out := Baselines{Perf: Static{}, Functional: FunctionalBaselines{}}
	for _, r := range sortedDaily(runs) {
		for k, b := range fromCompleteCombos(r) {
			out.Perf[k] = b
		}
		if !r.Complete {
			continue
		}
		for _, sc := range r.Scenarios {
			if sc.Functional == nil || len(sc.Functional.Cases) == 0 {
				continue
			}
			fb := FunctionalBaseline{RunID: r.RunID, Statuses: map[string]CaseStatus{}}
			for _, c := range sc.Functional.Cases {
				fb.Statuses[c.ID] = c.Status
			}
			out.Functional[sc.Name] = fb
		}
	}
	return out
}

// completedDaily 返回已完成的每日运行，按开始时间从旧到新（后者覆盖前者）。
func completedDaily(runs []Run) []Run {
	var out []Run
	for _, r := range sortedDaily(runs) {
		if r.Complete {
			out = append(out, r)
		}
	}
	return out
}

// sortedDaily 返回全部每日运行（含没跑完的），按开始时间从旧到新。
func sortedDaily(runs []Run) []Run {
	var out []Run
	for _, r := range runs {
		if r.Daily {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// fromCompleteCombos 与 FromRun 相同，但只保留在运行 r 中完整的组合（见 Select）。
func fromCompleteCombos(r Run) Static {
	return baselinesOf(r, func(rows []PerfRow) bool { return comboComplete(rows, r.Complete) })
}

// comboComplete 报告一个组合的各轮是否完整：没有被截断的一轮，且计划轮数已知时 1..Epochs 都在。
// 计划轮数未知（旧数据）时只有已完成的运行（runComplete）才算完整。
func comboComplete(rows []PerfRow, runComplete bool) bool {
	epochs := 0
	seen := map[int]bool{}
	for _, r := range rows {
		if r.Incomplete {
			return false
		}
		epochs = max(epochs, r.Epochs)
		seen[r.Round] = true
	}
	if epochs == 0 {
		return runComplete
	}
	for i := 1; i <= epochs; i++ {
		if !seen[i] {
			return false
		}
	}
	return true
}

// ScenarioID 标识一个场景（基线读取器按它查询一次每日运行）。
type ScenarioID struct {
	Model    string
	Quant    string
	Scenario string
}

// DailyRows 是一个场景最近一次每日运行的全部压测行（各组合、各轮）。
type DailyRows struct {
	RunID string
	Rows  []PerfRow
}

// DailyReader 读取一个场景最近一次每日运行的压测行。found 为 false 表示没有（不是错误）。
type DailyReader func(ctx context.Context, id ScenarioID) (rows DailyRows, found bool, err error)

// PerScenario 把按场景读取的 DailyReader（Prometheus、汇总 CSV）变成 Source：每个场景
// 只读取一次并缓存（避免每个组合都发一轮 PromQL），再挑出同组合的各轮聚合成 Baseline。
// 查询因 ctx 取消而失败时不缓存。
//
// 并发：返回值可被多个 goroutine 同时使用。
func PerScenario(read DailyReader) Source {
	return &perScenario{read: read, cache: map[ScenarioID]dailyEntry{}}
}

// perScenario 是 PerScenario 的实现。
type perScenario struct {
	read  DailyReader
	mu    sync.Mutex
	cache map[ScenarioID]dailyEntry
}

// dailyEntry 是一次场景级查询的缓存结果（含"没有基线"与错误）。
type dailyEntry struct {
	d     DailyRows
	found bool
	err   error
}

// Lookup 查询（或命中缓存）键所属场景的每日结果，再挑出同组合的各轮聚合。
func (p *perScenario) Lookup(ctx context.Context, key Key) (Baseline, bool, error) {
	id := ScenarioID{Model: key.Model, Quant: key.Quant, Scenario: key.Scenario}
	p.mu.Lock()
	e, ok := p.cache[id]
	p.mu.Unlock()
	if !ok {
		d, found, err := p.read(ctx, id)
		e = dailyEntry{d: d, found: found}
		if err != nil {
			e = dailyEntry{err: fmt.Errorf("gate: baseline %s: %w", key.Scenario, err)}
		}
		if ctx.Err() == nil {
			p.mu.Lock()
			p.cache[id] = e
			p.mu.Unlock()
		}
	}
	if e.err != nil || !e.found {
		return Baseline{}, false, e.err
	}
	var rows []PerfRow
	for _, r := range e.d.Rows {
		if r.InputLength == key.InputLength && r.OutputLength == key.OutputLength && r.Concurrency == key.Concurrency &&
			looseEq(r.Backend, key.Backend) && looseEq(r.ControlMethod, key.ControlMethod) {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return Baseline{}, false, nil
	}
	b := Aggregate(rows)
	b.RunID = e.d.RunID
	return b, true, nil
}

package report

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"sync"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/metrics"
)

// ArtifactBaselines 从产物根目录（fsys 的根即 artifacts/）中所有已完成的
// 每日运行（daily/<run_id>/summary.json，complete 为 true）构建基线表：
// 每个键取开始时间最新的那次每日运行。未完成（被中断）的运行不作为基线，
// 因为它们的数据可能只覆盖了部分组合或轮次。没有任何每日运行时返回空表。
func ArtifactBaselines(fsys fs.FS) (StaticBaselines, error) {
	runs, err := dailyRuns(fsys)
	if err != nil {
		return nil, fmt.Errorf("report: artifact baselines: %w", err)
	}
	out := StaticBaselines{}
	for _, r := range runs {
		for k, b := range BaselinesFromResult(r) {
			out[k] = b
		}
	}
	return out, nil
}

// dailyRuns 读取 daily/<run_id>/summary.json 中已完成的每日运行，按开始时间从旧到新
// 排列（后者覆盖前者，于是每个键留下最近一次）。没有 daily 目录时返回空。
func dailyRuns(fsys fs.FS) ([]Result, error) {
	entries, err := fs.ReadDir(fsys, string(RunTypeDaily))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var runs []Result
	for _, e := range entries {
		if !e.IsDir() || checkName("run id", e.Name()) != nil {
			continue
		}
		var r Result
		err := readJSON(fsys, path.Join(string(RunTypeDaily), e.Name(), fileSummary), &r)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if r.Complete && r.RunType == RunTypeDaily {
			// 逐请求样本不在 summary.json 里（体积），从各场景的 perf/samples.json 补上。
			for i := range r.Scenarios {
				sc := &r.Scenarios[i]
				if checkName("scenario", sc.Name) != nil {
					continue
				}
				if err := readOptional(fsys, path.Join(string(RunTypeDaily), e.Name(), sc.Name, string(StagePerf), fileSamples), &sc.PerfSamples); err != nil {
					return nil, fmt.Errorf("report: artifact baselines: %w", err)
				}
			}
			runs = append(runs, r)
		}
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Started.Before(runs[j].Started) })
	return runs, nil
}

// FunctionalBaseline 是最近一次已完成的每日运行中一个场景的逐用例功能状态
// （取自该运行 summary.json 里的功能报告），功能门禁用它发现 pass → skip 漂移。
type FunctionalBaseline struct {
	RunID    string                       `json:"run_id"`
	Statuses map[string]functional.Status `json:"statuses"`
}

// FunctionalBaselineSource 是 BaselineSource 的可选扩展：实现它时 Evaluate 比较功能
// 用例与每日基线。found 为 false 表示该场景没有每日功能结果（不是错误）。
type FunctionalBaselineSource interface {
	FunctionalBaseline(ctx context.Context, scenario string) (b FunctionalBaseline, found bool, err error)
}

// FunctionalBaselines 是按场景名索引的功能基线表。
type FunctionalBaselines map[string]FunctionalBaseline

// FunctionalBaseline 实现 FunctionalBaselineSource。
func (f FunctionalBaselines) FunctionalBaseline(_ context.Context, scenario string) (FunctionalBaseline, bool, error) {
	b, ok := f[scenario]
	return b, ok, nil
}

// WithFunctionalBaselines 把性能基线来源 perf 与功能基线来源 fn 合成一个
// BaselineSource：性能查询交给 perf，功能查询交给 fn。
func WithFunctionalBaselines(perf BaselineSource, fn FunctionalBaselineSource) BaselineSource {
	return withFunctional{BaselineSource: perf, fn: fn}
}

// withFunctional 是 WithFunctionalBaselines 的实现。
type withFunctional struct {
	BaselineSource
	fn FunctionalBaselineSource
}

// Lookup 把性能查询交给内层来源（内层为 nil 时没有基线）。
func (w withFunctional) Lookup(ctx context.Context, key BaselineKey) (Baseline, bool, error) {
	if w.BaselineSource == nil {
		return Baseline{}, false, nil
	}
	return w.BaselineSource.Lookup(ctx, key)
}

// FunctionalBaseline 把功能查询交给 fn。
func (w withFunctional) FunctionalBaseline(ctx context.Context, scenario string) (FunctionalBaseline, bool, error) {
	return w.fn.FunctionalBaseline(ctx, scenario)
}

// ArtifactFunctionalBaselines 与 ArtifactBaselines 一样读取产物根目录下已完成的每日运行，
// 为每个场景留下开始时间最新、带功能报告的那一次的逐用例状态。
func ArtifactFunctionalBaselines(fsys fs.FS) (FunctionalBaselines, error) {
	runs, err := dailyRuns(fsys)
	if err != nil {
		return nil, fmt.Errorf("report: functional baselines: %w", err)
	}
	out := FunctionalBaselines{}
	for _, r := range runs {
		for _, sc := range r.Scenarios {
			if sc.Functional == nil || len(sc.Functional.Results) == 0 {
				continue
			}
			b := FunctionalBaseline{RunID: r.RunID, Statuses: map[string]functional.Status{}}
			for _, res := range sc.Functional.Results {
				b.Statuses[res.CaseID] = res.Status
			}
			out[sc.Name] = b
		}
	}
	return out, nil
}

// MetricsBaselines 把 metrics 包的基线读取器（Prometheus 的 PromBaseline 或
// 汇总 CSV 的 CSVBaseline）的 Baseline 方法适配为 BaselineSource——项目里唯一的
// 基线抽象：report.MetricsBaselines(pb.Baseline)。每个场景只查询一次并缓存，
// 避免每个组合都发一轮 PromQL。metrics.ErrNoBaseline 视为"没有基线"而非错误。
//
// 并发：返回值可被多个 goroutine 同时使用。
func MetricsBaselines(read func(ctx context.Context, info metrics.RunInfo) (metrics.Baseline, error)) BaselineSource {
	return &metricsAdapter{read: read, cache: map[metrics.RunInfo]metricsEntry{}}
}

// metricsAdapter 是 MetricsBaselines 的实现。
type metricsAdapter struct {
	read  func(ctx context.Context, info metrics.RunInfo) (metrics.Baseline, error)
	mu    sync.Mutex
	cache map[metrics.RunInfo]metricsEntry
}

// metricsEntry 是一次场景级查询的缓存结果（含"没有基线"与错误）。
type metricsEntry struct {
	b     metrics.Baseline
	found bool
	err   error
}

// Lookup 查询（或命中缓存）键所属场景的每日结果，再挑出同组合的各轮聚合。
func (m *metricsAdapter) Lookup(ctx context.Context, key BaselineKey) (Baseline, bool, error) {
	info := metrics.RunInfo{Model: key.Model, Quant: key.Quant, Scenario: key.Scenario, RunType: RunTypeDaily}
	m.mu.Lock()
	e, ok := m.cache[info]
	m.mu.Unlock()
	if !ok {
		b, err := m.read(ctx, info)
		switch {
		case errors.Is(err, metrics.ErrNoBaseline):
			e = metricsEntry{}
		case err != nil:
			e = metricsEntry{err: fmt.Errorf("report: baseline %s: %w", key.Scenario, err)}
		default:
			e = metricsEntry{b: b, found: true}
		}
		if ctx.Err() == nil {
			m.mu.Lock()
			m.cache[info] = e
			m.mu.Unlock()
		}
	}
	if e.err != nil || !e.found {
		return Baseline{}, false, e.err
	}
	var rows []loadgen.Summary
	for _, r := range e.b.Perf {
		if r.InputLength == key.InputLength && r.OutputLength == key.OutputLength && r.Concurrency == key.Concurrency &&
			looseEq(r.Backend, key.Backend) && looseEq(r.ControlMethod, key.ControlMethod) {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return Baseline{}, false, nil
	}
	b := Aggregate(rows)
	b.RunID = e.b.Info.RunID
	return b, true, nil
}

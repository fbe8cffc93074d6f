package matrix

import (
	"fmt"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/runtype"
)

// NamedProfile 是一个带名字的性能档位（已叠加矩阵中的 override，未填默认值）。
type NamedProfile struct {
	Name    string
	Profile loadgen.Profile
}

// NamedAccuracy 是一份带名字的精度配置（已叠加 override，未填默认值）。
type NamedAccuracy struct {
	Name   string
	Config accuracy.Config
}

// FunctionalPlan 是一个场景的功能阶段计划。
type FunctionalPlan struct {
	Enabled bool
	// Select 是交给 functional.Catalog.Select 的模式：矩阵中 suites 与 cases 的并集；
	// 为空表示全部用例（需求 §3（docs/requirements.md）：默认运行全部功能用例）。
	Select []string
	// Config 是全部套件的参数（tests/functional/*.yaml 叠加在默认值上）。
	Config  functional.Config
	Timeout time.Duration
}

// PerfPlan 是一个场景的性能阶段计划。
type PerfPlan struct {
	Enabled  bool
	Profiles []NamedProfile
	// Shards 大于 1 时每个档位分片运行并合并（矩阵的 perf.shards）。
	Shards  int
	Timeout time.Duration
}

// AccuracyPlan 是一个场景的精度阶段计划。
type AccuracyPlan struct {
	Enabled bool
	Configs []NamedAccuracy
	Timeout time.Duration
}

// ScenarioPlan 是一个场景在一次运行中要做的全部事情。
type ScenarioPlan struct {
	Scenario   *Scenario
	RunType    RunType
	OnFailure  OnFailure
	Functional FunctionalPlan
	Perf       PerfPlan
	Accuracy   AccuracyPlan
}

// Timeouts 返回运行类型 rt 的作业与阶段超时（默认值已填好）。
func (m *Matrix) Timeouts(rt RunType) Timeouts {
	if rt == runtype.Daily {
		return m.Defaults.Timeouts.Daily.withDefaults(DefaultTimeouts(runtype.Daily))
	}
	return m.Defaults.Timeouts.PR.withDefaults(DefaultTimeouts(runtype.PR))
}

// Plan 返回运行类型 rt 下每个场景的阶段与用例子集，顺序与 matrix.yaml 一致。
//
// 不给 only 时，计划包含为 rt 配置了且 default 不为 false 的场景；给出 only
// 时恰好包含这些场景（按给出的顺序），每个都必须在矩阵中为 rt 配置过。
func (m *Matrix) Plan(rt RunType, only ...string) ([]ScenarioPlan, error) {
	if err := rt.Check(); err != nil {
		return nil, fmt.Errorf("matrix: plan: %q: %w", rt, err)
	}
	var entries []*Entry
	if len(only) == 0 {
		for i := range m.Entries {
			e := &m.Entries[i]
			if e.run(rt) != nil && enabled(e.Default) {
				entries = append(entries, e)
			}
		}
	} else {
		seen := map[string]bool{}
		for _, name := range only {
			if seen[name] {
				return nil, fmt.Errorf("matrix: plan: scenario %q selected twice", name)
			}
			seen[name] = true
			e := m.entry(name)
			switch {
			case e == nil && m.Scenarios[name] != nil:
				return nil, fmt.Errorf("matrix: plan: scenario %q is not listed in matrix.yaml", name)
			case e == nil:
				return nil, fmt.Errorf("matrix: plan: unknown scenario %q (known: %s)", name, m.names())
			case e.run(rt) == nil:
				return nil, fmt.Errorf("matrix: plan: scenario %q has no %s entry in matrix.yaml", name, rt)
			}
			entries = append(entries, e)
		}
	}
	t := m.Timeouts(rt)
	plans := make([]ScenarioPlan, 0, len(entries))
	for _, e := range entries {
		rc := e.run(rt)
		p := ScenarioPlan{
			Scenario:  m.Scenarios[e.Scenario],
			RunType:   rt,
			OnFailure: m.Defaults.OnFailure,
			Functional: FunctionalPlan{
				Enabled: enabled(rc.Functional.Enabled),
				Select:  append(append([]string(nil), rc.Functional.Suites...), rc.Functional.Cases...),
				Config:  m.Functional,
				Timeout: orDefault(rc.Functional.Timeout, t.Functional),
			},
			Perf:     PerfPlan{Enabled: enabled(rc.Perf.Enabled), Timeout: orDefault(rc.Perf.Timeout, t.Perf)},
			Accuracy: AccuracyPlan{Enabled: enabled(rc.Accuracy.Enabled), Timeout: orDefault(rc.Accuracy.Timeout, t.Accuracy)},
		}
		if p.OnFailure == "" {
			p.OnFailure = OnFailureContinue
		}
		if p.Perf.Enabled {
			for _, n := range pickNames(rc.Perf.Profiles, rt) {
				prof := m.Profiles[n]
				if err := rc.Perf.Override.Decode(&prof); err != nil {
					return nil, err
				}
				if rc.Perf.Shards < 0 || rc.Perf.Shards > loadgen.MaxShards {
					return nil, fmt.Errorf("matrix: scenario %s: perf.shards=%d: must be in [0, %d]", e.Scenario, rc.Perf.Shards, loadgen.MaxShards)
				}
				if rc.Perf.Shards > 1 {
					if err := (loadgen.Shard{Count: rc.Perf.Shards}).Check(prof.WithDefaults()); err != nil {
						return nil, fmt.Errorf("matrix: scenario %s: perf.shards=%d with profile %s: %w", e.Scenario, rc.Perf.Shards, n, err)
					}
				}
				p.Perf.Shards = rc.Perf.Shards
				p.Perf.Profiles = append(p.Perf.Profiles, NamedProfile{Name: n, Profile: prof})
			}
		}
		if p.Accuracy.Enabled {
			for _, n := range pickNames(rc.Accuracy.Configs, rt) {
				cfg := m.Accuracy[n]
				if err := rc.Accuracy.Override.Decode(&cfg); err != nil {
					return nil, err
				}
				p.Accuracy.Configs = append(p.Accuracy.Configs, NamedAccuracy{Name: n, Config: cfg})
			}
		}
		plans = append(plans, p)
	}
	return plans, nil
}

// entry 按场景名查找矩阵条目。
func (m *Matrix) entry(name string) *Entry {
	for i := range m.Entries {
		if m.Entries[i].Scenario == name {
			return &m.Entries[i]
		}
	}
	return nil
}

// names 列出矩阵中的场景名，用于错误提示。
func (m *Matrix) names() string {
	s := make([]string, len(m.Entries))
	for i, e := range m.Entries {
		s[i] = e.Scenario
	}
	return strings.Join(s, ", ")
}

// orDefault 在 d 为 0 时返回 def。
func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

package matrix

import (
	"fmt"
	"time"
)

// Named 是一份带名字的阶段配置（档位或精度配置），Block 由阶段所在的包解码。
type Named struct {
	Name  string
	Block Block
}

// FunctionalPlan 是一个场景的功能阶段计划。
type FunctionalPlan struct {
	Enabled bool
	// Suites 与 Cases 为空表示全部（规格第 3 节：默认运行全部功能用例）。
	Suites []string
	Cases  []string
	// Configs 是 tests/functional/ 下全部参数集合，按名字排序。
	Configs []Named
	Timeout time.Duration
}

// PerfPlan 是一个场景的性能阶段计划。
type PerfPlan struct {
	Enabled  bool
	Profiles []Named
	Timeout  time.Duration
}

// AccuracyPlan 是一个场景的精度阶段计划。
type AccuracyPlan struct {
	Enabled bool
	Configs []Named
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
	if rt == RunDaily {
		return m.Defaults.Timeouts.Daily.withDefaults(DefaultTimeouts(RunDaily))
	}
	return m.Defaults.Timeouts.PR.withDefaults(DefaultTimeouts(RunPR))
}

// Plan 返回运行类型 rt 下每个场景的阶段与用例子集，顺序与 matrix.yaml 一致。
//
// 不给 only 时，计划包含为 rt 配置了且 default 不为 false 的场景；给出 only
// 时恰好包含这些场景（按给出的顺序），每个都必须在矩阵中为 rt 配置过。
func (m *Matrix) Plan(rt RunType, only ...string) ([]ScenarioPlan, error) {
	if err := rt.checkEnum(); err != nil {
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
				Suites:  append([]string(nil), rc.Functional.Suites...),
				Cases:   append([]string(nil), rc.Functional.Cases...),
				Configs: sortedNamed(m.Functional),
				Timeout: orDefault(rc.Functional.Timeout, t.Functional),
			},
			Perf: PerfPlan{
				Enabled:  enabled(rc.Perf.Enabled),
				Profiles: pick(m.Profiles, rc.Perf.Profiles, rt),
				Timeout:  orDefault(rc.Perf.Timeout, t.Perf),
			},
			Accuracy: AccuracyPlan{
				Enabled: enabled(rc.Accuracy.Enabled),
				Configs: pick(m.Accuracy, rc.Accuracy.Configs, rt),
				Timeout: orDefault(rc.Accuracy.Timeout, t.Accuracy),
			},
		}
		if p.OnFailure == "" {
			p.OnFailure = OnFailureContinue
		}
		if !p.Perf.Enabled {
			p.Perf.Profiles = nil
		}
		if !p.Accuracy.Enabled {
			p.Accuracy.Configs = nil
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
	s := ""
	for i, e := range m.Entries {
		if i > 0 {
			s += ", "
		}
		s += e.Scenario
	}
	return s
}

// pick 取出 names 对应的配置；names 为空时取与运行类型同名的那一份。
// Load 已保证引用存在，这里缺失的名字直接跳过。
func pick(have map[string]Block, names []string, rt RunType) []Named {
	if len(names) == 0 {
		names = []string{string(rt)}
	}
	var out []Named
	for _, n := range names {
		if b, ok := have[n]; ok {
			out = append(out, Named{Name: n, Block: b})
		}
	}
	return out
}

// sortedNamed 把映射按名字排序成列表，使计划稳定可比。
func sortedNamed(have map[string]Block) []Named {
	out := make([]Named, 0, len(have))
	for n, b := range have {
		out = append(out, Named{Name: n, Block: b})
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Name < out[j-1].Name; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// orDefault 在 d 为 0 时返回 def。
func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

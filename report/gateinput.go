package report

import (
	"errors"
	"fmt"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/runtype"
)

// 本文件把 report 记录的场景适配成 gate 包的输入值：gate 不认识任何阶段包，report 也不认识：
// 场景身份与阶段错误由这里填写，各阶段的结果由它的 Renderer.Gate 加进去。门禁的判定、
// 基线的选取与趋势分析全在 gate 里，report 只负责"读出来、交过去"。

// GateInputs 返回交给 gate.Evaluate 的各场景输入（顺序同 Scenarios），rs 通常是 Run.Renderers()：
//
//	in, err := run.Result().GateInputs(run.Renderers()...)
//	gates, err := gate.Evaluate(ctx, in, th, baselines)
//
// 某个渲染器无法读出自己的分节时返回错误（其余场景与阶段照常填写）。
func (r Result) GateInputs(rs ...Renderer) ([]gate.Scenario, error) {
	out := make([]gate.Scenario, len(r.Scenarios))
	var errs []error
	for i, sc := range r.Scenarios {
		in, err := sc.GateInput(rs...)
		out[i] = in
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// GateRun 返回这次运行作为基线候选与趋势点的输入（gate.Select、gate.DailyTrend 用）。
func (r Result) GateRun(rs ...Renderer) (gate.Run, error) {
	in, err := r.GateInputs(rs...)
	return gate.Run{RunID: r.RunID, Daily: r.RunType == runtype.Daily, Complete: r.Complete, Started: r.Started, Scenarios: in}, err
}

// GateInput 把一个场景适配成 gate.Scenario：身份与阶段错误在这里填写，各阶段的结果由
// rs 中的 Gate 钩子依次加入。
func (sc Scenario) GateInput(rs ...Renderer) (gate.Scenario, error) {
	in := gate.Scenario{Name: sc.Name, Model: sc.Model, Quant: sc.Quant, Backend: sc.Backend, Errors: sc.GateErrors()}
	var errs []error
	for _, rd := range rs {
		if rd.Gate == nil {
			continue
		}
		if err := rd.Gate(sc, &in); err != nil {
			errs = append(errs, fmt.Errorf("report: %s gate input: %w", rd.Name, err))
		}
	}
	return in, errors.Join(errs...)
}

// GateErrors 返回场景的阶段错误（门禁输入的形式）。渲染器判定单项门禁时（例如精度表的
// 逐项结论）用它构造只含阶段错误的 gate.Scenario。
func (sc Scenario) GateErrors() []gate.StageError {
	var out []gate.StageError
	for _, e := range sc.Errors {
		out = append(out, gate.StageError{Stage: string(e.Stage), Message: e.Message, Interrupted: e.Interrupted})
	}
	return out
}

package gate

import (
	"errors"

	"github.com/vllm-cibench/cibench/field"
)

// Thresholds 是门禁阈值（YAML 可配置）。比例均为小数（0.10 = 10%）。
// 零值字段取默认值（需求 §5、8（docs/requirements.md））；负值表示关闭该项检查（记为 skipped）。
type Thresholds struct {
	// TTFTP99Regression：TTFT P99 相对基线变差超过该比例即失败，默认 0.10。
	TTFTP99Regression float64 `yaml:"ttft_p99_regression" json:"ttft_p99_regression"`
	// E2EP99Regression：E2E P99 相对基线变差超过该比例即失败，默认 0.10。
	E2EP99Regression float64 `yaml:"e2e_p99_regression" json:"e2e_p99_regression"`
	// QPSDrop：QPS 相对基线下降超过该比例即失败，默认 0.05。
	QPSDrop float64 `yaml:"qps_drop" json:"qps_drop"`
	// MaxFailRate：失败率（绝对值，[0,1]）超过该值即失败，默认 0.05；不需要基线。
	MaxFailRate float64 `yaml:"max_fail_rate" json:"max_fail_rate"`
	// RequireBaseline 为 true 时，无基线的性能门禁记为失败而不是 no_baseline。
	RequireBaseline bool `yaml:"require_baseline" json:"require_baseline"`

	// 以下是性能门禁的统计选项（见 perf.go 与 docs/report.md）；零值保持需求行为。
	// Mode 为 spec（默认：点估计越过阈值即失败）或 significant（整个置信区间越过才失败）。
	Mode string `yaml:"mode" json:"mode,omitempty"`
	// OnInsufficient 是样本不足以支撑分位数时的处理：spec（默认）、fail、warn 或 lower_quantile。
	OnInsufficient string `yaml:"on_insufficient" json:"on_insufficient,omitempty"`
	// Confidence 是置信水平，默认 0.95；Resamples 是自助法重抽样次数，默认 2000；
	// Seed 是随机种子（同样的样本与种子永远得到同样的区间）。
	Confidence float64 `yaml:"confidence" json:"confidence,omitempty"`
	Resamples  int     `yaml:"resamples" json:"resamples,omitempty"`
	Seed       int64   `yaml:"seed" json:"seed,omitempty"`
	// ShiftConfidence 是 on_insufficient: shift 判定的置信水平，0 为 DefaultShiftConfidence（0.998）。
	ShiftConfidence float64 `yaml:"shift_confidence" json:"shift_confidence,omitempty"`
	// PerGate 按门禁覆盖 Mode 与 OnInsufficient。
	PerGate PerGateOptions `yaml:"per_gate" json:"per_gate"`
}

// DefaultThresholds 返回需求中的 PR 性能门禁阈值。
func DefaultThresholds() Thresholds {
	return Thresholds{TTFTP99Regression: 0.10, E2EP99Regression: 0.10, QPSDrop: 0.05, MaxFailRate: 0.05}
}

// withDefaults 把零值字段替换为默认值。
func (t Thresholds) withDefaults() Thresholds {
	d := DefaultThresholds()
	if t.TTFTP99Regression == 0 {
		t.TTFTP99Regression = d.TTFTP99Regression
	}
	if t.E2EP99Regression == 0 {
		t.E2EP99Regression = d.E2EP99Regression
	}
	if t.QPSDrop == 0 {
		t.QPSDrop = d.QPSDrop
	}
	if t.MaxFailRate == 0 {
		t.MaxFailRate = d.MaxFailRate
	}
	return t
}

// ErrInvalidThresholds 表示门禁配置的取值不合法。
var ErrInvalidThresholds = errors.New("gate: invalid thresholds")

// PerfGateOptions 是单个性能门禁的统计选项，空字段沿用 Thresholds 的全局值。
type PerfGateOptions struct {
	// Mode 为 spec 或 significant。
	Mode string `yaml:"mode" json:"mode,omitempty"`
	// OnInsufficient 为 spec、fail、warn、lower_quantile 或 shift。
	OnInsufficient string `yaml:"on_insufficient" json:"on_insufficient,omitempty"`
}

// PerGateOptions 按门禁指标名给出选项（YAML 键即 Metric* 常量）。
type PerGateOptions struct {
	TTFTP99 PerfGateOptions `yaml:"ttft_p99_seconds" json:"ttft_p99_seconds"`
	E2EP99  PerfGateOptions `yaml:"e2e_p99_seconds" json:"e2e_p99_seconds"`
	QPS     PerfGateOptions `yaml:"qps" json:"qps"`
}

// SampleSizes 是判定所用的样本量：分位数门禁为每轮的成功请求数（多轮取中位数），
// 与汇总行里 P99 的来源一致。
type SampleSizes struct {
	Current  int64 `json:"current"`
	Baseline int64 `json:"baseline"`
	// Needed 是所比较的分位数至少需要的样本数：⌈1/(1−q)⌉，P99 为 100。
	Needed int64 `json:"needed"`
}

// Interval 是相对变化（百分比）的置信区间，来自两次运行逐请求样本的自助法。
type Interval struct {
	LoPct     float64 `json:"lo_pct"`
	HiPct     float64 `json:"hi_pct"`
	Level     float64 `json:"level"`
	Resamples int     `json:"resamples"`
	Seed      uint64  `json:"seed"`
	// PointPct 是区间所属统计量在原始样本上的点估计（相对变化，百分比）：自助法区间是全部轮次
	// 合并样本的 P99 之比，门禁的 DeltaPct 却是需求口径（各轮 P99 的中位数）。两者不一致、DeltaPct
	// 落在区间外时，报告把区间与这个点一起写出（"P99 of pooled samples +25.3% [+9.5%, +41.9%]"），
	// 不让一个数字挨着一个不包含它的区间。旧的 summary.json 没有这一项（为 nil）。
	PointPct *float64 `json:"point_pct,omitempty"`
}

// Validate 检查门禁配置；每条错误是 *field.Error（字段为 YAML 键，如 "per_gate.qps.mode"），
// 合并为一个 errors.Join，errors.Is(err, ErrInvalidThresholds) 成立。
func (t Thresholds) Validate() error {
	bad := func(name string, v any, why string) error {
		return field.New(ErrInvalidThresholds, name, v, why)
	}
	checkMode := func(field, v string) error {
		if v != "" && v != ModeSpec && v != ModeSignificant {
			return bad(field, v, `want "spec" or "significant"`)
		}
		return nil
	}
	checkIns := func(field, v string) error {
		switch v {
		case "", InsufficientSpec, InsufficientFail, InsufficientWarn, InsufficientLowerQuantile, InsufficientShift:
			return nil
		}
		return bad(field, v, `want "spec", "fail", "warn", "lower_quantile" or "shift"`)
	}
	errs := []error{
		checkMode("mode", t.Mode), checkIns("on_insufficient", t.OnInsufficient),
		checkMode("per_gate.ttft_p99_seconds.mode", t.PerGate.TTFTP99.Mode), checkIns("per_gate.ttft_p99_seconds.on_insufficient", t.PerGate.TTFTP99.OnInsufficient),
		checkMode("per_gate.e2e_p99_seconds.mode", t.PerGate.E2EP99.Mode), checkIns("per_gate.e2e_p99_seconds.on_insufficient", t.PerGate.E2EP99.OnInsufficient),
		checkMode("per_gate.qps.mode", t.PerGate.QPS.Mode), checkIns("per_gate.qps.on_insufficient", t.PerGate.QPS.OnInsufficient),
	}
	if t.Confidence != 0 && (t.Confidence < 0.5 || t.Confidence >= 1) {
		errs = append(errs, bad("confidence", t.Confidence, "must be in [0.5, 1)"))
	}
	if t.ShiftConfidence != 0 && (t.ShiftConfidence < 0.5 || t.ShiftConfidence >= 1) {
		errs = append(errs, bad("shift_confidence", t.ShiftConfidence, "must be in [0.5, 1)"))
	}
	if t.Resamples != 0 && (t.Resamples < 100 || t.Resamples > 100000) {
		errs = append(errs, bad("resamples", t.Resamples, "must be in [100, 100000]"))
	}
	return errors.Join(errs...)
}

// gateOptions 返回指标 metric 生效的模式与样本不足处理。
func (t Thresholds) gateOptions(metric string) (mode, onIns string) {
	mode, onIns = t.Mode, t.OnInsufficient
	var o PerfGateOptions
	switch metric {
	case MetricTTFTP99:
		o = t.PerGate.TTFTP99
	case MetricE2EP99:
		o = t.PerGate.E2EP99
	case MetricQPS:
		o = t.PerGate.QPS
	}
	if o.Mode != "" {
		mode = o.Mode
	}
	if o.OnInsufficient != "" {
		onIns = o.OnInsufficient
	}
	if mode == "" {
		mode = ModeSpec
	}
	if onIns == "" {
		onIns = InsufficientSpec
	}
	return mode, onIns
}

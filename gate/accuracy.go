package gate

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// AccuracyRule 是一个数据集的精度门禁规则（精度配置里 datasets 的一项：threshold、metric、
// max_error_rate）。
type AccuracyRule struct {
	// Metric 是参与门禁的指标，"" 表示 "score"。
	Metric string
	// Threshold 是阈值：Metric 的值 >= Threshold 为通过；nil 表示分数不设门禁（内置样例或
	// report_only），此时只判定失败请求比例等前置条件。
	Threshold *float64
	// MaxErrorRate 是允许的失败请求比例（0 表示任何失败都让门禁失败）。
	MaxErrorRate float64
}

// AccuracyOutcome 是一个数据集一次评测的结果（与 accuracy.EvalResult 同口径的值，本包不导入
// 任何阶段包）。
type AccuracyOutcome struct {
	Dataset string
	// Score 是主分数；Metrics 是全部指标（键为指标名）。
	Score   float64
	Metrics map[string]float64
	// Examples 是评了分的样本数，Planned 是计划的样本数；Partial 为 true 表示运行被取消。
	Examples, Planned int
	Partial           bool
	// Requests 是发出的采样请求数，Errors 是其中失败的请求数，ErrorClasses 按故障类别计数。
	Requests, Errors int
	ErrorClasses     map[string]int
}

// AccuracyVerdict 是一个数据集的精度判定（accuracy.Verdict 是它的别名，写进精度阶段的结果
// 文件）。Pass 为 false 时 Reason 说明原因；ScoreGated 为 false 表示分数没有设门禁，此时只
// 判定了失败请求比例等前置条件。
type AccuracyVerdict struct {
	Dataset      string   `json:"dataset"`
	Metric       string   `json:"metric"`
	Value        float64  `json:"value"`
	Threshold    *float64 `json:"threshold,omitempty"`
	ScoreGated   bool     `json:"score_gated"`
	Errors       int      `json:"errors"`
	Requests     int      `json:"requests"`
	ErrorRate    float64  `json:"error_rate"`
	MaxErrorRate float64  `json:"max_error_rate"`
	// ErrorRateExceeded 为 true 表示失败请求比例超过上限（此时 Pass 一定为 false），
	// 驱动据此把精度阶段本身记为失败。
	ErrorRateExceeded bool   `json:"error_rate_exceeded,omitempty"`
	Pass              bool   `json:"pass"`
	Reason            string `json:"reason"`
}

// JudgeAccuracy 是精度门禁规则的唯一实现（accuracy.Gate、精度阶段、报告的精度表与
// AccuracyGate 的输入都来自它）。依次判定：指标缺失、部分运行（被取消，分数不具代表性）、
// 没有任何样本、失败请求比例超过 MaxErrorRate（无论分数多高）、最后才是指标值 >= Threshold。
// 没有阈值时分数不设门禁，但前面几项照常判定。它读取 o.Metrics[metric] 而从不改写 o。
func JudgeAccuracy(rule AccuracyRule, o AccuracyOutcome) AccuracyVerdict {
	metric := rule.Metric
	if metric == "" {
		metric = MetricScore
	}
	maxRate := rule.MaxErrorRate
	v := AccuracyVerdict{Dataset: o.Dataset, Metric: metric, Threshold: rule.Threshold, ScoreGated: rule.Threshold != nil,
		Errors: o.Errors, Requests: o.Requests, MaxErrorRate: maxRate}
	if o.Requests > 0 {
		v.ErrorRate = float64(o.Errors) / float64(o.Requests)
	} else if o.Errors > 0 {
		v.ErrorRate = 1
	}
	value, ok := o.Score, true
	if metric != MetricScore {
		value, ok = o.Metrics[metric]
	}
	v.Value = value
	switch {
	case !ok:
		v.Reason = fmt.Sprintf("metric %q not produced by %s", metric, o.Dataset)
	case o.Partial:
		v.Reason = fmt.Sprintf("partial run: %d of %d examples", o.Examples, o.Planned)
	case o.Examples == 0:
		v.Reason = "no examples were scored"
	case v.ErrorRate > maxRate+1e-12:
		v.ErrorRateExceeded = true
		v.Reason = fmt.Sprintf("%d of %d requests failed (%s), error rate %.4f > max_error_rate %.4f", o.Errors, o.Requests, formatClasses(o.ErrorClasses), v.ErrorRate, maxRate)
	case rule.Threshold == nil:
		v.Pass, v.Reason = true, fmt.Sprintf("%s %.4f not gated (no threshold: built-in sample or report_only); %d of %d requests failed", metric, value, o.Errors, o.Requests)
	case math.IsNaN(value):
		v.Reason = fmt.Sprintf("%s is NaN (no examples scored)", metric)
	case value >= *rule.Threshold:
		v.Pass, v.Reason = true, fmt.Sprintf("%s %.4f >= threshold %.4f", metric, value, *rule.Threshold)
	default:
		v.Reason = fmt.Sprintf("%s %.4f < threshold %.4f", metric, value, *rule.Threshold)
	}
	return v
}

// Input 把判定与它的评测结果合成 AccuracyGate 的输入（报告与驱动用它，不再各自抄字段）。
func (v AccuracyVerdict) Input(o AccuracyOutcome) Accuracy {
	return Accuracy{Dataset: o.Dataset, Metric: v.Metric, Value: v.Value, Threshold: v.Threshold,
		Pass: v.Pass, ScoreGated: v.ScoreGated, Reason: v.Reason,
		Partial: o.Partial, Examples: o.Examples, Planned: o.Planned}
}

// AccuracyGate 把精度阶段的判定变成门禁（Evaluate 对 sc.Accuracy 的每一项调用它，报告
// 的精度表格也用它）：分数不设门禁且其余检查通过时记为 skipped 并说明原因；sc 的精度
// 阶段被中断、结果只覆盖部分样本时分数不代表模型，记为 interrupted。
func AccuracyGate(sc Scenario, a Accuracy) Gate {
	g := Gate{Kind: KindAccuracy, Scenario: sc.Name, Name: "accuracy/" + a.Dataset, Metric: a.Metric, Current: a.Value, Reason: a.Reason}
	if a.Threshold != nil {
		t := *a.Threshold
		g.Baseline, g.Limit = &t, t
		if t != 0 {
			d := (a.Value - t) / t * 100
			g.DeltaPct = &d
		}
	}
	switch {
	case a.Partial && sc.interrupted(StageAccuracy):
		g.Verdict = VerdictInterrupted
		g.Reason = fmt.Sprintf("interrupted after %d of %d examples; a partial score is not judged", a.Examples, a.Planned)
	case !a.Pass:
		g.Verdict = VerdictFail
	case !a.ScoreGated:
		g.Verdict = VerdictSkipped
	default:
		g.Verdict = VerdictPass
	}
	return g
}

// formatClasses 把失败分类计数写成 "http_500: 3, body_too_large: 1"（按名字排序）。
func formatClasses(m map[string]int) string {
	if len(m) == 0 {
		return "unclassified"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

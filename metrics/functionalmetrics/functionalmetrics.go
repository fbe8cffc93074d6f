package functionalmetrics

import (
	"fmt"
	"github.com/vllm-cibench/cibench/field"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/metrics"
)

// NewCollector 校验 r 与 opts 并构造功能测试的全部指标：每个套件的通过率与计数、逐用例的
// 0|1 与耗时、整个阶段的耗时。r 为 nil（阶段未运行）时返回没有序列的 Collector。
// 错误是 *field.Error（errors.Is(err, metrics.ErrInvalid) 成立），点名 Functional.… 字段。
func NewCollector(r *functional.Report, opts metrics.Options) (*metrics.Collector, error) {
	b, err := metrics.NewBuilder(opts)
	if err != nil {
		return nil, err
	}
	if r != nil {
		if err := add(b, r); err != nil {
			return nil, err
		}
	}
	return b.Collector(), nil
}

// labelValueOK 检查标签值：必须是合法 UTF-8 且不含换行（与 metrics 包的规则相同）。
func labelValueOK(v string) bool {
	return utf8.ValidString(v) && !strings.ContainsAny(v, "\n\r")
}

// suiteSummaries 返回报告中的套件汇总；生产方未填 Suites 时按 Results 用
// functional.Summarize 现算（同一口径：没有执行任何用例的套件没有通过率），按套件名排序。
func suiteSummaries(r *functional.Report) []functional.SuiteSummary {
	if len(r.Suites) > 0 || len(r.Results) == 0 {
		return r.Suites
	}
	out := functional.Summarize(r.Results)
	sort.Slice(out, func(i, j int) bool { return out[i].Suite < out[j].Suite })
	return out
}

// add 导出套件汇总与逐用例 0|1；跳过与 unsupported 的用例不导出
// functional_case_pass（没有执行），只计入 functional_cases_skipped；cancelled 导出 0
// （没有结论不是通过）。没有执行任何用例的套件的 functional_pass_ratio 为 NaN。
func add(b *metrics.Builder, r *functional.Report) error {
	suite := []string{metrics.LabelSuite}
	for _, s := range suiteSummaries(r) {
		if !labelValueOK(s.Suite) {
			return &field.Error{Err: metrics.ErrInvalid, Field: "Functional.Suites.Suite", Value: s.Suite, Reason: "label value must be valid UTF-8 without newlines"}
		}
		type add struct {
			name, help string
			typ        prometheus.ValueType
			v          float64
		}
		// 没有执行任何用例的套件没有通过率：导出 NaN 而不是 1，序列仍在（看板按套件对齐各查询）。
		ratio := math.NaN()
		if s.PassRatio != nil {
			ratio = *s.PassRatio
		}
		adds := []add{
			{metrics.NameFunctionalPassRatio, "Passed / cases run (total - skipped - unsupported) of the suite; NaN when no case ran", prometheus.GaugeValue, ratio},
			{metrics.NameFunctionalCasesTotal, "Cases in the suite, skipped ones included", prometheus.CounterValue, float64(s.Total)},
			{metrics.NameFunctionalCasesFailed, "Failed cases in the suite", prometheus.GaugeValue, float64(s.Failed)},
			{metrics.NameFunctionalCasesPassed, "Passed cases in the suite", prometheus.GaugeValue, float64(s.Passed)},
			{metrics.NameFunctionalCasesSkipped, "Cases skipped because the server lacks a required capability", prometheus.GaugeValue, float64(s.Skipped + s.Unsupported)},
		}
		for _, a := range adds {
			if err := b.Add(a.name, a.help, a.typ, a.v, suite, s.Suite); err != nil {
				return err
			}
		}
	}
	caseLabels := []string{metrics.LabelSuite, metrics.LabelCaseID}
	seen := map[[2]string]bool{}
	for i, res := range r.Results {
		if !labelValueOK(res.Suite) || !labelValueOK(res.CaseID) || res.CaseID == "" {
			return &field.Error{Err: metrics.ErrInvalid, Field: fmt.Sprintf("Functional.Results[%d]", i), Value: res.Suite + "/" + res.CaseID, Reason: "suite and case_id must be non-empty UTF-8 without newlines"}
		}
		k := [2]string{res.Suite, res.CaseID}
		if seen[k] {
			return &field.Error{Err: metrics.ErrInvalid, Field: fmt.Sprintf("Functional.Results[%d]", i), Value: res.Suite + "/" + res.CaseID, Reason: "duplicate case"}
		}
		seen[k] = true
		if res.Status.NotRun() {
			continue
		}
		pass := 0.0
		if res.Status == functional.StatusPass {
			pass = 1
		}
		if err := b.Add(metrics.NameFunctionalCasePass, "1 when the case passed, 0 when it failed (skipped cases are absent)", prometheus.GaugeValue, pass, caseLabels, res.Suite, res.CaseID); err != nil {
			return err
		}
		if err := b.Add(metrics.NameFunctionalCaseDuration, "Wall time of the case", prometheus.GaugeValue, res.Duration.Seconds(), caseLabels, res.Suite, res.CaseID); err != nil {
			return err
		}
	}
	if r.Duration > 0 {
		return b.Add(metrics.NameFunctionalDuration, "Wall time of the whole functional stage", prometheus.GaugeValue, r.Duration.Seconds(), nil)
	}
	return nil
}

package accuracymetrics

import (
	"fmt"
	"github.com/vllm-cibench/cibench/field"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/metrics"
)

// NewCollector 校验 results 与 opts 并构造精度的全部指标：每个数据集的总分、样本数、
// 请求与失败数、各子指标，以及数据来源的 _info 序列。results 为空时返回没有序列的 Collector。
// 错误是 *field.Error，点名 Accuracy[i].… 字段。
func NewCollector(results []accuracy.EvalResult, opts metrics.Options) (*metrics.Collector, error) {
	b, err := metrics.NewBuilder(opts)
	if err != nil {
		return nil, err
	}
	if err := add(b, results); err != nil {
		return nil, err
	}
	return b.Collector(), nil
}

// labelValueOK 检查标签值：必须是合法 UTF-8 且不含换行（与 metrics 包的规则相同）。
func labelValueOK(v string) bool {
	return utf8.ValidString(v) && !strings.ContainsAny(v, "\n\r")
}

// add 导出每个数据集的总分、样本数、请求与失败数、各子指标（Metrics 的键作为
// metric 标签），以及数据来源的 _info 序列（每个读取的文件一条）。
func add(b *metrics.Builder, results []accuracy.EvalResult) error {
	seen := map[string]bool{}
	for i, e := range results {
		fieldName := fmt.Sprintf("Accuracy[%d].Dataset", i)
		if e.Dataset == "" || !labelValueOK(e.Dataset) {
			return &field.Error{Err: metrics.ErrInvalid, Field: fieldName, Value: e.Dataset, Reason: "dataset must be non-empty UTF-8 without newlines"}
		}
		if seen[e.Dataset] {
			return &field.Error{Err: metrics.ErrInvalid, Field: fieldName, Value: e.Dataset, Reason: "duplicate dataset"}
		}
		seen[e.Dataset] = true
		ds := []string{metrics.LabelDataset}
		if err := b.Add(metrics.NameAccuracyScore, "Mean score over the evaluated examples (simple-evals score), in [0,1]", prometheus.GaugeValue, e.Score, ds, e.Dataset); err != nil {
			return err
		}
		if err := b.Add(metrics.NameAccuracyExamples, "Examples evaluated", prometheus.CounterValue, float64(e.Examples), ds, e.Dataset); err != nil {
			return err
		}
		if err := b.Add(metrics.NameAccuracyRequests, "Sampling requests sent (HumanEval sends 5 per example)", prometheus.CounterValue, float64(e.Requests), ds, e.Dataset); err != nil {
			return err
		}
		if err := b.Add(metrics.NameAccuracyFailedRequests, "Sampling requests that failed (after retries, HTTP 400, null or empty content) and were scored as simple-evals does", prometheus.CounterValue, float64(e.Errors), ds, e.Dataset); err != nil {
			return err
		}
		if src := e.Source; src != nil {
			infoLabels := []string{metrics.LabelDataset, metrics.LabelSourceKind, metrics.LabelSourceLoc, metrics.LabelFile, metrics.LabelSHA256}
			for j, f := range src.Files {
				for _, v := range []string{src.Kind, src.Location, f.Name, f.SHA256} {
					if !labelValueOK(v) {
						return &field.Error{Err: metrics.ErrInvalid, Field: fmt.Sprintf("Accuracy[%d].Source.Files[%d]", i, j), Value: v, Reason: "must be UTF-8 without newlines"}
					}
				}
				if err := b.Add(metrics.NameAccuracyDataInfo, "Data file each accuracy score was computed from (value is always 1)", prometheus.GaugeValue, 1, infoLabels, e.Dataset, src.Kind, src.Location, f.Name, f.SHA256); err != nil {
					return err
				}
			}
		}
		keys := make([]string, 0, len(e.Metrics))
		for k := range e.Metrics {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !labelValueOK(k) {
				return &field.Error{Err: metrics.ErrInvalid, Field: fmt.Sprintf("Accuracy[%d].Metrics", i), Value: k, Reason: "metric key must be UTF-8 without newlines"}
			}
			if err := b.Add(metrics.NameAccuracyMetric, "Aggregated simple-evals metric (mean, or :std for the population standard deviation)", prometheus.GaugeValue, e.Metrics[k], []string{metrics.LabelDataset, metrics.LabelMetric}, e.Dataset, k); err != nil {
				return err
			}
		}
	}
	return nil
}

package accuracymetrics_test

import (
	"errors"
	"github.com/vllm-cibench/cibench/field"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/metrics"
	"github.com/vllm-cibench/cibench/metrics/accuracymetrics"
)

// results 是一个 GPQA 结果（带数据来源）。
func results() []accuracy.EvalResult {
	return []accuracy.EvalResult{{
		Dataset: "gpqa", Score: 0.625, Examples: 198, Requests: 1980, Errors: 2,
		Metrics: map[string]float64{"score": 0.625, "score:std": 0.484},
		Source:  &accuracy.DataSource{Kind: "url", Location: "https://x/", Files: []accuracy.DataFile{{Name: "gpqa.csv", SHA256: "ab"}}},
	}}
}

// TestCollectorValues 逐值核对总分、样本数、请求与失败数、子指标与数据来源序列。
func TestCollectorValues(t *testing.T) {
	c, err := accuracymetrics.NewCollector(results(), metrics.Options{Prefix: "cibench"})
	if err != nil {
		t.Fatal(err)
	}
	want := `
# HELP cibench_accuracy_score_ratio Mean score over the evaluated examples (simple-evals score), in [0,1]
# TYPE cibench_accuracy_score_ratio gauge
cibench_accuracy_score_ratio{dataset="gpqa"} 0.625
# HELP cibench_accuracy_requests_failed_total Sampling requests that failed (after retries, HTTP 400, null or empty content) and were scored as simple-evals does
# TYPE cibench_accuracy_requests_failed_total counter
cibench_accuracy_requests_failed_total{dataset="gpqa"} 2
# HELP cibench_accuracy_metric Aggregated simple-evals metric (mean, or :std for the population standard deviation)
# TYPE cibench_accuracy_metric gauge
cibench_accuracy_metric{dataset="gpqa",metric="score"} 0.625
cibench_accuracy_metric{dataset="gpqa",metric="score:std"} 0.484
# HELP cibench_accuracy_data_source_info Data file each accuracy score was computed from (value is always 1)
# TYPE cibench_accuracy_data_source_info gauge
cibench_accuracy_data_source_info{dataset="gpqa",file="gpqa.csv",sha256="ab",source_kind="url",source_location="https://x/"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "cibench_accuracy_score_ratio", "cibench_accuracy_requests_failed_total",
		"cibench_accuracy_metric", "cibench_accuracy_data_source_info"); err != nil {
		t.Error(err)
	}
	if c, err := accuracymetrics.NewCollector(nil, metrics.Options{}); err != nil || testutil.CollectAndCount(c) != 0 {
		t.Fatalf("no results: %v", err)
	}
}

// TestCollectorRejects 非法输入是点名字段的 *field.Error。
func TestCollectorRejects(t *testing.T) {
	for _, tc := range []struct {
		edit  func([]accuracy.EvalResult, *metrics.Options) []accuracy.EvalResult
		field string
	}{
		{func(r []accuracy.EvalResult, _ *metrics.Options) []accuracy.EvalResult { r[0].Dataset = ""; return r }, "Accuracy[0].Dataset"},
		{func(r []accuracy.EvalResult, _ *metrics.Options) []accuracy.EvalResult { return append(r, r[0]) }, "Accuracy[1].Dataset"},
		{func(r []accuracy.EvalResult, _ *metrics.Options) []accuracy.EvalResult {
			r[0].Metrics["a\nb"] = 1
			return r
		}, "Accuracy[0].Metrics"},
		{func(r []accuracy.EvalResult, _ *metrics.Options) []accuracy.EvalResult {
			r[0].Source.Files[0].Name = "a\nb"
			return r
		}, "Accuracy[0].Source.Files[0]"},
		{func(r []accuracy.EvalResult, o *metrics.Options) []accuracy.EvalResult { o.Prefix = "9"; return r }, "Options.Prefix"},
	} {
		o := metrics.Options{}
		r := tc.edit(results(), &o)
		_, err := accuracymetrics.NewCollector(r, o)
		var fe *field.Error
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: got %v", tc.field, err)
		}
	}
}

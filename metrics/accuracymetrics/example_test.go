package accuracymetrics_test

import (
	"fmt"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/metrics"
	"github.com/vllm-cibench/cibench/metrics/accuracymetrics"
)

// Example 把一个精度结果导出为精度阶段自己的 Collector，与别的阶段的 Collector 一起注册或推送。
func Example() {
	c, err := accuracymetrics.NewCollector([]accuracy.EvalResult{{Dataset: "gpqa", Score: 0.625, Examples: 8}}, metrics.Options{Prefix: "cibench"})
	if err != nil {
		fmt.Println(err)
		return
	}
	reg, err := metrics.NewRegistry(c)
	if err != nil {
		fmt.Println(err)
		return
	}
	mfs, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		fmt.Println(mf.GetName(), m.GetGauge().GetValue()+m.GetCounter().GetValue())
	}
	// Output:
	// cibench_accuracy_examples_total 8
	// cibench_accuracy_requests_failed_total 0
	// cibench_accuracy_requests_total 0
	// cibench_accuracy_score_ratio 0.625
}

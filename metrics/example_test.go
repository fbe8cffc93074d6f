package metrics_test

import (
	"fmt"
	"os"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/metrics"
	"github.com/vllm-cibench/cibench/metrics/accuracymetrics"
	"github.com/vllm-cibench/cibench/runtype"
)

// Example 展示零散使用：每个阶段的结果由它自己的 Collector 导出——这里只有运行身份与一个
// 精度结果（accuracymetrics），注册进一个注册表写成 Prometheus 文本格式（PR 运行把它作为产物
// 保存；每日运行则把同样的注册表交给 Pusher.Push，那时不带 ConstLabels）。
func Example() {
	info := metrics.RunInfo{Model: "Qwen3-32B", Quant: "w8a8", Scenario: "local", RunType: runtype.PR, Commit: "abc123"}
	lbls, err := info.Labels()
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := metrics.Options{Prefix: "cibench", ConstLabels: lbls}
	run, err := metrics.NewRunInfoCollector(info, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	acc, err := accuracymetrics.NewCollector([]accuracy.EvalResult{{Dataset: "gpqa", Model: "Qwen3-32B", Score: 0.625, Examples: 8}}, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	reg, err := metrics.NewRegistry(run, acc)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := metrics.WriteText(os.Stdout, reg); err != nil {
		fmt.Println(err)
	}
	// Output:
	// # HELP cibench_accuracy_examples_total Examples evaluated
	// # TYPE cibench_accuracy_examples_total counter
	// cibench_accuracy_examples_total{dataset="gpqa",model="Qwen3-32B",quant="w8a8",run_type="pr",scenario="local"} 8
	// # HELP cibench_accuracy_requests_failed_total Sampling requests that failed (after retries, HTTP 400, null or empty content) and were scored as simple-evals does
	// # TYPE cibench_accuracy_requests_failed_total counter
	// cibench_accuracy_requests_failed_total{dataset="gpqa",model="Qwen3-32B",quant="w8a8",run_type="pr",scenario="local"} 0
	// # HELP cibench_accuracy_requests_total Sampling requests sent (HumanEval sends 5 per example)
	// # TYPE cibench_accuracy_requests_total counter
	// cibench_accuracy_requests_total{dataset="gpqa",model="Qwen3-32B",quant="w8a8",run_type="pr",scenario="local"} 0
	// # HELP cibench_accuracy_score_ratio Mean score over the evaluated examples (simple-evals score), in [0,1]
	// # TYPE cibench_accuracy_score_ratio gauge
	// cibench_accuracy_score_ratio{dataset="gpqa",model="Qwen3-32B",quant="w8a8",run_type="pr",scenario="local"} 0.625
	// # HELP cibench_run_info Identity of the run that produced this group; join on model, quant, scenario, run_type
	// # TYPE cibench_run_info gauge
	// cibench_run_info{branch="",commit="abc123",model="Qwen3-32B",model_raw="",quant="w8a8",run_id="",run_type="pr",scenario="local"} 1
}

// ExampleMetricName 展示前缀规则：空前缀不加，末尾下划线可有可无。
func ExampleMetricName() {
	fmt.Println(metrics.MetricName("", metrics.NamePerfTTFT))
	fmt.Println(metrics.MetricName("cibench_", metrics.NameFunctionalPassRatio))
	// Output:
	// perf_ttft_seconds
	// cibench_functional_pass_ratio
}

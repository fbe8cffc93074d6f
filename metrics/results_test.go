package metrics_test

import (
	"context"
	"io"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/metrics"
	"github.com/vllm-cibench/cibench/metrics/accuracymetrics"
	"github.com/vllm-cibench/cibench/metrics/functionalmetrics"
)

// results 是测试夹具：一个场景一次运行的全部结果，按阶段分开交给各自的 Collector
// （与 pipeline 的组装方式相同）。
type results struct {
	Info       metrics.RunInfo
	Perf       []loadgen.Summary
	Functional *functional.Report
	Accuracy   []accuracy.EvalResult
	Capacity   []loadgen.SweepResult
}

// collectors 是几个 Collector 的并集（测试里当作一个交给 testutil）。
type collectors []prometheus.Collector

// Describe 依次转发。
func (cs collectors) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range cs {
		c.Describe(ch)
	}
}

// Collect 依次转发。
func (cs collectors) Collect(ch chan<- prometheus.Metric) {
	for _, c := range cs {
		c.Collect(ch)
	}
}

// stageCollectors 为 res 的每个阶段构造 Collector；withRunLabels 时以 Info.Labels() 作为常量标签
// （本地暴露），否则不带（推送：分组键承载运行标签）。
func stageCollectors(res results, opts metrics.Options, withRunLabels bool) (collectors, error) {
	if withRunLabels {
		lbls, err := res.Info.Labels()
		if err != nil {
			return nil, err
		}
		opts.ConstLabels = lbls
	}
	info, err := metrics.NewRunInfoCollector(res.Info, opts)
	if err != nil {
		return nil, err
	}
	perf, err := metrics.NewPerfCollector(res.Perf, res.Capacity, opts)
	if err != nil {
		return nil, err
	}
	fn, err := functionalmetrics.NewCollector(res.Functional, opts)
	if err != nil {
		return nil, err
	}
	acc, err := accuracymetrics.NewCollector(res.Accuracy, opts)
	if err != nil {
		return nil, err
	}
	return collectors{info, perf, fn, acc}, nil
}

// newCollector 是带运行标签的全部阶段（本地暴露的形状）。
func newCollector(res results, opts metrics.Options) (collectors, error) {
	return stageCollectors(res, opts, true)
}

// writeText 把 res 的全部阶段以文本暴露格式写入 w。
func writeText(w io.Writer, res results, opts metrics.Options) error {
	cs, err := newCollector(res, opts)
	if err != nil {
		return err
	}
	reg, err := metrics.NewRegistry(cs...)
	if err != nil {
		return err
	}
	return metrics.WriteText(w, reg)
}

// pushResults 推送 res 的全部阶段（不带常量标签），前缀取 prefix。
func pushResults(ctx context.Context, p *metrics.Pusher, res results, prefix string) error {
	cs, err := stageCollectors(res, metrics.Options{Prefix: prefix}, false)
	if err != nil {
		return err
	}
	reg, err := metrics.NewRegistry(cs...)
	if err != nil {
		return err
	}
	return p.Push(ctx, res.Info, reg)
}

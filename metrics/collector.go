package metrics

import (
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/vllm-cibench/cibench/explain"
	"github.com/vllm-cibench/cibench/field"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/vllm-cibench/cibench/loadgen"
)

// Options 控制结果到指标族的转换。零值可用（无前缀、无常量标签）。
type Options struct {
	// Prefix 是所有指标名的前缀（需求 §7（docs/requirements.md）"指标前缀：可配置，为空则不使用"），
	// 例如 "cibench" 得到 cibench_perf_ttft_seconds；末尾下划线可省略。
	Prefix string
	// ConstLabels 加在每条序列上。本地暴露（WriteText、自己的注册表）时通常取
	// RunInfo.Labels() 的返回值（model、quant、scenario、run_type）；推送时留空——
	// Pushgateway 的分组键承载同样的标签，二者同时出现会被它拒绝。
	ConstLabels prometheus.Labels
}

// Collector 是一组构造时就已校验好的 Prometheus 常量指标（一个阶段的结果）。
// 之后 Describe/Collect 只读，因此可被多个 goroutine 并发采集。
//
// 每个阶段的结果由它自己的构造函数导出：NewPerfCollector（loadgen，本包）、
// NewRunInfoCollector（运行身份）、metrics/functionalmetrics 与 metrics/accuracymetrics
// （各自只引入自己的阶段包）。只导出压测结果的程序因此不链接 functional、accuracy 或
// openai-go；新阶段照同样的方式用 Builder 写自己的 Collector，不必修改本包。
type Collector struct {
	metrics []prometheus.Metric
	descs   []*prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// Builder 累积常量指标，并记住每个指标名对应的 Desc，保证同名族只有一个 Desc
// （同名不同 Desc 会被注册表判为不一致）。各阶段的导出器（本包的压测导出与
// metrics/functionalmetrics、metrics/accuracymetrics，以及调用方自己的阶段）
// 用它按同一套前缀与常量标签规则构造指标。不是并发安全的：构造完再交出 Collector。
type Builder struct {
	prefix    string
	constLbls prometheus.Labels
	byName    map[string]*prometheus.Desc
	out       *Collector
}

// NewBuilder 校验 opts（前缀为小写 snake case；常量标签名合法、取值是不含换行的 UTF-8）
// 并返回一个空的 Builder。错误是 *field.Error。
func NewBuilder(opts Options) (*Builder, error) {
	prefix, err := normalizePrefix(opts.Prefix)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(opts.ConstLabels))
	for k := range opts.ConstLabels {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !model.LegacyValidation.IsValidLabelName(k) {
			return nil, &field.Error{Err: ErrInvalid, Field: "Options.ConstLabels", Value: k, Reason: "invalid label name"}
		}
		if v := opts.ConstLabels[k]; !labelValueOK(v) {
			return nil, &field.Error{Err: ErrInvalid, Field: "Options.ConstLabels." + k, Value: v, Reason: "label value must be valid UTF-8 without newlines"}
		}
	}
	return &Builder{prefix: prefix, constLbls: opts.ConstLabels, byName: map[string]*prometheus.Desc{}, out: &Collector{}}, nil
}

// Collector 返回已累积的指标。之后不应再调用 Add。
func (b *Builder) Collector() *Collector { return b.out }

// desc 返回（必要时创建）名为 name 的 Desc；变量标签由调用方给出。
func (b *Builder) desc(name, help string, labels []string) *prometheus.Desc {
	full := MetricName(b.prefix, name)
	if d, ok := b.byName[full]; ok {
		return d
	}
	d := prometheus.NewDesc(full, help, labels, b.constLbls)
	b.byName[full] = d
	b.out.descs = append(b.out.descs, d)
	return d
}

// Add 构造一个常量指标（名字自动加前缀）；构造错误（标签数不符、非法 UTF-8）带上指标名返回。
func (b *Builder) Add(name, help string, typ prometheus.ValueType, v float64, labels []string, values ...string) error {
	m, err := prometheus.NewConstMetric(b.desc(name, help, labels), typ, v, values...)
	if err != nil {
		return fmt.Errorf("metrics: build %s: %w", MetricName(b.prefix, name), err)
	}
	b.out.metrics = append(b.out.metrics, m)
	return nil
}

// NewRunInfoCollector 导出运行身份序列 run_info（值恒为 1，commit、branch、run_id、
// model_raw 作为标签）。每次推送或暴露应恰好包含一个。
func NewRunInfoCollector(info RunInfo, opts Options) (*Collector, error) {
	ri, err := info.validate()
	if err != nil {
		return nil, err
	}
	b, err := NewBuilder(opts)
	if err != nil {
		return nil, err
	}
	if err := b.Add(NameRunInfo, "Identity of the run that produced this group; join on model, quant, scenario, run_type",
		prometheus.GaugeValue, 1, []string{LabelCommit, LabelBranch, LabelRunID, LabelModelRaw},
		ri.Commit, ri.Branch, ri.RunID, ri.ModelRaw); err != nil {
		return nil, err
	}
	return b.out, nil
}

// NewPerfCollector 导出压测阶段的结果：每个汇总行（loadgen.Summary，acs-bench 汇总 CSV 的一行）
// 的标量与分布族，以及容量扫描的结论（capacity_requests_per_second）。两者都为空时
// 结果没有序列（未运行的阶段不写 0）。
func NewPerfCollector(rows []loadgen.Summary, capacity []loadgen.SweepResult, opts Options) (*Collector, error) {
	b, err := NewBuilder(opts)
	if err != nil {
		return nil, err
	}
	if err := b.addPerf(rows); err != nil {
		return nil, err
	}
	if err := b.addCapacity(capacity); err != nil {
		return nil, err
	}
	return b.out, nil
}

// comboValues 返回一个压测分组的组合标签值，顺序与 comboLabels 一致。
func comboValues(s *loadgen.Summary) []string {
	dataset := s.DatasetType
	if dataset == "" {
		dataset = "random" // 与 loadgen 的默认数据集类型一致
	}
	round := s.Round
	if round == 0 {
		round = 1
	}
	return []string{
		s.Backend, dataset, strconv.Itoa(s.InputLength), strconv.Itoa(s.OutputLength),
		strconv.Itoa(s.Concurrency), s.ControlMethod, strconv.Itoa(s.GrowthRate), strconv.Itoa(round),
	}
}

// formatFloat 以最短往返形式格式化浮点数，用于 perf_info 的采样参数标签。
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// addPerf 导出每个压测分组；同一组合（含轮次）出现两次会让序列重复，按输入错误报告。
func (b *Builder) addPerf(rows []loadgen.Summary) error {
	seen := map[string]int{}
	for i := range rows {
		s := &rows[i]
		combo := comboValues(s)
		fieldName := fmt.Sprintf("Perf[%d]", i)
		for j, v := range combo {
			if !labelValueOK(v) {
				return &field.Error{Err: ErrInvalid, Field: fieldName + "." + comboLabels[j], Value: v, Reason: "label value must be valid UTF-8 without newlines"}
			}
		}
		key := fmt.Sprint(combo)
		if j, dup := seen[key]; dup {
			return &field.Error{Err: ErrInvalid, Field: fieldName, Value: key, Reason: fmt.Sprintf("same combination (backend dataset input_len output_len concurrency control_method growth_rate round) as Perf[%d]", j)}
		}
		seen[key] = i

		infoLabels := append(append([]string(nil), comboLabels...), "provider", "temperature", "top_k", "top_p", "token_source", "concurrency_backend")
		infoValues := append(append([]string(nil), combo...), s.Provider, formatFloat(s.Temperature), strconv.Itoa(s.TopK),
			formatFloat(s.TopP), s.TokenSource, s.ConcurrencyBackend)
		if err := b.Add(NamePerfInfo, "Sampling parameters and provenance of the group", prometheus.GaugeValue, 1, infoLabels, infoValues...); err != nil {
			return err
		}
		for _, sc := range scalarSpecs {
			v := sc.get(s)
			present := sc.present
			if present == nil {
				present = nonNegative
			}
			if !present(v) {
				continue
			}
			if err := b.Add(sc.name, sc.help, sc.typ, v, comboLabels, combo...); err != nil {
				return err
			}
		}
		if err := addPhases(b, s, comboLabels, combo); err != nil {
			return err
		}
		for _, d := range distSpecs {
			if err := b.addDist(d, s, combo); err != nil {
				return err
			}
		}
		if err := b.addTurns(s, combo); err != nil {
			return err
		}
	}
	return nil
}

// addDist 把一个分布导出为 summary 族（quantile 标签 + _sum/_count）与 min/max/avg 三个 gauge。
// 时延 Count 为 0 时整族不出现；数值分布逐字段以 -1 表示不可测。
func (b *Builder) addDist(d distSpec, s *loadgen.Summary, combo []string) error {
	var (
		count uint64
		get   func(stat) (float64, bool)
	)
	if d.lat != nil {
		l := d.lat(s)
		if !l.Valid() {
			return nil
		}
		count = uint64(l.Count)
		get = func(st stat) (float64, bool) { return latencyStat(l, st), true }
	} else {
		v := d.val(s)
		if !valuesMeasured(v) {
			return nil
		}
		if v.Count > 0 {
			count = uint64(v.Count)
		}
		get = func(st stat) (float64, bool) { x := *valuesStat(v, st); return x, x >= 0 }
	}
	qs := map[float64]float64{}
	for i, q := range quantiles {
		if x, ok := get(stat(i)); ok {
			qs[q] = x
		}
	}
	avg, avgOK := get(statAvg)
	if len(qs) > 0 {
		sum := 0.0
		if avgOK {
			sum = avg * float64(count)
		}
		m, err := prometheus.NewConstSummary(b.desc(d.name, d.help+" (quantiles, _sum, _count)", comboLabels), count, sum, qs, combo...)
		if err != nil {
			return fmt.Errorf("metrics: build %s: %w", MetricName(b.prefix, d.name), err)
		}
		b.out.metrics = append(b.out.metrics, m)
	}
	for _, st := range []stat{statMin, statMax, statAvg} {
		x, ok := get(st)
		if !ok {
			continue
		}
		word := map[stat]string{statMin: "Minimum", statMax: "Maximum", statAvg: "Average"}[st]
		if err := b.Add(d.statName(st), word+" of: "+d.help, prometheus.GaugeValue, x, comboLabels, combo...); err != nil {
			return err
		}
	}
	return nil
}

// Describe 发送全部 Desc，使注册表能在注册时发现名字冲突。
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect 发送构造时生成的常量指标。
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.metrics {
		ch <- m
	}
}

// addPhases 导出一个汇总行的阶段拆分（NamePerfTTFTPhase、NamePerfE2EPhase，多一个 phase 标签）。
// 没有阶段分解（服务端不导出阶段直方图、PD 部署的顶层）时不导出任何序列。
func addPhases(b *Builder, s *loadgen.Summary, labels, values []string) error {
	for _, f := range []struct{ name, metric, help string }{
		{NamePerfTTFTPhase, explain.MetricTTFT, "Client mean TTFT split by phase: client/network, server front end, queue (vllm:request_queue_time_seconds), prefill (vllm:request_prefill_time_seconds)"},
		{NamePerfE2EPhase, explain.MetricE2E, "Client mean E2E split by phase: the TTFT phases plus decode (vllm:request_decode_time_seconds)"},
	} {
		for _, p := range s.Phases.Split(f.metric) {
			if err := b.Add(f.name, f.help, prometheus.GaugeValue, p.Seconds, append(slices.Clone(labels), "phase"), append(slices.Clone(values), p.Phase)...); err != nil {
				return err
			}
		}
	}
	return nil
}

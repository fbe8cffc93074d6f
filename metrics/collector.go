package metrics

import (
	"fmt"
	"github.com/vllm-cibench/cibench/field"
	"math"
	"sort"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
)

// Options 控制结果到指标族的转换。零值可用（无前缀）。
type Options struct {
	// Prefix 是所有指标名的前缀（规格第 7 节"指标前缀：可配置，为空则不使用"），
	// 例如 "cibench" 得到 cibench_perf_ttft_seconds；末尾下划线可省略。
	Prefix string
}

// Collector 把一个场景一次运行的 Results 转换为 Prometheus 常量指标。
// 指标在 NewCollector 时一次性构造并校验，之后 Describe/Collect 只读，
// 因此可被多个 goroutine 并发采集。
type Collector struct {
	metrics []prometheus.Metric
	descs   []*prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector 校验 res 与 opts 并构造全部指标。运行标签（model、quant、
// scenario、run_type）作为每条序列的常量标签，适合本地注册表暴露或写 golden；
// 推送时 Pusher 改用分组键承载这些标签（Pushgateway 拒绝二者同时出现）。
func NewCollector(res Results, opts Options) (*Collector, error) {
	return newCollector(res, opts, true)
}

// builder 累积常量指标，并记住每个指标名对应的 Desc，保证同名族只有一个 Desc
// （同名不同 Desc 会被注册表判为不一致）。
type builder struct {
	prefix    string
	constLbls prometheus.Labels
	byName    map[string]*prometheus.Desc
	out       *Collector
}

// desc 返回（必要时创建）名为 name 的 Desc；变量标签由调用方给出。
func (b *builder) desc(name, help string, labels []string) *prometheus.Desc {
	full := MetricName(b.prefix, name)
	if d, ok := b.byName[full]; ok {
		return d
	}
	d := prometheus.NewDesc(full, help, labels, b.constLbls)
	b.byName[full] = d
	b.out.descs = append(b.out.descs, d)
	return d
}

// add 构造一个常量指标；构造错误（标签数不符、非法 UTF-8）带上指标名返回。
func (b *builder) add(name, help string, typ prometheus.ValueType, v float64, labels []string, values ...string) error {
	m, err := prometheus.NewConstMetric(b.desc(name, help, labels), typ, v, values...)
	if err != nil {
		return fmt.Errorf("metrics: build %s: %w", MetricName(b.prefix, name), err)
	}
	b.out.metrics = append(b.out.metrics, m)
	return nil
}

// newCollector 是 NewCollector 与 Pusher 共用的实现；withRunLabels 为 false 时
// 省略分组键标签，交给 Pushgateway 的分组键补上。
func newCollector(res Results, opts Options, withRunLabels bool) (*Collector, error) {
	prefix, err := normalizePrefix(opts.Prefix)
	if err != nil {
		return nil, err
	}
	info, err := res.Info.validate()
	if err != nil {
		return nil, err
	}
	b := &builder{prefix: prefix, byName: map[string]*prometheus.Desc{}, out: &Collector{}}
	if withRunLabels {
		b.constLbls = prometheus.Labels{
			LabelModel: info.Model, LabelQuant: info.Quant, LabelScenario: info.Scenario, LabelRunType: string(info.RunType),
		}
	}
	if err := b.add(NameRunInfo, "Identity of the run that produced this group; join on model, quant, scenario, run_type",
		prometheus.GaugeValue, 1, []string{LabelCommit, LabelBranch, LabelRunID, LabelModelRaw},
		info.Commit, info.Branch, info.RunID, info.ModelRaw); err != nil {
		return nil, err
	}
	if err := b.addPerf(res.Perf); err != nil {
		return nil, err
	}
	if err := b.addCapacity(res.Capacity); err != nil {
		return nil, err
	}
	if res.Functional != nil {
		if err := b.addFunctional(res.Functional); err != nil {
			return nil, err
		}
	}
	if err := b.addAccuracy(res); err != nil {
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
func (b *builder) addPerf(rows []loadgen.Summary) error {
	seen := map[string]int{}
	for i := range rows {
		s := &rows[i]
		combo := comboValues(s)
		name := fmt.Sprintf("Perf[%d]", i)
		for j, v := range combo {
			if !labelValueOK(v) {
				return &field.Error{Err: ErrInvalid, Field: name + "." + comboLabels[j], Value: v, Reason: "label value must be valid UTF-8 without newlines"}
			}
		}
		key := fmt.Sprint(combo)
		if j, dup := seen[key]; dup {
			return &field.Error{Err: ErrInvalid, Field: name, Value: key, Reason: fmt.Sprintf("same combination (backend dataset input_len output_len concurrency control_method growth_rate round) as Perf[%d]", j)}
		}
		seen[key] = i

		infoLabels := append(append([]string(nil), comboLabels...), "provider", "temperature", "top_k", "top_p", "token_source", "concurrency_backend")
		infoValues := append(append([]string(nil), combo...), s.Provider, formatFloat(s.Temperature), strconv.Itoa(s.TopK),
			formatFloat(s.TopP), s.TokenSource, s.ConcurrencyBackend)
		if err := b.add(NamePerfInfo, "Sampling parameters and provenance of the group", prometheus.GaugeValue, 1, infoLabels, infoValues...); err != nil {
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
			if err := b.add(sc.name, sc.help, sc.typ, v, comboLabels, combo...); err != nil {
				return err
			}
		}
		for _, d := range distSpecs {
			if err := b.addDist(d, s, combo); err != nil {
				return err
			}
		}
	}
	return nil
}

// addDist 把一个分布导出为 summary 族（quantile 标签 + _sum/_count）与 min/max/avg 三个 gauge。
// 时延 Count 为 0 时整族不出现；数值分布逐字段以 -1 表示不可测。
func (b *builder) addDist(d distSpec, s *loadgen.Summary, combo []string) error {
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
		if err := b.add(d.statName(st), word+" of: "+d.help, prometheus.GaugeValue, x, comboLabels, combo...); err != nil {
			return err
		}
	}
	return nil
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

// addFunctional 导出套件汇总与逐用例 0|1；跳过与 unsupported 的用例不导出
// functional_case_pass（没有执行），只计入 functional_cases_skipped；cancelled 导出 0
// （没有结论不是通过）。没有执行任何用例的套件的 functional_pass_ratio 为 NaN。
func (b *builder) addFunctional(r *functional.Report) error {
	suite := []string{LabelSuite}
	for _, s := range suiteSummaries(r) {
		if !labelValueOK(s.Suite) {
			return &field.Error{Err: ErrInvalid, Field: "Functional.Suites.Suite", Value: s.Suite, Reason: "label value must be valid UTF-8 without newlines"}
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
			{NameFunctionalPassRatio, "Passed / cases run (total - skipped - unsupported) of the suite; NaN when no case ran", prometheus.GaugeValue, ratio},
			{NameFunctionalCasesTotal, "Cases in the suite, skipped ones included", prometheus.CounterValue, float64(s.Total)},
			{NameFunctionalCasesFailed, "Failed cases in the suite", prometheus.GaugeValue, float64(s.Failed)},
			{NameFunctionalCasesPassed, "Passed cases in the suite", prometheus.GaugeValue, float64(s.Passed)},
			{NameFunctionalCasesSkipped, "Cases skipped because the server lacks a required capability", prometheus.GaugeValue, float64(s.Skipped + s.Unsupported)},
		}
		for _, a := range adds {
			if err := b.add(a.name, a.help, a.typ, a.v, suite, s.Suite); err != nil {
				return err
			}
		}
	}
	caseLabels := []string{LabelSuite, LabelCaseID}
	seen := map[[2]string]bool{}
	for i, res := range r.Results {
		if !labelValueOK(res.Suite) || !labelValueOK(res.CaseID) || res.CaseID == "" {
			return &field.Error{Err: ErrInvalid, Field: fmt.Sprintf("Functional.Results[%d]", i), Value: res.Suite + "/" + res.CaseID, Reason: "suite and case_id must be non-empty UTF-8 without newlines"}
		}
		k := [2]string{res.Suite, res.CaseID}
		if seen[k] {
			return &field.Error{Err: ErrInvalid, Field: fmt.Sprintf("Functional.Results[%d]", i), Value: res.Suite + "/" + res.CaseID, Reason: "duplicate case"}
		}
		seen[k] = true
		if res.Status.NotRun() {
			continue
		}
		pass := 0.0
		if res.Status == functional.StatusPass {
			pass = 1
		}
		if err := b.add(NameFunctionalCasePass, "1 when the case passed, 0 when it failed (skipped cases are absent)", prometheus.GaugeValue, pass, caseLabels, res.Suite, res.CaseID); err != nil {
			return err
		}
		if err := b.add(NameFunctionalCaseDuration, "Wall time of the case", prometheus.GaugeValue, res.Duration.Seconds(), caseLabels, res.Suite, res.CaseID); err != nil {
			return err
		}
	}
	if r.Duration > 0 {
		return b.add(NameFunctionalDuration, "Wall time of the whole functional stage", prometheus.GaugeValue, r.Duration.Seconds(), nil)
	}
	return nil
}

// addAccuracy 导出每个数据集的总分、样本数、请求与失败数、各子指标（Metrics 的键作为
// metric 标签），以及数据来源的 _info 序列（每个读取的文件一条）。
func (b *builder) addAccuracy(res Results) error {
	seen := map[string]bool{}
	for i, e := range res.Accuracy {
		name := fmt.Sprintf("Accuracy[%d].Dataset", i)
		if e.Dataset == "" || !labelValueOK(e.Dataset) {
			return &field.Error{Err: ErrInvalid, Field: name, Value: e.Dataset, Reason: "dataset must be non-empty UTF-8 without newlines"}
		}
		if seen[e.Dataset] {
			return &field.Error{Err: ErrInvalid, Field: name, Value: e.Dataset, Reason: "duplicate dataset"}
		}
		seen[e.Dataset] = true
		ds := []string{LabelDataset}
		if err := b.add(NameAccuracyScore, "Mean score over the evaluated examples (simple-evals score), in [0,1]", prometheus.GaugeValue, e.Score, ds, e.Dataset); err != nil {
			return err
		}
		if err := b.add(NameAccuracyExamples, "Examples evaluated", prometheus.CounterValue, float64(e.Examples), ds, e.Dataset); err != nil {
			return err
		}
		if err := b.add(NameAccuracyRequests, "Sampling requests sent (HumanEval sends 5 per example)", prometheus.CounterValue, float64(e.Requests), ds, e.Dataset); err != nil {
			return err
		}
		if err := b.add(NameAccuracyFailedRequests, "Sampling requests that failed (after retries, HTTP 400, null or empty content) and were scored as simple-evals does", prometheus.CounterValue, float64(e.Errors), ds, e.Dataset); err != nil {
			return err
		}
		if src := e.Source; src != nil {
			infoLabels := []string{LabelDataset, LabelSourceKind, LabelSourceLoc, LabelFile, LabelSHA256}
			for j, f := range src.Files {
				for _, v := range []string{src.Kind, src.Location, f.Name, f.SHA256} {
					if !labelValueOK(v) {
						return &field.Error{Err: ErrInvalid, Field: fmt.Sprintf("Accuracy[%d].Source.Files[%d]", i, j), Value: v, Reason: "must be UTF-8 without newlines"}
					}
				}
				if err := b.add(NameAccuracyDataInfo, "Data file each accuracy score was computed from (value is always 1)", prometheus.GaugeValue, 1, infoLabels, e.Dataset, src.Kind, src.Location, f.Name, f.SHA256); err != nil {
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
				return &field.Error{Err: ErrInvalid, Field: fmt.Sprintf("Accuracy[%d].Metrics", i), Value: k, Reason: "metric key must be UTF-8 without newlines"}
			}
			if err := b.add(NameAccuracyMetric, "Aggregated simple-evals metric (mean, or :std for the population standard deviation)", prometheus.GaugeValue, e.Metrics[k], []string{LabelDataset, LabelMetric}, e.Dataset, k); err != nil {
				return err
			}
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

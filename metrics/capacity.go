package metrics

import (
	"fmt"
	"github.com/vllm-cibench/cibench/field"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-cibench/cibench/loadgen"
)

// NameCapacity 是容量扫描得到的最大可持续到达速率（满足 goodput SLO、没有错误的最高
// 开环速率）。单位是请求/秒，按 Prometheus 惯例以 _per_second 结尾。
const NameCapacity = "capacity_requests_per_second"

// capacityLabels 是容量序列在运行标签之外的标签：与压测分组同名，看板的变量过滤因此通用。
var capacityLabels = []string{LabelBackend, LabelDataset, LabelInputLen, LabelOutputLen, LabelConcurrency}

// addCapacity 导出每次扫描的最大可持续速率。起始速率就不满足 SLO（MaxSustainableRate 为 0）
// 时不导出：0 不是测得的容量，而是"低于 start_rate"，写 0 会在看板上画出假的断崖。
func (b *Builder) addCapacity(results []loadgen.SweepResult) error {
	seen := map[string]int{}
	for i, r := range results {
		if r.MaxSustainableRate <= 0 {
			continue
		}
		dataset := string(loadgen.DatasetRandom)
		if len(r.Steps) > 0 && r.Steps[0].Summary.DatasetType != "" {
			dataset = r.Steps[0].Summary.DatasetType
		}
		vals := []string{r.Backend, dataset, strconv.Itoa(r.InputLength), strconv.Itoa(r.OutputLength), strconv.Itoa(r.Concurrency)}
		for j, v := range vals {
			if !labelValueOK(v) {
				return &field.Error{Err: ErrInvalid, Field: fmt.Sprintf("Capacity[%d].%s", i, capacityLabels[j]), Value: v, Reason: "label value must be valid UTF-8 without newlines"}
			}
		}
		key := fmt.Sprint(vals)
		if j, dup := seen[key]; dup {
			return &field.Error{Err: ErrInvalid, Field: fmt.Sprintf("Capacity[%d]", i), Value: key, Reason: fmt.Sprintf("same combination as Capacity[%d]", j)}
		}
		seen[key] = i
		if err := b.Add(NameCapacity, "Highest open-loop arrival rate meeting every goodput SLO without errors (capacity sweep)",
			prometheus.GaugeValue, r.MaxSustainableRate, capacityLabels, vals...); err != nil {
			return err
		}
	}
	return nil
}

package perfreport

import (
	"encoding/json"
	"strconv"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
)

// 性能阶段的分节。汇总行与容量结论进 summary.json；时间线与逐请求样本体积随运行增长，
// 只写各自的文件（Detail）。它们是函数而不是包级变量：分节的键与文件是产物格式的一部分，
// 调用方拿到的是副本，改不动别人读写用的那一个。

// RowsSection 是压测汇总行：summary.json 的 "perf" 键与 perf/summary.json。
func RowsSection() report.Section { return report.Section{Key: "perf", File: "perf/summary.json"} }

// CapacitySection 是容量扫描结论：summary.json 的 "capacity" 键与 perf/capacity.json。
func CapacitySection() report.Section {
	return report.Section{Key: "capacity", File: "perf/capacity.json"}
}

// TimelineSection 是 --bucket-interval 的实时时间线，只写 perf/timeline.json。
func TimelineSection() report.Section {
	return report.Section{Key: "timeline", File: "perf/timeline.json", Detail: true}
}

// SamplesSection 是有界的逐请求样本，只写 perf/samples.json（性能门禁用它计算置信区间）。
func SamplesSection() report.Section {
	return report.Section{Key: "samples", File: "perf/samples.json", Detail: true}
}

// RecordRows 追加场景的压测汇总行（一次 loadgen.Run 的返回值）。
func RecordRows(run *report.Run, scenario string, rows []loadgen.Summary) error {
	return run.UpdateSection(scenario, RowsSection(), func(old json.RawMessage) (any, error) {
		// 从空列表（而不是 nil）开始：一次什么也没记下的运行（例如每个请求都失败）记为 []，不是 null。
		all := []loadgen.Summary{}
		if old != nil {
			if err := json.Unmarshal(old, &all); err != nil {
				return nil, err
			}
		}
		all = append(all, rows...)
		return &all, nil
	})
}

// decode 读出场景中键为 key 的分节；没有时为零值。
func decode[T any](sc report.Scenario, key string) (T, error) {
	var v T
	_, err := sc.Decode(key, &v)
	return v, err
}

// Rows 读出场景的压测汇总行（按记录顺序）。
func Rows(sc report.Scenario) ([]loadgen.Summary, error) {
	return decode[[]loadgen.Summary](sc, RowsSection().Key)
}

// Capacity 读出场景的容量扫描结论。
func Capacity(sc report.Scenario) ([]loadgen.SweepResult, error) {
	return decode[[]loadgen.SweepResult](sc, CapacitySection().Key)
}

// Timeline 读出场景的时间线行。
func Timeline(sc report.Scenario) ([]loadgen.Timeline, error) {
	return decode[[]loadgen.Timeline](sc, TimelineSection().Key)
}

// SamplesOf 读出场景的逐请求样本。
func SamplesOf(sc report.Scenario) ([]Samples, error) {
	return decode[[]Samples](sc, SamplesSection().Key)
}

// Set 把性能结果存进内存中的场景（覆盖，不落盘），用于组装 report.Result（测试、导入的结果）。
// 为空的参数不写对应分节。
func Set(sc *report.Scenario, rows []loadgen.Summary, samples []Samples) error {
	if rows != nil {
		if err := sc.SetSection(RowsSection(), &rows); err != nil {
			return err
		}
	}
	if samples != nil {
		return sc.SetSection(SamplesSection(), &samples)
	}
	return nil
}

// Renderer 返回性能阶段的渲染器：总览表的 "perf rows" 列、HTML 片段（曲线、时间线、
// 汇总行、容量扫描）、性能门禁输入（汇总行与逐请求样本）与残缺判断（缺分片的行）。
func Renderer() report.Renderer {
	return report.Renderer{Name: "perf", Columns: []string{"perf rows"}, Cells: cells, HTML: html, Gate: gateInput, Incomplete: incomplete}
}

// cells 给出总览表中汇总行的行数。
func cells(sc report.Scenario) ([]report.Cell, error) {
	rows, err := Rows(sc)
	return []report.Cell{{Text: strconv.Itoa(len(rows)), Num: true}}, err
}

// gateInput 把汇总行与逐请求样本交给性能门禁。
func gateInput(sc report.Scenario, in *gate.Scenario) error {
	rows, err := Rows(sc)
	if err != nil {
		return err
	}
	samples, err := SamplesOf(sc)
	if err != nil {
		return err
	}
	in.Perf = append(in.Perf, gateRows(rows)...)
	in.Samples = append(in.Samples, samples...) // Samples 是 gate.Samples 的别名
	return nil
}

// incomplete 报告是否有汇总行缺了分片（分片合并的结果不完整，loadgen.Summary.MissingShards）。
func incomplete(sc report.Scenario) (bool, error) {
	rows, err := Rows(sc)
	for _, r := range rows {
		if len(r.MissingShards) > 0 {
			return true, err
		}
	}
	return false, err
}

// gateRows 把压测汇总行转换为门禁用的行。
func gateRows(rows []loadgen.Summary) []gate.PerfRow {
	out := make([]gate.PerfRow, len(rows))
	for i, s := range rows {
		out[i] = gate.PerfRow{Backend: s.Backend, ControlMethod: s.ControlMethod, InputLength: s.InputLength,
			OutputLength: s.OutputLength, Concurrency: s.Concurrency, TTFT: latency(s.TTFT), E2E: latency(s.E2E),
			QPS: s.QPS, FailRate: s.FailRate, Succeeded: int64(s.Succeeded), Time: s.ExecutionTime,
			Round: s.Round, Epochs: s.Epochs, Incomplete: s.Incomplete, Phases: s.Phases, OutputThroughput: s.OutputTokenThroughput}
	}
	return out
}

// latency 逐字段转换时延摘要。
func latency(l loadgen.Latency) gate.Latency {
	return gate.Latency{Count: l.Count, P50: l.P50, P75: l.P75, P90: l.P90, P95: l.P95, P99: l.P99, Min: l.Min, Max: l.Max, Avg: l.Avg}
}

// rowBackend 返回压测行的后端：行没写时用场景的后端（与基线键同一口径）。
func rowBackend(sc report.Scenario, r loadgen.Summary) string {
	if r.Backend != "" {
		return r.Backend
	}
	return sc.Backend
}

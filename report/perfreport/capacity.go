package perfreport

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"strconv"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
)

// RecordCapacity 追加场景的容量扫描结论（loadgen.RunSweep 的返回值），写入
// <scenario>/perf/capacity.json，并出现在 summary.json 与 HTML 报告中。扫描的各级
// 汇总行不经 RecordRows：它们的到达速率各不相同，按组合合并进性能门禁没有意义。
func RecordCapacity(run *report.Run, scenario string, results []loadgen.SweepResult) error {
	return run.UpdateSection(scenario, CapacitySection(), func(old json.RawMessage) (any, error) {
		// 从空列表（而不是 nil）开始：一次什么也没记下的运行（例如每个请求都失败）记为 []，不是 null。
		all := []loadgen.SweepResult{}
		if old != nil {
			if err := json.Unmarshal(old, &all); err != nil {
				return nil, err
			}
		}
		all = append(all, results...)
		return &all, nil
	})
}

// capRow 是容量表的一行（已格式化）。
type capRow struct {
	Combo, SLO, MaxRate, Knee, MaxGoodput, Stop, Elapsed string
	Steps                                                int
}

// capacityView 为场景的每次扫描画出"时延 / goodput 对到达速率"两张图并生成汇总表。
func capacityView(capacity []loadgen.SweepResult) ([]template.HTML, []capRow) {
	var charts []template.HTML
	var rows []capRow
	for i, res := range capacity {
		combo := fmt.Sprintf("in%d/out%d", res.InputLength, res.OutputLength)
		if res.Concurrency > 0 {
			combo += fmt.Sprintf(" c≤%d", res.Concurrency)
		}
		rows = append(rows, capRow{Combo: combo, SLO: res.SLO + fmt.Sprintf(" (≥%.0f%%)", res.Target*100),
			MaxRate: rate(res.MaxSustainableRate), Knee: rate(res.KneeRate), MaxGoodput: rate(res.MaxGoodput),
			Stop: res.Stop, Elapsed: res.Elapsed.Round(100 * 1e6).String(), Steps: len(res.Steps)})
		curve := res.Curve()
		if len(curve) == 0 {
			continue
		}
		cats := make([]string, len(curve))
		ttft := report.Series{Name: "TTFT P99", Color: report.Color(0)}
		e2e := report.Series{Name: "E2E P99", Color: report.Color(1)}
		offered := report.Series{Name: "offered", Color: report.Color(6), Dashed: true}
		good := report.Series{Name: "goodput", Color: report.Color(2)}
		qps := report.Series{Name: "completed", Color: report.Color(3)}
		for j, st := range curve {
			cats[j] = strconv.FormatFloat(math.Round(st.OfferedRate*100)/100, 'f', -1, 64)
			ttft.Values = append(ttft.Values, latOrNaN(st.Summary.TTFT, st.Summary.TTFT.P99.Seconds()))
			e2e.Values = append(e2e.Values, latOrNaN(st.Summary.E2E, st.Summary.E2E.P99.Seconds()))
			offered.Values = append(offered.Values, st.OfferedRate)
			good.Values = append(good.Values, math.Max(st.Summary.Goodput, 0))
			qps.Values = append(qps.Values, st.Summary.QPS)
		}
		suffix := ""
		if len(capacity) > 1 {
			suffix = fmt.Sprintf(" (%s, sweep %d)", combo, i+1)
		}
		lat := report.Chart{Title: "Latency vs offered rate" + suffix, XLabel: "offered rate (req/s)", YLabel: "seconds", Categories: cats, Series: []report.Series{ttft, e2e}}
		gp := report.Chart{Title: "Goodput vs offered rate" + suffix, XLabel: "offered rate (req/s)", YLabel: "requests/s", Categories: cats, Series: []report.Series{offered, qps, good}}
		charts = append(charts, lat.SVG(), gp.SVG())
	}
	return charts, rows
}

// latOrNaN 在没有样本时返回 NaN（折线在此断开）。
func latOrNaN(l loadgen.Latency, v float64) float64 {
	if !l.Valid() {
		return math.NaN()
	}
	return v
}

// rate 格式化请求速率；0 表示未得到（起始速率就不满足、没有看到饱和）。
func rate(v float64) string {
	if v <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f req/s", v)
}

package perfreport

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
)

// RecordTimeline 追加场景的时间线行（一次 loadgen.Run 经 Observer.OnTimeline 收到的全部行），
// 写入 <scenario>/perf/timeline.json（不进 summary.json：长时间运行的行数可达数千）；
// HTML 报告据此按分组画出时延与并发随时间的变化。
func RecordTimeline(run *report.Run, scenario string, rows []loadgen.Timeline) error {
	return run.UpdateSection(scenario, TimelineSection(), func(old json.RawMessage) (any, error) {
		// 从空列表（而不是 nil）开始：一次什么也没记下的运行（例如每个请求都失败）记为 []，不是 null。
		all := []loadgen.Timeline{}
		if old != nil {
			if err := json.Unmarshal(old, &all); err != nil {
				return nil, err
			}
		}
		all = append(all, rows...)
		return &all, nil
	})
}

// maxTimelinePoints 是每张时间线图最多画的点数；更多的行按等间隔抽取（保留首末行），
// 长时间运行的报告因此大小有界。
const maxTimelinePoints = 600

// timelineCharts 按分组（输入、输出、并发、轮次）画出时间线：时延随时间（TTFT P50/P99、
// ITL P99）与并发随时间（目标并发为阶梯线，爬坡台阶清晰可见；在途请求数；服务端
// running/waiting）。返回图与分组数；没有时间线时为空。
func timelineCharts(rows []loadgen.Timeline) ([]template.HTML, int) {
	type key struct{ in, out, conc, round, idx int }
	var keys []key
	by := map[key][]loadgen.Timeline{}
	for _, r := range rows {
		k := key{r.Group.InputLength, r.Group.OutputLength, r.Group.Concurrency, r.Group.Round, r.Group.Index}
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], r)
	}
	var out []template.HTML
	for _, k := range keys {
		rs := by[k]
		// 末尾没有任何请求完成的桶（组结束后的半个间隔）去掉：它把在途数画成 0，看上去像服务崩溃了。
		for len(rs) > 1 && rs[len(rs)-1].TTFTP50 < 0 && rs[len(rs)-1].InFlight == 0 {
			rs = rs[:len(rs)-1]
		}
		rs = thin(rs, maxTimelinePoints)
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = r.Elapsed.Seconds()
		}
		ms := func(pick func(loadgen.Timeline) time.Duration) []float64 {
			v := make([]float64, len(rs))
			for i, r := range rs {
				v[i] = math.NaN() // -1（间隔内没有完成的请求）画成断线，而不是 0
				if d := pick(r); d >= 0 {
					v[i] = float64(d) / 1e6
				}
			}
			return v
		}
		num := func(pick func(loadgen.Timeline) float64) ([]float64, bool) {
			v := make([]float64, len(rs))
			has := false
			for i, r := range rs {
				v[i] = math.NaN()
				if x := pick(r); x >= 0 {
					v[i], has = x, true
				}
			}
			return v, has
		}
		title := fmt.Sprintf("in%d/out%d c=%d round %d", k.in, k.out, k.conc, k.round)
		// TTFT（上百毫秒）与 ITL（几毫秒）各用一张图：同一根纵轴上 ITL 只是一条贴着 0 的平线。
		lat := report.Chart{Title: "TTFT over time, " + title, XLabel: "elapsed (s)", YLabel: "ms", X: xs, Series: []report.Series{
			{Name: "TTFT P50", Values: ms(func(r loadgen.Timeline) time.Duration { return r.TTFTP50 }), Color: report.Color(0)},
			{Name: "TTFT P99", Values: ms(func(r loadgen.Timeline) time.Duration { return r.TTFTP99 }), Color: report.Color(1)},
		}}
		itl := report.Chart{Title: "ITL P99 over time, " + title, XLabel: "elapsed (s)", YLabel: "ms", X: xs, Series: []report.Series{
			{Name: "ITL P99", Values: ms(func(r loadgen.Timeline) time.Duration { return r.ITLP99 }), Color: report.Color(2)},
		}}
		target, _ := num(func(r loadgen.Timeline) float64 { return float64(r.TargetConcurrency) })
		inflight, _ := num(func(r loadgen.Timeline) float64 { return float64(r.InFlight) })
		conc := report.Chart{Title: "Concurrency over time, " + title, XLabel: "elapsed (s)", YLabel: "requests", X: xs, Series: []report.Series{
			{Name: "target", Values: target, Color: report.Color(6), Step: true},
			{Name: "in flight", Values: inflight, Color: report.Color(0)},
		}}
		if v, ok := num(func(r loadgen.Timeline) float64 { return r.ServerRunning }); ok {
			conc.Series = append(conc.Series, report.Series{Name: "server running", Values: v, Color: report.Color(2)})
		}
		if v, ok := num(func(r loadgen.Timeline) float64 { return r.ServerWaiting }); ok {
			conc.Series = append(conc.Series, report.Series{Name: "server waiting", Values: v, Color: report.Color(1)})
		}
		out = append(out, lat.SVG(), itl.SVG(), conc.SVG())
	}
	return out, len(keys)
}

// thin 把 rs 等间隔抽取到至多 n 行（保留首末行）。
func thin(rs []loadgen.Timeline, n int) []loadgen.Timeline {
	if len(rs) <= n {
		return rs
	}
	out := make([]loadgen.Timeline, 0, n)
	for i := range n {
		out = append(out, rs[i*(len(rs)-1)/(n-1)])
	}
	return out
}

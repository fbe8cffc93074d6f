package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/vllm-cibench/cibench/explain"
)

// Stack 是堆叠条形图的一根横条：Label 是条名（如 "baseline"、"current"），Parts 是从左到右
// 依次堆叠的各段（负值按 0 画，提示里仍是原值）。
type Stack struct {
	Label string
	Parts []StackPart
	// Dashed 把这根横条画成参考（基线）：各段半透明、虚线描边，与实心的当前横条一眼可分，
	// 与折线图的虚线空心基线同一语言。
	Dashed bool
}

// StackPart 是横条上的一段。
type StackPart struct {
	Name  string
	Value float64
}

// Stacked 是横向堆叠条形图：同一组阶段在几根横条上对比（基线与当前的 TTFT 由哪些阶段组成）。
// 各段按名字取同一颜色，图例在下方。用 Go 直接生成 SVG，离线可看。
type Stacked struct {
	Title string
	Unit  string // 数值的显示单位，如 "ms"
	Scale float64
	Bars  []Stack
	// Max 非 0 时是横轴的满刻度（与 Parts 的 Value 同单位）：同一页上几张图设同一个 Max，条的长短
	// 才能互相比较（未变的 40 ms 不会画得和 201 ms 一样长）。0 取本图最长的一条。
	Max float64
}

// Total 返回最长一条的总值（负段按 0 计），用来给同一页的几张图定一个共同的 Max。
func (s Stacked) Total() float64 {
	total := 0.0
	for _, b := range s.Bars {
		t := 0.0
		for _, p := range b.Parts {
			t += max(0, p.Value)
		}
		total = max(total, t)
	}
	return total
}

// 堆叠图的几何尺寸（像素）。
const (
	stackW      = 640
	stackLabelW = 90
	stackBarH   = 26
	stackGap    = 12
	stackTop    = 30
	stackLegend = 22
)

// SVG 返回图的 SVG 文本。
func (s Stacked) SVG() template.HTML { return template.HTML(s.render()) }

// render 画出横条、每段的提示（名字与原值）、各条末端的总值与图例。
func (s Stacked) render() string {
	scale := s.Scale
	if scale == 0 {
		scale = 1
	}
	total := max(s.Total(), s.Max)
	var names []string
	color := map[string]string{}
	for _, b := range s.Bars {
		for _, p := range b.Parts {
			if _, ok := color[p.Name]; !ok {
				color[p.Name] = Color(len(names))
				names = append(names, p.Name)
			}
		}
	}
	plotW := float64(stackW - stackLabelW - 80)
	legendRows := (len(names) + 3) / 4
	h := stackTop + len(s.Bars)*(stackBarH+stackGap) + 14 + legendRows*stackLegend + 10
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		stackW, h, stackW, h, esc(s.Title))
	fmt.Fprintf(&sb, `<text x="4" y="18" font-size="13" font-weight="bold">%s</text>`, esc(s.Title))
	for i, b := range s.Bars {
		y := stackTop + i*(stackBarH+stackGap)
		fmt.Fprintf(&sb, `<text x="4" y="%d" font-size="12">%s</text>`, y+stackBarH/2+4, esc(b.Label))
		x, sum := float64(stackLabelW), 0.0
		for _, p := range b.Parts {
			sum += p.Value
			v := max(0, p.Value)
			if total <= 0 || v == 0 {
				continue
			}
			w := v / total * plotW
			ref := ""
			if b.Dashed {
				ref = ` class="baseline" fill-opacity="0.4" stroke="#333" stroke-dasharray="3 2"`
			}
			fmt.Fprintf(&sb, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"%s><title>%s %s: %s %s</title></rect>`,
				x, y, w, stackBarH, color[p.Name], ref, esc(b.Label), esc(p.Name), formatValue(roundTo(p.Value*scale, 2)), esc(s.Unit))
			x += w
		}
		fmt.Fprintf(&sb, `<text x="%.1f" y="%d" font-size="12">%s %s</text>`, x+6, y+stackBarH/2+4, formatValue(roundTo(sum*scale, 1)), esc(s.Unit))
	}
	// 横轴：0、一半与满刻度三个刻度（单位同条末的数值），几张共用 Max 的图因此可以直接对照。
	axisY := stackTop + len(s.Bars)*(stackBarH+stackGap) - stackGap/2
	if total > 0 {
		fmt.Fprintf(&sb, `<line class="axis" x1="%d" y1="%d" x2="%.1f" y2="%d" stroke="#999"/>`, stackLabelW, axisY, float64(stackLabelW)+plotW, axisY)
		for _, f := range []float64{0, 0.5, 1} {
			x := float64(stackLabelW) + f*plotW
			fmt.Fprintf(&sb, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/><text class="tick" x="%.1f" y="%d" font-size="10" text-anchor="middle">%s %s</text>`,
				x, axisY, x, axisY+4, x, axisY+14, formatValue(roundTo(f*total*scale, 1)), esc(s.Unit))
		}
	}
	ly := stackTop + len(s.Bars)*(stackBarH+stackGap) + 4 + 14
	for i, n := range names {
		x := 4 + (i%4)*(stackW/4)
		y := ly + (i/4)*stackLegend
		fmt.Fprintf(&sb, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d" font-size="11">%s</text>`,
			x, y, color[n], x+16, y+10, esc(n))
	}
	sb.WriteString(`</svg>`)
	return sb.String()
}

// PhaseChart 返回一次归因的基线与当前 TTFT（metric 为 explain.MetricTTFT）或 E2E 的堆叠条形图：
// 每根横条由各阶段的均值组成（毫秒）。没有阶段份额（不可归因或没有数据）时 ok 为 false。
func PhaseChart(title string, e explain.Explanation, metric string) (Stacked, bool) {
	c := e.TTFT
	if metric == explain.MetricE2E {
		c = e.E2E
	}
	if len(c.Components) == 0 {
		return Stacked{}, false
	}
	base, cur := Stack{Label: "baseline", Dashed: true}, Stack{Label: "current"}
	for _, x := range c.Components {
		if math.IsNaN(x.Base) || math.IsNaN(x.Current) {
			return Stacked{}, false
		}
		base.Parts = append(base.Parts, StackPart{Name: x.Phase, Value: x.Base})
		cur.Parts = append(cur.Parts, StackPart{Name: x.Phase, Value: x.Current})
	}
	return Stacked{Title: title, Unit: "ms", Scale: 1000, Bars: []Stack{base, cur}}, true
}

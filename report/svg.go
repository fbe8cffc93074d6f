package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// palette 是图表系列的配色（色盲友好的 Okabe-Ito 色板）。
var palette = [...]string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}

// Color 返回配色表中的第 i 种颜色（循环取用）。各阶段的图表片段用它配色，整份报告的
// 颜色因此出自同一张色盲友好的色板。
func Color(i int) string { return palette[i%len(palette)] }

// Series 是图表中的一条数据系列：Values 与图表的类别一一对应，NaN 表示缺失
// （折线在此断开、柱子不画）。
type Series struct {
	Name   string
	Values []float64
	Dashed bool // 基线等参考系列用虚线
	Color  string
	Step   bool // 阶梯线（值保持到下一个点再跳变），用于爬坡的目标并发
}

// Chart 是一个类别型 X 轴（并发、数据集）、线性 Y 轴（从 0 开始）的图。
// 用 Go 直接生成 SVG，报告因此不依赖任何脚本库或 CDN，离线可看。
type Chart struct {
	Title      string
	XLabel     string
	YLabel     string
	Categories []string
	Series     []Series
	Bars       bool // true：分组柱状图；false：折线图
	// X 非空时 X 轴是数值轴（例如时间线的秒数），Values 与 X 一一对应，Categories 不用。
	X []float64
}

// 图表几何尺寸（像素）。固定尺寸让报告中的图排版整齐。
const (
	chartW       = 640
	chartH       = 300
	marginLeft   = 64
	marginRight  = 180 // 图例区
	marginTop    = 34
	marginBottom = 50
)

// maxPoints 是数值轴折线上还画数据点（带悬停提示）的点数上限。
const maxPoints = 60

// esc 转义 SVG 文本与属性值。
func esc(s string) string { return html.EscapeString(s) }

// niceStep 返回覆盖 span 约 n 个刻度的"好看"步长（1、2、5 × 10^k）。
func niceStep(span float64, n int) float64 {
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / mag; {
	case f <= 1:
		return mag
	case f <= 2:
		return 2 * mag
	case f <= 5:
		return 5 * mag
	default:
		return 10 * mag
	}
}

// formatTick 把刻度值格式化为短文本（去掉多余的零）。
func formatTick(v float64) string {
	if v == 0 {
		return "0"
	}
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// SVG 生成完整的 <svg> 元素，可直接放进报告的 HTML 片段：标记全部由本函数生成，
// 标题、图例等文本都经过转义。没有任何有效数据时画出坐标框与 "no data"，
// 而不是空白，读者能分辨"没测"与"渲染失败"。
func (c Chart) SVG() template.HTML { return template.HTML(c.render()) }

// render 生成 SVG 文本（SVG 的实现）：标题、Y 轴（刻度与网格）、X 轴（类别或数值）、
// 坐标轴标签、没有数据时的 "no data"，然后逐个系列画柱、参考线或折线并写图例。
func (c Chart) render() string {
	pl := &plot{c: c, pw: float64(chartW - marginLeft - marginRight), ph: float64(chartH - marginTop - marginBottom)}
	b := &pl.b
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		chartW, chartH, chartW, chartH, esc(c.Title))
	fmt.Fprintf(b, `<title>%s</title>`, esc(c.Title))
	fmt.Fprintf(b, `<text x="%d" y="20" class="chart-title" font-size="14" font-weight="bold">%s</text>`, marginLeft, esc(c.Title))
	hasData := pl.yAxis()
	pl.xAxis()
	fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="12" text-anchor="middle">%s</text>`, float64(marginLeft)+pl.pw/2, chartH-8, esc(c.XLabel))
	fmt.Fprintf(b, `<text x="14" y="%.1f" font-size="12" text-anchor="middle" transform="rotate(-90 14 %.1f)">%s</text>`, float64(marginTop)+pl.ph/2, float64(marginTop)+pl.ph/2, esc(c.YLabel))
	if !hasData {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="13" text-anchor="middle" fill="#888">no data</text>`, float64(marginLeft)+pl.pw/2, float64(marginTop)+pl.ph/2)
	}
	pl.series()
	b.WriteString(`</svg>`)
	return b.String()
}

// plot 是 render 画一张图时的状态：绘图区的宽高、Y 轴顶端、类别带宽与数据点的横坐标。
type plot struct {
	c      Chart
	b      strings.Builder
	pw, ph float64
	// top 是 Y 轴的顶端（刻度步长的整数倍）。
	top float64
	// n 是横轴上的点数；band 是类别轴上每个类别的宽度。
	n    int
	band float64
	// x 与 label 给出第 i 个点的横坐标与悬停提示里的名字（类别名或 X 值）。
	x     func(i int) float64
	label func(i int) string
}

// y 返回值 v 的纵坐标。
func (pl *plot) y(v float64) float64 { return float64(marginTop) + pl.ph - v/pl.top*pl.ph }

// yAxis 按全部有限值的最大值选刻度步长，画 Y 轴刻度、网格线与两条坐标轴，返回是否有任何
// 有限值。刻度用 i×step 计算并按步长的小数位取整，避免累加产生 0.30000000000000004 这样的标签。
func (pl *plot) yAxis() bool {
	b := &pl.b
	maxV := 0.0
	hasData := false
	for _, s := range pl.c.Series {
		for _, v := range s.Values {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				hasData = true
				maxV = math.Max(maxV, v)
			}
		}
	}
	step := niceStep(maxV, 5)
	pl.top = math.Ceil(maxV/step) * step
	if pl.top <= 0 {
		pl.top = step
	}
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	for i := 0; float64(i)*step <= pl.top+step/2; i++ {
		t := float64(i) * step
		yy := pl.y(t)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e3e3e3"/>`, marginLeft, yy, float64(marginLeft)+pl.pw, yy)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="11" text-anchor="end" class="tick">%s</text>`, marginLeft-6, yy+4, esc(formatTick(roundTo(t, decimals))))
	}
	// 坐标轴。
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%.1f" stroke="#333"/>`, marginLeft, marginTop, marginLeft, float64(marginTop)+pl.ph)
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`, marginLeft, float64(marginTop)+pl.ph, float64(marginLeft)+pl.pw, float64(marginTop)+pl.ph)
	return hasData
}

// xAxis 定下横坐标并画 X 轴刻度：有 X 时是 0 到最大值的数值轴（刻度取“好看”的步长），
// 否则每个类别一个刻度。
func (pl *plot) xAxis() {
	b, c := &pl.b, pl.c
	pl.n = len(c.Categories)
	pl.band = pl.pw / float64(max(pl.n, 1))
	pl.x = func(i int) float64 { return float64(marginLeft) + pl.band*(float64(i)+0.5) }
	pl.label = func(i int) string { return c.Categories[i] }
	base := float64(marginTop) + pl.ph
	if len(c.X) == 0 {
		for i, cat := range c.Categories {
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`, pl.x(i), base, pl.x(i), base+4)
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle" class="tick">%s</text>`, pl.x(i), base+17, esc(cat))
		}
		return
	}
	pl.n = len(c.X)
	xMax := 0.0
	for _, v := range c.X {
		xMax = math.Max(xMax, v)
	}
	xStep := niceStep(xMax, 8)
	xTop := math.Max(math.Ceil(xMax/xStep)*xStep, xStep)
	pl.x = func(i int) float64 { return float64(marginLeft) + c.X[i]/xTop*pl.pw }
	pl.label = func(i int) string { return formatValue(c.X[i]) }
	xd := max(0, int(-math.Floor(math.Log10(xStep))))
	for k := 0; float64(k)*xStep <= xTop+xStep/2; k++ {
		xx := float64(marginLeft) + float64(k)*xStep/xTop*pl.pw
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`, xx, base, xx, base+4)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle" class="tick">%s</text>`, xx, base+17, esc(formatTick(roundTo(float64(k)*xStep, xd))))
	}
}

// series 逐个系列作图并写图例：柱状图里的虚线系列是横跨类别的参考标记，其余是柱；
// 折线图里每个系列一条（缺失值处断开的）折线加数据点。折线图中的虚线参考系列与同色实线
// 共用图例，最后统一注明 "daily baseline"，图例条目数因此减半。
func (pl *plot) series() {
	b, c := &pl.b, pl.c
	nb := 0
	hasRef := false
	for _, s := range c.Series {
		if !s.Dashed || !c.Bars {
			nb++
		}
		if s.Dashed && !c.Bars {
			hasRef = true
		}
	}
	barW := pl.band * 0.8 / float64(max(nb, 1))
	bi := 0
	legendRow := 0
	for si, s := range c.Series {
		color := s.Color
		if color == "" {
			color = palette[si%len(palette)]
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="5 4"`
		}
		switch {
		case c.Bars && s.Dashed:
			pl.marks(s, color, dash)
		case c.Bars:
			pl.bars(s, color, barW, bi)
			bi++
		default:
			pl.line(s, color, dash)
		}
		if s.Dashed && !c.Bars {
			continue
		}
		ly := marginTop + 8 + 18*legendRow
		legendRow++
		lx := chartW - marginRight + 14
		if c.Bars && !s.Dashed {
			fmt.Fprintf(b, `<rect x="%d" y="%d" width="14" height="10" fill="%s"/>`, lx, ly-9, color)
		} else {
			fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`, lx, ly-4, lx+14, ly-4, color, dash)
		}
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="11" class="legend">%s</text>`, lx+20, ly, esc(s.Name))
	}
	if hasRef {
		ly := marginTop + 8 + 18*legendRow
		lx := chartW - marginRight + 14
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#666" stroke-width="2" stroke-dasharray="5 4"/>`, lx, ly-4, lx+14, ly-4)
		fmt.Fprintf(b, `<circle cx="%d" cy="%d" r="4" fill="#fff" stroke="#666" stroke-width="2"/>`, lx+7, ly-4)
		// 图例区只有约 150 px 宽：说明分两行写，不被截断。
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="11" class="legend">daily baseline<tspan x="%d" dy="13">(dashed, hollow)</tspan></text>`, lx+20, ly, lx+20)
	}
}

// usable 报告第 i 个值能否画出（在横轴范围内且有限）。
func (pl *plot) usable(i int, v float64) bool {
	return i < pl.n && !math.IsNaN(v) && !math.IsInf(v, 0)
}

// marks 把柱状图中的参考系列（阈值、基线）画成横跨该类别的虚线标记。
func (pl *plot) marks(s Series, color, dash string) {
	for i, v := range s.Values {
		if !pl.usable(i, v) {
			continue
		}
		fmt.Fprintf(&pl.b, `<line class="mark" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s><title>%s @ %s: %s</title></line>`,
			pl.x(i)-pl.band*0.45, pl.y(v), pl.x(i)+pl.band*0.45, pl.y(v), color, dash, esc(s.Name), esc(pl.label(i)), esc(formatValue(v)))
	}
}

// bars 画第 bi 个柱系列（每个类别里并排的第 bi 根柱，宽 barW）。
func (pl *plot) bars(s Series, color string, barW float64, bi int) {
	for i, v := range s.Values {
		if !pl.usable(i, v) {
			continue
		}
		x0 := pl.x(i) - pl.band*0.4 + barW*float64(bi)
		fmt.Fprintf(&pl.b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s @ %s: %s</title></rect>`,
			x0, pl.y(v), math.Max(barW-1, 1), float64(marginTop)+pl.ph-pl.y(v), color, esc(s.Name), esc(pl.label(i)), esc(formatValue(v)))
	}
}

// line 画一条折线（缺失值处断开，分多段 path；Step 时画成阶梯）与它的数据点。数值轴上点很多
// （时间线）时只画线不画点，SVG 保持小巧。
func (pl *plot) line(s Series, color, dash string) {
	var d strings.Builder
	pen := false
	for i, v := range s.Values {
		if !pl.usable(i, v) {
			pen = false
			continue
		}
		switch {
		case !pen:
			fmt.Fprintf(&d, "M%.1f %.1f ", pl.x(i), pl.y(v))
		case s.Step:
			fmt.Fprintf(&d, "H%.1f V%.1f ", pl.x(i), pl.y(v))
		default:
			fmt.Fprintf(&d, "L%.1f %.1f ", pl.x(i), pl.y(v))
		}
		pen = true
	}
	if d.Len() > 0 {
		fmt.Fprintf(&pl.b, `<path class="line" d="%s" fill="none" stroke="%s" stroke-width="2"%s/>`, strings.TrimSpace(d.String()), color, dash)
	}
	if len(pl.c.X) > 0 && pl.n > maxPoints {
		return
	}
	for i, v := range s.Values {
		if !pl.usable(i, v) {
			continue
		}
		if s.Dashed {
			// 基线的点是空心的：只有一个并发时折线只剩一个点，虚线看不出来，空心点仍与当前的实心点不同。
			fmt.Fprintf(&pl.b, `<circle class="point baseline" cx="%.1f" cy="%.1f" r="4" fill="#fff" stroke="%s" stroke-width="2"><title>%s @ %s: %s</title></circle>`,
				pl.x(i), pl.y(v), color, esc(s.Name), esc(pl.label(i)), esc(formatValue(v)))
			continue
		}
		fmt.Fprintf(&pl.b, `<circle class="point" cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s @ %s: %s</title></circle>`,
			pl.x(i), pl.y(v), color, esc(s.Name), esc(pl.label(i)), esc(formatValue(v)))
	}
}

// roundTo 把 v 四舍五入到 decimals 位小数。
func roundTo(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

// formatValue 以 4 位有效数字格式化数据点的值（用于悬停提示）。
func formatValue(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

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

// render 生成 SVG 文本（SVG 的实现）。
func (c Chart) render() string {
	var b strings.Builder
	pw := float64(chartW - marginLeft - marginRight)
	ph := float64(chartH - marginTop - marginBottom)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		chartW, chartH, chartW, chartH, esc(c.Title))
	fmt.Fprintf(&b, `<title>%s</title>`, esc(c.Title))
	fmt.Fprintf(&b, `<text x="%d" y="20" class="chart-title" font-size="14" font-weight="bold">%s</text>`, marginLeft, esc(c.Title))

	maxV := 0.0
	hasData := false
	for _, s := range c.Series {
		for _, v := range s.Values {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				hasData = true
				maxV = math.Max(maxV, v)
			}
		}
	}
	step := niceStep(maxV, 5)
	top := math.Ceil(maxV/step) * step
	if top <= 0 {
		top = step
	}
	y := func(v float64) float64 { return float64(marginTop) + ph - v/top*ph }

	// Y 轴刻度与网格线。刻度用 i×step 计算并按步长的小数位取整，
	// 避免累加产生 0.30000000000000004 这样的标签。
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	for i := 0; float64(i)*step <= top+step/2; i++ {
		t := float64(i) * step
		yy := y(t)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e3e3e3"/>`, marginLeft, yy, float64(marginLeft)+pw, yy)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="11" text-anchor="end" class="tick">%s</text>`, marginLeft-6, yy+4, esc(formatTick(roundTo(t, decimals))))
	}
	// 坐标轴。
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%.1f" stroke="#333"/>`, marginLeft, marginTop, marginLeft, float64(marginTop)+ph)
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`, marginLeft, float64(marginTop)+ph, float64(marginLeft)+pw, float64(marginTop)+ph)

	n := len(c.Categories)
	band := pw / float64(max(n, 1))
	x := func(i int) float64 { return float64(marginLeft) + band*(float64(i)+0.5) }
	label := func(i int) string { return c.Categories[i] }
	if len(c.X) > 0 {
		// 数值 X 轴：0 到最大值，刻度取"好看"的步长。
		n = len(c.X)
		xMax := 0.0
		for _, v := range c.X {
			xMax = math.Max(xMax, v)
		}
		xStep := niceStep(xMax, 8)
		xTop := math.Max(math.Ceil(xMax/xStep)*xStep, xStep)
		x = func(i int) float64 { return float64(marginLeft) + c.X[i]/xTop*pw }
		label = func(i int) string { return formatValue(c.X[i]) }
		xd := max(0, int(-math.Floor(math.Log10(xStep))))
		for k := 0; float64(k)*xStep <= xTop+xStep/2; k++ {
			xx := float64(marginLeft) + float64(k)*xStep/xTop*pw
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`, xx, float64(marginTop)+ph, xx, float64(marginTop)+ph+4)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle" class="tick">%s</text>`, xx, float64(marginTop)+ph+17, esc(formatTick(roundTo(float64(k)*xStep, xd))))
		}
	}
	for i, cat := range c.Categories {
		if len(c.X) > 0 {
			break
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`, x(i), float64(marginTop)+ph, x(i), float64(marginTop)+ph+4)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle" class="tick">%s</text>`, x(i), float64(marginTop)+ph+17, esc(cat))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="12" text-anchor="middle">%s</text>`, float64(marginLeft)+pw/2, chartH-8, esc(c.XLabel))
	fmt.Fprintf(&b, `<text x="14" y="%.1f" font-size="12" text-anchor="middle" transform="rotate(-90 14 %.1f)">%s</text>`, float64(marginTop)+ph/2, float64(marginTop)+ph/2, esc(c.YLabel))

	if !hasData {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="13" text-anchor="middle" fill="#888">no data</text>`, float64(marginLeft)+pw/2, float64(marginTop)+ph/2)
	}

	nb := 0
	for _, s := range c.Series {
		if !s.Dashed || !c.Bars {
			nb++
		}
	}
	barW := band * 0.8 / float64(max(nb, 1))
	bi := 0
	legendRow := 0
	hasRef := false
	for _, s := range c.Series {
		if s.Dashed && !c.Bars {
			hasRef = true
		}
	}
	for si, s := range c.Series {
		color := s.Color
		if color == "" {
			color = palette[si%len(palette)]
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="5 4"`
		}
		if c.Bars && s.Dashed {
			// 柱状图中的参考系列（阈值、基线）画成横跨该类别的虚线标记。
			for i, v := range s.Values {
				if i >= n || math.IsNaN(v) || math.IsInf(v, 0) {
					continue
				}
				fmt.Fprintf(&b, `<line class="mark" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s><title>%s @ %s: %s</title></line>`,
					x(i)-band*0.45, y(v), x(i)+band*0.45, y(v), color, dash, esc(s.Name), esc(label(i)), esc(formatValue(v)))
			}
		} else if c.Bars {
			for i, v := range s.Values {
				if i >= n || math.IsNaN(v) || math.IsInf(v, 0) {
					continue
				}
				x0 := x(i) - band*0.4 + barW*float64(bi)
				fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s @ %s: %s</title></rect>`,
					x0, y(v), math.Max(barW-1, 1), float64(marginTop)+ph-y(v), color, esc(s.Name), esc(label(i)), esc(formatValue(v)))
			}
			bi++
		} else {
			// 折线：缺失值处断开，分多段 path。
			var d strings.Builder
			pen := false
			for i, v := range s.Values {
				if i >= n || math.IsNaN(v) || math.IsInf(v, 0) {
					pen = false
					continue
				}
				switch {
				case !pen:
					fmt.Fprintf(&d, "M%.1f %.1f ", x(i), y(v))
				case s.Step:
					fmt.Fprintf(&d, "H%.1f V%.1f ", x(i), y(v))
				default:
					fmt.Fprintf(&d, "L%.1f %.1f ", x(i), y(v))
				}
				pen = true
			}
			if d.Len() > 0 {
				fmt.Fprintf(&b, `<path class="line" d="%s" fill="none" stroke="%s" stroke-width="2"%s/>`, strings.TrimSpace(d.String()), color, dash)
			}
			for i, v := range s.Values {
				// 数值轴上点很多（时间线），只画线不画点，SVG 保持小巧。
				if i >= n || math.IsNaN(v) || math.IsInf(v, 0) || (len(c.X) > 0 && n > maxPoints) {
					continue
				}
				fmt.Fprintf(&b, `<circle class="point" cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s @ %s: %s</title></circle>`,
					x(i), y(v), color, esc(s.Name), esc(label(i)), esc(formatValue(v)))
			}
		}
		// 图例。折线图中的虚线参考系列与同色实线共用图例，最后统一注明
		// "daily baseline"，图例条目数因此减半。
		if s.Dashed && !c.Bars {
			continue
		}
		ly := marginTop + 8 + 18*legendRow
		legendRow++
		lx := chartW - marginRight + 14
		if c.Bars && !s.Dashed {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="10" fill="%s"/>`, lx, ly-9, color)
		} else {
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`, lx, ly-4, lx+14, ly-4, color, dash)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" class="legend">%s</text>`, lx+20, ly, esc(s.Name))
	}
	if hasRef {
		ly := marginTop + 8 + 18*legendRow
		lx := chartW - marginRight + 14
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#666" stroke-width="2" stroke-dasharray="5 4"/>`, lx, ly-4, lx+14, ly-4)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" class="legend">daily baseline</text>`, lx+20, ly)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// roundTo 把 v 四舍五入到 decimals 位小数。
func roundTo(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

// formatValue 以 4 位有效数字格式化数据点的值（用于悬停提示）。
func formatValue(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

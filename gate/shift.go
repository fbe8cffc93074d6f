package gate

import (
	"fmt"
	"math"
)

// 小样本下的判定：整个分布的位移（shift）。
//
// PR 档每个组合只有 16–64 个请求，P99 需要 ≥100 个样本，比较的其实是两次运行的极值
// （docs/report.md 的噪声表：同一分布的两次运行，spec 规则在 n=16 时 36.5% 误报）。
// on_insufficient: shift 在样本撑不起所要的分位时，改用样本撑得起的统计量做判定：
// 对数时延的均值之差，即几何均值之比——整个分布的乘性位移。对纯粹的乘性变化（prefill
// 或解码整体变慢 30%），它与 P99 之比是同一个数，但它用上了全部样本而不只是最大的一两个，
// 标准误是 σ/√n 量级。区间用 Welch t（两侧方差不等，Satterthwaite 自由度），小样本下
// 比自助法更不易低估区间宽度。
//
// 判定：点估计超过阈值、且区间整体在 0 之上（显著变慢）时失败；点估计超过阈值但不显著时
// warn（列出、不让运行失败，而不是悄悄通过）；否则通过。区间的置信水平是
// Thresholds.ShiftConfidence（默认 0.998）：PR 档一次运行有 24 个时延门禁（12 个组合 ×
// TTFT/E2E），按 Bonferroni 整次运行的误报率约 5%（docs/report.md 有实测）。需求的 P99
// 数字照常写在 Current/Baseline/DeltaPct 与原因里，只是不由它做判定。

// DefaultShiftConfidence 是 shift 判定的默认置信水平。
const DefaultShiftConfidence = 0.998

// StatisticShift 是 Gate.Statistic 的取值之一：由几何均值之比（整个分布的位移）判定。
const StatisticShift = "geomean_shift"

// shiftResult 是对数时延均值之差的估计与区间，已换算成比值（1 表示没有变化）。
type shiftResult struct {
	point, lo, hi float64
	df            float64
	nCur, nBase   int
}

// logShift 计算 exp(mean(log cur) − mean(log base)) 及其 Welch t 区间；任一侧少于 2 个
// 正值样本时 ok 为 false。
func logShift(cur, base []float64, level float64) (shiftResult, bool) {
	mc, vc, nc := logMoments(cur)
	mb, vb, nb := logMoments(base)
	if nc < 2 || nb < 2 {
		return shiftResult{}, false
	}
	sc, sb := vc/float64(nc), vb/float64(nb)
	se := math.Sqrt(sc + sb)
	d := mc - mb
	df := float64(nc + nb - 2)
	if se > 0 {
		df = (sc + sb) * (sc + sb) / (sc*sc/float64(nc-1) + sb*sb/float64(nb-1))
	}
	t := studentTQuantile(1-(1-level)/2, df)
	return shiftResult{point: math.Exp(d), lo: math.Exp(d - t*se), hi: math.Exp(d + t*se), df: df, nCur: nc, nBase: nb}, true
}

// logMoments 返回正值样本取对数后的均值、无偏方差与个数（非正值忽略）。
func logMoments(xs []float64) (mean, variance float64, n int) {
	for _, x := range xs {
		if x > 0 {
			n++
			mean += math.Log(x)
		}
	}
	if n == 0 {
		return 0, 0, 0
	}
	mean /= float64(n)
	for _, x := range xs {
		if x > 0 {
			d := math.Log(x) - mean
			variance += d * d
		}
	}
	if n > 1 {
		variance /= float64(n - 1)
	}
	return mean, variance, n
}

// studentTQuantile 返回自由度 df 的 t 分布的 p 分位（p ∈ (0.5, 1)），对 CDF 二分求解。
func studentTQuantile(p, df float64) float64 {
	lo, hi := 0.0, 1.0
	for studentTCDF(hi, df) < p {
		hi *= 2
		if hi > 1e6 {
			return hi
		}
	}
	for range 100 {
		mid := (lo + hi) / 2
		if studentTCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// studentTCDF 是 t 分布的累积分布函数：t ≥ 0 时为 1 − I_x(df/2, 1/2)/2，x = df/(df+t²)。
func studentTCDF(t, df float64) float64 {
	x := df / (df + t*t)
	tail := 0.5 * regIncBeta(df/2, 0.5, x)
	if t >= 0 {
		return 1 - tail
	}
	return tail
}

// regIncBeta 是正则化不完全 Beta 函数 I_x(a, b)（Lentz 连分式，Numerical Recipes 6.4）。
func regIncBeta(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log(1-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

// betaCF 计算不完全 Beta 函数的连分式部分。
func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1-qab*x/qap
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		aa := fm * (b - fm) * x / ((qam + 2*fm) * (a + 2*fm))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		aa = -(a + fm) * (qab + fm) * x / ((a + 2*fm) * (qap + 2*fm))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 3e-16 {
			break
		}
	}
	return h
}

// shiftLevel 返回 shift 判定的置信水平（Thresholds.ShiftConfidence，0 时取默认）。
func shiftLevel(th Thresholds) float64 {
	if th.ShiftConfidence == 0 {
		return DefaultShiftConfidence
	}
	return th.ShiftConfidence
}

// shiftFails 报告整个分布的位移是否超过阈值且显著（两侧都有逐请求样本时），并返回算得的位移，
// 供 judgeShift 直接使用（不再算一遍）。
func shiftFails(c perfCmp, th Thresholds) (shiftResult, bool) {
	r, ok := logShift(c.curS, c.baseS, shiftLevel(th))
	if !ok {
		return r, false
	}
	if c.higherBad {
		return r, r.point-1 > c.limit+eps && r.lo > 1
	}
	return r, 1-r.point > c.limit+eps && r.hi < 1
}

// judgeShift 用整个分布的位移判定一项时延门禁（样本撑不起所要分位时；见本文件开头）。
// 返回 false 表示两侧没有足够的逐请求样本，调用方按 warn 处理。
// r 为 nil 时在这里计算位移。
func judgeShift(g *Gate, c perfCmp, th Thresholds, need, have int64, specLabel string, r *shiftResult) bool {
	level := shiftLevel(th)
	if r == nil {
		res, ok := logShift(c.curS, c.baseS, level)
		if !ok {
			return false
		}
		r = &res
	}
	g.Statistic = StatisticShift
	g.Interval = &Interval{LoPct: (r.lo - 1) * 100, HiPct: (r.hi - 1) * 100, Level: level}
	g.Shift = &Shift{ChangePct: (r.point - 1) * 100, LoPct: g.Interval.LoPct, HiPct: g.Interval.HiPct, Level: level,
		DF: math.Round(r.df*10) / 10, Current: r.nCur, Baseline: r.nBase}
	change := r.point - 1
	beyond := change > c.limit+eps
	significant := r.lo > 1
	if !c.higherBad { // 目前只有时延门禁走这里；保留对称写法
		beyond, significant = change < -c.limit-eps, r.hi < 1
	}
	because := fmt.Sprintf("because %s needs ≥%d samples and has %d", QuantileName(c.q), need, have)
	if have >= need {
		because = fmt.Sprintf("because the whole distribution moved significantly (%s is supported by %d samples, but its interval is wide)", QuantileName(c.q), have)
	}
	why := fmt.Sprintf("decided by the shift of the whole distribution (geometric mean), %s: %s (%.1f%% interval %s…%s, Welch t on log latency, n %d/%d); spec %s %s",
		because, signedPct1(change*100), level*100, signedPct1(g.Interval.LoPct), signedPct1(g.Interval.HiPct), r.nCur, r.nBase, specLabel, signedPct1(*g.DeltaPct))
	switch {
	case beyond && significant:
		g.Verdict, g.Reason = VerdictFail, fmt.Sprintf("%s regressed (limit +%.0f%%): %s", c.metric, c.limit*100, why)
	case beyond:
		g.Verdict, g.Reason = VerdictWarn, fmt.Sprintf("%s inconclusive: beyond the limit +%.0f%% but not significant at this sample size: %s", c.metric, c.limit*100, why)
	default:
		g.Verdict, g.Reason = VerdictPass, fmt.Sprintf("%s within the limit +%.0f%%: %s", c.metric, c.limit*100, why)
	}
	return true
}

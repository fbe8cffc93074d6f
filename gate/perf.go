package gate

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/explain"
)

// VerdictWarn 表示门禁没有通过判定但不让运行失败（例如样本不足以支撑分位数且
// 配置为 on_insufficient: warn）。ExitCode 只把 fail 算作失败。
const VerdictWarn Verdict = "warn"

// 性能门禁的判定模式（Thresholds.Mode / PerfGateOptions.Mode）。
const (
	// ModeSpec 是需求的规则：点估计的变化超过阈值即失败（默认）。
	ModeSpec = "spec"
	// ModeSignificant 只在整个置信区间都越过阈值时失败：噪声造成的越界不再报警。
	ModeSignificant = "significant"
)

// 样本不足以支撑分位数时的处理（Thresholds.OnInsufficient / PerfGateOptions.OnInsufficient）。
const (
	// InsufficientSpec 仍按规则判定，但门禁标明 insufficient_samples（默认，保持需求行为）。
	InsufficientSpec = "spec"
	// InsufficientFail 让门禁失败：要求样本量本身达标。
	InsufficientFail = "fail"
	// InsufficientWarn 只给出 warn：数值照常报告，不让运行失败。
	InsufficientWarn = "warn"
	// InsufficientLowerQuantile 改用样本能支撑的最高分位（P95、P90、P75）比较。
	InsufficientLowerQuantile = "lower_quantile"
	// InsufficientShift 改由整个分布的位移（几何均值之比，Welch t 区间）判定，需求的分位数
	// 照常报告（shift.go；出厂配置用它，见 docs/report.md）。
	InsufficientShift = "shift"
)

// 门禁的样本支撑（Gate.Support）。
const (
	SupportOK           = "ok"
	SupportInsufficient = "insufficient_samples"
)

// minRateSamples 是 QPS（完成速率，均值类统计量）所需的最少成功请求数。
const minRateSamples = 10

// lowerQuantiles 是 lower_quantile 依次尝试的分位点：都是汇总行与 Prometheus
// 基线里已有的分位，所以没有逐请求样本的基线也能比较。
var lowerQuantiles = []float64{0.95, 0.90, 0.75}

// neededSamples 返回支撑 q 分位所需的最少样本数 ⌈1/(1−q)⌉：样本少于它时，
// 分位数就是（或插值自）最大值，比较的其实是两次运行的极值。
func neededSamples(q float64) int64 {
	if q <= 0 {
		return minRateSamples
	}
	return int64(math.Ceil(1/(1-q) - 1e-9))
}

// aggregateLatency 对多轮的 Latency 按字段取中位数（与 Aggregate 的 P99 口径一致），
// Count 也取中位数：每轮的分位数只由该轮自己的样本算出。
func aggregateLatency(rows []PerfRow, get func(*PerfRow) Latency) Latency {
	var ls []Latency
	for i := range rows {
		if l := get(&rows[i]); l.Valid() {
			ls = append(ls, l)
		}
	}
	if len(ls) == 0 {
		return Latency{}
	}
	med := func(f func(Latency) float64) float64 {
		xs := make([]float64, len(ls))
		for i, l := range ls {
			xs[i] = f(l)
		}
		return median(xs)
	}
	d := func(f func(Latency) time.Duration) time.Duration {
		return time.Duration(med(func(l Latency) float64 { return float64(f(l)) }))
	}
	return Latency{
		Count: int64(med(func(l Latency) float64 { return float64(l.Count) })),
		P50:   d(func(l Latency) time.Duration { return l.P50 }), P75: d(func(l Latency) time.Duration { return l.P75 }),
		P90: d(func(l Latency) time.Duration { return l.P90 }), P95: d(func(l Latency) time.Duration { return l.P95 }),
		P99: d(func(l Latency) time.Duration { return l.P99 }),
		Min: d(func(l Latency) time.Duration { return l.Min }), Max: d(func(l Latency) time.Duration { return l.Max }),
		Avg: d(func(l Latency) time.Duration { return l.Avg }),
	}
}

// medianSucceeded 返回各轮成功请求数的中位数。
func medianSucceeded(rows []PerfRow) int64 {
	if len(rows) == 0 {
		return 0
	}
	xs := make([]float64, len(rows))
	for i, r := range rows {
		xs[i] = float64(r.Succeeded)
	}
	return int64(median(xs))
}

// perfCmp 是一项基线比较的全部输入。
type perfCmp struct {
	metric    string
	q         float64 // 时延门禁的分位点；QPS 为 0
	cur, base float64 // 需求口径的当前值与基线值
	curLat    Latency
	baseLat   Latency
	curN      int64
	baseN     int64
	curS      []float64 // 当前运行的逐请求样本（时延：秒；QPS：完成间隔秒），可为空
	baseS     []float64
	limit     float64 // 允许的相对变化（正数）
	higherBad bool
	valid     bool
}

// samplesFor 取出样本集中与指标对应的切片（秒）。
func samplesFor(s *Samples, metric string) []float64 {
	if s == nil {
		return nil
	}
	switch metric {
	case MetricTTFTP99:
		return seconds(s.TTFTMicros)
	case MetricE2EP99:
		return seconds(s.E2EMicros)
	case MetricQPS:
		return seconds(s.GapMicros)
	}
	return nil
}

// QuantileName 把分位点写成 P99 这样的名字（q ≤ 0 为 "rate"），门禁原因与 JUnit 行共用。
func QuantileName(q float64) string {
	if q <= 0 {
		return "rate"
	}
	return fmt.Sprintf("P%g", math.Round(q*1000)/10)
}

// judge 在有基线时判定一项比较：处理样本不足、计算置信区间、按模式给出结论，
// 并把所有证据（分位点、样本量、区间、模式）写进 g。
func judge(g *Gate, c perfCmp, th Thresholds) {
	mode, onIns := th.gateOptions(c.metric)
	g.Mode = mode
	q := c.q
	need := neededSamples(q)
	var notes []string
	// 样本量未知（调用方自己构造的基线没有 Count）时不判断支撑，保持需求行为。
	known := c.curN > 0 && c.baseN > 0
	if known {
		g.Samples = &SampleSizes{Current: c.curN, Baseline: c.baseN, Needed: need}
		g.Support = SupportOK
	}
	insufficient := known && (c.curN < need || c.baseN < need)
	if insufficient {
		g.Support = SupportInsufficient
		have := min(c.curN, c.baseN)
		if onIns == InsufficientLowerQuantile && q > 0 {
			lowered := false
			for _, lq := range lowerQuantiles {
				lc, lb := c.curLat.at(lq), c.baseLat.at(lq)
				if have >= neededSamples(lq) && lc > 0 && lb > 0 {
					notes = append(notes, fmt.Sprintf("%s needs ≥%d samples, have %d: compared %s instead", QuantileName(q), need, have, QuantileName(lq)))
					q, c.cur, c.base = lq, lc.Seconds(), lb.Seconds()
					need = neededSamples(lq)
					g.Samples.Needed, g.Support, lowered = need, SupportOK, true
					insufficient = false
					break
				}
			}
			if !lowered {
				onIns = InsufficientWarn
				notes = append(notes, fmt.Sprintf("no quantile supported by %d samples", have))
			}
		} else if onIns != InsufficientShift || q == 0 {
			notes = append(notes, fmt.Sprintf("%s needs ≥%d samples, have %d", QuantileName(q), need, have))
		}
	}
	if c.q > 0 {
		g.Quantile = q
	}
	g.Current = c.cur
	b := c.base
	g.Baseline = &b
	d := (c.cur - c.base) / c.base
	dp := d * 100
	g.DeltaPct = &dp
	if !insufficient && onIns == InsufficientShift && q > 0 && c.valid {
		// 分位数有样本支撑时仍由它判定；但整个分布显著地移过了阈值（P99 的区间在几百个样本下
		// 很宽，这样的位移常常判不出来）时，以位移判定失败，原因写明是哪个统计量。
		if r, fails := shiftFails(c, th); fails {
			judgeShift(g, c, th, need, min(c.curN, c.baseN), QuantileName(q), &r)
			return
		}
	}
	if insufficient && onIns == InsufficientShift && q > 0 {
		if c.valid && judgeShift(g, c, th, need, min(c.curN, c.baseN), QuantileName(q), nil) {
			return
		}
		onIns = InsufficientWarn
		notes = append(notes, fmt.Sprintf("%s needs ≥%d samples, have %d, and the shift test needs per-request samples on both sides", QuantileName(q), need, min(c.curN, c.baseN)))
	}
	g.Statistic = "rate"
	if q > 0 {
		g.Statistic = strings.ToLower(QuantileName(q))
	}

	st := statistic{quantile: q}
	if c.metric == MetricQPS {
		st = statistic{}
	}
	level, res := th.Confidence, th.Resamples
	if level == 0 {
		level = DefaultConfidence
	}
	if res == 0 {
		res = DefaultResamples
	}
	if ri, ok := bootstrapRatio(c.curS, c.baseS, st, level, res, uint64(th.Seed), g.Scenario+"/"+g.Name); ok {
		pp := (ri.Point - 1) * 100
		g.Interval = &Interval{LoPct: (ri.Lo - 1) * 100, HiPct: (ri.Hi - 1) * 100, Level: level, Resamples: res, Seed: uint64(th.Seed), PointPct: &pp}
	} else if mode == ModeSignificant {
		notes = append(notes, "no per-request samples on both sides: judged by the P99 rule (docs/requirements.md §5)")
	}

	over := func(x float64) bool { // x 是相对变化（比例）
		if c.higherBad {
			return x > c.limit+eps
		}
		return x < -c.limit-eps
	}
	var fail bool
	how := ""
	switch {
	case mode == ModeSignificant && g.Interval != nil:
		edge := g.Interval.LoPct / 100
		if !c.higherBad {
			edge = g.Interval.HiPct / 100
		}
		fail, how = over(edge), intervalNote(*g, level)
	default:
		fail = over(d)
		if g.Interval != nil {
			how = intervalNote(*g, level)
		}
	}
	label := c.metric
	if q != c.q {
		label = strings.Replace(c.metric, "p99", strings.ToLower(QuantileName(q)), 1)
	}
	switch {
	case !c.valid:
		g.Verdict, g.Reason = VerdictFail, c.metric+" not measurable in this run (no successful request)"
	case insufficient && onIns == InsufficientFail:
		g.Verdict, g.Reason = VerdictFail, fmt.Sprintf("insufficient samples (on_insufficient: fail): %s %s vs baseline%s", label, signedPct1(dp), how)
	case fail && insufficient && onIns == InsufficientWarn:
		g.Verdict, g.Reason = VerdictWarn, fmt.Sprintf("%s %s vs baseline beyond the limit%s", label, signedPct1(dp), how)
	case fail && c.higherBad:
		g.Verdict, g.Reason = VerdictFail, fmt.Sprintf("%s regressed %s vs baseline (limit +%.0f%%%s)%s", label, signedPct1(dp), c.limit*100, modeNote(mode), how)
	case fail:
		g.Verdict, g.Reason = VerdictFail, fmt.Sprintf("%s dropped %.1f%% vs baseline (limit −%.0f%%%s)%s", label, -dp, c.limit*100, modeNote(mode), how)
	case insufficient && onIns == InsufficientWarn:
		g.Verdict, g.Reason = VerdictWarn, fmt.Sprintf("%s %s vs baseline%s", label, signedPct1(dp), how)
	case over(d):
		g.Verdict, g.Reason = VerdictPass, fmt.Sprintf("%s %s vs baseline is within noise%s", label, signedPct1(dp), how)
	default:
		g.Verdict, g.Reason = VerdictPass, fmt.Sprintf("%s %s vs baseline%s", label, signedPct1(dp), how)
	}
	if len(notes) > 0 {
		g.Reason += "; " + strings.Join(notes, "; ")
	}
}

// intervalNote 是原因里的区间括注 " (95% interval +9.5%…+41.9%)"。门禁的变化不在区间里时（区间属于
// 合并样本的统计量，变化是各轮 P99 的中位数），括注写明区间是哪个量、点估计是多少：
// " (95% interval of the P99 of pooled samples, +25.3%: +9.5%…+41.9%)"。
func intervalNote(g Gate, level float64) string {
	iv := g.Interval
	if iv.PointPct != nil && g.DeltaPct != nil && outside(*g.DeltaPct, iv.LoPct, iv.HiPct) {
		return fmt.Sprintf(" (%.0f%% interval of the %s, %s: %s…%s)", level*100, intervalSubject(g), signedPct1(*iv.PointPct), signedPct1(iv.LoPct), signedPct1(iv.HiPct))
	}
	return fmt.Sprintf(" (%.0f%% interval %s…%s)", level*100, signedPct1(iv.LoPct), signedPct1(iv.HiPct))
}

// modeNote 在非默认模式时把模式写进原因。
func modeNote(mode string) string {
	if mode == ModeSpec {
		return ""
	}
	return ", mode " + mode
}

// Evidence 把门禁的置信区间与样本量格式化为报告文本（report 的 HTML 表格与 JUnit 共用），
// 没有的一项为 "—"。
func (g Gate) Evidence() (interval, samples string) {
	interval, samples = "—", "—"
	if g.Interval != nil {
		// 置信水平按实际精度写（99.8% 不写成 "@100%"）；负号用 U+2212，与报告其余的数字一致。
		interval = fmt.Sprintf("[%s, %s] @%s%%", signedPct1(g.Interval.LoPct), signedPct1(g.Interval.HiPct), strconv.FormatFloat(g.Interval.Level*100, 'f', -1, 64))
		switch {
		case g.Statistic == StatisticShift && g.Shift != nil:
			// 判定用的是整个分布的位移，不是 P99：区间前写明它是哪个量与它的点估计，旁边 P99 的变化
			// 就不会看起来落在“自己的”区间外。
			interval = "geomean shift " + signedPct1(g.Shift.ChangePct) + " " + interval
		case g.Interval.PointPct != nil && g.DeltaPct != nil && outside(*g.DeltaPct, g.Interval.LoPct, g.Interval.HiPct):
			// 门禁的变化（需求口径：各轮 P99 的中位数）不在区间里：区间属于全部轮次合并后的样本，
			// 写出它自己的点估计与统计量名，读者看到的每个数字都在它旁边的区间之内。
			interval = intervalSubject(g) + " " + signedPct1(*g.Interval.PointPct) + " " + interval
		}
	}
	if g.Samples != nil {
		samples = fmt.Sprintf("%d / %d", g.Samples.Current, g.Samples.Baseline)
		switch {
		case g.Quantile > 0 && g.Support == SupportInsufficient:
			samples += fmt.Sprintf(" (%s needs %d; too few samples)", QuantileName(g.Quantile), g.Samples.Needed)
		case g.Quantile > 0:
			samples += fmt.Sprintf(" (%s needs %d)", QuantileName(g.Quantile), g.Samples.Needed)
		case g.Support == SupportInsufficient:
			samples += " (too few samples)"
		}
	}
	return interval, samples
}

// outside 报告按一位小数写出的 x 是否落在同样写出的 [lo, hi] 之外（读者比较的是印出来的数字）。
func outside(x, lo, hi float64) bool {
	r := func(v float64) float64 { return math.Round(v*10) / 10 }
	return r(x) < r(lo) || r(x) > r(hi)
}

// intervalSubject 说明自助法区间属于哪个统计量："P99 of pooled samples"（时延门禁），
// QPS 门禁是 "completion rate of pooled samples"。
func intervalSubject(g Gate) string {
	if g.Quantile > 0 {
		return QuantileName(g.Quantile) + " of pooled samples"
	}
	return "completion rate of pooled samples"
}

// signedPct1 把百分比写成一位小数、带符号（正号 "+"，负号 U+2212 "−"）；四舍五入到 0 时写 "0.0%"，
// 不出现 "-0.0%"。
func signedPct1(p float64) string {
	s := strconv.FormatFloat(math.Abs(p), 'f', 1, 64)
	switch {
	case s == "0.0":
		return "0.0%"
	case p < 0:
		return "−" + s + "%"
	default:
		return "+" + s + "%"
	}
}

// eps 吸收浮点误差，使"恰好 10%"判为通过（需求是"超过 10% 失败"）。
const eps = 1e-9

// perfGates 计算一个组合的四项性能门禁。
func perfGates(ctx context.Context, k Key, cur Baseline, th Thresholds, src Source) []Gate {
	key := k
	prefix := "perf/" + k.String() + "/"
	mk := func(metric string, current float64) Gate {
		return Gate{Kind: KindPerformance, Scenario: k.Scenario, Name: prefix + metric, Metric: metric, Key: &key, Current: current}
	}
	// 失败率是绝对门禁，不依赖基线。
	fr := mk(MetricFailRate, cur.FailRate)
	fr.Limit = th.MaxFailRate
	switch {
	case th.MaxFailRate < 0:
		fr.Verdict, fr.Reason = VerdictSkipped, "fail-rate check disabled"
	case cur.FailRate > th.MaxFailRate+eps:
		fr.Verdict, fr.Reason = VerdictFail, fmt.Sprintf("fail rate %.2f%% above %.2f%%", cur.FailRate*100, th.MaxFailRate*100)
	default:
		fr.Verdict, fr.Reason = VerdictPass, fmt.Sprintf("fail rate %.2f%% ≤ %.2f%%", cur.FailRate*100, th.MaxFailRate*100)
	}

	var base Baseline
	found, why := false, "no daily baseline for this scenario and combination"
	if src != nil {
		b, ok, err := src.Lookup(ctx, k)
		switch {
		case err != nil:
			why = "baseline lookup failed: " + err.Error()
		case ok:
			base, found = b, true
		}
	}
	cmps := []perfCmp{
		{metric: MetricTTFTP99, q: 0.99, cur: cur.TTFTP99.Seconds(), base: base.TTFTP99.Seconds(), curLat: cur.TTFT, baseLat: base.TTFT,
			curN: cur.TTFT.Count, baseN: base.TTFT.Count, limit: th.TTFTP99Regression, higherBad: true, valid: cur.TTFTP99 > 0},
		{metric: MetricE2EP99, q: 0.99, cur: cur.E2EP99.Seconds(), base: base.E2EP99.Seconds(), curLat: cur.E2E, baseLat: base.E2E,
			curN: cur.E2E.Count, baseN: base.E2E.Count, limit: th.E2EP99Regression, higherBad: true, valid: cur.E2EP99 > 0},
		{metric: MetricQPS, cur: cur.QPS, base: base.QPS, curN: cur.Succeeded, baseN: base.Succeeded,
			limit: th.QPSDrop, valid: cur.QPS >= 0},
	}
	out := make([]Gate, 0, 4)
	for _, c := range cmps {
		g := mk(c.metric, c.cur)
		g.Limit = c.limit * 100
		if !c.higherBad {
			g.Limit = -g.Limit
		}
		switch {
		case c.limit < 0:
			g.Verdict, g.Reason = VerdictSkipped, c.metric+" check disabled"
		case !found || c.base <= 0:
			reason := why
			if found {
				reason = "baseline " + base.RunID + " has no " + c.metric
			}
			g.Verdict, g.Reason = VerdictNoBaseline, reason
			if th.RequireBaseline {
				g.Verdict = VerdictFail
			}
		default:
			g.BaselineRun = base.RunID
			c.curS, c.baseS = samplesFor(cur.Samples, c.metric), samplesFor(base.Samples, c.metric)
			judge(&g, c, th)
			if c.q > 0 {
				g.Distribution = distribution(c.curS, c.baseS)
			}
			if c.metric == MetricQPS && base.OutputThroughput > 0 {
				bt := base.OutputThroughput
				g.BaselineOutputThroughput = &bt
			}
		}
		if math.IsNaN(g.Current) {
			g.Current = -1
		}
		if found && (cur.Phases != nil || base.Phases != nil) && g.Verdict != VerdictSkipped {
			attach(&g, explain.Compare(base.Phases, cur.Phases, explain.Options{}))
		}
		out = append(out, g)
	}
	return append(out, fr)
}

// attach 把归因挂到性能门禁上：TTFT 门禁取 TTFT 的那一段，E2E 与 QPS 取 E2E 的；失败与告警的
// 门禁把它接在 Reason 后面（控制台、JUnit 与 HTML 的失败表都读 Reason）。
func attach(g *Gate, ex explain.Explanation) {
	g.Explain = &ex
	g.Attribution = ex.Summary(attributionMetric(g.Metric))
	if g.Verdict == VerdictFail || g.Verdict == VerdictWarn {
		g.Reason += "; where the time went: " + g.Attribution
	}
}

// attributionMetric 返回门禁指标对应的归因指标（explain.MetricTTFT 或 explain.MetricE2E）。
func attributionMetric(metric string) string {
	if metric == MetricTTFTP99 {
		return explain.MetricTTFT
	}
	return explain.MetricE2E
}

// distributionLevels 是 Distribution 取的分位点：从 P1 到 P99，中段稀、两端密，读者能分辨
// "尾部变慢"（只有 P95、P99 分开）与"整体平移"（每个分位都分开）。
var distributionLevels = []float64{0.01, 0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99}

// DistributionLevels 返回 Gate.Distribution 取的分位点（P1…P99，升序；返回的是副本）。
func DistributionLevels() []float64 { return append([]float64(nil), distributionLevels...) }

// Quantile 返回 xs 的 q 分位数（0 ≤ q ≤ 1），与门禁的自助区间同一规则：Hyndman–Fan 第 7 型，
// 即 numpy.percentile 的默认线性插值。xs 不必有序，也不会被修改；空切片返回 NaN。
func Quantile(xs []float64, q float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return quantileSorted(s, q)
}

// distribution 在两侧逐请求样本（秒）上取 DistributionLevels 的分位数；任一侧没有样本时为 nil。
func distribution(cur, base []float64) *Distribution {
	if len(cur) == 0 || len(base) == 0 {
		return nil
	}
	c := append([]float64(nil), cur...)
	b := append([]float64(nil), base...)
	sort.Float64s(c)
	sort.Float64s(b)
	d := &Distribution{Levels: DistributionLevels()}
	for _, q := range distributionLevels {
		d.Current = append(d.Current, quantileSorted(c, q))
		d.Baseline = append(d.Baseline, quantileSorted(b, q))
	}
	return d
}

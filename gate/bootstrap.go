package gate

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"
)

// 自助法（bootstrap）的默认参数：2000 次重抽样让 95% 百分位区间的端点
// 蒙特卡洛误差约为区间宽度的 1–2%，单个门禁的耗时在毫秒级。
const (
	DefaultConfidence = 0.95
	DefaultResamples  = 2000
)

// quantileSorted 返回已升序排列的 xs 的 q 分位数（Hyndman–Fan 第 7 型，即
// numpy.percentile 的默认线性插值），空切片返回 NaN。
func quantileSorted(xs []float64, q float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	h := float64(n-1) * q
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return xs[n-1]
	}
	return xs[lo] + (h-float64(lo))*(xs[lo+1]-xs[lo])
}

// statistic 描述门禁比较的统计量：分位数（时延）或"均值的倒数"（由相邻
// 完成间隔估计的 QPS）。
type statistic struct {
	quantile float64 // 0 表示 1/均值
}

// point 在原始样本（已升序）上计算统计量。
func (s statistic) point(sorted []float64) float64 {
	if s.quantile > 0 {
		return quantileSorted(sorted, s.quantile)
	}
	sum := 0.0
	for _, v := range sorted {
		sum += v
	}
	if sum <= 0 {
		return math.NaN()
	}
	return float64(len(sorted)) / sum
}

// resampler 对一组已排序样本做有放回重抽样并计算统计量。为避免每次重抽样都
// 排序（n log n），它只抽下标并计数，再按累计计数找出所需的次序统计量：
// 重抽样样本的第 k 小值就是计数累计首次超过 k 的那个原始值，整体 O(n)。
type resampler struct {
	sorted []float64
	counts []int32
	stat   statistic
}

// newResampler 复制并排序 xs。
func newResampler(xs []float64, st statistic) *resampler {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return &resampler{sorted: s, counts: make([]int32, len(s)), stat: st}
}

// draw 返回一次重抽样上的统计量。
func (r *resampler) draw(rng *rand.Rand) float64 {
	n := len(r.sorted)
	if r.stat.quantile == 0 {
		sum := 0.0
		for range n {
			sum += r.sorted[rng.IntN(n)]
		}
		if sum <= 0 {
			return math.NaN()
		}
		return float64(n) / sum
	}
	clear(r.counts)
	for range n {
		r.counts[rng.IntN(n)]++
	}
	h := float64(n-1) * r.stat.quantile
	k := int(math.Floor(h))
	frac := h - float64(k)
	// 找第 k 与第 k+1 小（0 起）的重抽样值。
	kh := min(k+1, n-1)
	lo, hi := math.NaN(), math.NaN()
	cum := 0
	for i, c := range r.counts {
		if c == 0 {
			continue
		}
		cum += int(c)
		if math.IsNaN(lo) && cum > k {
			lo = r.sorted[i]
		}
		if cum > kh {
			hi = r.sorted[i]
			break
		}
	}
	return lo + frac*(hi-lo)
}

// RatioInterval 是"当前 / 基线"统计量之比的自助法百分位置信区间。
type RatioInterval struct {
	// Lo、Hi 是比值区间的两端（1.0 表示没有变化）。
	Lo, Hi float64
	// Point 是在原始样本上算得的比值。
	Point float64
	// Level 是置信水平（如 0.95），Resamples 是重抽样次数，Seed 是随机种子，
	// 三者加上样本本身完全决定区间：同样的输入永远得到同样的区间。
	Level     float64
	Resamples int
	Seed      uint64
}

// bootstrapRatio 计算 stat(cur)/stat(base) 的百分位自助区间：两组样本各自独立
// 有放回重抽样（两次运行相互独立），每轮取比值，最后取 (1−level)/2 与
// (1+level)/2 分位。随机数由 seed 与 name 决定，不同门禁互不相关且可复现。
// 任一组为空时 ok 为 false。
func bootstrapRatio(cur, base []float64, st statistic, level float64, resamples int, seed uint64, name string) (RatioInterval, bool) {
	if len(cur) == 0 || len(base) == 0 {
		return RatioInterval{}, false
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	rc, rb := newResampler(cur, st), newResampler(base, st)
	ratios := make([]float64, 0, resamples)
	for range resamples {
		c, b := rc.draw(rng), rb.draw(rng)
		if b > 0 && !math.IsNaN(c) {
			ratios = append(ratios, c/b)
		}
	}
	pc, pb := st.point(rc.sorted), st.point(rb.sorted)
	if len(ratios) == 0 || !(pb > 0) {
		return RatioInterval{}, false
	}
	sort.Float64s(ratios)
	a := (1 - level) / 2
	return RatioInterval{Lo: quantileSorted(ratios, a), Hi: quantileSorted(ratios, 1-a), Point: pc / pb,
		Level: level, Resamples: resamples, Seed: seed}, true
}

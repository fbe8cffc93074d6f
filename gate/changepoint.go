package gate

import (
	"math"
	"math/rand/v2"
	"sort"
)

// 变点检测（E-divisive means，Matteson & James 2014，arXiv:1306.4933；MongoDB 的
// signal-processing-algorithms 与 Hunter/Otava 用的同一族方法）：
//
//   - 对一段序列 Z[s:e) 的每个切分点 τ，X = Z[s:τ)、Y = Z[τ:e)，能量散度
//     Q̂(τ) = m·n/(m+n) · ( 2/(mn)·Σ|x−y| − 1/C(m,2)·Σ|x−x'| − 1/C(n,2)·Σ|y−y'| )，
//     它对分布的任何差异（均值、方差、形状）都敏感，且不假设正态；
//   - 在所有段中取 Q̂ 最大的切分，做置换检验：把每段内部随机打乱 R 次，p =
//     (1 + #{max Q̂_perm ≥ Q̂_obs})/(R+1)；p ≤ α 时接受这个变点并继续在两侧递归，
//     否则停止。
//
// 每次扫描用增量求和，一段的全部 τ 只需 O(n²)（n 是窗口内的每日结果数，默认 30），
// 置换检验也因此可以在报告生成时完成。

// cpResult 是检测到的一个变点：idx 是变化后第一个点的下标。
type cpResult struct {
	idx    int
	pValue float64
	q      float64
}

// bestSplit 返回 z[s:e) 中 Q̂ 最大的切分点与该值（两侧至少 minSize 个点）；
// 段太短时 ok 为 false。
func bestSplit(z []float64, s, e, minSize int) (tau int, q float64, ok bool) {
	if e-s < 2*minSize {
		return 0, 0, false
	}
	d := func(i, j int) float64 { return math.Abs(z[i] - z[j]) }
	// 初始 τ = s+minSize：X = z[s:τ)、Y = z[τ:e)。
	tau0 := s + minSize
	var wx, wy, b float64
	for i := s; i < tau0; i++ {
		for j := i + 1; j < tau0; j++ {
			wx += d(i, j)
		}
		for j := tau0; j < e; j++ {
			b += d(i, j)
		}
	}
	for i := tau0; i < e; i++ {
		for j := i + 1; j < e; j++ {
			wy += d(i, j)
		}
	}
	q = math.Inf(-1)
	for t := tau0; t <= e-minSize; t++ {
		m, n := float64(t-s), float64(e-t)
		val := 2*b/(m*n) - wx/(m*(m-1)/2) - wy/(n*(n-1)/2)
		val *= m * n / (m + n)
		if val > q {
			q, tau = val, t
		}
		if t == e-minSize {
			break
		}
		// 把 z[t] 从 Y 移到 X。
		var toX, toY float64
		for i := s; i < t; i++ {
			toX += d(i, t)
		}
		for j := t + 1; j < e; j++ {
			toY += d(t, j)
		}
		wx += toX
		wy -= toY
		b += toY - toX
	}
	return tau, q, true
}

// eDivisive 对 z 做层次式 E-divisive 检测，返回按下标升序的变点。alpha 是显著性水平，
// perms 是置换次数，rng 决定置换（同种子同结果）。
func eDivisive(z []float64, minSize int, alpha float64, perms int, rng *rand.Rand) []cpResult {
	bounds := []int{0, len(z)}
	var found []cpResult
	work := make([]float64, len(z))
	for {
		// 在每个现有段里找最佳切分，取 Q̂ 最大者。
		bestQ, bestTau := math.Inf(-1), -1
		for i := 0; i+1 < len(bounds); i++ {
			if tau, q, ok := bestSplit(z, bounds[i], bounds[i+1], minSize); ok && q > bestQ {
				bestQ, bestTau = q, tau
			}
		}
		if bestTau < 0 || !(bestQ > 0) {
			break
		}
		// 置换检验：段内打乱（保持已接受的变点），看随机排列能否得到同样大的 Q̂。
		exceed := 0
		for range perms {
			copy(work, z)
			for i := 0; i+1 < len(bounds); i++ {
				seg := work[bounds[i]:bounds[i+1]]
				rng.Shuffle(len(seg), func(a, b int) { seg[a], seg[b] = seg[b], seg[a] })
			}
			mq := math.Inf(-1)
			for i := 0; i+1 < len(bounds); i++ {
				if _, q, ok := bestSplit(work, bounds[i], bounds[i+1], minSize); ok && q > mq {
					mq = q
				}
			}
			if mq >= bestQ {
				exceed++
			}
		}
		p := float64(1+exceed) / float64(perms+1)
		if p > alpha {
			break
		}
		found = append(found, cpResult{idx: bestTau, pValue: p, q: bestQ})
		bounds = append(bounds, bestTau)
		sort.Ints(bounds)
	}
	sort.Slice(found, func(i, j int) bool { return found[i].idx < found[j].idx })
	return found
}

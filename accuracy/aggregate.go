package accuracy

import (
	"math"
)

// npBufSize 是 numpy 迭代器的默认缓冲区大小（NPY_BUFSIZE）。归约按此大小分块，
// 每块内做成对求和，再顺序累加到初值 0.0 上；超过 8192 个样本（如 MMLU 全量
// 14042 题）时分块会影响最后一位，因此必须照搬。
const npBufSize = 8192

// pairwiseSum 复刻 numpy 的 pairwise_sum_DOUBLE：n<8 顺序累加；n<=128 用 8 路
// 展开累加再按固定括号合并；更长时对半（对齐到 8 的倍数）递归。
func pairwiseSum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		res := 0.0
		for _, x := range a {
			res += x
		}
		return res
	case n <= 128:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-(n%8); i += 8 {
			for j := 0; j < 8; j++ {
				r[j] += a[i+j]
			}
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += a[i]
		}
		return res
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwiseSum(a[:n2]) + pairwiseSum(a[n2:])
	}
}

// npSum 复刻 np.add.reduce 对一维 float64 数组的求值顺序：初值为加法单位元 0.0，
// 每个缓冲块的成对和依次加到结果上。
func npSum(a []float64) float64 {
	res := 0.0
	for start := 0; start < len(a); start += npBufSize {
		end := min(start+npBufSize, len(a))
		res += pairwiseSum(a[start:end])
	}
	return res
}

// npMean 等价于 np.mean：和除以个数；空输入返回 NaN（numpy 同样返回 nan 并告警）。
func npMean(a []float64) float64 {
	if len(a) == 0 {
		return math.NaN()
	}
	return npSum(a) / float64(len(a))
}

// npStd 等价于 np.std（ddof=0，总体标准差）：先求均值，再对离差平方按同样的
// 分块成对求和，除以 n 后开方。
func npStd(a []float64) float64 {
	if len(a) == 0 {
		return math.NaN()
	}
	mean := npMean(a)
	sq := make([]float64, len(a))
	for i, x := range a {
		d := x - mean
		sq[i] = d * d
	}
	return math.Sqrt(npSum(sq) / float64(len(a)))
}

// aggregate 复刻 common.aggregate_results(default_stats=("mean","std"))：
// 按样本顺序收集各指标（先样本自身的指标，再 "score"），对每个指标依次产出
// name 与 name:std，最后把 "score" 取出作为总分。返回的 order 是 Python
// metrics | {"score": score} 的键顺序，即结果 JSON 的键顺序。
func aggregate(singles []SingleResult) (score float64, metrics map[string]float64, order []string) {
	var names []string
	values := map[string][]float64{}
	add := func(name string, v float64) {
		if _, seen := values[name]; !seen {
			names = append(names, name)
		}
		values[name] = append(values[name], v)
	}
	for _, s := range singles {
		for _, m := range s.Metrics {
			add(m.Name, m.Value)
		}
		add("score", s.Score)
	}
	metrics = map[string]float64{}
	score = math.NaN()
	for _, name := range names {
		vals := values[name]
		mean, std := npMean(vals), npStd(vals)
		if name == "score" {
			score = mean
		} else {
			metrics[name] = mean
			order = append(order, name)
		}
		metrics[name+":std"] = std
		order = append(order, name+":std")
	}
	order = append(order, "score")
	return score, metrics, order
}

package emulator

import (
	"math"
	"slices"
	"strings"
)

// 本文件是模拟器的“token 分布”模型：当请求带有会改变分布形状的采样参数
// （temperature 不是 0/1、top_k ≥ 2、top_p < 1、presence/frequency penalty ≠ 0、
// logit_bias）时，生成文本不再直接取 Text 流，而是每一步从一个显式的 logits
// 分布中按 vLLM 采样器的顺序采样：
//
//	logit_bias → presence/frequency penalty（按已生成 token 的计数）→
//	temperature == 0 时取 argmax；否则 logits/temperature → top_k → top_p → 按种子采样。
//
// 分布本身是一个“位置一元模型”：第 j 步的 argmax 恰是贪心文本（Text 流）的第 j 个
// 片段，所以 temperature 0、小 top_p 都与贪心输出一致；其余候选的 logits 见 Sample。
// 默认参数（贪心或 temperature 1 且不带其他参数）仍走 Text 快路径，保持吞吐与既有输出。

// 分布的形状常数（logits，自然对数单位）：
//   - 贪心片段 0；
//   - samplerAlts 个备选依次为 -1, -1.5, -2, …；
//   - 已生成过的片段（“照抄上下文”的倾向）-3；
//   - 其余全部词表片段 -7。
//
// 于是 temperature 1 时贪心片段的概率约 0.2~0.4（始终 ≥ 0.1，top_p 0.1 只留下它）；
// temperature 0.2 时约 0.99；temperature 1.5 时低于 0.1。
const (
	samplerAlts      = 8
	samplerAltTop    = -1.0
	samplerAltStep   = -0.5
	samplerSeenLogit = -3.0
	samplerRestLogit = -7.0
)

// Sampling 是一组会改变 token 分布的采样参数（已校验）。零值 TopP 视为 1。
type Sampling struct {
	// Temperature 为 0 表示贪心（对惩罚与偏置之后的 logits 取 argmax）。
	Temperature float64
	// TopK ≤ 0 表示不限。
	TopK int
	// TopP 在 (0,1]；≤0 或 ≥1 表示不限。
	TopP float64
	// Presence 与 Frequency 是 OpenAI 语义的惩罚：logit -= presence·[count>0] + frequency·count，
	// count 只统计本次已生成的 token（vLLM 如此，提示词不计入）。
	Presence, Frequency float64
	// Bias 按片段文本给出 logit 偏置；不在词表中的片段作为额外候选加入。
	Bias map[string]float64
}

// samplerGroup 是排序/截断的单位：一个显式候选（size 1），或一组 logit 相同的 token——
// “已生成 c 次”的片段（惩罚只依赖计数，同一计数的片段 logit 相同），或“其余词表”。
// 按组而不是按 token 计算，使每一步的代价与词表大小、输出长度基本无关。
type samplerGroup struct {
	idx  int32 // ≥0：显式候选下标；samplerRest：其余词表；samplerSeenAll：全部已生成片段；≤ samplerSeen0：已生成 samplerSeen0-idx+1 次的片段
	size int   // 组内 token 数
	z    float64
}

// 组的种类编码：idx = samplerSeen0 - (c-1) 表示计数为 c 的片段；没有 frequency penalty 时
// 已生成片段的 logit 与计数无关，合成一组 samplerSeenAll，每步的组数更少。
const (
	samplerRest    = -1
	samplerSeenAll = -2
	samplerSeen0   = -3
)

// samplerState 是一次 Sample 调用的可变状态：每个片段的计数，以及按计数分桶的片段列表
// （pos 是片段在其桶中的位置，计数变化时 O(1) 移动）。
type samplerState struct {
	counts    []int32
	pos       []int32
	stamp     []int32
	buckets   [][]int32 // buckets[c]：恰好生成过 c 次的片段
	active    []int     // 非空桶的计数值
	seen      []int32   // 全部生成过的片段（首次出现顺序）
	seenPlain int       // 生成过的普通词表片段数
}

// bump 把片段 i 的计数加一并移动到相应的桶。
func (st *samplerState) bump(i int32, nPlain int) {
	c := int(st.counts[i])
	if c > 0 {
		b := st.buckets[c]
		last := b[len(b)-1]
		b[st.pos[i]] = last
		st.pos[last] = st.pos[i]
		st.buckets[c] = b[:len(b)-1]
		if len(st.buckets[c]) == 0 {
			k := slices.Index(st.active, c)
			st.active = slices.Delete(st.active, k, k+1)
		}
	} else {
		st.seen = append(st.seen, i)
		if int(i) < nPlain {
			st.seenPlain++
		}
	}
	c++
	st.counts[i] = int32(c)
	for len(st.buckets) <= c {
		st.buckets = append(st.buckets, nil)
	}
	if len(st.buckets[c]) == 0 {
		st.active = append(st.active, c)
	}
	st.pos[i] = int32(len(st.buckets[c]))
	st.buckets[c] = append(st.buckets[c], i)
}

// Sample 向 dst 追加 n 个片段：第 j 步的分布以贪心流 NewText(backbone) 的第 j 个片段为
// argmax，按 s 重塑后用 rnd 播种的随机流采样（Temperature 为 0 时不使用随机数）。
// 第一个片段去掉前导空格（文本开头）。相同参数永远得到相同结果。
func (v *Vocab) Sample(dst []string, backbone, rnd uint64, n int, s *Sampling) []string {
	g := v.NewText(backbone)
	r := NewRand(rnd)
	nPlain := len(v.plain)
	// 额外片段（偏置指向词表外的 token）排在词表之后。
	var extra []string
	var bias []float64
	if len(s.Bias) > 0 {
		bias = make([]float64, len(v.table))
		for p, b := range s.Bias {
			if i, ok := v.index[p]; ok {
				bias[i] += b
				continue
			}
			extra = append(extra, p)
		}
		slices.Sort(extra) // map 迭代顺序随机：排序保证确定性
		for _, p := range extra {
			bias = append(bias, s.Bias[p])
		}
	}
	var biased []int32 // 带非零偏置的片段：每一步都作为显式候选
	for i, b := range bias {
		if b != 0 {
			biased = append(biased, int32(i))
		}
	}
	total := len(v.table) + len(extra)
	piece := func(i int32) string {
		if int(i) < len(v.table) {
			return v.table[i]
		}
		return extra[int(i)-len(v.table)]
	}
	st := &samplerState{counts: make([]int32, total), pos: make([]int32, total), stamp: make([]int32, total)}
	groups := make([]samplerGroup, 0, samplerAlts+len(biased)+16)
	var excl []int // 本步作为显式候选、因而要从其计数桶中扣除的片段计数
	topP := s.TopP
	if topP <= 0 || topP >= 1 {
		topP = 1
	}
	for j := 0; j < n; j++ {
		cur := int32(j + 1)
		groups, excl = groups[:0], excl[:0]
		explicitPlain, explicitSeenPlain := 0, 0
		add := func(i int32, z float64) {
			if st.stamp[i] == cur {
				return
			}
			st.stamp[i] = cur
			c := st.counts[i]
			if int(i) < nPlain {
				explicitPlain++
				if c > 0 {
					explicitSeenPlain++
				}
			}
			if c > 0 {
				excl = append(excl, int(c))
				z -= s.Presence + s.Frequency*float64(c)
			}
			if bias != nil {
				z += bias[i]
			}
			groups = append(groups, samplerGroup{idx: i, size: 1, z: z})
		}
		add(int32(v.index[g.Next()]), 0)
		step := Mix(backbone, uint64(j)+0x5a)
		for a := 0; a < samplerAlts; a++ {
			add(int32(Mix(step, uint64(a))%uint64(nPlain)), samplerAltTop+samplerAltStep*float64(a))
		}
		for _, i := range biased {
			add(i, samplerRestLogit)
		}
		if s.Frequency == 0 {
			if size := len(st.seen) - len(excl); size > 0 {
				groups = append(groups, samplerGroup{idx: samplerSeenAll, size: size, z: samplerSeenLogit - s.Presence})
			}
		}
		for _, c := range st.active {
			if s.Frequency == 0 {
				break
			}
			size := len(st.buckets[c])
			for _, e := range excl {
				if e == c {
					size--
				}
			}
			if size > 0 {
				groups = append(groups, samplerGroup{idx: int32(samplerSeen0 - (c - 1)), size: size,
					z: samplerSeenLogit - s.Presence - s.Frequency*float64(c)})
			}
		}
		if rest := nPlain - explicitPlain - (st.seenPlain - explicitSeenPlain); rest > 0 {
			groups = append(groups, samplerGroup{idx: samplerRest, size: rest, z: samplerRestLogit})
		}
		i := v.member(st, v.pickGroup(groups, s.Temperature, s.TopK, topP, &r).idx, cur, &r)
		st.bump(i, nPlain)
		out := piece(i)
		if j == 0 {
			out = strings.TrimLeft(out, " ") // 文本开头不带空格，与 Text 流的句首形式一致
		}
		dst = append(dst, out)
	}
	return dst
}

// member 把选中的组落到一个具体片段：显式候选就是它本身；计数桶与“其余词表”中
// 均匀选一个本步不是显式候选的片段。
func (v *Vocab) member(st *samplerState, idx, cur int32, r *Rand) int32 {
	if idx >= 0 {
		return idx
	}
	ok := func(i int32) bool { return st.stamp[i] != cur && (idx != samplerRest || st.counts[i] == 0) }
	var from []int32
	n := len(v.plain)
	switch {
	case idx == samplerSeenAll:
		from, n = st.seen, len(st.seen)
	case idx <= samplerSeen0:
		from = st.buckets[samplerSeen0-int(idx)+1]
		n = len(from)
	}
	at := func(k int) int32 {
		if from != nil {
			return from[k]
		}
		return int32(k)
	}
	for tries := 0; tries < 64; tries++ {
		if i := at(r.Intn(n)); ok(i) {
			return i
		}
	}
	for k := 0; k < n; k++ {
		if i := at(k); ok(i) {
			return i
		}
	}
	return at(0)
}

// pickGroup 按 vLLM 的顺序在候选组上完成一步采样：temperature 0 取 argmax（并列取先出现者）；
// 否则除以温度、top_k 截断、在截断后的分布上做 top_p 截断，再按随机数选取。
func (v *Vocab) pickGroup(groups []samplerGroup, temp float64, topK int, topP float64, r *Rand) samplerGroup {
	if temp == 0 {
		best := groups[0]
		for _, gr := range groups[1:] {
			if gr.z > best.z {
				best = gr
			}
		}
		return best
	}
	for k := range groups {
		groups[k].z /= temp
	}
	if topK > 0 || topP < 1 {
		slices.SortStableFunc(groups, func(a, b samplerGroup) int {
			switch {
			case a.z > b.z:
				return -1
			case a.z < b.z:
				return 1
			}
			return 0
		})
	}
	if topK > 0 {
		left := topK
		for k := range groups {
			if left <= 0 {
				groups = groups[:k]
				break
			}
			if groups[k].size > left {
				groups[k].size = left
			}
			left -= groups[k].size
		}
	}
	maxZ := math.Inf(-1)
	for _, gr := range groups {
		maxZ = max(maxZ, gr.z)
	}
	sum := 0.0
	for k := range groups {
		groups[k].z = math.Exp(groups[k].z - maxZ) // 此后 z 存放单个 token 的相对权重
		sum += float64(groups[k].size) * groups[k].z
	}
	if topP < 1 {
		// 保留概率最高、累计质量首次达到 top_p 的最小集合（至少一个 token）。
		need, cum := topP*sum, 0.0
		for k := range groups {
			w := groups[k].z
			if cum+float64(groups[k].size)*w >= need {
				groups[k].size = max(1, int(math.Ceil((need-cum)/w)))
				groups = groups[:k+1]
				sum = cum + float64(groups[k].size)*w
				break
			}
			cum += float64(groups[k].size) * w
		}
	}
	u := r.Float64() * sum
	for _, gr := range groups {
		u -= float64(gr.size) * gr.z
		if u < 0 {
			return gr
		}
	}
	return groups[len(groups)-1]
}

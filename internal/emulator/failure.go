package emulator

import "sync/atomic"

// Failer 决定第 k 个请求是否注入故障以及注入哪一种。决定只取决于 Seed 与
// 请求序号，因此同一配置、同一请求顺序下的故障序列可复现。
//
// 并发约定：Next 并发安全（原子计数）。
type Failer struct {
	seed uint64
	n    atomic.Uint64
}

// NewFailer 返回以 seed 决定故障序列的 Failer。
func NewFailer(seed int64) *Failer { return &Failer{seed: uint64(seed)} }

// Next 为下一个请求抽签：以概率 rate 返回 kinds 中的一种，否则返回 ""。
func (f *Failer) Next(rate float64, kinds []string) string {
	if rate <= 0 || len(kinds) == 0 {
		return ""
	}
	k := f.n.Add(1)
	h := Mix(f.seed, k)
	if float64(h>>11)/(1<<53) >= rate {
		return ""
	}
	return kinds[Mix(h, 3)%uint64(len(kinds))]
}

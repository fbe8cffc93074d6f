package explain

import (
	"math"
)

// 实例在 PD 分离部署中的角色（Breakdown.Role）。混合部署为空。
const (
	RolePrefill = "prefill"
	RoleDecode  = "decode"
)

// Moments 是一组逐请求样本（秒）的个数、均值与无偏方差。客户端的 TTFT、E2E 以它进入
// 分解：均值差的区间（Welch）由它算出。N 为 0 表示没有样本。
type Moments struct {
	N    int64   `json:"n"`
	Mean float64 `json:"mean_seconds"`
	Var  float64 `json:"var_seconds2"`
}

// Valid 报告是否至少有一个样本。
func (m Moments) Valid() bool { return m.N > 0 }

// MergeMoments 合并两组样本的矩（并行算法：合并后的均值与无偏方差与把两组样本放在一起
// 直接计算相同）。任一方为空时返回另一方。
func MergeMoments(a, b Moments) Moments {
	switch {
	case !a.Valid():
		return b
	case !b.Valid():
		return a
	}
	n := a.N + b.N
	na, nb, nn := float64(a.N), float64(b.N), float64(n)
	d := b.Mean - a.Mean
	mean := a.Mean + d*nb/nn
	// 平方离差和：M2 = Var·(n−1)
	m2 := a.Var*(na-1) + b.Var*(nb-1) + d*d*na*nb/nn
	v := 0.0
	if n > 1 {
		v = m2 / (nn - 1)
	}
	return Moments{N: n, Mean: mean, Var: v}
}

// Dist 是服务端一个阶段直方图在分组窗口内的增量（组后抓取 − 组前抓取）。Sum/Count 是精确的，
// 均值因此精确；P50、P99 按 Prometheus histogram_quantile 由桶插值得出，只在桶分得开时给出
// （所在桶的上界不超过下界的两倍），否则为 nil，Resolution 写明桶给不出的范围。
type Dist struct {
	Count float64  `json:"count"`
	Sum   float64  `json:"sum_seconds"`
	P50   *float64 `json:"p50_seconds,omitempty"`
	P99   *float64 `json:"p99_seconds,omitempty"`
	// Resolution 说明分位数为什么缺失，例如 "p50, p99 inside bucket (0, 0.3] s"；都分得开时为空。
	Resolution string `json:"resolution,omitempty"`
}

// Mean 返回均值（秒）；d 为 nil 或没有样本时为 NaN。
func (d *Dist) Mean() float64 {
	if d == nil || d.Count <= 0 {
		return math.NaN()
	}
	return d.Sum / d.Count
}

// mergeDist 合并两轮的同一阶段：Sum、Count 相加，分位数无法由两个摘要合并，丢弃并写明。
// 任一方为 nil 时结果为 nil（一轮缺失，合并的均值就不代表全部轮次）。
func mergeDist(a, b *Dist) *Dist {
	if a == nil || b == nil {
		return nil
	}
	return &Dist{Count: a.Count + b.Count, Sum: a.Sum + b.Sum, Resolution: "quantiles are not kept when rounds are merged"}
}

// Cache 是分组窗口内服务端报告的缓存与 KV 状态；nil 字段表示服务端不导出对应指标。
type Cache struct {
	// HitRate = PrefixHits / PrefixQueries（前缀缓存，按 token）。
	HitRate       *float64 `json:"hit_rate,omitempty"`
	PrefixHits    *float64 `json:"prefix_hits,omitempty"`
	PrefixQueries *float64 `json:"prefix_queries,omitempty"`
	// Preemptions 是窗口内 vllm:num_preemptions_total 的增量。
	Preemptions *float64 `json:"preemptions,omitempty"`
	// PeakKVUsage 是窗口内采样到的 vllm:kv_cache_usage_perc 最大值（0..1）。
	PeakKVUsage *float64 `json:"peak_kv_usage,omitempty"`
	// PeakWaiting 是窗口内采样到的 vllm:num_requests_waiting 最大值。
	PeakWaiting *float64 `json:"peak_waiting,omitempty"`
}

// mergeCache 合并两轮：计数相加、命中率由合并后的计数重算、峰值取大；任一方缺失的项缺失。
func mergeCache(a, b Cache) Cache {
	add := func(x, y *float64) *float64 {
		if x == nil || y == nil {
			return nil
		}
		return ptr(*x + *y)
	}
	top := func(x, y *float64) *float64 {
		if x == nil || y == nil {
			return nil
		}
		return ptr(max(*x, *y))
	}
	c := Cache{PrefixHits: add(a.PrefixHits, b.PrefixHits), PrefixQueries: add(a.PrefixQueries, b.PrefixQueries),
		Preemptions: add(a.Preemptions, b.Preemptions), PeakKVUsage: top(a.PeakKVUsage, b.PeakKVUsage),
		PeakWaiting: top(a.PeakWaiting, b.PeakWaiting)}
	if c.PrefixHits != nil && c.PrefixQueries != nil && *c.PrefixQueries > 0 {
		c.HitRate = ptr(*c.PrefixHits / *c.PrefixQueries)
	}
	return c
}

// ptr 返回 v 的指针。
func ptr(v float64) *float64 { return &v }

// Breakdown 是一个压测分组的阶段分解。顶层是整个服务（多实例时各实例之和）；Instances
// 是各实例自己的一份（只有一个实例时为空）。
//
// 阶段字段为 nil 表示服务端不导出该直方图。PD 分离部署（Instances 带 Role）时顶层的服务端
// 阶段为 nil：每个请求在 prefill 与 decode 两个实例上各记一次，相加没有意义；分解由两个
// 实例的份额给出（见 Compare）。
type Breakdown struct {
	// Instance 是实例名（metrics 地址的 host:port，或部署给出的名字）；顶层为空。
	Instance string `json:"instance,omitempty"`
	// Role 是 PD 角色（RolePrefill、RoleDecode），混合部署为空。
	Role string `json:"role,omitempty"`

	// ClientTTFT、ClientE2E 是客户端逐请求的 TTFT 与 E2E（只在顶层）。
	ClientTTFT Moments `json:"client_ttft"`
	ClientE2E  Moments `json:"client_e2e"`
	// ClientHeaders 是客户端逐请求“到响应头”的时长（意图发送 → 响应头读完）。服务端不导出
	// 阶段指标时，TTFT 仍能拆成“到响应头”（客户端、网络、服务端接受请求）与“响应头 → 首 token”
	// （服务端生成首 token）两段。
	ClientHeaders Moments `json:"client_headers,omitzero"`

	// 服务端直方图：vllm:time_to_first_token_seconds、request_queue_time_seconds、
	// request_prefill_time_seconds、request_decode_time_seconds、
	// request_inference_time_seconds、e2e_request_latency_seconds 与每 token 的
	// inter_token_latency_seconds（旧版 time_per_output_token_seconds）。
	ServerTTFT *Dist `json:"server_ttft,omitempty"`
	Queue      *Dist `json:"queue,omitempty"`
	Prefill    *Dist `json:"prefill,omitempty"`
	Decode     *Dist `json:"decode,omitempty"`
	Inference  *Dist `json:"inference,omitempty"`
	ServerE2E  *Dist `json:"server_e2e,omitempty"`
	ITL        *Dist `json:"itl,omitempty"`

	Cache Cache `json:"cache"`

	Instances []Breakdown `json:"instances,omitempty"`
}

// HasPhases 报告 b 是否带着拆分 TTFT 所需的服务端阶段（服务端 TTFT 与 prefill 直方图）；
// PD 部署看两个角色的实例是否都带着。排队直方图可以缺：有的兼容服务只在真正排过队时才记
// （没有任何观测时整个直方图族不出现），此时排队按 0 计并在 Caveats 里写明。
func (b *Breakdown) HasPhases() bool {
	if b == nil {
		return false
	}
	if b.isPD() {
		p, d := b.role(RolePrefill), b.role(RoleDecode)
		return p.ServerE2E != nil && p.Prefill != nil && d.ServerTTFT != nil && d.Prefill != nil
	}
	return b.ServerTTFT != nil && b.Prefill != nil
}

// isPD 报告 b 的实例里是否同时有 prefill 与 decode 角色。
func (b *Breakdown) isPD() bool { return b.role(RolePrefill) != nil && b.role(RoleDecode) != nil }

// role 返回第一个角色为 r 的实例；没有时为 nil。
func (b *Breakdown) role(r string) *Breakdown {
	for i := range b.Instances {
		if b.Instances[i].Role == r {
			return &b.Instances[i]
		}
	}
	return nil
}

// Merge 合并同一组合的多轮分解（门禁的基线与当前值都是多轮合并的）：客户端矩按样本合并，
// 服务端阶段的 Sum/Count 相加，缓存计数相加、峰值取大，实例按名字逐个合并。任一方为 nil
// 时返回另一方；两方实例对不上（名字不同或个数不同）时合并结果不带实例。
func Merge(a, b *Breakdown) *Breakdown {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	out := &Breakdown{Instance: a.Instance, Role: a.Role,
		ClientTTFT: MergeMoments(a.ClientTTFT, b.ClientTTFT), ClientE2E: MergeMoments(a.ClientE2E, b.ClientE2E),
		ClientHeaders: MergeMoments(a.ClientHeaders, b.ClientHeaders),
		ServerTTFT:    mergeDist(a.ServerTTFT, b.ServerTTFT), Queue: mergeDist(a.Queue, b.Queue),
		Prefill: mergeDist(a.Prefill, b.Prefill), Decode: mergeDist(a.Decode, b.Decode),
		Inference: mergeDist(a.Inference, b.Inference), ServerE2E: mergeDist(a.ServerE2E, b.ServerE2E),
		ITL: mergeDist(a.ITL, b.ITL), Cache: mergeCache(a.Cache, b.Cache)}
	if len(a.Instances) == len(b.Instances) {
		for i := range a.Instances {
			x, y := a.Instances[i], b.Instances[i]
			if x.Instance != y.Instance || x.Role != y.Role {
				out.Instances = nil
				break
			}
			out.Instances = append(out.Instances, *Merge(&x, &y))
		}
	}
	return out
}

package explain

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// 阶段名（Component.Phase）。混合部署：客户端 TTFT = client + frontend + queue + prefill，
// 客户端 E2E 再加 decode（frontend 此时还含 detokenize 与输出处理）。PD 分离部署的阶段带实例
// 前缀，见 Compare。
const (
	PhaseClient   = "client"   // 客户端均值 − 服务端均值：客户端、网络、代理
	PhaseFrontend = "frontend" // 服务端 TTFT（或 E2E）− 引擎内的阶段：API server 的解析、分词、输出处理
	PhaseQueue    = "queue"    // vllm:request_queue_time_seconds
	PhasePrefill  = "prefill"  // vllm:request_prefill_time_seconds
	PhaseDecode   = "decode"   // vllm:request_decode_time_seconds

	PhasePrefillQueue = "prefill_instance.queue"   // PD：prefill 实例上的排队
	PhasePrefillRun   = "prefill_instance.prefill" // PD：prefill 实例上的 prefill
	PhasePrefillOther = "prefill_instance.other"   // PD：prefill 实例 E2E 的其余部分
	PhaseKVTransfer   = "kv_transfer"              // PD：decode 实例上远程 prefill 请求的“prefill”阶段
	PhaseDecodeQueue  = "decode_instance.queue"    // PD：decode 实例上的排队
	PhaseDecodeOther  = "decode_instance.other"    // PD：decode 实例服务端时延的其余部分

	// 服务端不导出阶段指标时，只有客户端自己能分的两段（不点名，只列出）：
	PhaseToHeaders    = "client.to_headers"    // 意图发送 → 响应头：客户端、网络、服务端接受请求
	PhaseAfterHeaders = "client.after_headers" // 响应头 → 首 token（TTFT）或最后一个字节（E2E）：服务端在生成
)

// 归因的指标（Change.Metric，Explanation.Summary 的参数）：客户端平均 TTFT 与平均 E2E。
const (
	MetricTTFT = "ttft_mean"
	MetricE2E  = "e2e_mean"
)

// Compare 的结论（Change.Verdict）。
const (
	// VerdictAttributed：变化显著，且两侧都有服务端阶段，Named 给出承担变化的阶段。
	VerdictAttributed = "attributed"
	// VerdictNoChange：均值的变化不显著（区间含 0，或小于 MinChangePct），不点名任何阶段。
	VerdictNoChange = "no_significant_change"
	// VerdictNotAttributable：变化显著，但至少一侧没有服务端阶段指标；Reason 说明是哪一侧。
	VerdictNotAttributable = "not_attributable"
	// VerdictNoData：至少一侧没有客户端样本，无从比较。
	VerdictNoData = "no_data"
)

// NoPhasesReason 是服务端不导出阶段指标时的说明（Change.Reason）。
const NoPhasesReason = "not attributable: the server exports no phase metrics"

// Options 调整 Compare 的判定。零值取默认。
type Options struct {
	// Level 是均值差区间的置信水平，默认 0.95。
	Level float64
	// MinChangePct 是算作变化的最小相对变化（百分比），默认 10（PR 门禁的 TTFT/E2E 阈值）：
	// 统计上显著但小于它的变化报告为没有显著变化。两次运行之间机器负载不同，几个百分点的
	// 位移很常见（两个忙循环加 -race 时，同一配置的两次运行曾测得 +10%）。
	MinChangePct float64
	// NameShare 是点名一个阶段所需的最小占比，默认 0.2；没有阶段达到时点名占比最大的一个。
	NameShare float64
	// HitRateDrop 是点名命中率下降所需的最小绝对降幅，默认 0.05。
	HitRateDrop float64
}

// withDefaults 填入默认值。
func (o Options) withDefaults() Options {
	if o.Level <= 0 || o.Level >= 1 {
		o.Level = 0.95
	}
	if o.MinChangePct <= 0 {
		o.MinChangePct = 10
	}
	if o.NameShare <= 0 {
		o.NameShare = 0.2
	}
	if o.HitRateDrop <= 0 {
		o.HitRateDrop = 0.05
	}
	return o
}

// Component 是一个阶段在变化中的份额（时间单位：秒）。
type Component struct {
	Phase   string  `json:"phase"`
	Base    float64 `json:"base_seconds"`
	Current float64 `json:"current_seconds"`
	Delta   float64 `json:"delta_seconds"`
	// Share 是 Delta 占总变化的比例（可为负：反方向移动的阶段）。
	Share float64 `json:"share"`
	// Uncertainty 是 Delta 的不确定度（秒，置信水平同 Change.Level）。服务端直方图没有逐请求
	// 方差，这里取总变化区间的半宽：各阶段的增量不比总变化更精确。
	Uncertainty float64 `json:"uncertainty_seconds"`
}

// Change 是一个指标（客户端平均 TTFT 或平均 E2E）在两次运行之间的变化与它的归因。
type Change struct {
	Metric  string  `json:"metric"` // "ttft_mean" 或 "e2e_mean"
	Verdict string  `json:"verdict"`
	Reason  string  `json:"reason,omitempty"`
	Base    float64 `json:"base_seconds"`
	Current float64 `json:"current_seconds"`
	Delta   float64 `json:"delta_seconds"`
	Pct     float64 `json:"delta_pct"`
	// Lo、Hi 是 Delta 的 Welch 区间（正态近似），Level 是其置信水平。
	Lo    float64 `json:"lo_seconds"`
	Hi    float64 `json:"hi_seconds"`
	Level float64 `json:"level"`
	// Components 是各阶段的份额（VerdictNoData 时为空）；Named 是承担变化的阶段（只在
	// VerdictAttributed 时非空），按份额从大到小。
	Components []Component `json:"components,omitempty"`
	Named      []string    `json:"named,omitempty"`
}

// Pair 是一个数在基线与当前的值；nil 表示该侧不可得。
type Pair struct {
	Base    *float64 `json:"base,omitempty"`
	Current *float64 `json:"current,omitempty"`
}

// InstanceChange 是一个实例上引擎阶段均值的变化（多实例与 PD 部署）。
type InstanceChange struct {
	Instance   string      `json:"instance"`
	Role       string      `json:"role,omitempty"`
	Components []Component `json:"components"`
}

// Explanation 是 Compare 的结果：TTFT 与 E2E 的归因，以及旁边的缓存、抢占、KV 数字。
type Explanation struct {
	TTFT Change `json:"ttft"`
	E2E  Change `json:"e2e"`
	// DecodePerToken 是服务端每 token 解码时间的均值（ITL 直方图）。
	DecodePerToken Pair `json:"decode_per_token_seconds"`
	HitRate        Pair `json:"hit_rate"`
	Preemptions    Pair `json:"preemptions"`
	PeakKVUsage    Pair `json:"peak_kv_usage"`
	PeakWaiting    Pair `json:"peak_waiting"`
	// Notes 点名旁证：命中率下降、出现抢占、KV 占满。
	Notes []string `json:"notes,omitempty"`
	// Instances 是各实例的阶段变化；Imbalance 点名当前运行里实例之间的不均衡。
	Instances []InstanceChange `json:"instances,omitempty"`
	Imbalance []string         `json:"imbalance,omitempty"`
}

// Compare 比较基线 base 与当前 cur 的分解。任一方为 nil 时按没有数据处理（VerdictNoData）。
//
// 判定：客户端均值差 Δ 的 Welch 区间（正态近似，z 取 Level 对应的双侧分位）不含 0 且
// |Δ|/基线 ≥ MinChangePct 时算作显著；显著且两侧都有服务端阶段时，逐阶段求增量与占比，
// 同方向且占比 ≥ NameShare 的阶段被点名（没有则点名占比最大的）。不显著时仍列出各阶段
// 的数字，但不点名任何阶段；没有阶段指标时 Reason 为 NoPhasesReason（或说明是基线缺）。
func Compare(base, cur *Breakdown, opt Options) Explanation {
	opt = opt.withDefaults()
	var e Explanation
	e.TTFT = change(MetricTTFT, base, cur, opt, func(b *Breakdown) Moments { return b.ClientTTFT }, ttftParts)
	e.E2E = change(MetricE2E, base, cur, opt, func(b *Breakdown) Moments { return b.ClientE2E }, e2eParts)
	if base == nil || cur == nil {
		return e
	}
	bs, cs := engine(base), engine(cur)
	e.DecodePerToken = pairOf(bs.ITL.Mean(), cs.ITL.Mean())
	e.HitRate = Pair{Base: base.Cache.HitRate, Current: cur.Cache.HitRate}
	e.Preemptions = Pair{Base: base.Cache.Preemptions, Current: cur.Cache.Preemptions}
	e.PeakKVUsage = Pair{Base: base.Cache.PeakKVUsage, Current: cur.Cache.PeakKVUsage}
	e.PeakWaiting = Pair{Base: base.Cache.PeakWaiting, Current: cur.Cache.PeakWaiting}
	switch b, c := e.HitRate.Base, e.HitRate.Current; {
	case b != nil && c != nil && *b-*c >= opt.HitRateDrop:
		e.Notes = append(e.Notes, fmt.Sprintf("prefix-cache hit rate fell %.2f → %.2f", *b, *c))
	case b != nil && c == nil && *b >= opt.HitRateDrop:
		// vLLM 关闭前缀缓存时不记查询：计数器不动，命中率不可得。
		e.Notes = append(e.Notes, fmt.Sprintf("prefix-cache hit rate fell %.2f → none (no prefix-cache queries: caching off?)", *b))
	}
	if c := e.Preemptions.Current; c != nil && *c > 0 {
		b := e.Preemptions.Base
		if b == nil || *b == 0 {
			e.Notes = append(e.Notes, fmt.Sprintf("preemptions appeared: %.0f (baseline 0)", *c))
		} else if *c > 2**b {
			e.Notes = append(e.Notes, fmt.Sprintf("preemptions rose %.0f → %.0f", *b, *c))
		}
	}
	if b, c := e.PeakKVUsage.Base, e.PeakKVUsage.Current; c != nil && *c >= 0.99 && (b == nil || *b < 0.99) {
		e.Notes = append(e.Notes, fmt.Sprintf("KV cache became full (peak usage %.2f)", *c))
	}
	for _, side := range []struct {
		who string
		b   *Breakdown
	}{{"baseline: ", base}, {"current: ", cur}} {
		for _, c := range side.b.Caveats() {
			e.Notes = append(e.Notes, side.who+c)
		}
	}
	e.Instances = instanceChanges(base, cur, e.TTFT)
	e.Imbalance = Imbalance(cur)
	return e
}

// engine 返回承载每 token 解码时间的那一份：PD 时是 decode 实例，否则是顶层。
func engine(b *Breakdown) *Breakdown {
	if d := b.role(RoleDecode); d != nil && b.isPD() {
		return d
	}
	return b
}

// pairOf 把两个可能为 NaN 的值装成 Pair。
func pairOf(b, c float64) Pair {
	var p Pair
	if !math.IsNaN(b) {
		p.Base = ptr(b)
	}
	if !math.IsNaN(c) {
		p.Current = ptr(c)
	}
	return p
}

// part 是一个阶段在一侧的均值（NaN 表示缺）。
type part struct {
	phase string
	v     float64
}

// Part 是一个阶段的均值（秒）。
type Part struct {
	Phase   string  `json:"phase"`
	Seconds float64 `json:"seconds"`
}

// Split 返回客户端平均 TTFT（metric 为 MetricTTFT）或平均 E2E（MetricE2E）按阶段的拆分，
// 各部分之和等于客户端均值；缺少所需的直方图或客户端样本时返回 nil。阶段名见 Phase* 常量
// （PD 部署带实例前缀）。
func (b *Breakdown) Split(metric string) []Part {
	if b == nil {
		return nil
	}
	f := ttftParts
	if metric == MetricE2E {
		f = e2eParts
	}
	ps := f(b)
	if ps == nil {
		return nil
	}
	out := make([]Part, len(ps))
	for i, p := range ps {
		out[i] = Part{Phase: p.phase, Seconds: p.v}
	}
	return out
}

// requests 返回一个实例在窗口内完成的请求数：服务端 E2E 直方图的样本数（没有时取服务端
// TTFT 的）。各阶段按它求每请求的平均贡献。
func (b *Breakdown) requests() float64 {
	for _, d := range []*Dist{b.ServerE2E, b.ServerTTFT} {
		if d != nil && d.Count > 0 {
			return d.Count
		}
	}
	return 0
}

// per 返回阶段 d 在每个请求上的平均贡献（秒）：Sum 除以完成的请求数（见 requests），而不是
// 除以 d 自己的样本数。vLLM 对每个完成的请求各记一次，两者相同；有的兼容服务只记非零的
// 排队（llm-d-inference-sim 只为真正排过队的请求记 queue），按 d 自己的样本数求均值会把
// 排队高估。d 为 nil（没有任何观测）时为 0。
func (b *Breakdown) per(d *Dist) float64 {
	if d == nil {
		return 0
	}
	n := b.requests()
	if n <= 0 {
		n = d.Count
	}
	if n <= 0 {
		return 0
	}
	return d.Sum / n
}

// engineTTFT 返回一个实例上服务端 TTFT 的三段：排队、prefill 与前端（服务端 TTFT − 排队 −
// prefill）。前端为负时（这个服务的 TTFT 直方图不含排队，例如 llm-d-inference-sim 记的是
// 注入的 TTFT）按 0 计，差额留给客户端那一段——各部分之和仍等于客户端均值。
func (b *Breakdown) engineTTFT() (queue, prefill, frontend float64) {
	queue, prefill = b.per(b.Queue), b.per(b.Prefill)
	return queue, prefill, max(0, b.per(b.ServerTTFT)-queue-prefill)
}

// Caveats 返回这份分解里不合 vLLM 口径、影响拆分的地方（Compare 把它们写进 Notes）：
// 没有排队观测（按 0 计）、服务端 TTFT 小于排队 + prefill（前端无法分出）。
func (b *Breakdown) Caveats() []string {
	if b == nil {
		return nil
	}
	var out []string
	check := func(who string, x *Breakdown) {
		if x.ServerTTFT == nil || x.Prefill == nil {
			return
		}
		if x.Queue == nil {
			out = append(out, who+"no vllm:request_queue_time_seconds observations: queue counted as 0")
		}
		// 差额超过 1 ms 且超过 5% 才算：直方图各自在不同的时刻采样，亚毫秒的出入是常态。
		if q, p := x.per(x.Queue), x.per(x.Prefill); q+p-x.per(x.ServerTTFT) > max(0.001, 0.05*(q+p)) {
			out = append(out, fmt.Sprintf("%sserver TTFT %s is below queue + prefill %s: this server's histograms do not add up as vLLM's do "+
				"(its TTFT leaves out part of the queue or prefill), so the front end is not separated", who, ms(x.per(x.ServerTTFT)), ms(q+p)))
		}
	}
	if b.isPD() {
		check("prefill instance: ", b.role(RolePrefill))
		check("decode instance: ", b.role(RoleDecode))
		return out
	}
	check("", b)
	return out
}

// ttftParts 把客户端平均 TTFT 拆成各阶段；缺少所需的直方图时返回 nil。各部分之和恒等于
// 客户端均值。
func ttftParts(b *Breakdown) []part {
	if !b.HasPhases() || !b.ClientTTFT.Valid() {
		return nil
	}
	if b.isPD() {
		p, d := b.role(RolePrefill), b.role(RoleDecode)
		pq, pp := p.per(p.Queue), p.per(p.Prefill)
		pOther := max(0, p.per(p.ServerE2E)-pq-pp)
		dq, kv, dOther := d.engineTTFT()
		return []part{
			{PhaseClient, b.ClientTTFT.Mean - pq - pp - pOther - dq - kv - dOther},
			{PhasePrefillQueue, pq},
			{PhasePrefillRun, pp},
			{PhasePrefillOther, pOther},
			{PhaseDecodeQueue, dq},
			{PhaseKVTransfer, kv},
			{PhaseDecodeOther, dOther},
		}
	}
	q, p, fe := b.engineTTFT()
	return []part{
		{PhaseClient, b.ClientTTFT.Mean - q - p - fe},
		{PhaseFrontend, fe},
		{PhaseQueue, q},
		{PhasePrefill, p},
	}
}

// e2eParts 把客户端平均 E2E 拆成各阶段；缺少服务端 E2E 或 decode 直方图时返回 nil。
func e2eParts(b *Breakdown) []part {
	if !b.HasPhases() || !b.ClientE2E.Valid() {
		return nil
	}
	if b.isPD() {
		p, d := b.role(RolePrefill), b.role(RoleDecode)
		if d.ServerE2E == nil || d.Decode == nil {
			return nil
		}
		pq, pp := p.per(p.Queue), p.per(p.Prefill)
		pOther := max(0, p.per(p.ServerE2E)-pq-pp)
		dq, kv, dec := d.per(d.Queue), d.per(d.Prefill), d.per(d.Decode)
		dOther := max(0, d.per(d.ServerE2E)-dq-kv-dec)
		return []part{
			{PhaseClient, b.ClientE2E.Mean - pq - pp - pOther - dq - kv - dec - dOther},
			{PhasePrefillQueue, pq},
			{PhasePrefillRun, pp},
			{PhasePrefillOther, pOther},
			{PhaseDecodeQueue, dq},
			{PhaseKVTransfer, kv},
			{PhaseDecode, dec},
			{PhaseDecodeOther, dOther},
		}
	}
	if b.ServerE2E == nil || b.Decode == nil {
		return nil
	}
	q, p, dec := b.per(b.Queue), b.per(b.Prefill), b.per(b.Decode)
	fe := max(0, b.per(b.ServerE2E)-q-p-dec)
	return []part{
		{PhaseClient, b.ClientE2E.Mean - q - p - dec - fe},
		{PhaseFrontend, fe},
		{PhaseQueue, q},
		{PhasePrefill, p},
		{PhaseDecode, dec},
	}
}

// zFor 返回双侧置信水平 level 的标准正态分位（Acklam 的有理近似，相对误差 < 1.2e-9）。
func zFor(level float64) float64 {
	p := 1 - (1-level)/2
	a := [...]float64{-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00}
	b := [...]float64{-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01}
	c := [...]float64{-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00}
	d := [...]float64{7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00}
	if p > 1-0.02425 {
		q := math.Sqrt(-2 * math.Log(1-p))
		return -(((((c[0]*q+c[1])*q+c[2])*q+c[3])*q+c[4])*q + c[5]) / ((((d[0]*q+d[1])*q+d[2])*q+d[3])*q + 1)
	}
	q := p - 0.5
	r := q * q
	return (((((a[0]*r+a[1])*r+a[2])*r+a[3])*r+a[4])*r + a[5]) * q / (((((b[0]*r+b[1])*r+b[2])*r+b[3])*r+b[4])*r + 1)
}

// change 计算一个指标的变化与归因。
func change(metric string, base, cur *Breakdown, opt Options, client func(*Breakdown) Moments, parts func(*Breakdown) []part) Change {
	c := Change{Metric: metric, Verdict: VerdictNoData, Level: opt.Level}
	if base == nil || cur == nil {
		c.Reason = "no breakdown on one side"
		return c
	}
	mb, mc := client(base), client(cur)
	if !mb.Valid() || !mc.Valid() {
		c.Reason = "no client samples on one side"
		return c
	}
	c.Base, c.Current, c.Delta = mb.Mean, mc.Mean, mc.Mean-mb.Mean
	if mb.Mean > 0 {
		c.Pct = c.Delta / mb.Mean * 100
	}
	se := math.Sqrt(mb.Var/float64(mb.N) + mc.Var/float64(mc.N))
	half := zFor(opt.Level) * se
	c.Lo, c.Hi = c.Delta-half, c.Delta+half
	significant := (c.Lo > 0 || c.Hi < 0) && math.Abs(c.Pct) >= opt.MinChangePct
	pb, pc := parts(base), parts(cur)
	switch {
	case pb != nil && pc != nil:
		c.Components = components(pb, pc, c.Delta, half)
	case pb == nil && pc == nil:
		// 两侧都没有服务端阶段：只列出客户端自己能分的两段（到响应头、之后），仍然不可归因。
		if cb, cc := clientParts(base, client), clientParts(cur, client); cb != nil && cc != nil {
			c.Components = components(cb, cc, c.Delta, half)
		}
	}
	switch {
	case !significant:
		c.Verdict = VerdictNoChange
	case pb == nil && pc == nil:
		c.Verdict, c.Reason = VerdictNotAttributable, NoPhasesReason
	case pb == nil:
		c.Verdict, c.Reason = VerdictNotAttributable, "not attributable: the baseline has no phase metrics"
	case pc == nil:
		c.Verdict, c.Reason = VerdictNotAttributable, "not attributable: the current run has no phase metrics"
	default:
		c.Verdict = VerdictAttributed
		c.Named = named(c.Components, opt.NameShare)
	}
	return c
}

// components 逐阶段求两侧（同样的阶段、同样的顺序）的增量与它占总变化 total 的比例；
// 不确定度一律取总变化区间的半宽 half。
func components(b, c []part, total, half float64) []Component {
	out := make([]Component, len(b))
	for i := range b {
		d := c[i].v - b[i].v
		share := 0.0
		if total != 0 {
			share = d / total
		}
		out[i] = Component{Phase: b[i].phase, Base: b[i].v, Current: c[i].v, Delta: d, Share: share, Uncertainty: half}
	}
	return out
}

// clientParts 返回客户端自己能分的两段：到响应头，与之后（到首 token 或最后一个字节）；
// 没有“到响应头”的样本时为 nil。
func clientParts(b *Breakdown, client func(*Breakdown) Moments) []part {
	h, m := b.ClientHeaders, client(b)
	if !h.Valid() || !m.Valid() {
		return nil
	}
	return []part{{PhaseToHeaders, h.Mean}, {PhaseAfterHeaders, m.Mean - h.Mean}}
}

// named 返回承担变化的阶段：与总变化同向且占比 ≥ minShare 的，按占比从大到小；没有时
// 返回占比最大的一个。
func named(cs []Component, minShare float64) []string {
	idx := make([]int, len(cs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return cs[idx[a]].Share > cs[idx[b]].Share })
	var out []string
	for _, i := range idx {
		if cs[i].Share >= minShare {
			out = append(out, cs[i].Phase)
		}
	}
	if len(out) == 0 && len(idx) > 0 {
		out = []string{cs[idx[0]].Phase}
	}
	return out
}

// instanceChanges 列出每个实例上引擎阶段（排队、prefill、decode）均值的变化。实例按角色
// 配对（PD），否则按名字，名字对不上时按下标（不同机器上端口不同）。
func instanceChanges(base, cur *Breakdown, ttft Change) []InstanceChange {
	if len(base.Instances) == 0 || len(cur.Instances) == 0 {
		return nil
	}
	half := (ttft.Hi - ttft.Lo) / 2
	var out []InstanceChange
	for i := range cur.Instances {
		ci := &cur.Instances[i]
		bi := matchInstance(base, ci, i)
		if bi == nil {
			continue
		}
		ic := InstanceChange{Instance: ci.Instance, Role: ci.Role}
		for _, ph := range []struct {
			name string
			b, c *Dist
		}{{PhaseQueue, bi.Queue, ci.Queue}, {PhasePrefill, bi.Prefill, ci.Prefill}, {PhaseDecode, bi.Decode, ci.Decode}} {
			if ph.b == nil || ph.c == nil {
				continue
			}
			b, c := bi.per(ph.b), ci.per(ph.c)
			share := 0.0
			if ttft.Delta != 0 && ph.name != PhaseDecode {
				share = (c - b) / ttft.Delta
			}
			ic.Components = append(ic.Components, Component{Phase: ph.name, Base: b, Current: c, Delta: c - b, Share: share, Uncertainty: half})
		}
		if len(ic.Components) > 0 {
			out = append(out, ic)
		}
	}
	return out
}

// matchInstance 在 base 里找与 ci（cur 的第 i 个实例）对应的实例。
func matchInstance(base *Breakdown, ci *Breakdown, i int) *Breakdown {
	if ci.Role != "" {
		return base.role(ci.Role)
	}
	for j := range base.Instances {
		if base.Instances[j].Instance == ci.Instance {
			return &base.Instances[j]
		}
	}
	if i < len(base.Instances) && len(base.Instances) > 0 {
		return &base.Instances[i]
	}
	return nil
}

// Imbalance 点名一次运行里同角色实例之间的不均衡：请求数最多的实例多于最少的 1.5 倍，或
// 平均排队时间相差 1.5 倍以上且超过 5 ms。只有一个实例（或每个角色各一个）时返回 nil。
func Imbalance(b *Breakdown) []string {
	if b == nil {
		return nil
	}
	groups := map[string][]*Breakdown{}
	var roles []string
	for i := range b.Instances {
		in := &b.Instances[i]
		if _, ok := groups[in.Role]; !ok {
			roles = append(roles, in.Role)
		}
		groups[in.Role] = append(groups[in.Role], in)
	}
	var out []string
	for _, r := range roles {
		g := groups[r]
		if len(g) < 2 {
			continue
		}
		out = append(out, spread(g, "requests", func(x *Breakdown) float64 {
			if x.ServerE2E == nil {
				return math.NaN()
			}
			return x.ServerE2E.Count
		}, 0)...)
		out = append(out, spread(g, "mean queue", func(x *Breakdown) float64 {
			if x.Queue == nil {
				return math.NaN()
			}
			return x.per(x.Queue)
		}, 0.005)...)
	}
	return out
}

// spread 在 g 中比较 f 的最大与最小值：最大 ≥ 1.5 × 最小且差 ≥ minGap 时给出一句说明。
func spread(g []*Breakdown, what string, f func(*Breakdown) float64, minGap float64) []string {
	lo, hi := -1, -1
	for i, x := range g {
		v := f(x)
		if math.IsNaN(v) {
			return nil
		}
		if lo < 0 || v < f(g[lo]) {
			lo = i
		}
		if hi < 0 || v > f(g[hi]) {
			hi = i
		}
	}
	vl, vh := f(g[lo]), f(g[hi])
	if vh < 1.5*vl || vh-vl < minGap || vh == 0 {
		return nil
	}
	unit := func(v float64) string {
		if what == "requests" {
			return fmt.Sprintf("%.0f", v)
		}
		return ms(v)
	}
	return []string{fmt.Sprintf("imbalance: %s %s on %s vs %s on %s", what, unit(vh), name(g[hi]), unit(vl), name(g[lo]))}
}

// name 返回实例的显示名。
func name(b *Breakdown) string {
	if b.Instance != "" {
		return b.Instance
	}
	return b.Role
}

// ms 把秒格式化为毫秒（一位小数）。
func ms(v float64) string { return fmt.Sprintf("%.1f ms", v*1000) }

// signedMS 把秒格式化为带符号的毫秒。
func signedMS(v float64) string {
	s := fmt.Sprintf("%+.1f ms", v*1000)
	if s == "-0.0 ms" || s == "+0.0 ms" {
		return "0.0 ms" // 四舍五入到 0 时不带符号：不写 "-0.0 ms"
	}
	// 负号用 U+2212，与报告其余的数字一致（"−0.7 ms"，不是 "-0.7 ms"）。
	return strings.Replace(s, "-", "−", 1)
}

// pctText 把百分比写成整数（"%.0f%%"），四舍五入到 0 时写 "0%"，不写 "-0%"；signed 为真时正数带 "+"。
func pctText(p float64, signed bool) string {
	s := fmt.Sprintf("%.0f", p)
	switch {
	case s == "-0" || s == "0":
		return "0%"
	case signed && p > 0:
		return "+" + s + "%"
	}
	return strings.Replace(s, "-", "−", 1) + "%"
}

// Text 返回一行可读的说明，例如
// "mean TTFT +31.0 ms (+31%, 95% interval +28.1…+33.9 ms): queue +28.0 ms (90%), prefill +1.0 ms (3%), client +0.5 ms (2%), frontend +0.0 ms (0%)"。
func (c Change) Text() string {
	label := map[string]string{MetricTTFT: "mean TTFT", MetricE2E: "mean E2E"}[c.Metric]
	if label == "" {
		label = c.Metric
	}
	if c.Verdict == VerdictNoData {
		return label + ": " + c.Reason
	}
	head := fmt.Sprintf("%s %s (%s, %s interval %s…%s)", label, signedMS(c.Delta), pctText(c.Pct, true), strconv.FormatFloat(c.Level*100, 'f', -1, 64)+"%",
		signedMS(c.Lo), signedMS(c.Hi))
	switch c.Verdict {
	case VerdictNoChange:
		return head + ": no significant change"
	case VerdictNotAttributable:
		if len(c.Components) == 0 {
			return head + ": " + c.Reason
		}
		var parts []string
		for _, x := range c.Components {
			parts = append(parts, fmt.Sprintf("%s %s", x.Phase, signedMS(x.Delta)))
		}
		return head + ": " + c.Reason + "; client side: " + strings.Join(parts, ", ")
	}
	cs := slices.Clone(c.Components)
	sort.SliceStable(cs, func(a, b int) bool { return math.Abs(cs[a].Delta) > math.Abs(cs[b].Delta) })
	var parts []string
	for _, x := range cs {
		parts = append(parts, fmt.Sprintf("%s %s (%s)", x.Phase, signedMS(x.Delta), pctText(x.Share*100, false)))
	}
	return head + ": " + strings.Join(parts, ", ")
}

// Summary 返回一个指标（MetricTTFT 或 MetricE2E）的一行说明：该指标的归因，再加旁证
// （命中率、抢占、KV、每 token 解码时间，以及点名的旁证与实例不均衡），以 "; " 相连。
// 门禁的 Attribution 与 Reason 用它。
func (e Explanation) Summary(metric string) string {
	c := e.TTFT
	if metric == MetricE2E {
		c = e.E2E
	}
	parts := []string{c.Text()}
	if s := e.side(); s != "" {
		parts = append(parts, s)
	}
	parts = append(parts, e.Notes...)
	parts = append(parts, e.Imbalance...)
	return strings.Join(parts, "; ")
}

// Text 返回整段说明：TTFT 与 E2E 各一句，再加旁证（命中率、抢占、KV、实例不均衡），每项一行。
func (e Explanation) Text() string {
	lines := []string{e.TTFT.Text(), e.E2E.Text()}
	if s := e.side(); s != "" {
		lines = append(lines, s)
	}
	lines = append(lines, e.Notes...)
	for _, in := range e.Instances {
		var parts []string
		for _, c := range in.Components {
			parts = append(parts, fmt.Sprintf("%s %s", c.Phase, signedMS(c.Delta)))
		}
		label := in.Instance
		if in.Role != "" && in.Role != in.Instance {
			label += " (" + in.Role + ")"
		}
		lines = append(lines, "instance "+label+": "+strings.Join(parts, ", "))
	}
	lines = append(lines, e.Imbalance...)
	return strings.Join(lines, "\n")
}

// side 返回旁证的前后值：命中率、抢占（两侧都为 0 时写 "no preemptions"）、KV 峰值与每 token
// 解码时间；都不可得时为空串。
func (e Explanation) side() string {
	var side []string
	if b, c := e.HitRate.Base, e.HitRate.Current; b != nil && c != nil {
		side = append(side, fmt.Sprintf("hit rate %.2f → %.2f", *b, *c))
	}
	if b, c := e.Preemptions.Base, e.Preemptions.Current; b != nil && c != nil {
		if *b == 0 && *c == 0 {
			side = append(side, "no preemptions")
		} else {
			side = append(side, fmt.Sprintf("preemptions %.0f → %.0f", *b, *c))
		}
	}
	if b, c := e.PeakKVUsage.Base, e.PeakKVUsage.Current; b != nil && c != nil {
		side = append(side, fmt.Sprintf("peak KV %.2f → %.2f", *b, *c))
	}
	if b, c := e.DecodePerToken.Base, e.DecodePerToken.Current; b != nil && c != nil {
		side = append(side, fmt.Sprintf("decode/token %s → %s", ms(*b), ms(*c)))
	}
	return strings.Join(side, "; ")
}

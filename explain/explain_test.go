package explain

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// dist 返回均值为 mean、样本数为 n 的阶段增量。
func dist(n, mean float64) *Dist { return &Dist{Count: n, Sum: n * mean} }

// mixed 返回一份混合部署的分解：客户端 TTFT = client + frontend + queue + prefill，E2E 再加 decode。
func mixed(queue, prefill, decode float64) *Breakdown {
	const n = 200
	ttft := 0.002 + 0.001 + queue + prefill
	return &Breakdown{
		ClientTTFT: Moments{N: n, Mean: ttft, Var: 1e-6}, ClientE2E: Moments{N: n, Mean: ttft + decode, Var: 1e-6},
		ServerTTFT: dist(n, 0.001+queue+prefill), Queue: dist(n, queue), Prefill: dist(n, prefill), Decode: dist(n, decode),
		ServerE2E: dist(n, 0.001+queue+prefill+decode+0.0005), ITL: dist(n*10, decode/10),
		Cache: Cache{HitRate: ptr(0.7), Preemptions: ptr(0), PeakKVUsage: ptr(0.4)},
	}
}

// component 返回 c 中名为 phase 的份额。
func component(t *testing.T, c Change, phase string) Component {
	t.Helper()
	for _, x := range c.Components {
		if x.Phase == phase {
			return x
		}
	}
	t.Fatalf("no %s in %+v", phase, c.Components)
	return Component{}
}

// TestMergeMomentsMatchesPooled：合并两组样本的矩与直接计算全部样本相同。
func TestMergeMomentsMatchesPooled(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var a, b, all []float64
	for range 37 {
		a = append(a, r.Float64())
	}
	for range 53 {
		b = append(b, 2+r.Float64())
	}
	all = append(append(all, a...), b...)
	m := func(xs []float64) Moments {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		mean := s / float64(len(xs))
		ss := 0.0
		for _, x := range xs {
			ss += (x - mean) * (x - mean)
		}
		return Moments{N: int64(len(xs)), Mean: mean, Var: ss / float64(len(xs)-1)}
	}
	got, want := MergeMoments(m(a), m(b)), m(all)
	if got.N != want.N || math.Abs(got.Mean-want.Mean) > 1e-12 || math.Abs(got.Var-want.Var) > 1e-12 {
		t.Fatalf("merged %+v, pooled %+v", got, want)
	}
	if MergeMoments(Moments{}, m(a)) != m(a) || MergeMoments(m(b), Moments{}) != m(b) {
		t.Fatal("merging with an empty side must return the other side")
	}
	if one := MergeMoments(Moments{N: 1, Mean: 3}, Moments{}); one.Var != 0 || !one.Valid() {
		t.Fatalf("single sample %+v", one)
	}
}

// TestCompareNamesQueue：排队 +30ms、其余不变：归到 queue，占比 100%，文本写出增量与区间。
func TestCompareNamesQueue(t *testing.T) {
	e := Compare(mixed(0.001, 0.020, 0.100), mixed(0.031, 0.020, 0.100), Options{})
	if e.TTFT.Verdict != VerdictAttributed || !slices.Equal(e.TTFT.Named, []string{PhaseQueue}) {
		t.Fatalf("TTFT %+v", e.TTFT)
	}
	if s := component(t, e.TTFT, PhaseQueue).Share; math.Abs(s-1) > 1e-9 {
		t.Fatalf("queue share %v", s)
	}
	if e.E2E.Verdict != VerdictAttributed || e.E2E.Named[0] != PhaseQueue {
		t.Fatalf("E2E %+v", e.E2E)
	}
	txt := e.TTFT.Text()
	for _, want := range []string{"mean TTFT +30.0 ms", "95% interval", "queue +30.0 ms (100%)"} {
		if !strings.Contains(txt, want) {
			t.Fatalf("text %q lacks %q", txt, want)
		}
	}
	sum := e.Summary(MetricTTFT)
	for _, want := range []string{"hit rate 0.70 → 0.70", "no preemptions", "peak KV 0.40 → 0.40", "decode/token 10.0 ms → 10.0 ms"} {
		if !strings.Contains(sum, want) {
			t.Fatalf("summary %q lacks %q", sum, want)
		}
	}
	if !strings.Contains(e.Summary(MetricE2E), "mean E2E +30.0 ms") {
		t.Fatalf("E2E summary %q", e.Summary(MetricE2E))
	}
	// JSON 可读回（summary.json 里的形状）。
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back Explanation
	if err := json.Unmarshal(b, &back); err != nil || back.TTFT.Named[0] != PhaseQueue {
		t.Fatalf("round trip %v %+v", err, back.TTFT)
	}
}

// TestCompareNoChange：两侧相同（差在区间内，或显著但小于 MinChangePct）时不点名任何阶段。
func TestCompareNoChange(t *testing.T) {
	e := Compare(mixed(0.001, 0.020, 0.1), mixed(0.001, 0.020, 0.1), Options{})
	if e.TTFT.Verdict != VerdictNoChange || len(e.TTFT.Named) != 0 || !strings.HasSuffix(e.TTFT.Text(), "no significant change") {
		t.Fatalf("%+v %q", e.TTFT, e.TTFT.Text())
	}
	// +0.2ms 在 24ms 上不到 1%：统计上显著（方差很小），但低于 5% 的门槛。
	e = Compare(mixed(0.001, 0.020, 0.1), mixed(0.0012, 0.020, 0.1), Options{})
	if e.TTFT.Verdict != VerdictNoChange {
		t.Fatalf("+0.8%% judged %s", e.TTFT.Verdict)
	}
	if e = Compare(mixed(0.001, 0.020, 0.1), mixed(0.0012, 0.020, 0.1), Options{MinChangePct: 0.1}); e.TTFT.Verdict != VerdictAttributed {
		t.Fatalf("with MinChangePct 0.1: %s", e.TTFT.Verdict)
	}
}

// TestCompareNotAttributable：服务端不导出阶段时如实说明，不猜测；只缺基线一侧时说是基线缺。
func TestCompareNotAttributable(t *testing.T) {
	bare := func(mean float64) *Breakdown {
		return &Breakdown{ClientTTFT: Moments{N: 100, Mean: mean, Var: 1e-6}, ClientE2E: Moments{N: 100, Mean: mean + 0.1, Var: 1e-6}}
	}
	e := Compare(bare(0.02), bare(0.05), Options{})
	if e.TTFT.Verdict != VerdictNotAttributable || e.TTFT.Reason != NoPhasesReason || len(e.TTFT.Named) != 0 {
		t.Fatalf("%+v", e.TTFT)
	}
	if !strings.Contains(e.TTFT.Text(), NoPhasesReason) {
		t.Fatalf("text %q", e.TTFT.Text())
	}
	e = Compare(bare(0.02), mixed(0.03, 0.02, 0.1), Options{})
	if e.TTFT.Verdict != VerdictNotAttributable || !strings.Contains(e.TTFT.Reason, "baseline") {
		t.Fatalf("baseline without phases: %+v", e.TTFT)
	}
	e = Compare(mixed(0.001, 0.02, 0.1), bare(0.06), Options{})
	if !strings.Contains(e.TTFT.Reason, "current run") {
		t.Fatalf("current without phases: %+v", e.TTFT)
	}
	for _, pair := range [][2]*Breakdown{{nil, bare(1)}, {bare(1), {}}} {
		e = Compare(pair[0], pair[1], Options{})
		if e.TTFT.Verdict != VerdictNoData || !strings.Contains(e.TTFT.Text(), "mean TTFT: ") {
			t.Fatalf("no data: %+v", e.TTFT)
		}
	}
}

// TestCompareSideNotes：命中率下降、命中率消失（前缀缓存关闭）、抢占出现与增多、KV 占满都被点名。
func TestCompareSideNotes(t *testing.T) {
	base, cur := mixed(0.001, 0.02, 0.1), mixed(0.001, 0.05, 0.1)
	cur.Cache = Cache{HitRate: ptr(0.2), Preemptions: ptr(12), PeakKVUsage: ptr(1)}
	e := Compare(base, cur, Options{})
	notes := strings.Join(e.Notes, "\n")
	for _, want := range []string{"hit rate fell 0.70 → 0.20", "preemptions appeared: 12", "KV cache became full"} {
		if !strings.Contains(notes, want) {
			t.Fatalf("notes %q lack %q", notes, want)
		}
	}
	base.Cache.Preemptions = ptr(3)
	cur.Cache = Cache{Preemptions: ptr(40)}
	e = Compare(base, cur, Options{})
	notes = strings.Join(e.Notes, "\n")
	if !strings.Contains(notes, "preemptions rose 3 → 40") || !strings.Contains(notes, "→ none (no prefix-cache queries") {
		t.Fatalf("notes %q", notes)
	}
	if !strings.Contains(e.Text(), "preemptions 3 → 40") {
		t.Fatalf("text %q", e.Text())
	}
}

// pd 返回一份 PD 分解：prefill 实例的排队与 prefill、decode 实例的 KV 传输与解码。
func pd(kv float64) *Breakdown {
	const n = 100
	p := Breakdown{Instance: "p0", Role: RolePrefill, Queue: dist(n, 0.001), Prefill: dist(n, 0.020), ServerTTFT: dist(n, 0.021),
		ServerE2E: dist(n, 0.0215), Decode: dist(n, 0)}
	d := Breakdown{Instance: "d0", Role: RoleDecode, Queue: dist(n, 0.002), Prefill: dist(n, kv), ServerTTFT: dist(n, 0.002+kv),
		Decode: dist(n, 0.1), ServerE2E: dist(n, 0.102+kv), ITL: dist(10*n, 0.01)}
	ttft := 0.003 + 0.0215 + 0.002 + kv
	return &Breakdown{ClientTTFT: Moments{N: n, Mean: ttft, Var: 1e-6}, ClientE2E: Moments{N: n, Mean: ttft + 0.1, Var: 1e-6},
		Instances: []Breakdown{p, d}}
}

// TestComparePD：PD 分离时按实例拆分，KV 传输变慢被点名，实例变化按角色配对。
func TestComparePD(t *testing.T) {
	e := Compare(pd(0.005), pd(0.025), Options{})
	if e.TTFT.Verdict != VerdictAttributed || e.TTFT.Named[0] != PhaseKVTransfer {
		t.Fatalf("%+v", e.TTFT)
	}
	if e.E2E.Named[0] != PhaseKVTransfer {
		t.Fatalf("E2E %+v", e.E2E)
	}
	if txt := e.Text(); !strings.Contains(txt, "instance d0 (decode): queue 0.0 ms, prefill +20.0 ms, decode 0.0 ms") {
		t.Fatalf("text lacks the per-instance line:\n%s", txt)
	}
	if len(e.Instances) != 2 || e.Instances[1].Role != RoleDecode || component(t, Change{Components: e.Instances[1].Components}, PhasePrefill).Delta < 0.019 {
		t.Fatalf("instances %+v", e.Instances)
	}
	if e.DecodePerToken.Current == nil || *e.DecodePerToken.Current != 0.01 {
		t.Fatalf("decode per token from the decode instance: %+v", e.DecodePerToken)
	}
	if parts := pd(0.01).Split(MetricTTFT); len(parts) != 7 {
		t.Fatalf("PD TTFT split %+v", parts)
	}
	// 缺一个角色的直方图：不可归因。
	broken := pd(0.025)
	broken.Instances[1].Prefill = nil
	if e := Compare(pd(0.005), broken, Options{}); e.TTFT.Verdict != VerdictNotAttributable {
		t.Fatalf("broken PD %+v", e.TTFT)
	}
}

// TestImbalance：同角色实例之间请求数或排队相差 1.5 倍以上被点名；均衡时、单实例时不点名。
func TestImbalance(t *testing.T) {
	inst := func(name string, n, queue float64) Breakdown {
		return Breakdown{Instance: name, Queue: dist(n, queue), ServerE2E: dist(n, 0.1)}
	}
	b := &Breakdown{Instances: []Breakdown{inst("a", 100, 0.040), inst("b", 100, 0.002)}}
	if im := Imbalance(b); len(im) != 1 || !strings.Contains(im[0], "mean queue 40.0 ms on a vs 2.0 ms on b") {
		t.Fatalf("queue imbalance %q", im)
	}
	b = &Breakdown{Instances: []Breakdown{inst("a", 300, 0.01), inst("b", 100, 0.01)}}
	if im := Imbalance(b); len(im) != 1 || !strings.Contains(im[0], "requests 300 on a vs 100 on b") {
		t.Fatalf("request imbalance %q", im)
	}
	b = &Breakdown{Instances: []Breakdown{inst("a", 100, 0.010), inst("b", 110, 0.011)}}
	if im := Imbalance(b); im != nil {
		t.Fatalf("balanced: %q", im)
	}
	if Imbalance(nil) != nil || Imbalance(pd(0.01)) != nil {
		t.Fatal("one instance per role is not an imbalance")
	}
	noQueue := &Breakdown{Instances: []Breakdown{{Instance: "a"}, {Instance: "b"}}}
	if im := Imbalance(noQueue); im != nil {
		t.Fatalf("without histograms: %q", im)
	}
	// 两侧都有多个实例：按名字配对，名字对不上时按下标（不同机器上端口不同）。
	base := &Breakdown{Instances: []Breakdown{inst("h1:8000", 100, 0.002), inst("h1:8001", 100, 0.002)}}
	cur := &Breakdown{Instances: []Breakdown{inst("h2:8000", 100, 0.002), inst("h2:8001", 100, 0.030)}}
	ch := instanceChanges(base, cur, Change{Delta: 0.014, Lo: 0.01, Hi: 0.018})
	if len(ch) != 2 || ch[1].Instance != "h2:8001" || math.Abs(component(t, Change{Components: ch[1].Components}, PhaseQueue).Delta-0.028) > 1e-12 {
		t.Fatalf("instance changes %+v", ch)
	}
}

// TestMerge：多轮合并后客户端矩按样本合并，阶段 Sum/Count 相加，缓存计数相加、峰值取大，
// 实例按名字合并；对不上的实例丢弃；缺一方的阶段为 nil。
func TestMerge(t *testing.T) {
	a, b := mixed(0.010, 0.02, 0.1), mixed(0.030, 0.02, 0.1)
	a.Cache = Cache{PrefixHits: ptr(70), PrefixQueries: ptr(100), Preemptions: ptr(1), PeakKVUsage: ptr(0.3), PeakWaiting: ptr(2)}
	b.Cache = Cache{PrefixHits: ptr(10), PrefixQueries: ptr(100), Preemptions: ptr(2), PeakKVUsage: ptr(0.9), PeakWaiting: ptr(5)}
	a.Instances = []Breakdown{{Instance: "x", Queue: dist(5, 0.01)}}
	b.Instances = []Breakdown{{Instance: "x", Queue: dist(5, 0.03)}}
	m := Merge(a, b)
	if m.ClientTTFT.N != 400 || math.Abs(m.Queue.Mean()-0.020) > 1e-12 || m.Queue.Resolution == "" {
		t.Fatalf("merged %+v queue %+v", m.ClientTTFT, m.Queue)
	}
	if *m.Cache.HitRate != 0.4 || *m.Cache.Preemptions != 3 || *m.Cache.PeakKVUsage != 0.9 || *m.Cache.PeakWaiting != 5 {
		t.Fatalf("cache %+v", m.Cache)
	}
	if len(m.Instances) != 1 || math.Abs(m.Instances[0].Queue.Mean()-0.02) > 1e-12 {
		t.Fatalf("instances %+v", m.Instances)
	}
	b.Instances[0].Instance = "y"
	b.Prefill = nil
	b.Cache.PrefixHits = nil
	m = Merge(a, b)
	if m.Instances != nil || m.Prefill != nil || m.Cache.HitRate != nil {
		t.Fatalf("mismatched merge %+v", m)
	}
	if Merge(nil, a) != a || Merge(a, nil) != a {
		t.Fatal("merge with nil")
	}
	if !math.IsNaN((*Dist)(nil).Mean()) || !math.IsNaN((&Dist{}).Mean()) {
		t.Fatal("mean of nothing is NaN")
	}
	if (*Breakdown)(nil).HasPhases() || (*Breakdown)(nil).Split(MetricTTFT) != nil {
		t.Fatal("nil breakdown")
	}
	if mixed(0, 0, 0).Split(MetricE2E) == nil || (&Breakdown{ClientE2E: Moments{N: 1}, ServerTTFT: dist(1, 1), Queue: dist(1, 1), Prefill: dist(1, 1)}).Split(MetricE2E) != nil {
		t.Fatal("E2E split needs decode and server E2E")
	}
}

// TestZFor：标准正态分位与已知值一致。
func TestZFor(t *testing.T) {
	for level, want := range map[float64]float64{0.95: 1.959963984540054, 0.99: 2.5758293035489, 0.998: 3.090232306167813, 0.5: 0.6744897501960817} {
		if got := zFor(level); math.Abs(got-want) > 1e-8 {
			t.Errorf("zFor(%v) = %v, want %v", level, got, want)
		}
	}
	if o := (Options{Level: 2}).withDefaults(); o.Level != 0.95 {
		t.Fatalf("bad level kept: %+v", o)
	}
}

// TestNamedFallsBackToLargest：没有阶段达到 NameShare 时点名占比最大的一个。
func TestNamedFallsBackToLargest(t *testing.T) {
	cs := []Component{{Phase: "a", Share: 0.1}, {Phase: "b", Share: 0.15}, {Phase: "c", Share: -0.3}}
	if got := named(cs, 0.2); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("named %v", got)
	}
	if got := named(nil, 0.2); got != nil {
		t.Fatalf("named(nil) %v", got)
	}
}

// TestForeignServerSemantics：一个不完全按 vLLM 口径记直方图的兼容服务（llm-d-inference-sim 的
// 样子）：只为真正排过队的请求记排队（基线里一个都没有，整个直方图族缺席），服务端 TTFT 是注入
// 的常数、不含排队。排队仍按“每个完成的请求”的平均贡献计，变化归到排队，两处口径差异写进 Notes。
func TestForeignServerSemantics(t *testing.T) {
	const n = 96
	side := func(queuedN, queueMean float64) *Breakdown {
		b := &Breakdown{ClientTTFT: Moments{N: n, Mean: 0.031 + queuedN*queueMean/n, Var: 1e-5},
			ClientE2E:  Moments{N: n, Mean: 0.061 + queuedN*queueMean/n, Var: 1e-5},
			ServerTTFT: dist(n, 0.030), Prefill: dist(n, 0.030), Decode: dist(n, 0.030), ServerE2E: dist(n, 0.060+queuedN*queueMean/n)}
		if queuedN > 0 {
			b.Queue = dist(queuedN, queueMean)
		}
		return b
	}
	e := Compare(side(0, 0), side(88, 0.066), Options{})
	if e.TTFT.Verdict != VerdictAttributed || e.TTFT.Named[0] != PhaseQueue {
		t.Fatalf("%s", e.Text())
	}
	if q := component(t, e.TTFT, PhaseQueue); math.Abs(q.Delta-88*0.066/n) > 1e-9 || q.Share < 0.95 {
		t.Fatalf("queue component %+v (want the per-request mean %v)", q, 88*0.066/n)
	}
	notes := strings.Join(e.Notes, "\n")
	for _, want := range []string{"baseline: no vllm:request_queue_time_seconds observations: queue counted as 0",
		"current: server TTFT 30.0 ms is below queue + prefill", "front end is not separated"} {
		if !strings.Contains(notes, want) {
			t.Fatalf("notes %q lack %q", notes, want)
		}
	}
	if (*Breakdown)(nil).Caveats() != nil || len(pd(0.01).Caveats()) != 0 {
		t.Fatal("caveats on a vLLM-shaped breakdown")
	}
}

// TestClientSplitWithoutPhases：两侧都没有服务端阶段但有“到响应头”的样本时，列出客户端自己能分的
// 两段（不点名），文本写在原因之后。
func TestClientSplitWithoutPhases(t *testing.T) {
	side := func(hdr, ttft float64) *Breakdown {
		return &Breakdown{ClientTTFT: Moments{N: 100, Mean: ttft, Var: 1e-6}, ClientE2E: Moments{N: 100, Mean: ttft + 0.1, Var: 1e-6},
			ClientHeaders: Moments{N: 100, Mean: hdr, Var: 1e-8}}
	}
	e := Compare(side(0.002, 0.030), side(0.002, 0.090), Options{})
	if e.TTFT.Verdict != VerdictNotAttributable || len(e.TTFT.Named) != 0 || len(e.TTFT.Components) != 2 {
		t.Fatalf("%+v", e.TTFT)
	}
	if a := component(t, e.TTFT, PhaseAfterHeaders); math.Abs(a.Delta-0.060) > 1e-12 || math.Abs(a.Share-1) > 1e-9 {
		t.Fatalf("after headers %+v", a)
	}
	if txt := e.TTFT.Text(); !strings.Contains(txt, NoPhasesReason+"; client side: client.to_headers 0.0 ms, client.after_headers +60.0 ms") {
		t.Fatalf("text %q", txt)
	}
	if m := Merge(side(0.002, 0.03), side(0.004, 0.03)); m.ClientHeaders.N != 200 || math.Abs(m.ClientHeaders.Mean-0.003) > 1e-12 {
		t.Fatalf("merged headers %+v", m.ClientHeaders)
	}
}

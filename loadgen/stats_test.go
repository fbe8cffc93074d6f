package loadgen

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// numpyPercentile 是测试用的参照实现：numpy.percentile(a, p) 默认 method="linear"
// （numpy/lib/function_base.py 的 _quantile 与 _lerp；Hyndman–Fan 第 7 种）：
// 升序 x，h=(n−1)·p/100，结果 = x[⌊h⌋] + (h−⌊h⌋)·(x[⌊h⌋+1]−x[⌊h⌋])。
// 下面的期望值另用 python3 按同一公式算出并写死（/tmp 脚本见提交说明），两边互相印证。
func numpyPercentile(xs []float64, p float64) float64 {
	x := append([]float64(nil), xs...)
	sort.Float64s(x)
	h := float64(len(x)-1) * (p / 100)
	lo := math.Floor(h)
	k := int(lo)
	return lerp(x[k], x[min(k+1, len(x)-1)], h-lo)
}

// TestPercentilesMatchNumpy 验证 TPxx 列等于 numpy.percentile(samples, xx)（vLLM 的口径）。
// 旧实现取 HDR 的最近秩（P75 给出 45.9ms 之外的 P90=100ms、P95=250ms 等样本值），这里失败。
func TestPercentilesMatchNumpy(t *testing.T) {
	ttftMs := []float64{12.5, 3.0, 7.25, 100.0, 45.9, 45.9, 0.8, 19.031, 250.0, 4.4}
	toks := []int{32, 31, 40, 17, 32, 32, 5, 32, 32, 32}
	ss := newShardSet()
	for i, ms := range ttftMs {
		d := time.Duration(ms * float64(time.Millisecond))
		r := &Record{OK: true, TTFT: d, E2E: d + time.Second, TPOT: -1, FirstToSecond: -1, ClientLag: -1, CompletionTokens: toks[i], Sent: time.Unix(100, 0), Intended: time.Unix(100, 0)}
		ss[i%len(ss)].observe(r, SLO{})
	}
	var s Summary
	ss.total().fill(&s, SLO{})
	// python3: numpy 线性插值公式的纯 Python 复刻，单位秒，结果 ×1e9 取整。
	want := map[string]time.Duration{"P50": 15765500, "P75": 45900000, "P90": 115000000, "P95": 182500000, "P99": 236500000}
	got := map[string]time.Duration{"P50": s.TTFT.P50, "P75": s.TTFT.P75, "P90": s.TTFT.P90, "P95": s.TTFT.P95, "P99": s.TTFT.P99}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("TTFT %s = %d ns, want %d ns (numpy.percentile)", k, got[k], w)
		}
	}
	if s.TTFT.Min != 800*time.Microsecond || s.TTFT.Max != 250*time.Millisecond {
		t.Errorf("TTFT min/max %v/%v", s.TTFT.Min, s.TTFT.Max)
	}
	if want := 48.8781 * float64(time.Millisecond); math.Abs(float64(s.TTFT.Avg)-want) > 1 {
		t.Errorf("TTFT avg %v, want %vns", s.TTFT.Avg, want)
	}
	// python3: [32,31,40,17,32,32,5] 的 TP90/95/99 = 35.2/37.6/39.52（只有 7 个不同样本时）；
	// 这里 10 个样本，期望值由参照实现给出。
	tokf := make([]float64, len(toks))
	for i, v := range toks {
		tokf[i] = float64(v)
	}
	for _, c := range []struct {
		p   float64
		got float64
	}{{75, s.CompletionTokens.P75}, {90, s.CompletionTokens.P90}, {95, s.CompletionTokens.P95}, {99, s.CompletionTokens.P99}} {
		if w := numpyPercentile(tokf, c.p); math.Abs(c.got-w) > 1e-9 {
			t.Errorf("completion tokens P%v = %v, want %v", c.p, c.got, w)
		}
	}
}

// TestNumpyReferenceVectors 用 python3 算出的向量核对参照实现本身，避免测试与实现同错。
func TestNumpyReferenceVectors(t *testing.T) {
	toks := []float64{32, 31, 40, 17, 32, 32, 5}
	for p, w := range map[float64]float64{75: 32.0, 90: 35.2, 95: 37.599999999999994, 99: 39.519999999999996} {
		if got := numpyPercentile(toks, p); got != w {
			t.Errorf("P%v = %v, want %v", p, got, w)
		}
	}
	d := newDist(1, nil)
	for _, v := range toks {
		d.add(int64(v), 1)
	}
	if q := d.quantiles(95); q[0] != 37.599999999999994 {
		t.Errorf("dist P95 = %v, want numpy's 37.599999999999994", q[0])
	}
}

// TestPercentilesHDRBound 验证精确样本超出预算后改用 HDR 时，误差不超过文档给出的界：
// numpy 值的 1/2048 加 0.5µs；并验证预算由各分片共享（任一分片溢出即整体按 HDR）。
func TestPercentilesHDRBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	budget := newBudget(1000)
	a, b := newDist(1000, budget), newDist(1000, budget)
	var all []float64
	for i := range 20000 {
		v := int64(math.Exp(rng.NormFloat64()*1.5) * float64(20*time.Millisecond))
		all = append(all, float64(v))
		if i%2 == 0 {
			a.add(v, 1)
		} else {
			b.add(v, 1)
		}
	}
	if a.h == nil || b.h == nil {
		t.Fatal("budget of 1000 must overflow to HDR")
	}
	m := newDist(1000, nil)
	m.merge(a)
	m.merge(b)
	ps := []float64{50, 75, 90, 95, 99}
	got := m.quantiles(ps...)
	for i, p := range ps {
		w := numpyPercentile(all, p)
		if diff := math.Abs(got[i] - w); diff > w/2048+500 {
			t.Errorf("HDR P%v = %v, numpy %v: error %v exceeds bound %v", p, got[i], w, diff, w/2048+500)
		}
	}
	// 合并了精确样本与 HDR 的分布仍然计数完整。
	e := newDist(1000, nil)
	e.add(int64(time.Millisecond), 3)
	e.merge(m)
	if e.n != 20003 || e.h == nil {
		t.Fatalf("merge exact+HDR: n=%d", e.n)
	}
}

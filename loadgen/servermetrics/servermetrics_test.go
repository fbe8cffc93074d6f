package servermetrics

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestBucketQuantileRules 覆盖 BucketQuantile 的其余规则：同上界的桶合并、强制单调、
// 上界 ≤ 0 的最低桶、缺 +Inf 桶或只有一个桶时为 NaN、空直方图为 NaN。
func TestBucketQuantileRules(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name  string
		h     Histogram
		q     float64
		want  float64
		isNaN bool
	}{
		// 两个序列各自给出 le=0.1 的桶（乱序、重复）：合并后 [0.1:4, 0.2:8, +Inf:8]。
		{"coalesce", Histogram{Upper: []float64{0.2, 0.1, 0.1, inf}, Cum: []float64{8, 2, 2, 8}}, 0.75, 0.1 + 0.1*(2.0/4), false},
		// 非单调（累计 5 之后是 3）：按 Prometheus 抬到 5。rank 0.5×6=3 落在第一个桶。
		{"monotonic", Histogram{Upper: []float64{1, 2, 3, inf}, Cum: []float64{5, 3, 6, 6}}, 0.5, 3.0 / 5, false},
		{"lowest<=0", Histogram{Upper: []float64{-1, 1, inf}, Cum: []float64{4, 4, 4}}, 0.5, -1, false},
		{"noInf", Histogram{Upper: []float64{1, 2}, Cum: []float64{1, 2}}, 0.5, 0, true},
		{"single", Histogram{Upper: []float64{inf}, Cum: []float64{3}}, 0.5, 0, true},
		{"empty", Histogram{Upper: []float64{1, inf}, Cum: []float64{0, 0}}, 0.5, 0, true},
	}
	for _, c := range cases {
		got := c.h.Quantile(c.q)
		if c.isNaN != math.IsNaN(got) || (!c.isNaN && math.Abs(got-c.want) > 1e-12) {
			t.Errorf("%s: quantile(%v) = %v, want %v (NaN %v)", c.name, c.q, got, c.want, c.isNaN)
		}
	}
	if !math.IsNaN((&Histogram{Upper: []float64{1, inf}, Cum: []float64{0, 0}}).MaxBound()) {
		t.Error("maxBound of an empty histogram must be NaN")
	}
}

// vllmText 生成一个实例的 vLLM 风格 /metrics 文本：E2E 直方图（两个有限桶）、调度 gauge、
// 抢占与前缀缓存计数器（v1 名字）、KV 占用比例。e2e 是落在 (0, 0.5] 的样本数。
func vllmText(e2e int, running, waiting, kv, preempt, hits, queries float64) string {
	var b strings.Builder
	b.WriteString("# TYPE vllm:e2e_request_latency_seconds histogram\n")
	fmt.Fprintf(&b, "vllm:e2e_request_latency_seconds_bucket{le=\"0.5\",model_name=\"m\"} %d\n", e2e)
	fmt.Fprintf(&b, "vllm:e2e_request_latency_seconds_bucket{le=\"1\",model_name=\"m\"} %d\n", e2e)
	fmt.Fprintf(&b, "vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=\"m\"} %d\n", e2e)
	fmt.Fprintf(&b, "vllm:e2e_request_latency_seconds_count{model_name=\"m\"} %d\n", e2e)
	fmt.Fprintf(&b, "vllm:e2e_request_latency_seconds_sum{model_name=\"m\"} %g\n", 0.25*float64(e2e))
	b.WriteString("# TYPE vllm:num_requests_running gauge\n")
	fmt.Fprintf(&b, "vllm:num_requests_running{model_name=\"m\"} %g\n", running)
	b.WriteString("# TYPE vllm:num_requests_waiting gauge\n")
	fmt.Fprintf(&b, "vllm:num_requests_waiting{model_name=\"m\"} %g\n", waiting)
	b.WriteString("# TYPE vllm:kv_cache_usage_perc gauge\n")
	fmt.Fprintf(&b, "vllm:kv_cache_usage_perc{model_name=\"m\"} %g\n", kv)
	b.WriteString("# TYPE vllm:num_preemptions counter\n") // Python 客户端：TYPE 不带 _total
	fmt.Fprintf(&b, "vllm:num_preemptions_total{model_name=\"m\"} %g\n", preempt)
	b.WriteString("# TYPE vllm:prefix_cache_hits counter\n")
	fmt.Fprintf(&b, "vllm:prefix_cache_hits_total{model_name=\"m\"} %g\n", hits)
	b.WriteString("# TYPE vllm:prefix_cache_queries counter\n")
	fmt.Fprintf(&b, "vllm:prefix_cache_queries_total{model_name=\"m\"} %g\n", queries)
	return b.String()
}

// TestParseFields 验证一次抓取取出的每个值，以及缺失指标时的 NaN / nil。
func TestParseFields(t *testing.T) {
	s, err := Parse(strings.NewReader(vllmText(4, 3, 2, 0.25, 7, 30, 80)))
	if err != nil {
		t.Fatal(err)
	}
	h := s.Hist[HistE2E]
	if h == nil || h.Count != 4 || h.Sum != 1 || len(h.Upper) != 3 || !math.IsInf(h.Upper[2], 1) || h.Cum[0] != 4 {
		t.Fatalf("e2e histogram %+v", h)
	}
	if s.Hist[HistTTFT] != nil || s.Hist[HistTPOT] != nil {
		t.Fatal("absent histograms must be nil")
	}
	if s.Running != 3 || s.Waiting != 2 || s.Preemptions != 7 || s.PrefixHits != 30 || s.PrefixQueries != 80 {
		t.Fatalf("gauges/counters %+v", s)
	}
	if s.KVUsage() != 0.25 || s.KVN != 1 {
		t.Fatalf("kv usage %v (n %d)", s.KVUsage(), s.KVN)
	}
	if !math.IsNaN(s.Accept) || !math.IsNaN(s.Draft) {
		t.Fatal("absent spec-decode counters must be NaN")
	}
	empty, err := Parse(strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(empty.Running) || !math.IsNaN(empty.Preemptions) || !math.IsNaN(empty.KVUsage()) || !math.IsNaN(empty.PrefixHits) {
		t.Fatalf("empty exposition %+v", empty)
	}
	if !math.IsNaN((*Snapshot)(nil).KVUsage()) {
		t.Fatal("nil snapshot KV usage must be NaN")
	}
	// v0 的名字（gpu_ 前缀）与旧的 KV gauge 名同样被识别。
	old := "# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc 0.5\nvllm:gpu_cache_usage_perc{x=\"1\"} 0.7\n" +
		"# TYPE vllm:gpu_prefix_cache_hits_total counter\nvllm:gpu_prefix_cache_hits_total 5\n" +
		"# TYPE vllm:num_preemptions counter\nvllm:num_preemptions 2\n"
	o, err := Parse(strings.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(o.KVUsage()-0.6) > 1e-12 || o.PrefixHits != 5 || o.Preemptions != 2 {
		t.Fatalf("v0 names: kv %v hits %v preempt %v", o.KVUsage(), o.PrefixHits, o.Preemptions)
	}
	if _, err := Parse(strings.NewReader("garbage{")); err == nil || !strings.HasPrefix(err.Error(), "servermetrics: parse /metrics:") {
		t.Fatalf("bad exposition: %v", err)
	}
}

// TestAddAndDelta 验证两个实例相加（KV 占用按实例平均）与直方图差值的各种退化情形。
func TestAddAndDelta(t *testing.T) {
	a, _ := Parse(strings.NewReader(vllmText(4, 3, 2, 0.2, 7, 30, 80)))
	b, _ := Parse(strings.NewReader(vllmText(6, 1, 0, 0.6, 1, 10, 20)))
	sum := Add(a, b)
	if sum.Hist[HistE2E].Count != 10 || sum.Hist[HistE2E].Cum[0] != 10 || sum.Running != 4 || sum.Waiting != 2 ||
		sum.Preemptions != 8 || sum.PrefixHits != 40 || sum.PrefixQueries != 100 {
		t.Fatalf("sum %+v", sum)
	}
	if math.Abs(sum.KVUsage()-0.4) > 1e-12 {
		t.Fatalf("kv usage of two instances %v, want the mean 0.4", sum.KVUsage())
	}
	if a.Hist[HistE2E].Count != 4 {
		t.Fatal("Add modified its input")
	}
	if Add(nil, b) != b {
		t.Fatal("Add(nil, b) must be b")
	}
	// 桶布局不同的实例：该直方图不可得，而不是错加。
	other := &Snapshot{Hist: [3]*Histogram{HistE2E: {Upper: []float64{math.Inf(1)}, Cum: []float64{1}, Count: 1}}}
	if Add(a, other).Hist[HistE2E] != nil {
		t.Fatal("mismatched bucket layouts must not be added")
	}
	d := b.Hist[HistE2E].Delta(a.Hist[HistE2E])
	if d == nil || d.Count != 2 || d.Cum[0] != 2 || d.Sum != 0.5 {
		t.Fatalf("delta %+v", d)
	}
	if a.Hist[HistE2E].Delta(b.Hist[HistE2E]) != nil {
		t.Fatal("a counter reset (restart) must give nil")
	}
	if (*Histogram)(nil).Delta(a.Hist[HistE2E]) != nil || a.Hist[HistE2E].Delta(nil) != a.Hist[HistE2E] {
		t.Fatal("nil handling of Delta")
	}
	if other.Hist[HistE2E].Delta(a.Hist[HistE2E]) != nil {
		t.Fatal("different layouts must give nil")
	}
	shifted := &Histogram{Upper: []float64{0.5, 2, math.Inf(1)}, Cum: []float64{9, 9, 9}, Count: 9}
	if shifted.Delta(a.Hist[HistE2E]) != nil {
		t.Fatal("different bounds must give nil")
	}
}

// metricsServer 起一个给出 body() 的 /metrics 服务端，返回它的 base URL（带 /v1，与 loadgen 的
// Target 一样）与请求计数。
func metricsServer(t *testing.T, body func() string) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		n.Add(1)
		_, _ = w.Write([]byte(body()))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", &n
}

// TestScraperSumsInstancesAndFails 验证多实例求和、任一实例失败整体为 nil、非 200、超过
// maxBody 与超时都给出 nil（不可得），而不是偏小或截断的数据。
func TestScraperSumsInstancesAndFails(t *testing.T) {
	ctx := context.Background()
	u1, _ := metricsServer(t, func() string { return vllmText(4, 3, 2, 0.2, 7, 30, 80) })
	u2, _ := metricsServer(t, func() string { return vllmText(6, 1, 0, 0.6, 1, 10, 20) })
	s := NewScraper(http.DefaultClient, []string{u1, u2 + "/"}, 0, 0)
	if s.timeout != DefaultTimeout || s.maxBody != DefaultMaxBody {
		t.Fatalf("defaults %v %v", s.timeout, s.maxBody)
	}
	before := time.Now()
	snap := s.Scrape(ctx)
	if snap == nil || snap.Hist[HistE2E].Count != 10 || snap.Running != 4 || snap.At.Before(before) {
		t.Fatalf("sum of two instances %+v", snap)
	}
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "nope", http.StatusServiceUnavailable)
	}))
	defer bad.Close()
	if got := NewScraper(http.DefaultClient, []string{u1, bad.URL}, 0, 0).Scrape(ctx); got != nil {
		t.Fatalf("one failing instance must make the scrape unavailable, got %+v", got)
	}
	if _, err := NewScraper(http.DefaultClient, nil, 0, 0).one(ctx, bad.URL+"/metrics"); err == nil || !strings.Contains(err.Error(), "HTTP 503") {
		t.Fatalf("non-200 error %v", err)
	}
	small := NewScraper(http.DefaultClient, []string{u1}, 0, 100)
	if _, err := small.one(ctx, small.urls[0]); err == nil || !strings.Contains(err.Error(), errTooLarge.Error()) {
		t.Fatalf("oversized /metrics: %v", err)
	}
	block := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(block)
	if got := NewScraper(http.DefaultClient, []string{slow.URL}, 50*time.Millisecond, 0).Scrape(ctx); got != nil {
		t.Fatal("a hung /metrics must time out to nil")
	}
	if got := NewScraper(http.DefaultClient, []string{"http://[::1"}, 0, 0).Scrape(ctx); got != nil {
		t.Fatal("a malformed URL must give nil")
	}
}

// TestScraperSettled 验证 Settled 等服务端把已完成的请求计入 E2E 直方图：前两次抓取只有 1 个，
// 第三次起有 3 个，served=3 时返回的是第三次的结果。
func TestScraperSettled(t *testing.T) {
	var calls atomic.Int64
	u, n := metricsServer(t, func() string {
		if calls.Add(1) <= 2 {
			return vllmText(1, 0, 0, 0, 0, 0, 0)
		}
		return vllmText(3, 0, 0, 0, 0, 0, 0)
	})
	s := NewScraper(http.DefaultClient, []string{u}, 0, 0)
	base := &Snapshot{Hist: [3]*Histogram{HistE2E: {Upper: []float64{0.5, 1, math.Inf(1)}, Cum: []float64{0, 0, 0}}}}
	got := s.Settled(context.Background(), base, 3)
	if got == nil || got.Hist[HistE2E].Count != 3 || n.Load() != 3 {
		t.Fatalf("settled after %d scrapes: %+v", n.Load(), got)
	}
	// 已经够数时只抓一次；没有基准时也只抓一次。
	n.Store(0)
	if got := s.Settled(context.Background(), base, 1); got == nil || n.Load() != 1 {
		t.Fatalf("already settled: %d scrapes", n.Load())
	}
	n.Store(0)
	if got := s.Settled(context.Background(), nil, 99); got == nil || n.Load() != 1 {
		t.Fatalf("no base: %d scrapes", n.Load())
	}
	// ctx 结束时不再等待，返回最后一次的结果。
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := s.Settled(ctx, base, 99); got != nil {
		t.Fatalf("canceled ctx: scrape itself fails, got %+v", got)
	}
}

// TestPeakSampler 验证组内 KV 占用峰值：采样期间服务端给出 0.9 后回落到 0.3，峰值是 0.9；
// before 没有 KV 指标时不启动采样，Finish 仍可调用且可重复调用。
func TestPeakSampler(t *testing.T) {
	var kv atomic.Value
	kv.Store(0.2)
	u, _ := metricsServer(t, func() string { return vllmText(0, 0, 0, kv.Load().(float64), 0, 0, 0) })
	s := NewScraper(http.DefaultClient, []string{u}, 0, 0)
	before := s.Scrape(context.Background())
	kv.Store(0.9)
	p := s.StartPeak(context.Background(), before)
	// 等到组内采样记下 0.9（采样间隔 200ms；繁忙的机器上可能更久，期限只防挂死）。
	deadline := time.Now().Add(30 * time.Second)
	for {
		p.mu.Lock()
		peak := p.peak
		p.mu.Unlock()
		if peak == 0.9 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no in-group sample within 30s (peak %v)", peak)
		}
		time.Sleep(10 * time.Millisecond)
	}
	kv.Store(0.3)
	after := s.Scrape(context.Background())
	if got := p.Finish(after); got != 0.9 {
		t.Fatalf("peak %v, want 0.9", got)
	}
	if got := p.Finish(nil); got != 0.9 {
		t.Fatalf("second Finish %v", got)
	}
	none := s.StartPeak(context.Background(), &Snapshot{})
	if got := none.Finish(nil); !math.IsNaN(got) {
		t.Fatalf("no KV metric: peak %v, want NaN", got)
	}
	none2 := s.StartPeak(context.Background(), &Snapshot{})
	if got := none2.Finish(after); got != 0.3 {
		t.Fatalf("no KV before, KV after: peak %v, want 0.3", got)
	}
}

// TestInstanceScraper：逐个给出的实例带名字与 PD 角色，求和快照的 Parts 是各实例的快照；
// 名字缺省取 host:port（不带 user:pass）；阶段直方图被解析并相加。
func TestInstanceScraper(t *testing.T) {
	phases := `# TYPE vllm:request_queue_time_seconds histogram
vllm:request_queue_time_seconds_bucket{le="0.3"} 3
vllm:request_queue_time_seconds_bucket{le="+Inf"} 4
vllm:request_queue_time_seconds_sum 0.9
vllm:request_queue_time_seconds_count 4
`
	u1, _ := metricsServer(t, func() string { return vllmText(4, 3, 2, 0.2, 7, 30, 80) + phases })
	u2, _ := metricsServer(t, func() string { return vllmText(6, 1, 0, 0.6, 1, 10, 20) + phases })
	strip := func(u string) string { return strings.TrimSuffix(u, "/v1") + "/metrics" }
	s := NewInstanceScraper(http.DefaultClient, []Instance{{Name: "p", Role: "prefill", URL: strip(u1)}, {Role: "decode", URL: strip(u2)}}, 0, 0)
	snap := s.Scrape(context.Background())
	if snap == nil || len(snap.Parts) != 2 || snap.Parts[0].Name != "p" || snap.Parts[0].Role != "prefill" || snap.Parts[1].Role != "decode" {
		t.Fatalf("parts %+v", snap)
	}
	if snap.Parts[1].Name != strings.TrimPrefix(strings.TrimSuffix(u2, "/v1"), "http://") {
		t.Fatalf("default name %q", snap.Parts[1].Name)
	}
	if q := snap.Phase[PhaseQueue]; q == nil || q.Count != 8 || q.Sum != 1.8 || snap.Phase[PhasePrefill] != nil {
		t.Fatalf("summed phases %+v", snap.Phase)
	}
	one := NewScraper(http.DefaultClient, []string{u1}, 0, 0).Scrape(context.Background())
	if one == nil || len(one.Parts) != 1 || one.Name != "" || one.Parts[0] == one {
		t.Fatalf("single instance %+v", one)
	}
	for in, want := range map[string]string{"http://u:pw@h:1/metrics": "h:1", "https://h2/x": "h2", "h3": "h3"} {
		if got := hostOf(in); got != want {
			t.Errorf("hostOf(%q) = %q, want %q", in, got, want)
		}
	}
	if addHist(&Histogram{Upper: []float64{1}}, &Histogram{Upper: []float64{2}}) != nil || addHist(nil, &Histogram{}) != nil {
		t.Fatal("mismatched histograms added")
	}
}

// TestAddRefusesDifferentBounds：两个实例的直方图桶数相同但上界不同（不同版本的 vLLM）时，
// 和不可得，而不是把不同的桶逐个相加。
func TestAddRefusesDifferentBounds(t *testing.T) {
	x := &Snapshot{Hist: [3]*Histogram{{Upper: []float64{0.1, math.Inf(1)}, Cum: []float64{1, 2}, Count: 2}}}
	y := &Snapshot{Hist: [3]*Histogram{{Upper: []float64{0.5, math.Inf(1)}, Cum: []float64{1, 2}, Count: 2}}}
	if got := Add(x, y); got.Hist[0] != nil {
		t.Fatalf("different bucket bounds summed: %+v", got.Hist[0])
	}
	if got := Add(x, x); got.Hist[0] == nil || got.Hist[0].Count != 4 {
		t.Fatalf("same bounds: %+v", got.Hist[0])
	}
}

// TestScrapeGaugesMatchesFullParse：峰值采样的逐行扫描与完整解析给出相同的 KV 占用与排队数
// （两个实例：KV 取平均、排队相加；v1 名字优先于 v0 的 gpu_ 名字；不认识的行、注释、带时间戳
// 的样本都不影响），失败的实例让结果为 nil。
func TestScrapeGaugesMatchesFullParse(t *testing.T) {
	old := "# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc{model_name=\"m\"} 0.9\nvllm:num_requests_waiting_other 50\n"
	u1, _ := metricsServer(t, func() string { return old + vllmText(4, 3, 2, 0.2, 7, 30, 80) })
	u2, _ := metricsServer(t, func() string {
		txt := vllmText(6, 1, 5, 0.6, 1, 10, 20)
		kv := "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.6\n"
		return strings.Replace(txt, kv, kv+"vllm:kv_cache_usage_perc{model_name=\"m\",engine=\"1\"} 0.4 1700000000000\n", 1)
	})
	s := NewScraper(http.DefaultClient, []string{u1, u2}, 0, 0)
	full, fast := s.Scrape(context.Background()), s.ScrapeGauges(context.Background())
	if full == nil || fast == nil {
		t.Fatalf("scrapes %v %v", full, fast)
	}
	if math.Abs(fast.KVUsage()-full.KVUsage()) > 1e-12 || fast.Waiting != full.Waiting || fast.Waiting != 7 {
		t.Fatalf("fast kv %v waiting %v, full kv %v waiting %v", fast.KVUsage(), fast.Waiting, full.KVUsage(), full.Waiting)
	}
	if want := (0.2 + (0.4+0.6)/2) / 2; math.Abs(fast.KVUsage()-want) > 1e-12 {
		t.Fatalf("kv %v, want %v", fast.KVUsage(), want)
	}
	bare, _ := metricsServer(t, func() string { return "# nothing here\nfoo 1\n" })
	if g := NewScraper(http.DefaultClient, []string{bare}, 0, 0).ScrapeGauges(context.Background()); g == nil || !math.IsNaN(g.KVUsage()) || !math.IsNaN(g.Waiting) {
		t.Fatalf("no gauges: %+v", g)
	}
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", 500) }))
	defer bad.Close()
	if g := NewScraper(http.DefaultClient, []string{u1, bad.URL}, 0, 0).ScrapeGauges(context.Background()); g != nil {
		t.Fatal("a failing instance must give nil")
	}
	if g := NewScraper(http.DefaultClient, []string{"http://[::1"}, 0, 0).ScrapeGauges(context.Background()); g != nil {
		t.Fatal("a malformed URL must give nil")
	}
	for _, line := range []string{"vllm:kv_cache_usage_perc{broken 1", "vllm:kv_cache_usage_perc{a=\"b\"}", "vllm:kv_cache_usage_perc x", "vllm:kv_cache_usage_percx 1"} {
		if _, _, ok := sampleOf([]byte(line), metricKVUsage); ok {
			t.Errorf("%q parsed as a sample", line)
		}
	}
}

package loadgen

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// vLLM 在 /metrics 上暴露的直方图与计数器名。TPOT 在新版本改名为
// inter_token_latency，两个名字按顺序尝试。
var (
	metricTTFT        = []string{"vllm:time_to_first_token_seconds"}
	metricTPOT        = []string{"vllm:time_per_output_token_seconds", "vllm:inter_token_latency_seconds"}
	metricE2E         = []string{"vllm:e2e_request_latency_seconds"}
	metricSpecAccept  = "vllm:spec_decode_num_accepted_tokens_total"
	metricSpecDraft   = "vllm:spec_decode_num_draft_tokens_total"
	serverMetricNames = [][]string{metricTTFT, metricTPOT, metricE2E}
)

// histSnap 是一个直方图在某一时刻的累计值（各实例、各标签序列求和）。
type histSnap struct {
	upper []float64 // 升序的桶上界，最后一个为 +Inf
	cum   []float64 // 对应的累计计数
	sum   float64
	count float64
}

// metricsSnap 是一次 /metrics 抓取中 loadgen 关心的部分；缺失的项为 nil / NaN。
type metricsSnap struct {
	hist          [3]*histSnap // ttft, tpot, e2e
	accept, draft float64
}

// parseMetrics 用 expfmt 解析 Prometheus 文本格式，抽取 TTFT/TPOT/E2E 直方图与推测解码计数器。
func parseMetrics(r io.Reader) (*metricsSnap, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("loadgen: parse /metrics: %w", err)
	}
	s := &metricsSnap{accept: counterSum(fams, metricSpecAccept), draft: counterSum(fams, metricSpecDraft)}
	for i, names := range serverMetricNames {
		for _, n := range names {
			if h := histogramSum(fams[n]); h != nil {
				s.hist[i] = h
				break
			}
		}
	}
	return s, nil
}

// counterSum 对计数器的全部序列求和。Python 客户端把 TYPE 写成不带 _total 的名字，
// 而样本带 _total，expfmt 因此可能把它解析成 untyped 族，两种名字都要查。
func counterSum(fams map[string]*dto.MetricFamily, name string) float64 {
	for _, n := range []string{name, strings.TrimSuffix(name, "_total")} {
		f, ok := fams[n]
		if !ok {
			continue
		}
		total, found := 0.0, false
		for _, m := range f.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				total += m.GetCounter().GetValue()
				found = true
			case m.GetUntyped() != nil:
				total += m.GetUntyped().GetValue()
				found = true
			}
		}
		if found {
			return total
		}
	}
	return math.NaN()
}

// histogramSum 把一个直方图族的全部序列按桶上界求和；不是直方图或没有序列时返回 nil。
func histogramSum(f *dto.MetricFamily) *histSnap {
	if f == nil || f.GetType() != dto.MetricType_HISTOGRAM || len(f.GetMetric()) == 0 {
		return nil
	}
	byUpper := map[float64]float64{}
	h := &histSnap{}
	for _, m := range f.GetMetric() {
		hm := m.GetHistogram()
		if hm == nil {
			continue
		}
		h.sum += hm.GetSampleSum()
		h.count += float64(hm.GetSampleCount())
		hasInf := false
		for _, b := range hm.GetBucket() {
			byUpper[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			hasInf = hasInf || math.IsInf(b.GetUpperBound(), 1)
		}
		if !hasInf { // 文本格式里 +Inf 桶可能被省略，此时它等于样本总数
			byUpper[math.Inf(1)] += float64(hm.GetSampleCount())
		}
	}
	for u := range byUpper {
		h.upper = append(h.upper, u)
	}
	sort.Float64s(h.upper)
	for _, u := range h.upper {
		h.cum = append(h.cum, byUpper[u])
	}
	return h
}

// delta 返回 after − before 的直方图；桶布局不一致或计数回退（服务重启）时返回 nil。
func (after *histSnap) delta(before *histSnap) *histSnap {
	if after == nil {
		return nil
	}
	if before == nil {
		return after
	}
	if len(before.upper) != len(after.upper) {
		return nil
	}
	d := &histSnap{upper: after.upper, cum: make([]float64, len(after.cum)), sum: after.sum - before.sum, count: after.count - before.count}
	for i := range after.cum {
		if before.upper[i] != after.upper[i] {
			return nil
		}
		d.cum[i] = after.cum[i] - before.cum[i]
		if d.cum[i] < 0 {
			return nil
		}
	}
	if d.count < 0 {
		return nil
	}
	return d
}

// quantile 按 Prometheus histogram_quantile 的方式在桶内线性插值（q ∈ [0,1]）：
// 落在 +Inf 桶时返回最高的有限上界；第一个桶的下界取 0。
func (h *histSnap) quantile(q float64) float64 {
	n := len(h.cum)
	if n == 0 || h.cum[n-1] == 0 {
		return math.NaN()
	}
	rank := q * h.cum[n-1]
	b := sort.SearchFloat64s(h.cum, rank)
	if b >= n {
		b = n - 1
	}
	if math.IsInf(h.upper[b], 1) {
		if n >= 2 {
			return h.upper[n-2]
		}
		return math.NaN()
	}
	start, end := 0.0, h.upper[b]
	if b > 0 {
		start = h.upper[b-1]
	} else if end <= 0 {
		return end
	}
	count := h.cum[b]
	if b > 0 {
		count -= h.cum[b-1]
		rank -= h.cum[b-1]
	}
	if count == 0 {
		return end
	}
	return start + (end-start)*(rank/count)
}

// maxBound 返回最高的非空有限桶的上界（直方图能给出的 MAX 的最好估计）。
func (h *histSnap) maxBound() float64 {
	prev := 0.0
	best := math.NaN()
	for i, u := range h.upper {
		if math.IsInf(u, 1) {
			break
		}
		if h.cum[i] > prev {
			best = u
		}
		prev = h.cum[i]
	}
	return best
}

// latency 把一个秒为单位的增量直方图转成 Latency；无样本返回零值（导出为 -1）。
func (h *histSnap) latency() Latency {
	if h == nil || h.count <= 0 {
		return Latency{}
	}
	sec := func(v float64) time.Duration {
		if math.IsNaN(v) {
			return -1
		}
		return time.Duration(v * float64(time.Second))
	}
	return Latency{
		Count: int64(h.count),
		P50:   sec(h.quantile(0.50)),
		P75:   sec(h.quantile(0.75)), P90: sec(h.quantile(0.90)), P95: sec(h.quantile(0.95)), P99: sec(h.quantile(0.99)),
		Min: -1, Max: sec(h.maxBound()), Avg: sec(h.sum / h.count),
	}
}

// scraper 抓取全部实例的 /metrics 并求和。baseURL 以 /v1 结尾时，/metrics 位于其根路径。
// 每次抓取受 timeout 约束（0 为 10s），响应体不超过 maxBody（0 为 64 MiB）。
type scraper struct {
	client  *http.Client
	urls    []string
	timeout time.Duration
	maxBody int64
}

// newScraper 由各实例的 base URL 推出 /metrics 地址。
func newScraper(c *http.Client, bases []string) *scraper {
	s := &scraper{client: c}
	for _, b := range bases {
		s.urls = append(s.urls, strings.TrimSuffix(strings.TrimSuffix(b, "/"), "/v1")+"/metrics")
	}
	return s
}

// scrape 返回各实例之和；任一实例抓取失败则返回 nil（服务端指标记为不可得，而不是偏小）。
func (s *scraper) scrape(ctx context.Context) *metricsSnap {
	var total *metricsSnap
	for _, u := range s.urls {
		snap, err := s.one(ctx, u)
		if err != nil {
			return nil
		}
		total = addSnaps(total, snap)
	}
	return total
}

// settled 抓取 /metrics，并等待服务端把已完成的请求计入直方图。服务端往往在发出
// 最后一个字节之后才更新直方图（vLLM 还有统计周期），所以当 E2E 直方图的总数少于
// base 加上本次运行已成功完成的请求数 served 时，每 20ms 重抓一次，最多等 2 秒；
// 仍不足时使用最后一次结果（并如实反映在 Count 中）。分组前后都这样做，
// 上一组或预热请求的迟到样本就不会混进本组的差值。
func (s *scraper) settled(ctx context.Context, base *metricsSnap, served int64) *metricsSnap {
	deadline := time.Now().Add(2 * time.Second)
	for {
		snap := s.scrape(ctx)
		if snap == nil || base == nil || snap.hist[2] == nil {
			return snap
		}
		d := snap.hist[2].delta(base.hist[2])
		if d == nil || d.count >= float64(served) || time.Now().After(deadline) || !sleepUntil(ctx, 20*time.Millisecond, nil) {
			return snap
		}
	}
}

// one 抓取一个实例。
func (s *scraper) one(ctx context.Context, url string) (*metricsSnap, error) {
	timeout, maxBody := s.timeout, s.maxBody
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if maxBody <= 0 {
		maxBody = DefaultMaxEventBytes
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("loadgen: scrape %s: HTTP %d", url, resp.StatusCode)
	}
	// 超过上限的 /metrics 读到上限即报错，服务端指标记为不可得（而不是用截断的数据）。
	return parseMetrics(&capReader{r: resp.Body, left: maxBody})
}

// addSnaps 把两个实例的抓取结果相加（直方图需桶布局一致，否则该项置空）。
func addSnaps(a, b *metricsSnap) *metricsSnap {
	if a == nil {
		return b
	}
	out := &metricsSnap{accept: a.accept + b.accept, draft: a.draft + b.draft}
	for i := range a.hist {
		x, y := a.hist[i], b.hist[i]
		switch {
		case x == nil || y == nil:
			out.hist[i] = nil
		case len(x.upper) != len(y.upper):
			out.hist[i] = nil
		default:
			h := &histSnap{upper: x.upper, cum: make([]float64, len(x.cum)), sum: x.sum + y.sum, count: x.count + y.count}
			for j := range x.cum {
				h.cum[j] = x.cum[j] + y.cum[j]
			}
			out.hist[i] = h
		}
	}
	return out
}

// applyServer 把前后两次抓取的差值写入汇总；任一次缺失则全部为 -1 / 不可得。
func applyServer(sum *Summary, before, after *metricsSnap) {
	sum.SpecAcceptRate = Unmeasured()
	if before == nil || after == nil {
		return
	}
	sum.ServerTTFT = after.hist[0].delta(before.hist[0]).latency()
	sum.ServerTPOT = after.hist[1].delta(before.hist[1]).latency()
	sum.ServerE2E = after.hist[2].delta(before.hist[2]).latency()
	da, dd := after.accept-before.accept, after.draft-before.draft
	if !math.IsNaN(da) && !math.IsNaN(dd) && dd > 0 && da >= 0 {
		sum.SpecAcceptRate.Avg = da / dd
		sum.SpecAcceptRate.Count = 1
	}
}

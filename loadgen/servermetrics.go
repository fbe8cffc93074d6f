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
	// 时间线采样的调度状态（vLLM v1 的名字在前，旧名在后）。KV-cache 用量是 0..1 的比例。
	metricRunning     = []string{"vllm:num_requests_running"}
	metricWaiting     = []string{"vllm:num_requests_waiting"}
	metricKVUsage     = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}
	metricPreemptions = []string{"vllm:num_preemptions_total", "vllm:num_preemptions"}
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
	// 时间线用的调度状态：各实例之和（KV-cache 用量为 kvSum/kvN 的平均）；缺失为 NaN。
	running, waiting, preempt float64
	kvSum                     float64
	kvN                       int
	// at 是抓取完成的时刻（墙钟）：分片合并据此只在各分片开始施压之前的"前"快照里挑选（serverWindow）。
	at time.Time
	// 前缀缓存计数器（token，各实例之和）；缺失为 NaN，见 cachetruth.go
	prefixHits, prefixQueries float64
}

// parseMetrics 用 expfmt 解析 Prometheus 文本格式，抽取 TTFT/TPOT/E2E 直方图与推测解码计数器。
func parseMetrics(r io.Reader) (*metricsSnap, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("loadgen: parse /metrics: %w", err)
	}
	s := &metricsSnap{accept: counterSum(fams, metricSpecAccept), draft: counterSum(fams, metricSpecDraft),
		running: gaugeSum(fams, metricRunning), waiting: gaugeSum(fams, metricWaiting), preempt: math.NaN(), kvSum: math.NaN()}
	for _, n := range metricPreemptions {
		if v := counterSum(fams, n); !math.IsNaN(v) {
			s.preempt = v
			break
		}
	}
	s.prefixHits, s.prefixQueries = firstCounter(fams, metricPrefixHits), firstCounter(fams, metricPrefixQueries)
	if v, n := gaugeMean(fams, metricKVUsage); n > 0 {
		s.kvSum, s.kvN = v, 1
	}
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

// firstCounter 返回 names 中第一个存在的计数器之和；都不存在时为 NaN。
func firstCounter(fams map[string]*dto.MetricFamily, names []string) float64 {
	for _, n := range names {
		if v := counterSum(fams, n); !math.IsNaN(v) {
			return v
		}
	}
	return math.NaN()
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

// gaugeSum 对第一个存在的 gauge（或 untyped）族的全部序列求和；都不存在时为 NaN。
func gaugeSum(fams map[string]*dto.MetricFamily, names []string) float64 {
	v, n := gaugeAgg(fams, names)
	if n == 0 {
		return math.NaN()
	}
	return v
}

// gaugeMean 返回第一个存在的 gauge 族各序列的平均值与序列数（比例类指标不能相加）。
func gaugeMean(fams map[string]*dto.MetricFamily, names []string) (float64, int) {
	v, n := gaugeAgg(fams, names)
	if n == 0 {
		return math.NaN(), 0
	}
	return v / float64(n), n
}

// gaugeAgg 返回第一个有样本的 gauge 族的和与序列数。
func gaugeAgg(fams map[string]*dto.MetricFamily, names []string) (float64, int) {
	for _, name := range names {
		f, ok := fams[name]
		if !ok {
			continue
		}
		total, n := 0.0, 0
		for _, m := range f.GetMetric() {
			switch {
			case m.GetGauge() != nil:
				total += m.GetGauge().GetValue()
				n++
			case m.GetUntyped() != nil:
				total += m.GetUntyped().GetValue()
				n++
			}
		}
		if n > 0 {
			return total, n
		}
	}
	return 0, 0
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

// smallDeltaTolerance 与 Prometheus promql/quantile.go 相同：相邻累计计数的相对差
// 小于它时视为浮点误差并抹平。
const smallDeltaTolerance = 1e-12

// buckets 返回按 Prometheus BucketQuantile 预处理后的桶：按上界排序、合并同上界的桶、
// 强制累计计数单调（并抹平浮点误差级的差）。不满足 histogram_quantile 前提
// （最高桶不是 +Inf、少于 2 个桶）时返回 nil。
func (h *histSnap) buckets() (upper, cum []float64) {
	n := len(h.upper)
	if n == 0 || !math.IsInf(h.upper[n-1], 1) {
		return nil, nil
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return h.upper[idx[a]] < h.upper[idx[b]] })
	for _, i := range idx {
		if k := len(upper); k > 0 && upper[k-1] == h.upper[i] {
			cum[k-1] += h.cum[i]
			continue
		}
		upper, cum = append(upper, h.upper[i]), append(cum, h.cum[i])
	}
	if len(upper) < 2 {
		return nil, nil
	}
	prev := cum[0]
	for i := 1; i < len(cum); i++ {
		switch {
		case cum[i] > prev && math.Abs(cum[i]-prev)/cum[i] < smallDeltaTolerance:
			cum[i] = prev
		case cum[i] < prev:
			cum[i] = prev
		}
		prev = cum[i]
	}
	return upper, cum
}

// quantile 逐条按 Prometheus histogram_quantile（promql/quantile.go 的 BucketQuantile）计算
// q ∈ [0,1] 分位数，因此与 Grafana 上 histogram_quantile(q, sum by (le)(increase(…)))
// 对同一区间给出的值相同：秩 rank=q·总数，在第一个累计计数 ≥ rank 的有限桶内线性插值；
// 落在 +Inf 桶时返回最高的有限上界；最低桶的下界取 0（其上界 ≤ 0 时直接返回上界）。
// 分辨率就是桶宽：样本全部落在 vLLM E2E 的第一个桶 (0, 0.3s] 时，TP75 必然是 225ms，
// 与真实分布无关（见 docs/loadgen.md）。结果另外夹在非空桶的范围内（Prometheus 的插值
// 本就不会越界，这只防住强制单调后的退化情形）。没有样本或桶不合法时返回 NaN。
func (h *histSnap) quantile(q float64) float64 {
	upper, cum := h.buckets()
	if upper == nil || math.IsNaN(q) {
		return math.NaN()
	}
	n := len(upper)
	obs := cum[n-1]
	if obs == 0 {
		return math.NaN()
	}
	rank := q * obs
	b := sort.Search(n-1, func(i int) bool { return cum[i] >= rank })
	var v float64
	switch {
	case b == n-1:
		v = upper[n-2]
	case b == 0 && upper[0] <= 0:
		v = upper[0]
	default:
		start, end, count := 0.0, upper[b], cum[b]
		if b > 0 {
			start = upper[b-1]
			count -= cum[b-1]
			rank -= cum[b-1]
		}
		v = start + (end-start)*(rank/count)
	}
	lo, hi := nonEmptyRange(upper, cum)
	return min(max(v, lo), hi)
}

// nonEmptyRange 返回非空桶覆盖的范围：最低非空桶的下界（第一个桶按 Prometheus 取 0，
// 上界 ≤ 0 时取上界本身）到最高非空桶的上界（非空的是 +Inf 桶时取最高有限上界）。
func nonEmptyRange(upper, cum []float64) (lo, hi float64) {
	n := len(upper)
	first, last, prev := -1, -1, 0.0
	for i := range n {
		if cum[i] > prev {
			if first < 0 {
				first = i
			}
			last = i
		}
		prev = cum[i]
	}
	switch {
	case first == 0 && upper[0] <= 0:
		lo = upper[0]
	case first > 0:
		lo = upper[first-1]
	}
	hi = upper[last]
	if last == n-1 {
		hi = upper[n-2]
	}
	return lo, hi
}

// maxBound 返回直方图能给出的 MAX：最高非空桶的上界；非空的是 +Inf 桶时为最高有限上界
// （真实最大值只知道在它之上，取它保证 MAX 不小于任何分位数）。
func (h *histSnap) maxBound() float64 {
	upper, cum := h.buckets()
	if upper == nil || cum[len(cum)-1] == 0 {
		return math.NaN()
	}
	_, hi := nonEmptyRange(upper, cum)
	return hi
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
		return time.Duration(math.Round(v * float64(time.Second))) // 四舍五入到纳秒，0.3×0.75 不会截成 224.999999ms
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
	if total != nil {
		total.at = time.Now()
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
	out := &metricsSnap{accept: a.accept + b.accept, draft: a.draft + b.draft, running: a.running + b.running,
		waiting: a.waiting + b.waiting, preempt: a.preempt + b.preempt, kvSum: a.kvSum + b.kvSum, kvN: a.kvN + b.kvN,
		prefixHits: a.prefixHits + b.prefixHits, prefixQueries: a.prefixQueries + b.prefixQueries}
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

package servermetrics

import (
	"context"
	"errors"
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
	// 请求阶段直方图（vLLM v1 的 FinishedRequestStats；下标见 PhaseQueue 等）。
	phaseMetricNames = [NumPhases]string{"vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds",
		"vllm:request_decode_time_seconds", "vllm:request_inference_time_seconds"}
	// 时间线采样的调度状态（vLLM v1 的名字在前，旧名在后）。KV-cache 用量是 0..1 的比例。
	metricRunning     = []string{"vllm:num_requests_running"}
	metricWaiting     = []string{"vllm:num_requests_waiting"}
	metricKVUsage     = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}
	metricPreemptions = []string{"vllm:num_preemptions_total", "vllm:num_preemptions"}
)

// 直方图在 Snapshot.Hist 中的下标。
const (
	HistTTFT = iota // vllm:time_to_first_token_seconds
	HistTPOT        // vllm:time_per_output_token_seconds（新版本 vllm:inter_token_latency_seconds）
	HistE2E         // vllm:e2e_request_latency_seconds
)

// 阶段直方图在 Snapshot.Phase 中的下标。
const (
	PhaseQueue     = iota // vllm:request_queue_time_seconds（WAITING：到达 → 第一次被调度）
	PhasePrefill          // vllm:request_prefill_time_seconds（第一次被调度 → 首 token）
	PhaseDecode           // vllm:request_decode_time_seconds（首 token → 最后一个 token）
	PhaseInference        // vllm:request_inference_time_seconds（第一次被调度 → 最后一个 token）
	NumPhases
)

// Histogram 是一个直方图在某一时刻的累计值（各实例、各标签序列求和），单位与指标相同（秒）。
// 字段导出是为了让分片把快照原样编码、在合并时还原（loadgen 的分片编解码）。
type Histogram struct {
	Upper []float64 // 升序的桶上界，最后一个为 +Inf
	Cum   []float64 // 对应的累计计数
	Sum   float64
	Count float64
}

// Snapshot 是一次 /metrics 抓取中 loadgen 关心的部分（全部实例之和）；缺失的直方图为 nil，
// 缺失的计数器与 gauge 为 NaN。
type Snapshot struct {
	// Hist 是 TTFT、TPOT、E2E 直方图（下标见 HistTTFT 等）。
	Hist [3]*Histogram
	// Accept、Draft 是推测解码接受与草稿的 token 计数器。
	Accept, Draft float64
	// 时间线用的调度状态：各实例之和；Preemptions 是抢占计数器。
	Running, Waiting, Preemptions float64
	// KVSum / KVN 是各实例 KV-cache 占用比例（0..1）之和与实例数：比例不能相加，平均见 KVUsage。
	KVSum float64
	KVN   int
	// At 是抓取完成的时刻（墙钟）：分片合并据此只在各分片开始施压之前的"前"快照里挑选。
	At time.Time
	// PrefixHits、PrefixQueries 是前缀缓存计数器（token，各实例之和），见 cache.go。
	PrefixHits, PrefixQueries float64
	// Phase 是请求阶段直方图（下标见 PhaseQueue 等）；服务端不导出的为 nil。
	Phase [NumPhases]*Histogram
	// Name、Role 是单个实例的名字与 PD 角色（见 Instance）；求和得到的快照为空。
	Name, Role string
	// Parts 是求和前各实例的快照（按抓取顺序）；只有一个实例时也有一项。单个实例的快照为 nil。
	Parts []*Snapshot
}

// Parse 用 expfmt 解析一个实例的 Prometheus 文本格式，抽取 TTFT/TPOT/E2E 直方图、推测解码、
// 调度状态与前缀缓存计数器。文本不合法时返回带 "servermetrics: parse /metrics:" 前缀的错误；
// r 的长度由调用方限制（Scraper 用 maxBody）。
func Parse(r io.Reader) (*Snapshot, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("servermetrics: parse /metrics: %w", err)
	}
	s := &Snapshot{Accept: counterSum(fams, metricSpecAccept), Draft: counterSum(fams, metricSpecDraft),
		Running: gaugeSum(fams, metricRunning), Waiting: gaugeSum(fams, metricWaiting), Preemptions: math.NaN(), KVSum: math.NaN()}
	for _, n := range metricPreemptions {
		if v := counterSum(fams, n); !math.IsNaN(v) {
			s.Preemptions = v
			break
		}
	}
	s.PrefixHits, s.PrefixQueries = firstCounter(fams, metricPrefixHits), firstCounter(fams, metricPrefixQueries)
	if v, n := gaugeMean(fams, metricKVUsage); n > 0 {
		s.KVSum, s.KVN = v, 1
	}
	for i, names := range serverMetricNames {
		for _, n := range names {
			if h := histogramSum(fams[n]); h != nil {
				s.Hist[i] = h
				break
			}
		}
	}
	for i, n := range phaseMetricNames {
		s.Phase[i] = histogramSum(fams[n])
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
func histogramSum(f *dto.MetricFamily) *Histogram {
	if f == nil || f.GetType() != dto.MetricType_HISTOGRAM || len(f.GetMetric()) == 0 {
		return nil
	}
	byUpper := map[float64]float64{}
	h := &Histogram{}
	for _, m := range f.GetMetric() {
		hm := m.GetHistogram()
		if hm == nil {
			continue
		}
		h.Sum += hm.GetSampleSum()
		h.Count += float64(hm.GetSampleCount())
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
		h.Upper = append(h.Upper, u)
	}
	sort.Float64s(h.Upper)
	for _, u := range h.Upper {
		h.Cum = append(h.Cum, byUpper[u])
	}
	return h
}

// Delta 返回 after − before 的直方图（after 为 nil 时为 nil，before 为 nil 时为 after）；桶布局不一致或计数回退（服务重启）时返回 nil。
func (after *Histogram) Delta(before *Histogram) *Histogram {
	if after == nil {
		return nil
	}
	if before == nil {
		return after
	}
	if len(before.Upper) != len(after.Upper) {
		return nil
	}
	d := &Histogram{Upper: after.Upper, Cum: make([]float64, len(after.Cum)), Sum: after.Sum - before.Sum, Count: after.Count - before.Count}
	for i := range after.Cum {
		if before.Upper[i] != after.Upper[i] {
			return nil
		}
		d.Cum[i] = after.Cum[i] - before.Cum[i]
		if d.Cum[i] < 0 {
			return nil
		}
	}
	if d.Count < 0 {
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
func (h *Histogram) buckets() (upper, cum []float64) {
	n := len(h.Upper)
	if n == 0 || !math.IsInf(h.Upper[n-1], 1) {
		return nil, nil
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return h.Upper[idx[a]] < h.Upper[idx[b]] })
	for _, i := range idx {
		if k := len(upper); k > 0 && upper[k-1] == h.Upper[i] {
			cum[k-1] += h.Cum[i]
			continue
		}
		upper, cum = append(upper, h.Upper[i]), append(cum, h.Cum[i])
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

// Quantile 逐条按 Prometheus histogram_quantile（promql/quantile.go 的 BucketQuantile）计算
// q ∈ [0,1] 分位数，因此与 Grafana 上 histogram_quantile(q, sum by (le)(increase(…)))
// 对同一区间给出的值相同：秩 rank=q·总数，在第一个累计计数 ≥ rank 的有限桶内线性插值；
// 落在 +Inf 桶时返回最高的有限上界；最低桶的下界取 0（其上界 ≤ 0 时直接返回上界）。
// 分辨率就是桶宽：样本全部落在 vLLM E2E 的第一个桶 (0, 0.3s] 时，TP75 必然是 225ms，
// 与真实分布无关（见 docs/loadgen.md）。结果另外夹在非空桶的范围内（Prometheus 的插值
// 本就不会越界，这只防住强制单调后的退化情形）。没有样本或桶不合法时返回 NaN。
func (h *Histogram) Quantile(q float64) float64 {
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

// MaxBound 返回直方图能给出的 MAX：最高非空桶的上界；非空的是 +Inf 桶时为最高有限上界
// （真实最大值只知道在它之上，取它保证 MAX 不小于任何分位数）。
func (h *Histogram) MaxBound() float64 {
	upper, cum := h.buckets()
	if upper == nil || cum[len(cum)-1] == 0 {
		return math.NaN()
	}
	_, hi := nonEmptyRange(upper, cum)
	return hi
}

// DefaultTimeout 与 DefaultMaxBody 是 NewScraper 在 timeout、maxBody 不为正时使用的值。
const (
	DefaultTimeout = 10 * time.Second
	DefaultMaxBody = 64 << 20
)

// Scraper 抓取全部实例的 /metrics 并求和。baseURL 以 /v1 结尾时，/metrics 位于其根路径。
// 每次抓取受 timeout 约束，响应体不超过 maxBody 字节（超过即失败，不用截断的数据）。
// 创建后只读，可在多个 goroutine 中并发使用（时间线采样与峰值采样同时抓取）。
type Scraper struct {
	client    *http.Client
	urls      []string
	instances []Instance
	timeout   time.Duration
	maxBody   int64
}

// Instance 是一个要抓取的实例：名字（报告里的显示名，例如 host:port）、PD 角色
// （"prefill"、"decode"，混合部署为空）与 /metrics 的完整地址。
type Instance struct {
	Name, Role, URL string
}

// NewScraper 由各实例的 base URL 推出 /metrics 地址。c 是调用方的客户端（loadgen 用运行的
// 客户端，代理与 TLS 设置因此与生成请求一致）；timeout、maxBody 不为正时取 DefaultTimeout、
// DefaultMaxBody。
func NewScraper(c *http.Client, bases []string, timeout time.Duration, maxBody int64) *Scraper {
	var ins []Instance
	for _, b := range bases {
		u := strings.TrimSuffix(strings.TrimSuffix(b, "/"), "/v1") + "/metrics"
		ins = append(ins, Instance{Name: hostOf(u), URL: u})
	}
	return NewInstanceScraper(c, ins, timeout, maxBody)
}

// NewInstanceScraper 与 NewScraper 相同，但逐个给出实例的 /metrics 地址、名字与角色：
// 客户端地址不是实例本身时（PD 的代理、网关）用它直接抓取后面的实例。
func NewInstanceScraper(c *http.Client, instances []Instance, timeout time.Duration, maxBody int64) *Scraper {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	s := &Scraper{client: c, timeout: timeout, maxBody: maxBody}
	for _, in := range instances {
		if in.Name == "" {
			in.Name = hostOf(in.URL)
		}
		s.instances = append(s.instances, in)
		s.urls = append(s.urls, in.URL)
	}
	return s
}

// hostOf 返回 URL 的 host:port（解析失败时返回原串）；用作实例的默认名字。
func hostOf(u string) string {
	rest, ok := strings.CutPrefix(u, "http://")
	if !ok {
		rest, _ = strings.CutPrefix(u, "https://")
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 { // 不把 user:pass@ 当作名字
		rest = rest[i+1:]
	}
	return rest
}

// Scrape 返回各实例之和（At 为抓取完成的时刻）；任一实例抓取失败则返回 nil（服务端指标记为不可得，而不是偏小）。
func (s *Scraper) Scrape(ctx context.Context) *Snapshot {
	var total *Snapshot
	var parts []*Snapshot
	for i, u := range s.urls {
		snap, err := s.one(ctx, u)
		if err != nil {
			return nil
		}
		snap.Name, snap.Role = s.instances[i].Name, s.instances[i].Role
		parts = append(parts, snap)
		total = Add(total, snap)
	}
	if total != nil {
		if len(parts) == 1 { // 一个实例时 total 就是它本身：复制一份，免得 Parts 指向自己
			c := *total
			total = &c
			total.Name, total.Role = "", ""
		}
		total.Parts = parts
		total.At = time.Now()
	}
	return total
}

// Settled 抓取 /metrics，并等待服务端把已完成的请求计入直方图。服务端往往在发出
// 最后一个字节之后才更新直方图（vLLM 还有统计周期），所以当 E2E 直方图的总数少于
// base 加上本次运行已成功完成的请求数 served 时，每 20ms 重抓一次，最多等 2 秒；
// 仍不足时使用最后一次结果（并如实反映在 Count 中）。分组前后都这样做，
// 上一组或预热请求的迟到样本就不会混进本组的差值。
func (s *Scraper) Settled(ctx context.Context, base *Snapshot, served int64) *Snapshot {
	deadline := time.Now().Add(2 * time.Second)
	for {
		snap := s.Scrape(ctx)
		if snap == nil || base == nil || snap.Hist[2] == nil {
			return snap
		}
		d := snap.Hist[2].Delta(base.Hist[2])
		if d == nil || d.Count >= float64(served) || time.Now().After(deadline) || !sleep(ctx, 20*time.Millisecond) {
			return snap
		}
	}
}

// one 抓取一个实例。
func (s *Scraper) one(ctx context.Context, url string) (*Snapshot, error) {
	var snap *Snapshot
	err := s.fetch(ctx, url, func(r io.Reader) (err error) {
		snap, err = Parse(r)
		return err
	})
	return snap, err
}

// fetch 在 s.timeout 内 GET 一个实例的 /metrics，把（受 maxBody 限制的）响应体交给 read。
// 完整解析（one）与峰值采样的逐行扫描（gauges）共用它：期限、Accept 头、状态码与大小上限
// 只有这一处。
func (s *Scraper) fetch(ctx context.Context, url string, read func(io.Reader) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("servermetrics: scrape %s: HTTP %d", url, resp.StatusCode)
	}
	// 超过上限的 /metrics 读到上限即报错，服务端指标记为不可得（而不是用截断的数据）。
	return read(&capReader{r: resp.Body, left: s.maxBody})
}

// errTooLarge 表示 /metrics 响应体超过 maxBody。
var errTooLarge = errors.New("servermetrics: /metrics body too large")

// capReader 读到 left 字节后再有数据就返回 errTooLarge：与 io.LimitReader 不同，超限不会被
// 当成正常结束，截断的文本不会被当成完整的抓取。
type capReader struct {
	r    io.Reader
	left int64
}

// Read 实现 io.Reader。
func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// sleep 等待 d 或 ctx 结束；返回 false 表示 ctx 已结束。
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Add 把两个实例的抓取结果相加（直方图需桶布局一致，否则该项置空）；a 为 nil 时返回 b。
// 结果是新值，不修改 a、b。
func Add(a, b *Snapshot) *Snapshot {
	if a == nil {
		return b
	}
	out := &Snapshot{Accept: a.Accept + b.Accept, Draft: a.Draft + b.Draft, Running: a.Running + b.Running,
		Waiting: a.Waiting + b.Waiting, Preemptions: a.Preemptions + b.Preemptions, KVSum: a.KVSum + b.KVSum, KVN: a.KVN + b.KVN,
		PrefixHits: a.PrefixHits + b.PrefixHits, PrefixQueries: a.PrefixQueries + b.PrefixQueries}
	for i := range a.Hist {
		// 两个实例的桶上界必须逐个相同（版本不同的 vLLM 可能桶数相同而上界不同），否则该项置空。
		out.Hist[i] = addHist(a.Hist[i], b.Hist[i])
	}
	for i := range a.Phase {
		out.Phase[i] = addHist(a.Phase[i], b.Phase[i])
	}
	return out
}

// addHist 把两个桶布局一致的直方图相加；任一为 nil 或布局不同时为 nil。
func addHist(x, y *Histogram) *Histogram {
	if x == nil || y == nil || len(x.Upper) != len(y.Upper) || len(x.Cum) != len(x.Upper) || len(y.Cum) != len(y.Upper) {
		return nil
	}
	h := &Histogram{Upper: x.Upper, Cum: make([]float64, len(x.Cum)), Sum: x.Sum + y.Sum, Count: x.Count + y.Count}
	for j := range x.Upper {
		if x.Upper[j] != y.Upper[j] {
			return nil
		}
		h.Cum[j] = x.Cum[j] + y.Cum[j]
	}
	return h
}

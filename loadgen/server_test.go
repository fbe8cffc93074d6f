package loadgen

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/loadgen/servermetrics"
)

// expo 生成一段 vLLM 风格的 /metrics 文本：TTFT 直方图（两个标签序列）与推测解码计数器。
func expo(b1, _, b3 [3]int, sum float64, accepted, draft int) string {
	var sb strings.Builder
	sb.WriteString("# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n")
	sb.WriteString("# TYPE vllm:time_to_first_token_seconds histogram\n")
	for i, eng := range []string{"0", "1"} {
		scale := 1
		if i == 1 {
			scale = 0 // 第二个序列为空，验证求和
		}
		cum := 0
		for j, le := range []string{"0.01", "0.05", "0.1"} {
			cum += b1[j] * scale
			sb.WriteString(`vllm:time_to_first_token_seconds_bucket{engine="` + eng + `",le="` + le + `",model_name="m"} ` + itoa(cum) + "\n")
		}
		total := cum + b3[0]*scale
		sb.WriteString(`vllm:time_to_first_token_seconds_bucket{engine="` + eng + `",le="+Inf",model_name="m"} ` + itoa(total) + "\n")
		sb.WriteString(`vllm:time_to_first_token_seconds_count{engine="` + eng + `",model_name="m"} ` + itoa(total) + "\n")
		s := sum
		if i == 1 {
			s = 0
		}
		sb.WriteString(`vllm:time_to_first_token_seconds_sum{engine="` + eng + `",model_name="m"} ` + ftoa(s) + "\n")
	}
	if draft >= 0 {
		// Python 客户端的写法：TYPE 名不带 _total，样本带 _total。
		sb.WriteString("# TYPE vllm:spec_decode_num_accepted_tokens counter\n")
		sb.WriteString(`vllm:spec_decode_num_accepted_tokens_total{model_name="m"} ` + itoa(accepted) + "\n")
		sb.WriteString("# TYPE vllm:spec_decode_num_draft_tokens_total counter\n")
		sb.WriteString(`vllm:spec_decode_num_draft_tokens_total{model_name="m"} ` + itoa(draft) + "\n")
	}
	return sb.String()
}

// itoa 按 Prometheus 文本格式输出整数。
func itoa(v int) string { return strconv.Itoa(v) }

// ftoa 按 Prometheus 文本格式输出浮点数。
func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// TestServerHistogramDelta 用手算值验证直方图差值的分位数插值、MAX、AVG 与推测解码接受率。
func TestServerHistogramDelta(t *testing.T) {
	before, err := servermetrics.Parse(strings.NewReader(expo([3]int{1, 0, 0}, [3]int{}, [3]int{0}, 0.005, 10, 20)))
	if err != nil {
		t.Fatal(err)
	}
	// 本组新增：2 个落在 (0, 0.01]，6 个在 (0.01, 0.05]，2 个在 (0.05, 0.1]，无 +Inf。
	after, err := servermetrics.Parse(strings.NewReader(expo([3]int{3, 6, 2}, [3]int{}, [3]int{0}, 0.305, 45, 70)))
	if err != nil {
		t.Fatal(err)
	}
	var s Summary
	applyServer(&s, before, after)
	l := s.ServerTTFT
	if l.Count != 10 {
		t.Fatalf("count %d", l.Count)
	}
	// rank 0.75×10 = 7.5 → 第二个桶内 (7.5−2)/6 处：0.01 + 0.04×0.9167 = 0.046667
	near := func(name string, got time.Duration, want float64) {
		t.Helper()
		if math.Abs(got.Seconds()-want) > 1e-6 {
			t.Errorf("%s = %v, want %vs", name, got, want)
		}
	}
	near("P75", l.P75, 0.01+0.04*(5.5/6))
	near("P90", l.P90, 0.05+0.05*(1.0/2)) // rank 9 → 第三个桶 (9−8)/2
	near("P50", l.P50, 0.01+0.04*(3.0/6))
	near("MAX", l.Max, 0.1)
	near("AVG", l.Avg, 0.03)
	if s.ServerTPOT.Valid() || s.ServerE2E.Valid() {
		t.Fatal("absent histograms must be unmeasured")
	}
	if math.Abs(s.SpecAcceptRate.Avg-35.0/50) > 1e-9 || s.SpecAcceptRate.P90 != -1 || s.SpecAcceptRate.Min != -1 {
		t.Fatalf("spec accept %+v", s.SpecAcceptRate)
	}
	// 计数回退（服务重启）时不给出错误的差值。
	var r Summary
	applyServer(&r, after, before)
	if r.ServerTTFT.Valid() {
		t.Fatal("negative delta accepted")
	}
	var none Summary
	applyServer(&none, nil, after)
	if none.ServerTTFT.Valid() || none.SpecAcceptRate.Avg != -1 {
		t.Fatal("missing scrape must give -1")
	}
}

// TestServerHistogramInfBucketAndSum 验证 +Inf 桶的分位数、没有推测解码计数器与坏输入。
func TestServerHistogramInfBucketAndSum(t *testing.T) {
	// 样本落在 +Inf 桶：分位数取最高有限上界（与 histogram_quantile 一致）。
	before, _ := servermetrics.Parse(strings.NewReader(expo([3]int{}, [3]int{}, [3]int{0}, 0, 0, -1)))
	after, _ := servermetrics.Parse(strings.NewReader(expo([3]int{}, [3]int{}, [3]int{4}, 2, 0, -1)))
	var s Summary
	applyServer(&s, before, after)
	if s.ServerTTFT.P99 != 100*time.Millisecond || s.ServerTTFT.Count != 4 {
		t.Fatalf("+Inf quantile %+v", s.ServerTTFT)
	}
	if s.SpecAcceptRate.Avg != -1 {
		t.Fatal("spec accept rate without counters")
	}
	if _, err := servermetrics.Parse(strings.NewReader("garbage{")); err == nil {
		t.Fatal("bad exposition accepted")
	}
}

// vLLM（v1 引擎 loggers.py）给 E2E 与 TPOT 直方图设的桶上界，秒。
var (
	vllmE2EBuckets  = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	vllmTPOTBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
)

// histText 生成一个直方图的 Prometheus 文本：per 是各有限桶（非累计）的样本数，inf 是超出
// 最高有限上界的样本数，sum 是样本和。
func histText(name string, bounds []float64, per []int, inf int, sum float64) string {
	var sb strings.Builder
	sb.WriteString("# TYPE " + name + " histogram\n")
	cum := 0
	for i, b := range bounds {
		if i < len(per) {
			cum += per[i]
		}
		sb.WriteString(name + `_bucket{le="` + ftoa(b) + `",model_name="m"} ` + itoa(cum) + "\n")
	}
	cum += inf
	sb.WriteString(name + `_bucket{le="+Inf",model_name="m"} ` + itoa(cum) + "\n")
	sb.WriteString(name + `_count{model_name="m"} ` + itoa(cum) + "\n")
	sb.WriteString(name + `_sum{model_name="m"} ` + ftoa(sum) + "\n")
	return sb.String()
}

// serverDelta 解析前后两次文本并返回 applyServer 的结果。
func serverDelta(t *testing.T, before, after string) Summary {
	t.Helper()
	b, err := servermetrics.Parse(strings.NewReader(before))
	if err != nil {
		t.Fatal(err)
	}
	a, err := servermetrics.Parse(strings.NewReader(after))
	if err != nil {
		t.Fatal(err)
	}
	var s Summary
	applyServer(&s, b, a)
	return s
}

// TestServerQuantileReportedCases 钉住 issue 13 报告的两组数：它们正是 Prometheus
// histogram_quantile 在 vLLM 桶布局上的结果（Grafana 显示同样的值），不是插值实现的错：
// 样本全部落在最低桶时，按 Prometheus 的最低桶规则在 (0, 上界] 内线性插值，TP75 = 0.75×上界，
// 与真实分布无关——这就是桶的分辨率（docs/loadgen.md 说明）。值必须留在非空桶范围内。
func TestServerQuantileReportedCases(t *testing.T) {
	const e2e, tpot = "vllm:e2e_request_latency_seconds", "vllm:time_per_output_token_seconds"
	// 情形一：100 个请求，E2E 均值 45.9ms，全部在第一个桶 (0, 0.3]。
	// BucketQuantile: rank=75, b=0, start=0 → 0 + 0.3×75/100 = 0.225s。
	s := serverDelta(t, histText(e2e, vllmE2EBuckets, nil, 0, 0), histText(e2e, vllmE2EBuckets, []int{100}, 0, 4.59))
	l := s.ServerE2E
	if l.Count != 100 || l.P75 != 225*time.Millisecond || l.P50 != 150*time.Millisecond || l.P99 != 297*time.Millisecond {
		t.Errorf("E2E %+v: want TP50/75/99 = 150/225/297ms as histogram_quantile gives", l)
	}
	if l.Avg != 45900*time.Microsecond || l.Max != 300*time.Millisecond {
		t.Errorf("E2E avg/max %v/%v, want exact mean 45.9ms and bucket bound 300ms", l.Avg, l.Max)
	}
	// 情形二：50 个 token 间隔恰为 10ms，全部在 TPOT 第一个桶 (0, 0.01]：TP75 = 7.5ms，
	// MAX = 桶上界 10ms，AVG = 10ms。
	s = serverDelta(t, histText(tpot, vllmTPOTBuckets, nil, 0, 0), histText(tpot, vllmTPOTBuckets, []int{50}, 0, 0.5))
	l = s.ServerTPOT
	if l.P75 != 7500*time.Microsecond || l.P90 != 9*time.Millisecond || l.Max != 10*time.Millisecond || l.Avg != 10*time.Millisecond {
		t.Errorf("TPOT %+v: want TP75 7.5ms, TP90 9ms, MAX = AVG = 10ms", l)
	}
	for _, l := range []Latency{s.ServerTPOT} {
		for _, v := range []time.Duration{l.P50, l.P75, l.P90, l.P95, l.P99} {
			if v < 0 || v > 10*time.Millisecond {
				t.Errorf("quantile %v outside the non-empty bucket (0, 10ms]", v)
			}
		}
	}
}

// TestServerMaxWithInfBucket 是修复前的错误：样本同时落在最低桶与 +Inf 桶时，旧实现的 MAX
// 取最高"非空有限桶"的上界（10ms），比 TP99（最高有限上界 80s）还小。现在 MAX 取非空桶
// 范围的上端：+Inf 桶非空时为最高有限上界，MAX ≥ 各分位数。
func TestServerMaxWithInfBucket(t *testing.T) {
	const tpot = "vllm:time_per_output_token_seconds"
	s := serverDelta(t, histText(tpot, vllmTPOTBuckets, nil, 0, 0), histText(tpot, vllmTPOTBuckets, []int{90}, 10, 900.9))
	l := s.ServerTPOT
	if l.P99 != 80*time.Second || l.Max != 80*time.Second {
		t.Fatalf("P99 %v MAX %v, want both 80s (highest finite bound)", l.P99, l.Max)
	}
	// P50: rank 50 in the first bucket → 0.01×50/90。
	if want := 0.01 * 50 / 90 * 1e9; math.Abs(float64(l.P50)-want) > 1 {
		t.Errorf("P50 %v, want %vns", l.P50, want)
	}
}

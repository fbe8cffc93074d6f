package loadgen

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
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
	before, err := parseMetrics(strings.NewReader(expo([3]int{1, 0, 0}, [3]int{}, [3]int{0}, 0.005, 10, 20)))
	if err != nil {
		t.Fatal(err)
	}
	// 本组新增：2 个落在 (0, 0.01]，6 个在 (0.01, 0.05]，2 个在 (0.05, 0.1]，无 +Inf。
	after, err := parseMetrics(strings.NewReader(expo([3]int{3, 6, 2}, [3]int{}, [3]int{0}, 0.305, 45, 70)))
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

// TestServerHistogramInfBucketAndSum 验证 +Inf 桶的分位数、多实例求和与坏输入。
func TestServerHistogramInfBucketAndSum(t *testing.T) {
	// 样本落在 +Inf 桶：分位数取最高有限上界（与 histogram_quantile 一致）。
	before, _ := parseMetrics(strings.NewReader(expo([3]int{}, [3]int{}, [3]int{0}, 0, 0, -1)))
	after, _ := parseMetrics(strings.NewReader(expo([3]int{}, [3]int{}, [3]int{4}, 2, 0, -1)))
	var s Summary
	applyServer(&s, before, after)
	if s.ServerTTFT.P99 != 100*time.Millisecond || s.ServerTTFT.Count != 4 {
		t.Fatalf("+Inf quantile %+v", s.ServerTTFT)
	}
	if s.SpecAcceptRate.Avg != -1 {
		t.Fatal("spec accept rate without counters")
	}
	two := addSnaps(after, after)
	if two.hist[0].count != 8 || two.hist[0].cum[len(two.hist[0].cum)-1] != 8 {
		t.Fatalf("instance sum %+v", two.hist[0])
	}
	if _, err := parseMetrics(strings.NewReader("garbage{")); err == nil {
		t.Fatal("bad exposition accepted")
	}
}

package metrics_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/explain"
	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/runtype"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/metrics"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// exposition 把收集器注册到严格注册表并编码为文本暴露格式。
func exposition(t *testing.T, c prometheus.Collector) []byte {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatalf("register: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatalf("encode: %v", err)
		}
	}
	return buf.Bytes()
}

// golden 比较（或在 -update 时重写）testdata 下的文件。
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden; run go test ./metrics -run %s -update and review the diff\n--- got ---\n%s", path, t.Name(), got)
	}
}

// TestCollectorGoldenAndPromlint 有无前缀两种暴露文本与 golden 一致，且 promlint 无任何问题。
func TestCollectorGoldenAndPromlint(t *testing.T) {
	for _, tc := range []struct{ name, prefix, file string }{
		{"prefix", "cibench", "daily_prefix.prom"},
		{"no prefix", "", "daily_noprefix.prom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := newCollector(dailyResults(), metrics.Options{Prefix: tc.prefix})
			if err != nil {
				t.Fatal(err)
			}
			text := exposition(t, c)
			golden(t, tc.file, text)
			// CollectAndCompare 做语义比较（与排序、空白无关），确认 golden 可被独立解析。
			f, err := os.Open(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := testutil.CollectAndCompare(c, f); err != nil {
				t.Error(err)
			}
			problems, err := promlint.New(bytes.NewReader(text)).Lint()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("promlint: %s: %s", p.Metric, p.Text)
			}
		})
	}
}

// TestCollectorValues 逐值核对换算：分位数标签、秒、ms→s、功能汇总族名与取值。
func TestCollectorValues(t *testing.T) {
	combo := `backend="openai-chat",concurrency="4",control_method="climb",dataset="random",growth_rate="2",input_len="2048",model="Qwen3-32B",output_len="1024",quant="w8a8",round="1",run_type="daily",scenario="local-hybrid"`
	run := `model="Qwen3-32B",quant="w8a8",run_type="daily",scenario="local-hybrid"`
	// 组合 (2048,1024,4)：f = 4 × (1+1) = 8；TTFT P99 = 50×8×1.5 ms = 0.6 s；服务端 ms 字段换算为秒。
	want := `
# HELP cibench_perf_ttft_seconds Time to first token (intended send → first content/reasoning/tool token) (quantiles, _sum, _count)
# TYPE cibench_perf_ttft_seconds summary
cibench_perf_ttft_seconds{` + combo + `,quantile="0.75"} 0.4
cibench_perf_ttft_seconds{` + combo + `,quantile="0.9"} 0.48
cibench_perf_ttft_seconds{` + combo + `,quantile="0.95"} 0.52
cibench_perf_ttft_seconds{` + combo + `,quantile="0.99"} 0.6
cibench_perf_ttft_seconds_sum{` + combo + `} 45.72
cibench_perf_ttft_seconds_count{` + combo + `} 127
# HELP cibench_perf_max_server_ttft_seconds Maximum of: Server-side TTFT from the server's histograms, converted from ms
# TYPE cibench_perf_max_server_ttft_seconds gauge
cibench_perf_max_server_ttft_seconds{` + combo + `} 0.72
# HELP cibench_perf_requests_per_second Completed requests divided by the group's total time (CSV QPS)
# TYPE cibench_perf_requests_per_second gauge
cibench_perf_requests_per_second{` + combo + `} 10
# HELP cibench_functional_case_pass 1 when the case passed, 0 when it failed (skipped cases are absent)
# TYPE cibench_functional_case_pass gauge
cibench_functional_case_pass{case_id="chat.basic",` + run + `,suite="chat"} 1
cibench_functional_case_pass{case_id="chat.multi_turn",` + run + `,suite="chat"} 0
# HELP cibench_accuracy_score_ratio Mean score over the evaluated examples (simple-evals score), in [0,1]
# TYPE cibench_accuracy_score_ratio gauge
cibench_accuracy_score_ratio{dataset="gpqa",` + run + `} 0.625
`
	// 只比较 4 = 并发的组合：CollectAndCompare 按名字过滤，其余组合用 GatherAndCompare 的过滤做不到，
	// 因此把 (128,128,1) 行去掉后再比。
	res := dailyResults()
	res.Perf = res.Perf[1:]
	c, err := newCollector(res, metrics.Options{Prefix: "cibench_"})
	if err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"cibench_perf_ttft_seconds", "cibench_perf_max_server_ttft_seconds", "cibench_perf_requests_per_second",
		"cibench_functional_case_pass", "cibench_accuracy_score_ratio"); err != nil {
		t.Error(err)
	}
	// 需求要求的功能汇总族名与取值。
	wantFunc := `
# HELP cibench_functional_pass_ratio Passed / cases run (total - skipped - unsupported) of the suite; NaN when no case ran
# TYPE cibench_functional_pass_ratio gauge
cibench_functional_pass_ratio{` + run + `,suite="chat"} 0.5
cibench_functional_pass_ratio{` + run + `,suite="function_call"} NaN
# HELP cibench_functional_cases_total Cases in the suite, skipped ones included
# TYPE cibench_functional_cases_total counter
cibench_functional_cases_total{` + run + `,suite="chat"} 2
cibench_functional_cases_total{` + run + `,suite="function_call"} 1
# HELP cibench_functional_cases_failed Failed cases in the suite
# TYPE cibench_functional_cases_failed gauge
cibench_functional_cases_failed{` + run + `,suite="chat"} 1
cibench_functional_cases_failed{` + run + `,suite="function_call"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(wantFunc),
		"cibench_functional_pass_ratio", "cibench_functional_cases_total", "cibench_functional_cases_failed"); err != nil {
		t.Error(err)
	}
}

// TestCollectorUnmeasuredFieldsAreAbsent 不可测（-1 或零值）的字段不导出序列，而不是导出 -1 或 0。
func TestCollectorUnmeasuredFieldsAreAbsent(t *testing.T) {
	res := dailyResults()
	res.Perf = res.Perf[:1]
	res.Perf[0].ServerTTFT = loadgen.Latency{}        // 服务端没有直方图
	res.Perf[0].SpecAcceptRate = loadgen.Unmeasured() // 没有推测解码
	res.Perf[0].CompletionTokens = loadgen.Values{}   // 生产方没填
	res.Perf[0].Goodput = -1                          // 未配置 SLO
	c, err := newCollector(res, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	text := string(exposition(t, c))
	for _, absent := range []string{"perf_server_ttft_seconds", "perf_max_server_ttft_seconds", "perf_spec_accept_ratio",
		"perf_avg_spec_accept_ratio", "perf_completion_tokens", "perf_goodput"} {
		if strings.Contains(text, absent) {
			t.Errorf("%s exported for an unmeasured field; -1 must become an absent series", absent)
		}
	}
	if n := testutil.CollectAndCount(c, "perf_server_tpot_seconds"); n != 1 {
		t.Errorf("perf_server_tpot_seconds: %d metrics, want 1", n)
	}
}

// TestCollectorFunctionalSuitesComputedWhenMissing 报告没有套件汇总时按用例现算，口径与 functional 一致。
func TestCollectorFunctionalSuitesComputedWhenMissing(t *testing.T) {
	res := dailyResults()
	res.Functional.Suites = nil
	c, err := newCollector(res, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := `
# HELP functional_pass_ratio Passed / cases run (total - skipped - unsupported) of the suite; NaN when no case ran
# TYPE functional_pass_ratio gauge
functional_pass_ratio{model="Qwen3-32B",quant="w8a8",run_type="daily",scenario="local-hybrid",suite="chat"} 0.5
functional_pass_ratio{model="Qwen3-32B",quant="w8a8",run_type="daily",scenario="local-hybrid",suite="function_call"} NaN
# HELP functional_cases_skipped Cases skipped because the server lacks a required capability
# TYPE functional_cases_skipped gauge
functional_cases_skipped{model="Qwen3-32B",quant="w8a8",run_type="daily",scenario="local-hybrid",suite="chat"} 0
functional_cases_skipped{model="Qwen3-32B",quant="w8a8",run_type="daily",scenario="local-hybrid",suite="function_call"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "functional_pass_ratio", "functional_cases_skipped"); err != nil {
		t.Error(err)
	}
}

// TestNewCollectorRejectsBadInput 每类非法输入都返回指明字段的 *field.Error。
func TestNewCollectorRejectsBadInput(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*results, *metrics.Options)
		field string
	}{
		{"no model", func(r *results, _ *metrics.Options) { r.Info.Model = "" }, "RunInfo.Model"},
		{"no scenario", func(r *results, _ *metrics.Options) { r.Info.Scenario = "" }, "RunInfo.Scenario"},
		{"bad run type", func(r *results, _ *metrics.Options) { r.Info.RunType = "nightly" }, "RunInfo.RunType"},
		{"newline in commit", func(r *results, _ *metrics.Options) { r.Info.Commit = "a\nb" }, "RunInfo.Commit"},
		{"bad prefix", func(_ *results, o *metrics.Options) { o.Prefix = "CI-Bench" }, "Options.Prefix"},
		{"duplicate combination", func(r *results, _ *metrics.Options) { r.Perf = append(r.Perf, r.Perf[0]) }, "Perf[2]"},
		{"bad backend", func(r *results, _ *metrics.Options) { r.Perf[0].Backend = "x\ny" }, "Perf[0].backend"},
		{"duplicate case", func(r *results, _ *metrics.Options) {
			r.Functional.Results = append(r.Functional.Results, r.Functional.Results[0])
		}, "Functional.Results[3]"},
		{"empty case id", func(r *results, _ *metrics.Options) { r.Functional.Results[0].CaseID = "" }, "Functional.Results[0]"},
		{"bad suite", func(r *results, _ *metrics.Options) { r.Functional.Suites[0].Suite = "a\nb" }, "Functional.Suites.Suite"},
		{"empty dataset", func(r *results, _ *metrics.Options) { r.Accuracy[0].Dataset = "" }, "Accuracy[0].Dataset"},
		{"duplicate dataset", func(r *results, _ *metrics.Options) { r.Accuracy = append(r.Accuracy, r.Accuracy[0]) }, "Accuracy[1].Dataset"},
		{"bad metric key", func(r *results, _ *metrics.Options) { r.Accuracy[0].Metrics["a\nb"] = 1 }, "Accuracy[0].Metrics"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, opts := dailyResults(), metrics.Options{}
			tc.edit(&res, &opts)
			_, err := newCollector(res, opts)
			var fe *field.Error
			if !errors.As(err, &fe) || !errors.Is(err, metrics.ErrInvalid) {
				t.Fatalf("err = %v, want *field.Error wrapping ErrInvalid", err)
			}
			if fe.Field != tc.field {
				t.Errorf("field = %q, want %q (err %v)", fe.Field, tc.field, err)
			}
		})
	}
}

// TestQuantDefaultsToNone 未给量化类型时 quant 标签为 none；大写的量化类型转成小写。
func TestQuantDefaultsToNone(t *testing.T) {
	res := results{Info: metrics.RunInfo{Model: "m", Scenario: "s", RunType: runtype.PR},
		Functional: &functional.Report{Results: []functional.Result{{CaseID: "c", Suite: "s", Status: functional.StatusPass}}}}
	c, err := newCollector(res, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := `
# HELP functional_case_pass 1 when the case passed, 0 when it failed (skipped cases are absent)
# TYPE functional_case_pass gauge
functional_case_pass{case_id="c",model="m",quant="none",run_type="pr",scenario="s",suite="s"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "functional_case_pass"); err != nil {
		t.Error(err)
	}
	res.Info.Quant = "W8A8"
	c, err = newCollector(res, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(strings.ReplaceAll(want, `quant="none"`, `quant="w8a8"`)), "functional_case_pass"); err != nil {
		t.Error(err)
	}
}

// TestMetricName 前缀拼接规则：空前缀不加，末尾下划线不重复。
func TestMetricName(t *testing.T) {
	for _, tc := range []struct{ prefix, name, want string }{
		{"", "perf_ttft_seconds", "perf_ttft_seconds"},
		{"cibench", "perf_ttft_seconds", "cibench_perf_ttft_seconds"},
		{"cibench_", "run_info", "cibench_run_info"},
		{"___", "run_info", "run_info"},
	} {
		if got := metrics.MetricName(tc.prefix, tc.name); got != tc.want {
			t.Errorf("MetricName(%q, %q) = %q, want %q", tc.prefix, tc.name, got, tc.want)
		}
	}
}

// TestWriteTextMatchesGolden WriteText 的输出就是 golden 暴露文本，非法输入报错。
func TestWriteTextMatchesGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := writeText(&buf, dailyResults(), metrics.Options{Prefix: "cibench"}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "daily_prefix.prom"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Error("WriteText output differs from testdata/daily_prefix.prom")
	}
	bad := dailyResults()
	bad.Info.Model = ""
	if err := writeText(&buf, bad, metrics.Options{}); !errors.Is(err, metrics.ErrInvalid) {
		t.Errorf("err = %v, want ErrInvalid", err)
	}
}

// TestCapacityDuplicate 检查同一组合的两次扫描被点名拒绝（否则序列重复，推送失败）。
func TestCapacityDuplicate(t *testing.T) {
	res := dailyResults()
	res.Capacity = append(res.Capacity, res.Capacity[0])
	_, err := newCollector(res, metrics.Options{})
	var fe *field.Error
	if !errors.As(err, &fe) || fe.Field != "Capacity[2]" {
		t.Fatalf("duplicate capacity: %v", err)
	}
}

// TestCollectorPhaseSeries 带阶段分解的汇总行导出 perf_ttft_phase_seconds 与 perf_e2e_phase_seconds，
// 每个阶段一条（phase 标签），各阶段之和等于客户端均值；没有分解的行不导出这两族。
func TestCollectorPhaseSeries(t *testing.T) {
	res := dailyResults()
	res.Perf = res.Perf[:1]
	d := func(mean float64) *explain.Dist { return &explain.Dist{Count: 10, Sum: 10 * mean} }
	res.Perf[0].Phases = &explain.Breakdown{
		ClientTTFT: explain.Moments{N: 10, Mean: 0.060}, ClientE2E: explain.Moments{N: 10, Mean: 0.200},
		ServerTTFT: d(0.055), Queue: d(0.030), Prefill: d(0.020), Decode: d(0.130), ServerE2E: d(0.190)}
	c, err := newCollector(res, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{} // 族/阶段 → 值
	for _, line := range strings.Split(string(exposition(t, c)), "\n") {
		fam, rest, ok := strings.Cut(line, "{")
		if !ok || !strings.HasSuffix(fam, "_phase_seconds") {
			continue
		}
		_, after, _ := strings.Cut(rest, `phase="`)
		phase, _, _ := strings.Cut(after, `"`)
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatal(err)
		}
		got[fam+"/"+phase] = v
	}
	for k, want := range map[string]float64{"perf_ttft_phase_seconds/queue": 0.03, "perf_ttft_phase_seconds/prefill": 0.02,
		"perf_ttft_phase_seconds/client": 0.005, "perf_ttft_phase_seconds/frontend": 0.005, "perf_e2e_phase_seconds/decode": 0.13} {
		if v, ok := got[k]; !ok || math.Abs(v-want) > 1e-12 {
			t.Errorf("%s = %v (present %v), want %v; all: %v", k, v, ok, want, got)
		}
	}
	if n := testutil.CollectAndCount(c, metrics.NamePerfTTFTPhase); n != 4 {
		t.Errorf("%s: %d series, want 4 (client, frontend, queue, prefill)", metrics.NamePerfTTFTPhase, n)
	}
	res.Perf[0].Phases = &explain.Breakdown{ClientTTFT: explain.Moments{N: 10, Mean: 0.06}} // 服务端不导出阶段
	c, err = newCollector(res, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, metrics.NamePerfTTFTPhase); n != 0 {
		t.Errorf("%s exported without server phases: %d series", metrics.NamePerfTTFTPhase, n)
	}
	if err := promlintOK(c); err != nil {
		t.Error(err)
	}
}

// promlintOK 用 promlint 检查收集器的输出。
func promlintOK(c prometheus.Collector) error {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		return err
	}
	probs, err := promlint.NewWithMetricFamilies(mustGather(reg)).Lint()
	if err != nil || len(probs) > 0 {
		return fmt.Errorf("promlint: %v %v", probs, err)
	}
	return nil
}

// mustGather 收集 reg 的全部指标族（出错时返回空）。
func mustGather(reg *prometheus.Registry) []*dto.MetricFamily {
	mfs, _ := reg.Gather()
	return mfs
}

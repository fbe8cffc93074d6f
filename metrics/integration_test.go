package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/runtype"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/metrics"
)

// 集成测试所需二进制的查找方式：环境变量 CIBENCH_PROMETHEUS / CIBENCH_PUSHGATEWAY 给出路径，
// 否则在 PATH 中找 prometheus 与 pushgateway（Debian 名 prometheus-pushgateway）。
// 找不到时跳过，除非 CIBENCH_REQUIRE_INTEGRATION=1（CI 设置），此时失败。
// scripts/setup.d/20-prometheus.sh 安装 Debian 的 prometheus 与 prometheus-pushgateway。

// findBinary 按环境变量、再按 PATH 中的候选名查找二进制。
func findBinary(t *testing.T, env string, names ...string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("%s not found (set %s or run scripts/setup.d/20-prometheus.sh)", names[0], env)
	if os.Getenv("CIBENCH_REQUIRE_INTEGRATION") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// freeAddr 取一个空闲的回环端口（关闭后交给子进程监听）。
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// syncBuffer 是并发安全的输出缓冲，收集子进程日志供失败时打印。
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write 追加子进程输出。
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String 返回目前收集到的输出。
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startProcess 启动子进程并在测试结束时结束它（只结束自己启动的这个进程），
// 然后轮询 readyURL 直到 200；失败时附上进程输出。
func startProcess(ctx context.Context, t *testing.T, readyURL, bin string, args ...string) *syncBuffer {
	t.Helper()
	out := &syncBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Dir = t.TempDir()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get(readyURL)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return out
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s not ready at %s: %v\n%s", bin, readyURL, ctx.Err(), out.String())
		case <-exited:
			t.Fatalf("%s exited before ready:\n%s", bin, out.String())
		case <-tick.C:
		}
	}
}

// stack 是一组在回环端口上运行的真实 Pushgateway + Prometheus。
type stack struct {
	pgwURL, promURL string
	api             v1.API
	promLog         *syncBuffer
}

// startStack 启动 Pushgateway 与抓取它的 Prometheus（honor_labels: true，1s 抓取间隔）。
func startStack(ctx context.Context, t *testing.T) *stack {
	promBin := findBinary(t, "CIBENCH_PROMETHEUS", "prometheus")
	pgwBin := findBinary(t, "CIBENCH_PUSHGATEWAY", "pushgateway", "prometheus-pushgateway")
	pgwAddr, promAddr := freeAddr(t), freeAddr(t)
	startProcess(ctx, t, "http://"+pgwAddr+"/-/ready", pgwBin, "--web.listen-address="+pgwAddr)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: pushgateway
    honor_labels: true
    static_configs:
      - targets: [%q]
`, pgwAddr)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	log := startProcess(ctx, t, "http://"+promAddr+"/-/ready", promBin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr)
	c, err := api.NewClient(api.Config{Address: "http://" + promAddr})
	if err != nil {
		t.Fatal(err)
	}
	return &stack{pgwURL: "http://" + pgwAddr, promURL: "http://" + promAddr, api: v1.NewAPI(c), promLog: log}
}

// instant 执行即时查询并返回向量。
func (s *stack) instant(ctx context.Context, t *testing.T, q string, at time.Time) model.Vector {
	t.Helper()
	v, _, _, err := s.api.Query(ctx, q, at)
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		t.Fatalf("query %s: %s result, want vector", q, v.Type())
	}
	return vec
}

// waitFor 轮询查询 q 直到 ok 返回真（受 ctx 约束），返回最后一次结果。
func (s *stack) waitFor(ctx context.Context, t *testing.T, q string, ok func(model.Vector) bool) model.Vector {
	t.Helper()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		v, _, _, err := s.api.Query(ctx, q, time.Now())
		if err == nil {
			if vec, isVec := v.(model.Vector); isVec && ok(vec) {
				return vec
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last err %v)\nprometheus log:\n%s", q, ctx.Err(), err, s.promLog.String())
		case <-tick.C:
		}
	}
}

// emulatorRun 对内嵌仿真器做一次真实的小规模每日运行：loadgen 压测两个并发组、
// 功能测试全量用例目录；精度用手写结果（仿真器的回答没有意义，评分由 accuracy 包自己测）。
func emulatorRun(ctx context.Context, t *testing.T) results {
	t.Helper()
	_, ep := emulator.Start(t, emulator.Config{Model: "Qwen3-32B", TTFT: 3 * time.Millisecond, ITL: time.Millisecond,
		SpecDecode: true, SpecAcceptRate: 0.7})
	perf, err := loadgen.Run(ctx, loadgen.Target{Endpoint: ep, Provider: "emulator"},
		loadgen.Profile{Concurrency: []int{1, 4}, InputLength: []int{64}, OutputLength: []int{16}, NumRequests: []int{12},
			Warmup: 1, Epochs: 1, ControlMethod: loadgen.ControlClimb, GrowthRate: 2}, nil)
	if err != nil {
		t.Fatalf("loadgen: %v", err)
	}
	// 一次很短的容量扫描（并发上限 4，与看板变量的取值一致）：模拟器不排队，速率到 max_rate 仍满足 SLO。
	capacity, err := loadgen.RunSweep(ctx, loadgen.Target{Endpoint: ep, Provider: "emulator"},
		loadgen.Profile{ControlMethod: loadgen.ControlSweep, Concurrency: []int{4}, InputLength: []int{64}, OutputLength: []int{16}, Goodput: []string{"ttft:5000"},
			Sweep: loadgen.SweepConfig{StartRate: 20, MaxRate: 40, StepDuration: 200 * time.Millisecond, MinRequests: 4}}, nil)
	if err != nil || len(capacity) != 1 || capacity[0].MaxSustainableRate != 40 {
		t.Fatalf("sweep: %v %+v", err, capacity)
	}
	runner, err := functional.NewRunner(functional.Target{Endpoint: ep}, functional.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := runner.Run(ctx, functional.DefaultCatalog().Cases())
	if err != nil {
		t.Fatalf("functional: %v", err)
	}
	return results{
		Info: metrics.RunInfo{Model: "Qwen3-32B", Quant: "w8a8", Scenario: "local-hybrid", RunType: runtype.Daily,
			Commit: "0123abcd", Branch: "main", RunID: "daily-1"},
		Perf:       perf,
		Capacity:   capacity,
		Functional: &rep,
		Accuracy: []accuracy.EvalResult{{Dataset: "gpqa", Model: "Qwen3-32B", Score: 0.625, Examples: 198,
			Metrics: map[string]float64{"score": 0.625, "score:std": 0.484}}},
	}
}

// expectedSeries 把本地收集器的输出展开为 Prometheus 中应有的序列（含 job 标签）及其取值。
func expectedSeries(t *testing.T, res results, prefix, job string) map[string]float64 {
	t.Helper()
	c, err := newCollector(res, metrics.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	add := func(name string, lbls []*dto.LabelPair, extra model.LabelSet, v float64) {
		m := model.Metric{model.MetricNameLabel: model.LabelValue(name), "job": model.LabelValue(job)}
		for _, l := range lbls {
			if l.GetValue() != "" { // Prometheus 中空值标签等于没有该标签
				m[model.LabelName(l.GetName())] = model.LabelValue(l.GetValue())
			}
		}
		for k, v := range extra {
			m[k] = v
		}
		out[m.String()] = v
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetType() {
			case dto.MetricType_SUMMARY:
				for _, q := range m.GetSummary().GetQuantile() {
					add(mf.GetName(), m.GetLabel(), model.LabelSet{"quantile": model.LabelValue(fmt.Sprint(q.GetQuantile()))}, q.GetValue())
				}
				add(mf.GetName()+"_sum", m.GetLabel(), nil, m.GetSummary().GetSampleSum())
				add(mf.GetName()+"_count", m.GetLabel(), nil, float64(m.GetSummary().GetSampleCount()))
			case dto.MetricType_COUNTER:
				add(mf.GetName(), m.GetLabel(), nil, m.GetCounter().GetValue())
			default:
				add(mf.GetName(), m.GetLabel(), nil, m.GetGauge().GetValue())
			}
		}
	}
	return out
}

// closeEnough 比较浮点值（推送与抓取经过文本/protobuf 往返，允许极小误差）。
func closeEnough(a, b float64) bool {
	return a == b || (math.IsNaN(a) && math.IsNaN(b)) || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// substitute 像 Grafana 一样替换看板变量（${name} 与 $name）。
func substitute(expr string, vars map[string]string) string {
	re := regexp.MustCompile(`\$\{(\w+)\}|\$(\w+)`)
	return re.ReplaceAllStringFunc(expr, func(m string) string {
		sub := re.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		if v, ok := vars[name]; ok {
			return v
		}
		return m
	})
}

// TestIntegrationPrometheusPushgateway 端到端：仿真器上的真实每日运行推送到真实 Pushgateway，由真实 Prometheus 抓取后逐序列核对、读回基线、执行看板全部查询；PR 不推送，次日推送替换同一组。
func TestIntegrationPrometheusPushgateway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st := startStack(ctx, t)
	res := emulatorRun(ctx, t)
	if len(res.Perf) != 2 || res.Perf[1].Concurrency != 4 || !res.Perf[1].TTFT.Valid() {
		t.Fatalf("emulator run produced %d perf rows: %+v", len(res.Perf), res.Perf)
	}
	if len(res.Functional.Results) < 20 {
		t.Fatalf("functional run has only %d results", len(res.Functional.Results))
	}
	const prefix, job = "cibench", "cibench"

	// 1. 推送之前 Pushgateway 是空的（"仅每日推送"是驱动程序的策略，见 pipeline 的测试）。
	pusher, err := metrics.NewPusher(metrics.PushConfig{URL: st.pgwURL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if groups := pushgatewayGroups(ctx, t, st.pgwURL); len(groups) != 0 {
		t.Fatalf("pushgateway has groups %v before any push", groups)
	}

	// 2. 每日运行：各阶段的 Collector 注册进一个 Gatherer 推送，等 Prometheus 抓到全部序列。
	if err := pushResults(ctx, pusher, res, prefix); err != nil {
		t.Fatal(err)
	}
	want := expectedSeries(t, res, prefix, job)
	sel := `{job="cibench",__name__!~"push_time_seconds|push_failure_time_seconds"}`
	got := st.waitFor(ctx, t, sel, func(v model.Vector) bool { return len(v) >= len(want) })
	seen := map[string]bool{}
	for _, s := range got {
		key := s.Metric.String()
		w, ok := want[key]
		if !ok {
			t.Errorf("unexpected series in Prometheus: %s", key)
			continue
		}
		seen[key] = true
		if !closeEnough(float64(s.Value), w) {
			t.Errorf("%s = %v, want %v", key, s.Value, w)
		}
	}
	for key := range want {
		if !seen[key] {
			t.Errorf("series missing in Prometheus: %s", key)
		}
	}
	t.Logf("%d series verified in Prometheus", len(seen))
	if groups := pushgatewayGroups(ctx, t, st.pgwURL); len(groups) != 1 || groups[0]["run_type"] != "daily" ||
		groups[0]["model"] != "Qwen3-32B" || groups[0]["quant"] != "w8a8" || groups[0]["scenario"] != "local-hybrid" || groups[0]["job"] != job {
		t.Fatalf("pushgateway groups %v, want exactly the daily group", groups)
	}

	// 3. 基线：从真实 Prometheus 读回最近一次每日结果，与推送的压测结果一致。
	bl, err := metrics.NewPromBaseline(metrics.PromBaselineConfig{URL: st.promURL, Prefix: prefix, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	info1, perf, err := bl.ReadDaily(ctx, metrics.RunInfo{Model: "Qwen3-32B", Quant: "w8a8", Scenario: "local-hybrid", RunType: runtype.PR})
	if err != nil {
		t.Fatal(err)
	}
	checkBaseline(t, info1, perf, res)
	// 同一读取器作为 gate.Source：按组合聚合成 gate.Baseline，带基线运行 ID。
	w := res.Perf[0]
	gb, found, err := bl.Lookup(ctx, gate.Key{Scenario: "local-hybrid", Model: "Qwen3-32B", Quant: "w8a8", Backend: w.Backend,
		ControlMethod: w.ControlMethod, InputLength: w.InputLength, OutputLength: w.OutputLength, Concurrency: w.Concurrency})
	if err != nil || !found || gb.RunID != res.Info.RunID || !near(gb.TTFTP99, w.TTFT.P99) || gb.TTFT.Count != w.TTFT.Count {
		t.Errorf("Lookup = %+v found=%v err=%v, want run %s TTFT P99 %v", gb, found, err, res.Info.RunID, w.TTFT.P99)
	}
	if _, _, err := bl.ReadDaily(ctx, metrics.RunInfo{Model: "other", Scenario: "local-hybrid", RunType: runtype.PR}); !errors.Is(err, metrics.ErrNoBaseline) {
		t.Errorf("baseline for an unknown model: %v, want ErrNoBaseline", err)
	}

	// 4. 看板：每个 PromQL（变量替换后）都必须返回数据。
	obs := st.instant(ctx, t, `timestamp(cibench_run_info{run_type="daily"})`, time.Now())
	if len(obs) != 1 {
		t.Fatalf("run_info: %v", obs)
	}
	at := obs[0].Timestamp.Time()
	checkDashboard(ctx, t, st, at)

	// 5. 第二天的每日运行（新 commit、少一个组合）替换同一组，而不是新增一组。
	next := res
	next.Info.Commit, next.Info.RunID = "4567ef01", "daily-2"
	next.Perf = res.Perf[:1]
	if err := pushResults(ctx, pusher, next, prefix); err != nil {
		t.Fatal(err)
	}
	if groups := pushgatewayGroups(ctx, t, st.pgwURL); len(groups) != 1 {
		t.Fatalf("after the second daily push: %d groups, want 1 (replaced)", len(groups))
	}
	info := st.waitFor(ctx, t, `cibench_run_info{run_type="daily"}`, func(v model.Vector) bool {
		return len(v) == 1 && v[0].Metric["commit"] == "4567ef01"
	})
	if info[0].Metric["run_id"] != "daily-2" {
		t.Errorf("run_info after replacement: %v", info)
	}
	conc := st.waitFor(ctx, t, `count by (concurrency) (cibench_perf_requests_per_second{run_type="daily"})`, func(v model.Vector) bool {
		return len(v) == 1
	})
	if conc[0].Metric["concurrency"] != "1" {
		t.Errorf("after replacement the concurrency=4 combination should be gone: %v", conc)
	}
	if n := st.instant(ctx, t, `count({run_type="pr"})`, time.Now()); len(n) != 0 {
		t.Errorf("PR series present in Prometheus: %v", n)
	}
	// 第二天的基线：当前暴露的只有 c=1，commit 为新值。
	info2, perf2, err := bl.ReadDaily(ctx, metrics.RunInfo{Model: "Qwen3-32B", Quant: "w8a8", Scenario: "local-hybrid"})
	if err != nil {
		t.Fatal(err)
	}
	if len(perf2) != 1 || perf2[0].Concurrency != 1 || info2.Commit != "4567ef01" || info2.RunID != "daily-2" {
		t.Errorf("baseline after replacement: %d rows, info %+v", len(perf2), info2)
	}

	// 6. Pushgateway 丢失状态（这里删除该组）后，基线退回窗口内的 last_over_time：
	// 每个组合取各自最近一次每日值（c=4 来自第一天，c=1 来自第二天），commit 取最新的 run_info。
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete,
		st.pgwURL+"/metrics/job/cibench/model/Qwen3-32B/quant/w8a8/scenario/local-hybrid/run_type/daily", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		t.Fatalf("delete group: %s", resp.Status)
	}
	st.waitFor(ctx, t, `absent(cibench_run_info)`, func(v model.Vector) bool { return len(v) == 1 })
	info3, perf3, err := bl.ReadDaily(ctx, metrics.RunInfo{Model: "Qwen3-32B", Quant: "w8a8", Scenario: "local-hybrid"})
	if err != nil {
		t.Fatal(err)
	}
	checkBaseline(t, info3, perf3, results{Info: next.Info, Perf: res.Perf})
}

// pushgatewayGroups 读取 Pushgateway 当前保存的全部分组（/api/v1/metrics）。
func pushgatewayGroups(ctx context.Context, t *testing.T, base string) []map[string]string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data []struct {
			Labels map[string]string `json:"labels"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, g := range body.Data {
		out = append(out, g.Labels)
	}
	return out
}

// near 比较两个时长（秒级浮点往返后允许 1µs 误差）。
func near(a, b time.Duration) bool { d := a - b; return d > -time.Microsecond && d < time.Microsecond }

// checkBaseline 确认从 Prometheus 重建的汇总与推送的汇总一致（门禁用到的字段与计数）。
func checkBaseline(t *testing.T, info metrics.RunInfo, perf []loadgen.Summary, res results) {
	t.Helper()
	if info.Commit != res.Info.Commit || info.RunID != res.Info.RunID || info.RunType != runtype.Daily {
		t.Errorf("baseline info %+v", info)
	}
	if len(perf) != len(res.Perf) {
		t.Fatalf("baseline has %d rows, want %d", len(perf), len(res.Perf))
	}
	for _, want := range res.Perf {
		rows := comboRows(perf, comboOf(want))
		if len(rows) != 1 {
			t.Errorf("combination %+v: %d baseline rows", comboOf(want), len(rows))
			continue
		}
		got := rows[0]
		for _, f := range []struct {
			name string
			g, w loadgen.Latency
		}{{"TTFT", got.TTFT, want.TTFT}, {"TPOT", got.TPOT, want.TPOT}, {"E2E", got.E2E, want.E2E}, {"ServerTTFT", got.ServerTTFT, want.ServerTTFT}} {
			if f.g.Count != f.w.Count || !near(f.g.P99, f.w.P99) || !near(f.g.P75, f.w.P75) || !near(f.g.Max, f.w.Max) || !near(f.g.Avg, f.w.Avg) || !near(f.g.Min, f.w.Min) {
				t.Errorf("c=%d %s: baseline %+v, pushed %+v", want.Concurrency, f.name, f.g, f.w)
			}
		}
		if !closeEnough(got.QPS, want.QPS) || !closeEnough(got.FailRate, want.FailRate) || got.NumPrompts != want.NumPrompts ||
			got.Succeeded != want.Succeeded || got.Round != want.Round || got.Provider != want.Provider || got.TopK != want.TopK ||
			!closeEnough(got.Temperature, want.Temperature) || got.DatasetType != want.DatasetType || got.GrowthRate != want.GrowthRate {
			t.Errorf("c=%d scalars: baseline %+v\npushed %+v", want.Concurrency, got, want)
		}
		if !closeEnough(got.SpecAcceptRate.Avg, want.SpecAcceptRate.Avg) || got.CompletionTokens.P99 != want.CompletionTokens.P99 {
			t.Errorf("c=%d values: spec %+v/%+v completion %+v/%+v", want.Concurrency, got.SpecAcceptRate, want.SpecAcceptRate,
				got.CompletionTokens, want.CompletionTokens)
		}
		if got.ExecutionTime.Unix() != want.ExecutionTime.Unix() {
			t.Errorf("ExecutionTime %v, want %v", got.ExecutionTime, want.ExecutionTime)
		}
	}
}

// serverCachePanels 是这次仿真器运行给不出数据的看板面板：前缀命中率与抢占需要服务端的
// vllm:prefix_cache_* / vllm:num_preemptions_total 计数器（内嵌仿真器还不导出），发出滞后只有
// 轨迹回放才有（轨迹的分组没有 input_len=64），按轮次的 TTFT 只有多轮会话才有（control_method
// normal，与这里 climb 的组合相同时看板会把两条序列混在一起）。它们的序列由 testdata/daily_*.prom
// 的 golden fixture 覆盖，这里只要求查询在真实 Prometheus 上能执行。KV 占用峰值不在其中：
// 仿真器导出 vllm:kv_cache_usage_perc。
var serverCachePanels = map[string]bool{"Prefix cache hit rate": true, "Preemptions": true,
	"Trace dispatch lag P$quantile": true, "Multi-turn TTFT P90 by turn": true}

// checkDashboard 对真实 Prometheus 逐条执行生成的看板中的每个 PromQL：面板查询在
// “观测时刻 + offset” 求值（这样 −1d/−7d 曲线查到的正是刚推送的样本），
// 变量查询通过 series API 的 match[] 求值，都必须返回数据。
func checkDashboard(ctx context.Context, t *testing.T, st *stack, at time.Time) {
	t.Helper()
	d, err := metrics.NewDashboard(metrics.DashboardOptions{Prefix: "cibench"})
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"metric_prefix": "cibench_", "model": "Qwen3-32B", "quant": "w8a8", "scenario": "local-hybrid",
		"dataset": "(random|gpqa)", "backend": ".*", "concurrency": "4", "input_len": "64", "output_len": "16", "quantile": "0.99",
	}
	offsets := map[string]time.Duration{"": 0, "1d": 24 * time.Hour, "7d": 7 * 24 * time.Hour}
	wantVar := map[string][]string{
		"model": {"Qwen3-32B"}, "quant": {"w8a8"}, "scenario": {"local-hybrid"}, "dataset": {"gpqa", "random"},
		"backend": {"openai-chat"}, "concurrency": {"1", "4"}, "input_len": {"64"}, "output_len": {"16"},
	}
	n := 0
	mergeKeys := map[string][]string{} // 套件汇总表的各查询返回的标签集合（merge 变换要求相同）
	for _, q := range d.Queries() {
		expr := substitute(q.Expr, vars)
		if strings.Contains(expr, "$") {
			t.Errorf("%s %s: unsubstituted variable in %s", q.Panel, q.RefID, expr)
			continue
		}
		if q.Label != "" {
			vals, _, _, err := st.api.LabelValues(ctx, q.Label, []string{expr}, at.Add(-time.Minute), at.Add(time.Minute))
			if err != nil {
				t.Errorf("%s: %s: %v", q.Panel, expr, err)
				continue
			}
			var got []string
			for _, v := range vals {
				got = append(got, string(v))
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(wantVar[q.Label], ",") {
				t.Errorf("%s: label_values(%s, %s) = %v, want %v", q.Panel, expr, q.Label, got, wantVar[q.Label])
			}
			n++
			continue
		}
		off, ok := offsets[q.Offset]
		if !ok {
			t.Errorf("%s %s: unexpected offset %q", q.Panel, q.RefID, q.Offset)
			continue
		}
		vec := st.instant(ctx, t, expr, at.Add(off))
		if len(vec) == 0 && serverCachePanels[q.Panel] {
			continue // 查询在真实 Prometheus 上执行过（语法错误会在 instant 里失败），只是没有数据，见 serverCachePanels
		}
		if len(vec) == 0 {
			t.Errorf("%s %s returned no data at observation+%s: %s", q.Panel, q.RefID, q.Offset, expr)
		}
		if q.Panel == "Functional suite summary" {
			var keys []string
			for _, smp := range vec {
				keys = append(keys, smp.Metric.String())
			}
			sort.Strings(keys)
			mergeKeys[q.RefID] = keys
		}
		n++
	}
	t.Logf("%d dashboard queries returned data", n)
	if a, b, c := strings.Join(mergeKeys["A"], ";"), strings.Join(mergeKeys["B"], ";"), strings.Join(mergeKeys["C"], ";"); a == "" || a != b || a != c {
		t.Errorf("suite summary queries return different label sets, the table cannot merge them:\nA %s\nB %s\nC %s", a, b, c)
	}
	// 选定组合的 TTFT P99 今天与 −1d 曲线的值相同（同一个样本），证明 offset 对上了。
	today := st.instant(ctx, t, substitute(`avg without (round) (${metric_prefix}perf_ttft_seconds{quantile="0.99",concurrency="4"})`, vars), at)
	shifted := st.instant(ctx, t, substitute(`avg without (round) (${metric_prefix}perf_ttft_seconds{quantile="0.99",concurrency="4"} offset 1d)`, vars), at.Add(24*time.Hour))
	if len(today) != 1 || len(shifted) != 1 || today[0].Value != shifted[0].Value {
		t.Errorf("today %v vs -1d %v", today, shifted)
	}
}

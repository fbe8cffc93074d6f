package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/vllm-cibench/cibench/field"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-cibench/cibench/metrics"
)

// recorder 是一个记录每次请求的 Pushgateway 替身（真实回环 HTTP），
// 按 statuses 依次返回状态码，用完后返回 200。
type recorder struct {
	mu       sync.Mutex
	statuses []int
	reqs     []recorded
	arrived  chan struct{} // 非 nil 时每个请求到达都发一个信号（缓冲足够，不阻塞）
}

// recorded 是一次收到的请求的要点。
type recorded struct {
	method, path, auth, contentType string
	families                        int
}

// ServeHTTP 解析请求体中的指标族数量，证明推送的是合法的 Prometheus 暴露格式。
func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	n := 0
	dec := expfmt.NewDecoder(strings.NewReader(string(body)), expfmt.ResponseFormat(req.Header))
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			break
		}
		n++
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, recorded{req.Method, req.URL.EscapedPath(), req.Header.Get("Authorization"), req.Header.Get("Content-Type"), n})
	status := http.StatusOK
	if len(r.statuses) > 0 {
		status, r.statuses = r.statuses[0], r.statuses[1:]
	}
	r.mu.Unlock()
	if r.arrived != nil {
		r.arrived <- struct{}{}
	}
	w.WriteHeader(status)
}

// requests 返回收到的请求副本。
func (r *recorder) requests() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

// TestPushDailyReplacesGroup 每日推送用 PUT 发到以稳定身份为键的分组，带 basic auth，载荷是完整的指标族。
func TestPushDailyReplacesGroup(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	p, err := metrics.NewPusher(metrics.PushConfig{URL: srv.URL, Username: "ci", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	if err := pushResults(context.Background(), p, dailyResults(), "cibench"); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	got := reqs[0]
	if got.method != http.MethodPut {
		t.Errorf("method %s, want PUT (replace the group)", got.method)
	}
	// push 以 map 保存分组键，路径中标签顺序不固定，所以按键值对比较。
	parts := strings.Split(strings.TrimPrefix(got.path, "/metrics/"), "/")
	key := map[string]string{}
	for i := 0; i+1 < len(parts); i += 2 {
		key[parts[i]] = parts[i+1]
	}
	want := map[string]string{"job": "cibench", "model": "Qwen3-32B", "quant": "w8a8", "scenario": "local-hybrid", "run_type": "daily"}
	if len(parts) != 2*len(want) || fmt.Sprint(key) != fmt.Sprint(want) {
		t.Errorf("path %s, want grouping key %v", got.path, want)
	}
	if got.auth != "Basic Y2k6czNjcmV0" { // base64("ci:s3cret")
		t.Errorf("authorization %q", got.auth)
	}
	if got.families != 70 {
		t.Errorf("%d metric families pushed, want 70 (as in testdata/daily_prefix.prom)", got.families)
	}
}

// TestPushNonDailyNeverSends 非法运行类型与 nil Gatherer 不发出任何请求；Pusher 不按运行类型取舍
// （PR 也照推，"仅每日"是驱动程序的策略）。
func TestPushNonDailyNeverSends(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	p, err := metrics.NewPusher(metrics.PushConfig{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	res := dailyResults()
	res.Info.RunType = "weekly"
	var fe *field.Error
	if err := p.Push(context.Background(), res.Info, prometheus.NewRegistry()); !errors.As(err, &fe) || fe.Field != "RunInfo.RunType" {
		t.Fatalf("err = %v, want FieldError on RunInfo.RunType", err)
	}
	if err := p.Push(context.Background(), dailyResults().Info, nil); !errors.As(err, &fe) || fe.Field != "Push.Gatherer" {
		t.Fatalf("err = %v, want FieldError on RunInfo.RunType", err)
	}
	if n := len(rec.requests()); n != 0 {
		t.Fatalf("%d requests sent for a non-daily run, want 0", n)
	}
}

// TestPushRetriesTransientFailures 503/429 之后重试成功，每次都带 bearer token。
func TestPushRetriesTransientFailures(t *testing.T) {
	rec := &recorder{statuses: []int{http.StatusServiceUnavailable, http.StatusTooManyRequests}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	p, err := metrics.NewPusher(metrics.PushConfig{URL: srv.URL, Retries: 2, RetryBackoff: time.Millisecond, BearerToken: "tok-123"})
	if err != nil {
		t.Fatal(err)
	}
	if err := pushResults(context.Background(), p, dailyResults(), "cibench"); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d attempts, want 3", len(reqs))
	}
	for _, r := range reqs {
		if r.auth != "Bearer tok-123" {
			t.Errorf("authorization %q, want bearer", r.auth)
		}
	}
}

// TestPushGivesUpWithoutLeakingSecrets 重试耗尽返回 *PushError，错误信息不含 token。
func TestPushGivesUpWithoutLeakingSecrets(t *testing.T) {
	rec := &recorder{statuses: []int{500, 500, 500, 500}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	p, err := metrics.NewPusher(metrics.PushConfig{URL: srv.URL, Retries: 1, RetryBackoff: time.Millisecond, BearerToken: "tok-SECRET"})
	if err != nil {
		t.Fatal(err)
	}
	err = pushResults(context.Background(), p, dailyResults(), "")
	var pe *metrics.PushError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want *PushError", err)
	}
	if pe.Attempts != 2 || pe.Status != 500 {
		t.Errorf("attempts=%d status=%d, want 2 and 500", pe.Attempts, pe.Status)
	}
	if strings.Contains(err.Error(), "tok-SECRET") {
		t.Errorf("error leaks the token: %v", err)
	}
}

// TestPushDoesNotRetryClientErrors 400 等客户端错误不重试。
func TestPushDoesNotRetryClientErrors(t *testing.T) {
	rec := &recorder{statuses: []int{http.StatusBadRequest}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	p, err := metrics.NewPusher(metrics.PushConfig{URL: srv.URL, Retries: 3, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var pe *metrics.PushError
	if err := pushResults(context.Background(), p, dailyResults(), ""); !errors.As(err, &pe) || pe.Status != http.StatusBadRequest || pe.Attempts != 1 {
		t.Fatalf("err = %v, want one attempt ending in 400", err)
	}
}

// TestPushHonoursContextDuringBackoff 退避等待中取消 ctx 立即返回 context.Canceled。
func TestPushHonoursContextDuringBackoff(t *testing.T) {
	rec := &recorder{statuses: []int{503, 503, 503}, arrived: make(chan struct{}, 8)}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	p, err := metrics.NewPusher(metrics.PushConfig{URL: srv.URL, Retries: 5, RetryBackoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- pushResults(ctx, p, dailyResults(), "") }()
	// 等到第一次尝试真正到达服务端再取消，此后 Push 正在一小时的退避里等待。
	select {
	case <-rec.arrived:
	case err := <-errc:
		t.Fatalf("push returned early: %v", err)
	}
	cancel()
	err = <-errc
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled inside", err)
	}
}

// TestPushUnreachable 连接被拒绝时返回无状态码的 *PushError。
func TestPushUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // 端口已关闭：连接被拒绝
	p, err := metrics.NewPusher(metrics.PushConfig{URL: url, Retries: -1, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var pe *metrics.PushError
	if err := pushResults(context.Background(), p, dailyResults(), ""); !errors.As(err, &pe) || pe.Status != 0 || pe.Attempts != 1 {
		t.Fatalf("err = %v, want a single failed attempt without status", err)
	}
}

// TestNewPusherValidates 构造时校验 URL、认证互斥与超时（前缀属于各 Collector 的 Options），且错误不泄露 URL 中的凭据。
func TestNewPusherValidates(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   metrics.PushConfig
		field string
	}{
		{"empty url", metrics.PushConfig{}, "PushConfig.URL"},
		{"no scheme", metrics.PushConfig{URL: "pushgateway:9091"}, "PushConfig.URL"},
		{"credentials in url", metrics.PushConfig{URL: "http://u:p@pgw:9091"}, "PushConfig.URL"},
		{"both auths", metrics.PushConfig{URL: "http://pgw:9091", Username: "u", BearerToken: "t"}, "PushConfig.BearerToken"},
		{"negative timeout", metrics.PushConfig{URL: "http://pgw:9091", Timeout: -time.Second}, "PushConfig.Timeout"},
		{"negative backoff", metrics.PushConfig{URL: "http://pgw:9091", RetryBackoff: -time.Second}, "PushConfig.RetryBackoff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := metrics.NewPusher(tc.cfg)
			var fe *field.Error
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("err = %v, want FieldError on %s", err, tc.field)
			}
			if strings.Contains(err.Error(), ":p@") {
				t.Errorf("error leaks URL credentials: %v", err)
			}
		})
	}
}

// TestGroupingKey 分组键只含稳定身份（job、model、quant、scenario、run_type）。
func TestGroupingKey(t *testing.T) {
	p, err := metrics.NewPusher(metrics.PushConfig{URL: "http://pgw:9091", Job: "vllm-ci"})
	if err != nil {
		t.Fatal(err)
	}
	ri := dailyResults().Info
	ri.Quant = ""
	key, err := p.GroupingKey(ri)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"job": "vllm-ci", "model": "Qwen3-32B", "quant": "none", "scenario": "local-hybrid", "run_type": "daily"}
	if len(key) != len(want) {
		t.Fatalf("key %v, want %v", key, want)
	}
	for k, v := range want {
		if key[k] != v {
			t.Errorf("key[%s] = %q, want %q", k, key[k], v)
		}
	}
	if got := metrics.GroupingLabels(); strings.Join(got, ",") != "model,quant,scenario,run_type" {
		t.Errorf("GroupingLabels() = %v", got)
	}
}

// TestPushConfigFromEnv 确认配置中的地址优先于环境变量，凭据在配置缺失时取自环境。
func TestPushConfigFromEnv(t *testing.T) {
	env := map[string]string{
		metrics.EnvPushgatewayURL: "http://pgw-env:9091", metrics.EnvPushgatewayToken: "tok",
	}
	getenv := func(k string) string { return env[k] }
	cfg := metrics.PushConfigFromEnv(getenv, metrics.PushConfig{})
	if cfg.URL != "http://pgw-env:9091" || cfg.BearerToken != "tok" || cfg.Username != "" {
		t.Errorf("from env: %+v", cfg)
	}
	cfg = metrics.PushConfigFromEnv(getenv, metrics.PushConfig{URL: "http://pgw-cfg:9091", Username: "u", Password: "p"})
	if cfg.URL != "http://pgw-cfg:9091" || cfg.BearerToken != "" || cfg.Username != "u" {
		t.Errorf("config must win: %+v", cfg)
	}
}

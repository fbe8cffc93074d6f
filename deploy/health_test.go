package deploy_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
)

// TestHealthURL 覆盖 /v1 剥离与路径拼接的各种写法。
func TestHealthURL(t *testing.T) {
	cases := []struct{ base, path, want string }{
		{"http://h:1/v1", "", "http://h:1/health"},
		{"http://h:1/v1/", "/health", "http://h:1/health"},
		{"http://h:1", "ping", "http://h:1/ping"},
		{"http://h:1/prefix/v1", "/healthz", "http://h:1/prefix/healthz"},
	}
	for _, c := range cases {
		if got := deploy.HealthURL(c.base, c.path); got != c.want {
			t.Errorf("HealthURL(%q,%q) = %q, want %q", c.base, c.path, got, c.want)
		}
	}
}

// TestWaitHealthyBecomesHealthy 验证服务先 503 后 200 时能等到健康，并计数探测次数。
func TestWaitHealthyBecomesHealthy(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
			return
		}
		if n.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
	}))
	defer srv.Close()
	err := deploy.WaitHealthy(context.Background(), srv.URL+"/health", deploy.HealthOptions{Interval: time.Millisecond, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 3 {
		t.Fatalf("probes = %d, want 3", got)
	}
}

// TestWaitHealthyTimeout 验证超时返回 *HealthError，包装 ErrNotReady 并带最后状态。
func TestWaitHealthyTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	err := deploy.WaitHealthy(context.Background(), srv.URL+"/health", deploy.HealthOptions{Interval: time.Millisecond, MaxInterval: 2 * time.Millisecond, Timeout: 50 * time.Millisecond})
	var he *deploy.HealthError
	if !errors.As(err, &he) {
		t.Fatalf("err = %v, want *HealthError", err)
	}
	if !errors.Is(err, deploy.ErrNotReady) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrNotReady and DeadlineExceeded", err)
	}
	if he.Last != "status 503" || he.Attempts < 2 {
		t.Fatalf("last = %q attempts = %d", he.Last, he.Attempts)
	}
}

// TestWaitHealthyCancelAndAbort 验证 ctx 取消与 Abort 都会立即结束等待并保留原因。
func TestWaitHealthyCancelAndAbort(t *testing.T) {
	// 一个立即关闭的监听地址：连接被拒绝。
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/health"
	srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := deploy.WaitHealthy(ctx, url, deploy.HealthOptions{})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, deploy.ErrNotReady) {
		t.Fatalf("cancel: err = %v", err)
	}

	boom := errors.New("process died")
	abort := make(chan error, 1)
	abort <- boom
	err = deploy.WaitHealthy(context.Background(), url, deploy.HealthOptions{Abort: abort, Interval: time.Hour})
	if !errors.Is(err, boom) || !errors.Is(err, deploy.ErrNotReady) {
		t.Fatalf("abort: err = %v", err)
	}
	var he *deploy.HealthError
	if !errors.As(err, &he) || he.Attempts > 1 {
		t.Fatalf("abort: %#v", he)
	}
}

// TestHealthErrorRedactsUserinfo 确认错误信息中不出现 URL 里的口令。
func TestHealthErrorRedactsUserinfo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := deploy.WaitHealthy(ctx, "http://user:s3cret@127.0.0.1:1/health", deploy.HealthOptions{})
	if err == nil || contains(err.Error(), "s3cret") {
		t.Fatalf("err = %v", err)
	}
}

// contains 是 strings.Contains 的小包装，只用于断言错误文本中不含密钥。
func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestWaitHealthyDeadlineMidProbe：截止时间落在一次挂起的探测途中时（负载高时的常见情形），
// 错误里是截止前最后一次真正的探测结果（status 503），而不是那次探测自己的
// "context deadline exceeded"；错误仍包装 context.DeadlineExceeded。
func TestWaitHealthyDeadlineMidProbe(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		<-r.Context().Done() // 第二次探测一直挂到客户端放弃
	}))
	defer srv.Close()
	err := deploy.WaitHealthy(context.Background(), srv.URL+"/health", deploy.HealthOptions{Interval: time.Millisecond, Timeout: time.Second})
	var he *deploy.HealthError
	if !errors.As(err, &he) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, deploy.ErrNotReady) {
		t.Fatalf("err = %v", err)
	}
	if he.Last != "status 503" || he.Attempts != 2 {
		t.Fatalf("last = %q attempts = %d, want status 503 after 2 attempts", he.Last, he.Attempts)
	}
}

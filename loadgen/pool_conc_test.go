package loadgen

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/vllm-cibench/cibench/internal/tokenize"
	"github.com/vllm-cibench/cibench/loadgen/dataset"
)

// tokenizeServer 是一个按共享规则计数的 /tokenize 服务，记录最大并发数。
// 前两个请求互相等待（最多 5 秒）：串行校准时第二个请求永远等不来，最大并发停在 1，测试失败。
type tokenizeServer struct {
	inflight, peak, calls atomic.Int64
	two                   chan struct{}
	once                  sync.Once
	hang                  bool
}

// ServeHTTP 返回 {"count": n}；hang 时一直阻塞到请求被取消。
func (s *tokenizeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.hang {
		_, _ = io.Copy(io.Discard, r.Body) // 读完请求体，服务端才会发现客户端断开并取消 ctx
		<-r.Context().Done()
		return
	}
	n := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	s.calls.Add(1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	if n >= 2 {
		s.once.Do(func() { close(s.two) })
	}
	select {
	case <-s.two:
	case <-time.After(5 * time.Second):
	}
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(r.Body)
	cnt := tokenize.Count(gjson.GetBytes(buf.Bytes(), "prompt").String())
	_, _ = w.Write([]byte(`{"count":` + itoa(cnt) + `}`))
}

// TestBuildPoolConcurrentBounded 验证校准并发进行且不超过 dataset.TokenizeWorkers，结果与不校准时
// （共享规则下长度本就精确）逐字节相同——并发不影响可复现性。
func TestBuildPoolConcurrentBounded(t *testing.T) {
	srv := &tokenizeServer{two: make(chan struct{})}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	c := &serverCounter{client: ts.Client(), url: ts.URL + "/tokenize", model: "m", maxBody: 1 << 20}
	p := Profile{InputLength: []int{64}, RangeRatioAbove: 0.5}.WithDefaults()
	got, err := buildPool(context.Background(), &p, 64, 300, c)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := buildPool(context.Background(), &p, 64, 300, nil)
	if peak := srv.peak.Load(); peak < 2 || peak > dataset.TokenizeWorkers {
		t.Fatalf("peak concurrent /tokenize = %d, want 2..%d", peak, dataset.TokenizeWorkers)
	}
	if srv.calls.Load() != 300 {
		t.Fatalf("%d /tokenize calls, want one per prompt (300)", srv.calls.Load())
	}
	for i := range want.Quoted {
		if !bytes.Equal(got.Quoted[i], want.Quoted[i]) || got.Tokens[i] != want.Tokens[i] {
			t.Fatalf("prompt %d differs from the uncalibrated pool: %d vs %d tokens", i, got.Tokens[i], want.Tokens[i])
		}
	}
}

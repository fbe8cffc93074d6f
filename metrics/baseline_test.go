package metrics_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/runtype"

	"github.com/vllm-cibench/cibench/metrics"
)

// fakeProm 是一个只回答 /api/v1/query 的回环 HTTP 服务，记录收到的查询与认证头；
// 与真实 Prometheus 的比对在集成测试里做，这里只覆盖认证与错误路径。
type fakeProm struct {
	mu      sync.Mutex
	queries []string
	auth    []string
	status  int
}

// ServeHTTP 记录请求并返回空向量（或配置的错误状态）。
func (f *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f.mu.Lock()
	f.queries = append(f.queries, r.Form.Get("query"))
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	status := f.status
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if status != 0 {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"status":"error","errorType":"internal","error":"boom"}`))
		return
	}
	_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
}

// TestPromBaselineQueriesAndAuth 确认查询限定在同一场景的每日运行、先即时后 last_over_time 窗口，
// 并带上 bearer token；没有数据时返回 ErrNoBaseline。
func TestPromBaselineQueriesAndAuth(t *testing.T) {
	fp := &fakeProm{}
	srv := httptest.NewServer(fp)
	defer srv.Close()
	at := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	b, err := metrics.NewPromBaseline(metrics.PromBaselineConfig{URL: srv.URL, Prefix: "cibench", BearerToken: "tok", Client: &http.Client{Transport: http.DefaultTransport},
		Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = b.ReadDaily(context.Background(), metrics.RunInfo{Model: `Qwen"3`, Scenario: "s", RunType: runtype.PR})
	if !errors.Is(err, metrics.ErrNoBaseline) {
		t.Fatalf("err = %v, want ErrNoBaseline", err)
	}
	fp.mu.Lock()
	defer fp.mu.Unlock()
	// 先即时查询（便宜），全部为空后才在 8 天窗口内 last_over_time。
	sel := `{model="Qwen\"3",quant="none",scenario="s",run_type="daily"}`
	first := `cibench_perf_execution_timestamp_seconds` + sel
	windowed := `last_over_time(cibench_perf_execution_timestamp_seconds` + sel + `[8d])`
	if fp.queries[0] != first {
		t.Errorf("first query %s, want %s", fp.queries[0], first)
	}
	found := false
	for _, q := range fp.queries {
		found = found || q == windowed
	}
	if !found {
		t.Errorf("no windowed fallback query %s among %d queries", windowed, len(fp.queries))
	}
	for i, a := range fp.auth {
		if a != "Bearer tok" {
			t.Fatalf("request %d authorization %q", i, a)
		}
	}
	for _, q := range fp.queries {
		if !strings.Contains(q, `run_type="daily"`) {
			t.Errorf("query not pinned to daily runs: %s", q)
		}
	}
}

// TestPromBaselineBasicAuthAndErrors 覆盖 basic auth 与服务端错误：错误带上出错的查询。
func TestPromBaselineBasicAuthAndErrors(t *testing.T) {
	fp := &fakeProm{status: http.StatusInternalServerError}
	srv := httptest.NewServer(fp)
	defer srv.Close()
	b, err := metrics.NewPromBaseline(metrics.PromBaselineConfig{URL: srv.URL, Username: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = b.ReadDaily(context.Background(), metrics.RunInfo{Model: "m", Scenario: "s", RunType: runtype.Daily})
	if err == nil || errors.Is(err, metrics.ErrNoBaseline) || !strings.Contains(err.Error(), "query perf_execution_timestamp_seconds{") {
		t.Fatalf("err = %v, want the failing query in the error", err)
	}
	fp.mu.Lock()
	if fp.auth[0] != "Basic dTpw" {
		t.Errorf("authorization %q", fp.auth[0])
	}
	fp.mu.Unlock()
	if _, _, err := b.ReadDaily(context.Background(), metrics.RunInfo{Scenario: "s"}); !errors.Is(err, metrics.ErrInvalid) {
		t.Errorf("missing model: err = %v, want ErrInvalid", err)
	}
}

// TestNewPromBaselineValidates 确认构造时拒绝坏地址、带凭据的地址、认证冲突、负窗口与坏前缀。
func TestNewPromBaselineValidates(t *testing.T) {
	for _, tc := range []struct {
		cfg   metrics.PromBaselineConfig
		field string
	}{
		{metrics.PromBaselineConfig{URL: "prometheus:9090"}, "PromBaselineConfig.URL"},
		{metrics.PromBaselineConfig{URL: "http://u:secret@prom:9090"}, "PromBaselineConfig.URL"},
		{metrics.PromBaselineConfig{URL: "http://prom:9090", Username: "u", BearerToken: "t"}, "PromBaselineConfig.BearerToken"},
		{metrics.PromBaselineConfig{URL: "http://prom:9090", Window: -time.Hour}, "PromBaselineConfig.Window"},
		{metrics.PromBaselineConfig{URL: "http://prom:9090", Prefix: "A-B"}, "Options.Prefix"},
	} {
		_, err := metrics.NewPromBaseline(tc.cfg)
		var fe *field.Error
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%+v: err = %v, want *field.Error on %s", tc.cfg.URL, err, tc.field)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("error leaks credentials: %v", err)
		}
	}
}

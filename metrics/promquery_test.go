package metrics_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/metrics"
	"github.com/vllm-cibench/cibench/runtype"
)

// TestPromBaselineQueryEdges 覆盖基线读取器自己的即时查询客户端（不再经 client_golang 的查询
// API）：405 时改用 GET、服务端错误里回显的凭据被抹掉、非向量结果、过大的响应、卡住的服务端
// 在 QueryTimeout 内失败、负的 QueryTimeout 在构造时被拒绝。
func TestPromBaselineQueryEdges(t *testing.T) {
	const token = "prom-secret-token-123456"
	read := func(t *testing.T, h http.HandlerFunc, cfg metrics.PromBaselineConfig) error {
		t.Helper()
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		cfg.URL = srv.URL + "/prom/"
		b, err := metrics.NewPromBaseline(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = b.ReadDaily(context.Background(), metrics.RunInfo{Model: "m", Scenario: "s", RunType: runtype.Daily})
		return err
	}
	t.Run("GET after 405", func(t *testing.T) {
		var gets atomic.Int32
		err := read(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/prom/api/v1/query" {
				t.Errorf("path %q", r.URL.Path)
			}
			if r.Method == http.MethodPost {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			gets.Add(1)
			if !strings.Contains(r.URL.Query().Get("query"), "cibench_") {
				t.Errorf("query %q", r.URL.Query().Get("query"))
			}
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
		}, metrics.PromBaselineConfig{Prefix: "cibench"})
		if !errors.Is(err, metrics.ErrNoBaseline) || gets.Load() == 0 {
			t.Fatalf("err = %v after %d GETs, want ErrNoBaseline", err, gets.Load())
		}
	})
	t.Run("echoed credentials", func(t *testing.T) {
		for _, cfg := range []metrics.PromBaselineConfig{{BearerToken: token}, {Username: "ci", Password: token}} {
			err := read(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"rejected ` + r.Header.Get("Authorization") + `"}`))
			}, cfg)
			basic := base64.StdEncoding.EncodeToString([]byte("ci:" + token))
			if err == nil || strings.Contains(err.Error(), token) || strings.Contains(err.Error(), basic) || !strings.Contains(err.Error(), "HTTP 400: bad_data: rejected") {
				t.Fatalf("err = %v", err)
			}
			err = read(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusBadGateway)
				_, _ = w.Write([]byte("<html>proxy says " + r.Header.Get("Authorization") + "</html>"))
			}, cfg)
			if err == nil || strings.Contains(err.Error(), token) || strings.Contains(err.Error(), basic) || !strings.Contains(err.Error(), "HTTP 502") {
				t.Fatalf("err = %v", err)
			}
		}
	})
	t.Run("not a vector", func(t *testing.T) {
		err := read(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
		}, metrics.PromBaselineConfig{})
		if err == nil || !strings.Contains(err.Error(), "unexpected result type matrix") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("too large", func(t *testing.T) {
		err := read(t, func(w http.ResponseWriter, r *http.Request) {
			chunk := []byte(strings.Repeat(" ", 1<<20))
			for range 65 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, metrics.PromBaselineConfig{})
		if err == nil || !strings.Contains(err.Error(), "response larger than") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("hung server", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		start := time.Now()
		err := read(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}, metrics.PromBaselineConfig{QueryTimeout: 200 * time.Millisecond})
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 20*time.Second {
			t.Fatalf("err = %v after %v, want a deadline", err, time.Since(start))
		}
	})
	t.Run("negative timeout", func(t *testing.T) {
		_, err := metrics.NewPromBaseline(metrics.PromBaselineConfig{URL: "http://prom:9090", QueryTimeout: -time.Second})
		var fe *field.Error
		if !errors.As(err, &fe) || fe.Field != "PromBaselineConfig.QueryTimeout" {
			t.Fatalf("err = %v", err)
		}
	})
}

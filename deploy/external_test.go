package deploy_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
)

// TestNewExternalValidates 检查缺失地址、错误 scheme 与负超时都会被构造函数拒绝。
func TestNewExternalValidates(t *testing.T) {
	bad := []deploy.ExternalConfig{
		{},
		{BaseURL: "ftp://h/v1"},
		{BaseURL: "http:///v1"},
		{BaseURL: "http://h:1/v1", StartupTimeout: -time.Second},
		{BaseURL: "://bad"},
	}
	for i, c := range bad {
		if _, err := deploy.NewExternal(c); !errors.Is(err, deploy.ErrConfig) {
			t.Errorf("case %d: err = %v, want ErrConfig", i, err)
		}
	}
}

// TestExternalDeploy 对真实回环服务做健康等待，并检查地址规范化与多实例。
func TestExternalDeploy(t *testing.T) {
	var healthHits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			healthHits++
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	x, err := deploy.NewExternal(deploy.ExternalConfig{BaseURL: srv.URL, BaseURLs: []string{srv.URL + "/v1/"}, Model: "m", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := x.Deploy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ep := dep.Endpoint()
	want := srv.URL + "/v1"
	if len(ep.BaseURLs) != 2 || ep.BaseURLs[0] != want || ep.BaseURLs[1] != want || ep.Model != "m" || ep.APIKey != "k" {
		t.Fatalf("endpoint = %#v / %v", ep.BaseURLs, ep)
	}
	if healthHits != 2 {
		t.Fatalf("health hits = %d, want 2", healthHits)
	}
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := dep.ArchiveLogs(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("archive dir not created: %v", err)
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestExternalNotReady 验证不健康的服务在超时后返回 ErrNotReady；SkipHealth 跳过探测。
func TestExternalNotReady(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	x, err := deploy.NewExternal(deploy.ExternalConfig{BaseURL: srv.URL + "/v1", StartupTimeout: 30 * time.Millisecond, HealthPath: "/ready"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Deploy(context.Background()); !errors.Is(err, deploy.ErrNotReady) {
		t.Fatalf("err = %v, want ErrNotReady", err)
	}
	x, err = deploy.NewExternal(deploy.ExternalConfig{BaseURL: srv.URL + "/v1", SkipHealth: true})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := x.Deploy(context.Background())
	if err != nil || dep.Endpoint().BaseURL() != srv.URL+"/v1" {
		t.Fatalf("skip health: %v %v", dep, err)
	}
	if err := dep.ArchiveLogs(context.Background(), ""); !errors.Is(err, deploy.ErrConfig) {
		t.Fatalf("empty dir: %v", err)
	}
}

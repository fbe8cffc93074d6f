package deploy_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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
		{BaseURL: "http://h:1/v1", Metrics: []deploy.MetricsInstance{{Role: "router", URL: "http://p/metrics"}}},
		{BaseURL: "http://h:1/v1", Metrics: []deploy.MetricsInstance{{URL: "p/metrics"}}},
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
	x, err := deploy.NewExternal(deploy.ExternalConfig{BaseURL: srv.URL, BaseURLs: []string{srv.URL + "/v1/"}, Model: "m", APIKey: "k",
		Metrics: []deploy.MetricsInstance{{Name: "p", Role: "prefill", URL: srv.URL + "/metrics"}}})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := x.Deploy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ep := dep.Endpoint()
	want := srv.URL + "/v1"
	if len(ep.BaseURLs) != 2 || ep.BaseURLs[0] != want || ep.BaseURLs[1] != want || ep.Model != "m" || ep.APIKey != "k" ||
		len(ep.Metrics) != 1 || ep.Metrics[0].Role != "prefill" {
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
	x, err = deploy.NewExternal(deploy.ExternalConfig{BaseURL: srv.URL + "/v1", Model: "m", SkipHealth: true})
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

// TestExternalDiscoversModel：没有给 served_model_name 时，External 在健康之后从
// GET /v1/models 取第一个模型 ID（带密钥）；列表为空、非 200、不是 JSON 时 Deploy 失败并说明，
// 而不是返回一个任何阶段都用不了的空模型名。（原在 examples/ci 的驱动里。）
func TestExternalDiscoversModel(t *testing.T) {
	var models string
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
		case "/v1/models":
			if r.Header.Get("Authorization") != "Bearer sk-d" {
				http.Error(w, "no key", http.StatusUnauthorized)
				return
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(models))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	deployWith := func(key string) (deploy.Deployment, error) {
		x, err := deploy.NewExternal(deploy.ExternalConfig{BaseURL: srv.URL, APIKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return x.Deploy(context.Background())
	}
	models = `{"object":"list","data":[{"id":"served-elsewhere"},{"id":"second"}]}`
	dep, err := deployWith("sk-d")
	if err != nil || dep.Endpoint().Model != "served-elsewhere" || dep.Endpoint().APIKey != "sk-d" {
		t.Fatalf("discover: %v %v", dep, err)
	}
	for _, c := range []struct {
		key, models string
		status      int
		want        string
	}{
		{"sk-d", `{"data":[]}`, 200, "deploy: external: no served_model_name given and GET /v1/models lists no model"},
		{"", models, 200, "deploy: external: no served_model_name given and GET /v1/models returned 401 Unauthorized"},
		{"sk-d", `{"data":[{"id":""}]}`, 200, "GET /v1/models lists no model"},
		{"sk-d", `not json`, 200, "deploy: external: no served_model_name given and GET /v1/models: invalid character"},
		{"sk-d", `{}`, 503, "GET /v1/models returned 503 Service Unavailable"},
	} {
		models, status = c.models, c.status
		if _, err := deployWith(c.key); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "sk-d") {
			t.Errorf("models %q status %d: err = %v, want %q", c.models, c.status, err, c.want)
		}
	}
	// 传输失败：错误链保留（可判断），URL 中的凭据被屏蔽。
	ln := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	dead := strings.Replace(ln.URL, "http://", "http://user:pw@", 1)
	ln.Close()
	x, _ := deploy.NewExternal(deploy.ExternalConfig{BaseURL: dead, SkipHealth: true})
	_, err = x.Deploy(context.Background())
	if err == nil || !strings.Contains(err.Error(), "GET /v1/models failed") || strings.Contains(err.Error(), "pw") {
		t.Fatalf("dead server: %v", err)
	}
}

package endpoint_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/endpoint"
)

// TestEndpointNeverPrintsKey 确认 Endpoint 的各种格式化输出都不含密钥与 URL 凭据，
// Redacted 去掉密钥与客户端，BaseURL 取第一个地址。
func TestEndpointNeverPrintsKey(t *testing.T) {
	ep := endpoint.Endpoint{
		BaseURLs:   []string{"http://user:pa55@10.0.0.1:9000/v1", "http://10.0.0.2:9000/v1"},
		Model:      "qwen3-32b",
		APIKey:     "sk-secret-123",
		HTTPClient: &http.Client{},
	}
	for _, s := range []string{fmt.Sprint(ep), fmt.Sprintf("%v %+v %#v %s", ep, ep, ep, ep)} {
		if strings.Contains(s, "sk-secret-123") || strings.Contains(s, "pa55") {
			t.Fatalf("secret leaked: %s", s)
		}
	}
	r := ep.Redacted()
	if r.APIKey != "" || r.HTTPClient != nil || r.Model != "qwen3-32b" || r.BaseURLs[0] != "http://***@10.0.0.1:9000/v1" || r.BaseURLs[1] != ep.BaseURLs[1] {
		t.Fatalf("Redacted = %#v / %q", r, r.BaseURLs)
	}
	if ep.BaseURL() != ep.BaseURLs[0] || (endpoint.Endpoint{}).BaseURL() != "" {
		t.Fatalf("BaseURL wrong")
	}
	if got, want := ep.String(), "Endpoint{model=qwen3-32b base_urls=http://***@10.0.0.1:9000/v1,http://10.0.0.2:9000/v1 api_key=***}"; got != want {
		t.Fatalf("String = %s, want %s", got, want)
	}
	if got := (endpoint.Endpoint{}).String(); got != "Endpoint{model= base_urls= no api_key}" {
		t.Fatalf("String of zero = %s", got)
	}
	if got := (endpoint.Endpoint{BaseURLs: []string{"not a url", "http://h/v1?x=@y"}}).Redacted().BaseURLs; got[0] != "not a url" || got[1] != "http://h/v1?x=@y" {
		t.Fatalf("non-credential URLs changed: %q", got)
	}
}

// TestRedactURL 覆盖用户信息的各种位置：只有主机部分的 @ 才是凭据。
func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:p@h:1/v1":       "https://***@h:1/v1",
		"http://u@h":               "http://***@h",
		"http://a@b@h/v1":          "http://***@h/v1",
		"http://h/v1#frag@x":       "http://h/v1#frag@x",
		"http://u:p@h?q=1":         "http://***@h?q=1",
		"plain text with @ in it":  "plain text with @ in it",
		"":                         "",
		"http://h:8000/v1":         "http://h:8000/v1",
		"https://tok@[::1]:9/v1/x": "https://***@[::1]:9/v1/x",
	} {
		if got := endpoint.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestValidate 逐个检查写错的端点：错误包装 ErrInvalid，点名下标与屏蔽凭据后的取值，
// 且从不带出口令或密钥。
func TestValidate(t *testing.T) {
	good := endpoint.Endpoint{BaseURLs: []string{"http://127.0.0.1:8000/v1", "https://h.example/v1/"}, Model: "m"}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid endpoint: %v", err)
	}
	cases := []struct {
		name string
		ep   endpoint.Endpoint
		want string
	}{
		{"nil list", endpoint.Endpoint{Model: "m"}, "endpoint: base_urls: invalid endpoint: no base URL"},
		{"empty list", endpoint.Endpoint{BaseURLs: []string{}, Model: "m"}, "endpoint: base_urls: invalid endpoint: no base URL"},
		{"empty entry", endpoint.Endpoint{BaseURLs: []string{"http://h/v1", ""}, Model: "m"}, `endpoint: base_urls[1] "": invalid endpoint: empty`},
		{"no scheme", endpoint.Endpoint{BaseURLs: []string{"localhost:8000/v1"}, Model: "m"}, `endpoint: base_urls[0] "localhost:8000/v1": invalid endpoint: no scheme (want http:// or https://)`},
		{"bare host", endpoint.Endpoint{BaseURLs: []string{"h/v1"}, Model: "m"}, `endpoint: base_urls[0] "h/v1": invalid endpoint: no scheme (want http:// or https://)`},
		{"ftp", endpoint.Endpoint{BaseURLs: []string{"http://h/v1", "ftp://u:pw@h/v1"}, Model: "m"}, `endpoint: base_urls[1] "ftp://***@h/v1": invalid endpoint: scheme "ftp" is not http or https`},
		{"no host", endpoint.Endpoint{BaseURLs: []string{"http:///v1"}, Model: "m"}, `endpoint: base_urls[0] "http:///v1": invalid endpoint: no host`},
		{"unparsable", endpoint.Endpoint{BaseURLs: []string{"http://u:pw@[::1/v1"}, Model: "m"}, `endpoint: base_urls[0] "http://***@[::1/v1": invalid endpoint: not a URL`},
		{"no model", endpoint.Endpoint{BaseURLs: []string{"http://h/v1"}, Model: " ", APIKey: "sk-k"}, "endpoint: model: invalid endpoint: empty (want the served-model-name)"},
		{"metrics url", endpoint.Endpoint{BaseURLs: []string{"http://h/v1"}, Model: "m", Metrics: []endpoint.MetricsInstance{{URL: "http://p:1/metrics"}, {URL: "h:2/metrics"}}},
			`endpoint: metrics[1].url "h:2/metrics": invalid endpoint: no scheme (want http:// or https://)`},
		{"metrics role", endpoint.Endpoint{BaseURLs: []string{"http://h/v1"}, Model: "m", Metrics: []endpoint.MetricsInstance{{Role: "router", URL: "http://u:pw@p/metrics"}}},
			`endpoint: metrics[0].role "router": invalid endpoint: want prefill, decode or empty`},
	}
	for _, c := range cases {
		err := c.ep.Validate()
		if !errors.Is(err, endpoint.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", c.name, err)
			continue
		}
		if err.Error() != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, err, c.want)
		}
		if strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "sk-k") {
			t.Errorf("%s: secret in %q", c.name, err)
		}
	}
}

// TestJSONOmitsSecrets 确认序列化只写地址与模型：密钥与客户端不进入任何产物。
func TestJSONOmitsSecrets(t *testing.T) {
	ep := endpoint.Endpoint{BaseURLs: []string{"http://h/v1"}, Model: "m", APIKey: "sk-x", HTTPClient: &http.Client{}}
	b, err := json.Marshal(ep)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"base_urls":["http://h/v1"],"model":"m"}` {
		t.Fatalf("json = %s", b)
	}
	var back endpoint.Endpoint
	if err := json.Unmarshal([]byte(`{"base_urls":["http://a/v1","http://b/v1"],"model":"q","APIKey":"sk-y"}`), &back); err != nil {
		t.Fatal(err)
	}
	if back.APIKey != "" || back.Model != "q" || len(back.BaseURLs) != 2 || back.BaseURLs[1] != "http://b/v1" {
		t.Fatalf("decoded %#v (%q, key %q)", back, back.BaseURLs, back.APIKey)
	}
}

// TestRedactedMetrics：Redacted 同样屏蔽 metrics 地址里的凭据，名字与角色保留。
func TestRedactedMetrics(t *testing.T) {
	e := endpoint.Endpoint{BaseURLs: []string{"http://h/v1"}, Model: "m",
		Metrics: []endpoint.MetricsInstance{{Name: "p", Role: "prefill", URL: "http://u:pw@p:1/metrics"}}}
	r := e.Redacted()
	if len(r.Metrics) != 1 || r.Metrics[0].URL != "http://***@p:1/metrics" || r.Metrics[0].Role != "prefill" || r.Metrics[0].Name != "p" {
		t.Fatalf("redacted metrics %+v", r.Metrics)
	}
	if e.Metrics[0].URL != "http://u:pw@p:1/metrics" {
		t.Fatal("Redacted modified the original")
	}
}

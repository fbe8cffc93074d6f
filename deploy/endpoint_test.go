package deploy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/deploy"
)

// TestEndpointNeverPrintsKey 确认 Endpoint 的各种格式化输出都不含密钥与 URL 凭据。
func TestEndpointNeverPrintsKey(t *testing.T) {
	ep := deploy.Endpoint{
		BaseURLs: []string{"http://user:pa55@10.0.0.1:9000/v1", "http://10.0.0.2:9000/v1"},
		Model:    "qwen3-32b",
		APIKey:   "sk-secret-123",
	}
	for _, s := range []string{fmt.Sprint(ep), fmt.Sprintf("%v %+v %#v %s", ep, ep, ep, ep)} {
		if strings.Contains(s, "sk-secret-123") || strings.Contains(s, "pa55") {
			t.Fatalf("secret leaked: %s", s)
		}
	}
	r := ep.Redacted()
	if r.APIKey != "" || r.BaseURLs[0] != "http://***@10.0.0.1:9000/v1" || r.BaseURLs[1] != ep.BaseURLs[1] {
		t.Fatalf("Redacted = %#v / %q", r, r.BaseURLs)
	}
	if ep.BaseURL() != ep.BaseURLs[0] || (deploy.Endpoint{}).BaseURL() != "" {
		t.Fatalf("BaseURL wrong")
	}
	if !strings.Contains(ep.String(), "api_key=***") || !strings.Contains(deploy.Endpoint{}.String(), "no api_key") {
		t.Fatalf("String = %s", ep.String())
	}
	if got := (deploy.Endpoint{BaseURLs: []string{"not a url", "http://h/v1?x=@y"}}).Redacted().BaseURLs; got[0] != "not a url" || got[1] != "http://h/v1?x=@y" {
		t.Fatalf("non-credential URLs changed: %q", got)
	}
}

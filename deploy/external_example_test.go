package deploy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/vllm-cibench/cibench/deploy"
)

// ExampleNewExternal 等待一个已在运行的服务健康，然后取得它的 Endpoint。
// 密钥不会出现在 Endpoint 的字符串形式中。
func ExampleNewExternal() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	x, err := deploy.NewExternal(deploy.ExternalConfig{BaseURL: srv.URL, Model: "qwen3-32b", APIKey: "sk-secret"})
	if err != nil {
		fmt.Println(err)
		return
	}
	dep, err := x.Deploy(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dep.Teardown(context.Background())
	ep := dep.Endpoint()
	fmt.Println(strings.TrimPrefix(ep.BaseURL(), srv.URL), ep.Model)
	fmt.Println(strings.Contains(ep.String(), "sk-secret"))
	// Output:
	// /v1 qwen3-32b
	// false
}

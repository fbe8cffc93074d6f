package endpoint_test

import (
	"errors"
	"fmt"

	"github.com/vllm-cibench/cibench/endpoint"
)

// Example 展示一个两实例部署的端点：打印时不带密钥与凭据，写错的地址在任何请求之前
// 被 Validate 点名（各阶段的 Target 嵌入 Endpoint，校验与打印都是这一份）。
func Example() {
	ep := endpoint.Endpoint{
		BaseURLs: []string{"http://10.0.0.1:8000/v1", "http://ops:hunter2@10.0.0.2:8000/v1"},
		Model:    "qwen3-32b",
		APIKey:   "sk-live-123",
	}
	fmt.Println(ep)
	fmt.Println(ep.BaseURL())
	fmt.Println(ep.Validate())

	ep.BaseURLs = append(ep.BaseURLs, "10.0.0.3:8000/v1")
	err := ep.Validate()
	fmt.Println(err)
	fmt.Println(errors.Is(err, endpoint.ErrInvalid))
	// Output:
	// Endpoint{model=qwen3-32b base_urls=http://10.0.0.1:8000/v1,http://***@10.0.0.2:8000/v1 api_key=***}
	// http://10.0.0.1:8000/v1
	// <nil>
	// endpoint: base_urls[2] "10.0.0.3:8000/v1": invalid endpoint: no scheme (want http:// or https://)
	// true
}

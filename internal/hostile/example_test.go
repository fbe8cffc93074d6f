package hostile_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/vllm-cibench/cibench/internal/hostile"
)

// ExampleNew 展示按路径前缀选择故障：同一个服务上，健康前缀正常应答，
// /f/429/ 前缀回 429 与 Retry-After，/f/500~1/ 前缀第一个请求健康、之后 500。
func ExampleNew() {
	s, err := hostile.New(hostile.Config{})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	body := `{"model":"hostile-model","prompt":"hi","max_tokens":2}`
	for _, base := range []string{s.BaseURL(hostile.FaultNone), s.BaseURL(hostile.Fault429), s.BaseURLAfter(hostile.Fault500, 1), s.BaseURLAfter(hostile.Fault500, 1)} {
		resp, err := http.Post(base+"/completions", "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Println(strings.TrimSpace(fmt.Sprint(strings.TrimPrefix(base, s.URL()), " ", resp.StatusCode, " ", resp.Header.Get("Retry-After"))))
	}
	// Output:
	// /f/none/v1 200
	// /f/429/v1 429 1
	// /f/500~1/v1 200
	// /f/500~1/v1 500
}

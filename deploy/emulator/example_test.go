package emulator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
)

// ExampleNew 在测试之外（驱动、命令行）用 New 与 Deploy 启动一个进程内的 vLLM 替身，
// 发一个 completions 请求，并在运行中
// 打开一个缺陷开关（用于证明你的用例能发现它）。
func ExampleNew() {
	ctx := context.Background()
	em, err := emulator.New(emulator.Config{Model: "demo", TTFT: 5 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	dep, err := em.Deploy(ctx)
	if err != nil {
		panic(err)
	}
	defer dep.Teardown(ctx)

	body := `{"model":"demo","prompt":"你好 hello","max_tokens":3,"ignore_eos":true}`
	resp, err := http.Post(dep.Endpoint().BaseURL()+"/completions", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	var out struct {
		Object  string `json:"object"`
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	fmt.Println(out.Object, out.Choices[0].FinishReason, out.Usage.PromptTokens, out.Usage.CompletionTokens)

	_ = em.Update(func(c *emulator.Config) { c.Defects.UnknownModelOK = true })
	resp, _ = http.Post(dep.Endpoint().BaseURL()+"/completions", "application/json", strings.NewReader(`{"model":"other","prompt":"x","max_tokens":1}`))
	resp.Body.Close()
	fmt.Println("unknown model status with defect:", resp.StatusCode)
	// Output:
	// text_completion length 3 3
	// unknown model status with defect: 200
}

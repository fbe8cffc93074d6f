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

// ExampleNewPD 启动 PD 分离的一对模拟器（prefill + decode，前面一个代理），客户端只和
// 代理说话；同一提示第二次发送时两边的前缀缓存都命中，decode 侧的 usage 给出 cached_tokens。
func ExampleNewPD() {
	ctx := context.Background()
	pd, err := emulator.NewPD(emulator.PDConfig{
		Prefill: emulator.Config{Model: "demo", PrefillPerToken: 100 * time.Microsecond, EnablePrefixCaching: true},
		Decode: emulator.Config{Model: "demo", ITL: time.Millisecond, KVTransferPerToken: 20 * time.Microsecond,
			EnablePrefixCaching: true, EnablePromptTokensDetails: true},
	})
	if err != nil {
		panic(err)
	}
	dep, err := pd.Deploy(ctx)
	if err != nil {
		panic(err)
	}
	defer dep.Teardown(ctx)

	prompt := strings.Repeat("word ", 40) // 40 个词 + 结尾空白 = 41 个 token
	body := `{"model":"demo","max_tokens":4,"ignore_eos":true,"messages":[{"role":"user","content":"` + prompt + `"}]}`
	for i := 0; i < 2; i++ {
		resp, err := http.Post(dep.Endpoint().BaseURL()+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		var out struct {
			Usage struct {
				PromptTokens        int `json:"prompt_tokens"`
				CompletionTokens    int `json:"completion_tokens"`
				PromptTokensDetails *struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		cached := 0
		if d := out.Usage.PromptTokensDetails; d != nil {
			cached = d.CachedTokens
		}
		fmt.Println(out.Usage.PromptTokens, out.Usage.CompletionTokens, cached)
	}
	// Output:
	// 41 4 0
	// 41 4 32
}

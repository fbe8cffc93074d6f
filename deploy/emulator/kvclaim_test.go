package emulator_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
)

// TestNoKVUsageWithoutAKVModel 复现 issue 37 §3：KV 容量不限（没有 num_kv_blocks）的模拟器把
// running / max_num_seqs 当作 vllm:kv_cache_usage_perc 导出，并发达到 max_num_seqs 时它就是 1.0，
// 报告于是写“KV cache became full”——一个服务从没报告过的状态。现在不模拟 KV 时这个量为 0
// （没有 KV 压力），只有 num_kv_blocks 给出容量时才是块的使用率。
func TestNoKVUsageWithoutAKVModel(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", TTFT: 300 * time.Millisecond, MaxNumSeqs: 2})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
			resp, err := http.Post(ep.BaseURL()+"/chat/completions", "application/json", strings.NewReader(body))
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		}()
	}
	// 轮询 /metrics，直到两个请求都在运行（注入的 TTFT 是 300 ms），再看 KV 占用。
	var b []byte
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(ep.BaseURL(), "/v1")+"/metrics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		b, _ = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		cancel()
		if strings.Contains(string(b), `vllm:num_requests_running{model_name="m"} 2`) || time.Now().After(deadline) {
			break
		}
	}
	wg.Wait()
	if !strings.Contains(string(b), `vllm:num_requests_running{model_name="m"} 2`) {
		t.Skip("the two requests never ran at the same time (machine too busy); nothing to check")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "vllm:kv_cache_usage_perc{") && !strings.HasSuffix(line, " 0") {
			t.Fatalf("the emulator reports KV usage it does not model: %s", line)
		}
	}
	if !strings.Contains(string(b), "vllm:kv_cache_usage_perc{") {
		t.Fatal("gauge missing")
	}
}

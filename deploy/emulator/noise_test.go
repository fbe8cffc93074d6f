package emulator_test

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
)

// TestLatencyNoiseReachesTheClient 检验噪声确实作用在服务上（抽样本身的分布见
// TestSampledLatencyIsLogNormal）：σ 很大时客户端看到的 TTFT 高度离散，σ=0 时不低于注入值。
// 断言只用负载改变不了方向的事实：机器再忙，时延也只会变长，不会短于注入值；σ=1.5 时抽样的
// P10 约为注入值的 15%，40 个请求里总有客户端看到的 TTFT 比注入值短四分之一以上——这只能来自噪声。
func TestLatencyNoiseReachesTheClient(t *testing.T) {
	measure := func(sigma float64) []float64 {
		_, ep := emulator.Start(t, emulator.Config{TTFT: 40 * time.Millisecond, TTFTSigma: sigma, Seed: 7})
		var mu sync.Mutex
		var xs []float64
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 10; i++ {
					ttft, err := firstChunk(ep.BaseURL())
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					xs = append(xs, ttft.Seconds())
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		sort.Float64s(xs)
		return xs
	}
	if xs := measure(1.5); len(xs) == 0 || xs[0] > 0.030 {
		t.Errorf("sigma 1.5: shortest client TTFT %v s, want well below the injected 40 ms", xs)
	}
	if xs := measure(0); len(xs) == 0 || xs[0] < 0.039 {
		t.Errorf("sigma 0: shortest client TTFT %v s, want at least the injected 40 ms", xs)
	}
}

// TestLatencyNoiseValidated 检验越界的 σ 被拒绝并点名字段。
func TestLatencyNoiseValidated(t *testing.T) {
	for _, c := range []emulator.Config{{TTFTSigma: -1}, {ITLSigma: 3}, {TTFTSigma: math.NaN()}} {
		if _, err := emulator.New(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// firstChunk 发一个流式 chat 请求，返回到第一个 data 行的时间（客户端看到的 TTFT）。
func firstChunk(base string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body := `{"model":"` + emulator.DefaultModel + `","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":true}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat/completions", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"content"`) {
			return time.Since(start), nil
		}
	}
	return 0, fmt.Errorf("no content chunk: %v", sc.Err())
}

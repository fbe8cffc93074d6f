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

// TestLatencyNoiseIsLogNormal 检验 TTFTSigma：客户端看到的 TTFT 中位数仍约为注入值，
// 右尾按 exp(σ·Z) 拉长（P90/P50 ≈ exp(1.2816σ)），而 σ=0 时几乎没有离散。
func TestLatencyNoiseIsLogNormal(t *testing.T) {
	measure := func(sigma float64) (p50, p90 float64) {
		_, ep := emulator.Start(t, emulator.Config{TTFT: 40 * time.Millisecond, TTFTSigma: sigma, Seed: 7})
		var mu sync.Mutex
		var xs []float64
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 25; i++ {
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
		return xs[len(xs)/2], xs[len(xs)*9/10]
	}
	p50, p90 := measure(0.35)
	if p50 < 0.030 || p50 > 0.060 {
		t.Errorf("sigma 0.35: median TTFT %.1f ms, want about 40", p50*1000)
	}
	if r, want := p90/p50, math.Exp(1.2816*0.35); r < want*0.8 || r > want*1.25 {
		t.Errorf("sigma 0.35: P90/P50 = %.2f, want about %.2f", r, want)
	}
	q50, q90 := measure(0)
	if q90/q50 > 1.2 {
		t.Errorf("sigma 0: P90/P50 = %.2f, want close to 1", q90/q50)
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

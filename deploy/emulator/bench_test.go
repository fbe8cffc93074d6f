package emulator_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/internal/procstat"
	"github.com/vllm-cibench/cibench/internal/sse"
)

// benchStream 在回环上以并行客户端压测流式 chat（零延迟），报告 req/s 与 chunk/s。
// tokens 是每个请求的输出 token 数（ignore_eos），每个 token 一个 SSE chunk。
// sampling 是请求里的采样参数片段，省略时为 `"temperature":0`（贪心快路径）。
func benchStream(b *testing.B, tokens int, stream, coalesce bool, sampling ...string) {
	sp := `"temperature":0`
	if len(sampling) > 0 {
		sp = sampling[0]
	}
	_, ep := emulator.Start(b, emulator.Config{Model: "m", CoalesceZeroLatency: coalesce})
	url := ep.BaseURL() + "/chat/completions"
	client := benchClient(b)
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"benchmark prompt 性能测试"}],"max_tokens":` +
		itoa(tokens) + `,"ignore_eos":true,` + sp + `,"stream":` + map[bool]string{true: "true", false: "false"}[stream] +
		`,"stream_options":` + map[bool]string{true: `{"include_usage":true}`, false: "null"}[stream] + `}`)
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	cpu0 := procstat.CPUTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	el := time.Since(start).Seconds()
	cpu := (procstat.CPUTime() - cpu0).Seconds()
	b.ReportMetric(float64(b.N)/el, "req/s")
	// 机器被其他进程争用时墙钟数字会失真；每请求 CPU 时间（客户端 + 服务端合计）更稳定，
	// 由它可推算 2 核满载时的上限：2 / cpu-s-per-req。
	b.ReportMetric(cpu*1e6/float64(b.N), "cpu-us/req")
	b.ReportMetric(2/(cpu/float64(b.N)), "req/s@2cores")
	if stream {
		b.ReportMetric(float64(b.N*(tokens+3))/el, "chunks/s")
		b.ReportMetric(2/(cpu/float64(b.N*(tokens+3))), "chunks/s@2cores")
	}
}

// itoa 是 strconv.Itoa 的小写替身，避免为一个调用引入导入。
func itoa(n int) string {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(buf[i:])
		}
	}
}

// BenchmarkLoopbackStream40 以 40 token 的流式请求压测回环吞吐（每 chunk 一次 flush）。
func BenchmarkLoopbackStream40(b *testing.B) { benchStream(b, 40, true, false) }

// BenchmarkLoopbackStream200 以 200 token 的长流压测回环 chunk 吞吐。
func BenchmarkLoopbackStream200(b *testing.B) { benchStream(b, 200, true, false) }

// BenchmarkLoopbackStream200Sampled 同 BenchmarkLoopbackStream200，但带 loadgen 的默认采样参数
// （temperature 0.6、top_k 8）：这类请求走分布采样，衡量它相对贪心快路径的额外开销。
func BenchmarkLoopbackStream200Sampled(b *testing.B) {
	benchStream(b, 200, true, false, `"temperature":0.6,"top_k":8,"seed":1`)
}

// BenchmarkLoopbackStream40Coalesced 同 BenchmarkLoopbackStream40，但打开 CoalesceZeroLatency 合并写入。
func BenchmarkLoopbackStream40Coalesced(b *testing.B) { benchStream(b, 40, true, true) }

// BenchmarkLoopbackNonStream 压测非流式请求的回环吞吐。
func BenchmarkLoopbackNonStream(b *testing.B) { benchStream(b, 40, false, false) }

// BenchmarkHandlerStream 不经网络，直接调用 Handler（衡量模拟器本身的开销）。
func BenchmarkHandlerStream(b *testing.B) { benchHandler(b, emulator.Config{Model: "m"}) }

// BenchmarkHandlerStreamPerfModel 同上，但打开整个性能模型（前缀缓存、有限 KV、批倍数；
// 延迟仍为 0）：每步一次 KV 分配与抢占信号检查，衡量模型本身的 CPU 代价。
func BenchmarkHandlerStreamPerfModel(b *testing.B) {
	benchHandler(b, emulator.Config{Model: "m", EnablePrefixCaching: true, NumKVBlocks: 1 << 16, MaxNumSeqs: 256, BatchFactor: 2})
}

// benchHandler 是两个 Handler 基准的共同实现。
func benchHandler(b *testing.B, cfg emulator.Config) {
	em, err := emulator.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	h := em.Handler()
	body := `{"model":"m","messages":[{"role":"user","content":"benchmark prompt 性能测试"}],"max_tokens":40,"ignore_eos":true,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`
	b.ReportAllocs()
	cpu0 := procstat.CPUTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Error(rec.Code)
				return
			}
		}
	})
	b.ReportMetric((procstat.CPUTime()-cpu0).Seconds()*1e6/float64(b.N), "cpu-us/op")
}

// benchClient 返回压测用的客户端：连接池足够大、关闭压缩；基准结束时关闭空闲连接。
func benchClient(b *testing.B) *http.Client {
	tr := &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// benchFidelity 以并发 conc 个流测量客户端看到的 TTFT 与 ITL 中位数，与注入值
// （TTFT 50ms、ITL 10ms）比较并报告偏差（毫秒）。这是基准而非断言：机器繁忙时偏差会变大。
func benchFidelity(b *testing.B, conc int) {
	const ttft, itl = 50 * time.Millisecond, 10 * time.Millisecond
	_, ep := emulator.Start(b, emulator.Config{Model: "m", TTFT: ttft, ITL: itl})
	url := ep.BaseURL() + "/completions"
	client := benchClient(b)
	body := `{"model":"m","prompt":"x","max_tokens":20,"ignore_eos":true,"stream":true}`
	var mu sync.Mutex
	var ttfts, itls []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		for c := 0; c < conc; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				resp, err := client.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				defer resp.Body.Close()
				r := sse.NewReader(resp.Body)
				var last time.Time
				var lt, li []float64
				for {
					ev, err := r.Next()
					if err != nil || ev.IsDone() {
						break
					}
					now := time.Now()
					if last.IsZero() {
						lt = append(lt, now.Sub(start).Seconds()*1000)
					} else {
						li = append(li, now.Sub(last).Seconds()*1000)
					}
					last = now
				}
				mu.Lock()
				ttfts, itls = append(ttfts, lt...), append(itls, li...)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	sort.Float64s(ttfts)
	sort.Float64s(itls)
	if len(ttfts) == 0 || len(itls) == 0 {
		b.Fatal("no samples")
	}
	b.ReportMetric(ttfts[len(ttfts)/2]-50, "ttft-p50-err-ms")
	b.ReportMetric(itls[len(itls)/2]-10, "itl-p50-err-ms")
}

// BenchmarkTimingFidelityC1 并发 1 时的 TTFT/ITL 保真度。
func BenchmarkTimingFidelityC1(b *testing.B) { benchFidelity(b, 1) }

// BenchmarkTimingFidelityC64 并发 64 时的 TTFT/ITL 保真度。
func BenchmarkTimingFidelityC64(b *testing.B) { benchFidelity(b, 64) }

// BenchmarkTimingFidelityC256 并发 256 时的 TTFT/ITL 保真度。
func BenchmarkTimingFidelityC256(b *testing.B) { benchFidelity(b, 256) }

package loadgen_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
	emu "github.com/vllm-cibench/cibench/internal/emulator"
	"github.com/vllm-cibench/cibench/loadgen"
)

// scripted 启动一个回环 HTTP 服务，每个 chat 请求都交给 fn 处理（探测请求也一样），
// 用来构造模拟器不会产生的线上异常。
func scripted(t *testing.T, fn func(w http.ResponseWriter, body string)) loadgen.Target {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/v1/completions" {
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		fn(w, string(b))
	}))
	t.Cleanup(srv.Close)
	return loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{srv.URL + "/v1"}, Model: "m"}, Provider: "scripted"}
}

// sseWrite 写出一组 SSE data 事件并逐个刷新。
func sseWrite(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		fmt.Fprintf(w, "data: %s\n\n", e)
		w.(http.Flusher).Flush()
	}
}

const roleChunk = `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`

// contentChunk 返回携带 text 的 delta chunk。
func contentChunk(text string) string {
	return `{"choices":[{"index":0,"delta":{"content":"` + text + `"}}]}`
}

// runOne 以并发 1 跑 n 个请求，返回记录与汇总。
func runOne(t *testing.T, tgt loadgen.Target, p loadgen.Profile, n int) ([]loadgen.Record, loadgen.Summary) {
	t.Helper()
	if p.InputLength == nil {
		p.InputLength = []int{16}
	}
	if p.OutputLength == nil {
		p.OutputLength = []int{4}
	}
	p.NumRequests = []int{n}
	sink := &collect{}
	sums, err := loadgen.Run(context.Background(), tgt, p, sink.observer())
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 {
		t.Fatalf("summaries %d", len(sums))
	}
	return sink.recs, sums[0]
}

// TestStreamFailureClasses 逐类验证失败的判定：流内错误、[DONE] 前断开、无 token 的 200、HTTP 错误、坏事件。
func TestStreamFailureClasses(t *testing.T) {
	cases := []struct {
		name   string
		fn     func(w http.ResponseWriter, body string)
		class  string
		status int
	}{
		{"in-band error", func(w http.ResponseWriter, _ string) {
			sseWrite(w, roleChunk, contentChunk("a"), `{"error":{"message":"engine died","code":500}}`, "[DONE]")
		}, loadgen.ErrClassStreamError, 200},
		{"cut before DONE", func(w http.ResponseWriter, _ string) {
			sseWrite(w, roleChunk, contentChunk("a"), contentChunk("b"))
		}, loadgen.ErrClassTruncated, 200},
		{"200 without tokens", func(w http.ResponseWriter, _ string) {
			sseWrite(w, roleChunk, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]")
		}, loadgen.ErrClassNoTokens, 200},
		{"http 503", func(w http.ResponseWriter, _ string) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error":{"message":"overloaded","code":503}}`)
		}, loadgen.ErrClassHTTP, 503},
		{"garbage event", func(w http.ResponseWriter, _ string) {
			sseWrite(w, roleChunk, `{"choices":[{"delta":{"content":"x"`, "[DONE]")
		}, loadgen.ErrClassBadResponse, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs, s := runOne(t, scripted(t, c.fn), loadgen.Profile{}, 5)
			if s.Failed != 5 || s.FailRate != 1 || s.Succeeded != 0 || s.QPS != 0 {
				t.Fatalf("summary failed=%d rate=%v ok=%d qps=%v", s.Failed, s.FailRate, s.Succeeded, s.QPS)
			}
			if s.TTFT.Valid() || s.E2E.Valid() || s.CompletionTokens.Avg != -1 {
				t.Fatalf("failed requests leaked into latency stats: %+v %+v", s.TTFT, s.CompletionTokens)
			}
			for _, r := range recs {
				if r.OK || r.ErrorClass != c.class || r.Status != c.status || r.Error == "" {
					t.Fatalf("record class=%q status=%d err=%q, want %q/%d", r.ErrorClass, r.Status, r.Error, c.class, c.status)
				}
			}
		})
	}
}

// TestTimeoutIsAFailure 验证超时的请求计为 timeout 失败。
func TestTimeoutIsAFailure(t *testing.T) {
	tgt := scripted(t, func(w http.ResponseWriter, body string) {
		if strings.Contains(body, `"hi"`) { // 探测请求立即成功
			sseWrite(w, contentChunk("a"), "[DONE]")
			return
		}
		sseWrite(w, roleChunk)
		time.Sleep(2 * time.Second) // 超过客户端超时；服务端关闭时结束
	})
	recs, s := runOne(t, tgt, loadgen.Profile{Timeout: 100 * time.Millisecond}, 2)
	if s.Failed != 2 {
		t.Fatalf("failed=%d", s.Failed)
	}
	for _, r := range recs {
		if r.ErrorClass != loadgen.ErrClassTimeout {
			t.Fatalf("class %q (%s), want timeout", r.ErrorClass, r.Error)
		}
	}
}

// TestSixteenMiBEvent 验证 16 MiB 的单个 SSE 事件可以完整解析（无行长上限）。
func TestSixteenMiBEvent(t *testing.T) {
	big := strings.Repeat(" x", 8<<20) // 16 MiB 的 content，8Mi 个 token（按共享规则）
	tgt := scripted(t, func(w http.ResponseWriter, _ string) {
		sseWrite(w, roleChunk, contentChunk(big), contentChunk("tail"), "[DONE]")
	})
	recs, s := runOne(t, tgt, loadgen.Profile{}, 1)
	if s.Failed != 0 || len(recs) != 1 {
		t.Fatalf("failed=%d recs=%d: %+v", s.Failed, len(recs), recs)
	}
	r := recs[0]
	if want := 8<<20 + 1; r.CompletionTokens != want || r.TokenSource != loadgen.TokenSourceEstimate {
		t.Fatalf("completion tokens %d (%s), want %d estimated", r.CompletionTokens, r.TokenSource, want)
	}
	if len(r.ChunkTimes) != 2 || r.ChunkTokens[0] != 8<<20 {
		t.Fatalf("chunks %v", r.ChunkTokens)
	}
}

// TestStreamOptionsFallback 验证服务端拒绝 continuous_usage_stats 时降级为 include_usage，且 token 数仍来自 usage。
func TestStreamOptionsFallback(t *testing.T) {
	// 服务端拒绝 continuous_usage_stats 但接受 include_usage：降级后 token 数仍来自 usage。
	var sawContinuous, sawPlain int
	tgt := scripted(t, func(w http.ResponseWriter, body string) {
		if strings.Contains(body, "continuous_usage_stats") {
			sawContinuous++
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":"continuous_usage_stats not supported","code":400}}`)
			return
		}
		sawPlain++
		sseWrite(w, roleChunk, contentChunk("a"), contentChunk("b c"), `{"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":3}}`, "[DONE]")
	})
	recs, s := runOne(t, tgt, loadgen.Profile{}, 4)
	if sawContinuous != 1 || sawPlain != 5 {
		t.Fatalf("continuous tries %d (want 1 probe), plain %d (want probe+4)", sawContinuous, sawPlain)
	}
	if s.Failed != 0 || s.TokenSource != loadgen.TokenSourceUsage || s.AvgPromptTokens != 16 {
		t.Fatalf("summary failed=%d source=%s prompt=%v", s.Failed, s.TokenSource, s.AvgPromptTokens)
	}
	for _, r := range recs {
		// 逐 chunk 增量是估算（1 与 2），总数是 usage 的 3。
		if r.CompletionTokens != 3 || len(r.ChunkTokens) != 2 || r.ChunkTokens[1] != 2 {
			t.Fatalf("record tokens %d chunks %v", r.CompletionTokens, r.ChunkTokens)
		}
		if r.TPOT != (r.E2E-r.TTFT)/2 {
			t.Fatalf("TPOT %v, want (E2E-TTFT)/2 = %v", r.TPOT, (r.E2E-r.TTFT)/2)
		}
	}
}

// TestAllStreamOptionsRejected 验证完全不支持 stream_options 的服务端仍可压测，token 数标为估算。
func TestAllStreamOptionsRejected(t *testing.T) {
	tgt := scripted(t, func(w http.ResponseWriter, body string) {
		if strings.Contains(body, "stream_options") {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		sseWrite(w, roleChunk, contentChunk("a b"), "[DONE]")
	})
	_, s := runOne(t, tgt, loadgen.Profile{}, 3)
	if s.Failed != 0 || s.TokenSource != loadgen.TokenSourceEstimate || s.CompletionTokens.Avg != 2 {
		t.Fatalf("failed=%d source=%s tokens=%v", s.Failed, s.TokenSource, s.CompletionTokens.Avg)
	}
}

// TestThinkInContentCountsAsReasoning 验证正文中的思考段计为推理 token，且 TTFT 不取空的角色 chunk。
func TestThinkInContentCountsAsReasoning(t *testing.T) {
	tgt := scripted(t, func(w http.ResponseWriter, _ string) {
		sseWrite(w, roleChunk, contentChunk("<think>"), contentChunk("one two"), contentChunk("three</think>"),
			contentChunk("answer"), "[DONE]")
	})
	recs, s := runOne(t, tgt, loadgen.Profile{}, 2)
	if s.Failed != 0 {
		t.Fatal(recs[0].Error)
	}
	// 推理 3 个 token（one two three），正文 1 个；标签本身不计入。
	if s.AvgReasoningTokens != 3 || s.AvgContentTokens != 1 {
		t.Fatalf("reasoning %v content %v", s.AvgReasoningTokens, s.AvgContentTokens)
	}
	// TTFT 取第一个带文本的 chunk（"<think>"），而不是空的角色 chunk。
	if recs[0].ChunkTokens[0] != 0 || recs[0].TTFT != recs[0].ChunkTimes[0] {
		t.Fatalf("chunk tokens %v", recs[0].ChunkTokens)
	}
}

// TestEmulatorReasoningAndSpecDecode 对模拟器的三种推理输出方式与推测解码计数器做端到端检查。
func TestEmulatorReasoningAndSpecDecode(t *testing.T) {
	for _, cfg := range []emulator.Config{
		{Model: "m", Reasoning: true},
		{Model: "m", Reasoning: true, ReasoningField: "reasoning_content"},
		{Model: "m", Reasoning: true, ReasoningInContent: true},
	} {
		_, tgt := startEmulator(t, cfg)
		_, s := runOne(t, tgt, loadgen.Profile{OutputLength: []int{64}}, 4)
		if s.Failed != 0 {
			t.Fatalf("%+v: failed %d", cfg, s.Failed)
		}
		if s.AvgReasoningTokens <= 0 || s.AvgContentTokens < 0 || s.AvgReasoningTokens+s.AvgContentTokens != s.CompletionTokens.Avg {
			t.Fatalf("%+v: reasoning %v + content %v != completion %v", cfg, s.AvgReasoningTokens, s.AvgContentTokens, s.CompletionTokens.Avg)
		}
	}
	_, tgt := startEmulator(t, emulator.Config{Model: "m", SpecDecode: true, SpecAcceptRate: 0.5})
	_, s := runOne(t, tgt, loadgen.Profile{OutputLength: []int{64}}, 8)
	if s.SpecAcceptRate.Avg < 0.3 || s.SpecAcceptRate.Avg > 0.7 || s.SpecAcceptRate.P99 != -1 || s.SpecAcceptRate.Min != -1 {
		t.Fatalf("spec accept rate %+v, want avg ≈0.5 and per-request fields -1", s.SpecAcceptRate)
	}
}

// TestFailRateEqualsInjectedFailures 用与模拟器相同的确定性抽签复算注入的故障，要求失败率与各失败类别完全相等。
func TestFailRateEqualsInjectedFailures(t *testing.T) {
	const n, seed, rate = 200, 7, 0.2
	kinds := []string{"500", "429", "stream_error", "drop", "truncate"}
	_, tgt := startEmulator(t, emulator.Config{Model: "m", FailureRate: rate, FailureKinds: kinds, Seed: seed})
	// 模拟器按到达顺序为每个生成请求抽签：第 1 签给探测请求，其后 n 签给本组。
	f := emu.NewFailer(seed)
	f.Next(rate, kinds)
	want := map[string]int{}
	wantFailed := 0
	for range n {
		if k := f.Next(rate, kinds); k != "" {
			want[k]++
			wantFailed++
		}
	}
	recs, s := runOne(t, tgt, loadgen.Profile{Concurrency: []int{8}, OutputLength: []int{8}}, n)
	if s.Failed != wantFailed || s.FailRate != float64(wantFailed)/n {
		t.Fatalf("failed %d (rate %v), injected %d", s.Failed, s.FailRate, wantFailed)
	}
	got := map[string]int{}
	for _, r := range recs {
		if !r.OK {
			got[r.ErrorClass+fmt.Sprint(r.Status)]++
		}
	}
	wantClasses := map[string]int{}
	add := func(k string, v int) {
		if v > 0 {
			wantClasses[k] += v
		}
	}
	add("http500", want["500"])
	add("http429", want["429"])
	add("stream_error200", want["stream_error"])
	add("truncated200", want["drop"]+want["truncate"])
	if fmt.Sprint(got) != fmt.Sprint(wantClasses) {
		t.Fatalf("classes %v, want %v", got, wantClasses)
	}
}

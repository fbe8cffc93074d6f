package loadgen_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/loadgen"
)

// hangBound 是这些测试里一次运行允许的最长时间：远大于配置的超时，但一旦回到
// "永远挂住"的行为，测试会在这里失败而不是挂死整个测试进程。
const hangBound = 20 * time.Second

// runBounded 在 hangBound 内执行 Run，超时则让测试失败；返回记录、汇总、耗时与错误。
func runBounded(t *testing.T, tgt loadgen.Target, p loadgen.Profile) ([]loadgen.Record, []loadgen.Summary, time.Duration, error) {
	t.Helper()
	if p.InputLength == nil {
		p.InputLength = []int{16}
	}
	if p.OutputLength == nil {
		p.OutputLength = []int{4}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		sums []loadgen.Summary
		err  error
	}
	sink := &collect{}
	start := time.Now()
	done := make(chan result, 1)
	go func() {
		s, err := loadgen.Run(ctx, tgt, p, sink.observer())
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return sink.recs, r.sums, time.Since(start), r.err
	case <-time.After(hangBound):
		cancel()
		<-done
		t.Fatalf("Run still running after %v (timeout %v, idle_timeout %v)", hangBound, p.Timeout, p.IdleTimeout)
		return nil, nil, 0, nil
	}
}

// silentListener 接受连接但从不读写（"接受后沉默"的服务），测试结束时关闭全部连接。
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/v1"
}

// TestAcceptAndSilenceHonoursTimeout 钉住挂死缺陷：服务接受连接后一言不发时，运行前的探测请求
// 曾没有任何期限，整个运行永远挂住。现在探测受 Timeout 约束，Run 以点名探测的错误返回。
func TestAcceptAndSilenceHonoursTimeout(t *testing.T) {
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{silentListener(t)}, Model: "m"}}
	_, _, el, err := runBounded(t, tgt, loadgen.Profile{Timeout: 300 * time.Millisecond, NumRequests: []int{2}})
	if err == nil || !strings.Contains(err.Error(), "probe") || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("err %v, want a probe deadline error", err)
	}
	t.Logf("returned after %v", el)
}

// TestSilentAfterProbeIsTimeout 验证探测成功后服务对真实请求接受而不应答：每个请求在 Timeout
// 后以 timeout 失败，运行结束。
func TestSilentAfterProbeIsTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"hi"`) {
			sseWrite(w, contentChunk("a"), "[DONE]")
			return
		}
		blockUntilGone(r) // 不发响应头
	}))
	t.Cleanup(srv.Close)
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{srv.URL + "/v1"}, Model: "m"}}
	recs, sums, _, err := runBounded(t, tgt, loadgen.Profile{Timeout: 300 * time.Millisecond, NumRequests: []int{2}})
	if err != nil {
		t.Fatal(err)
	}
	if sums[0].Failed != 2 || sums[0].Succeeded != 0 {
		t.Fatalf("failed %d ok %d", sums[0].Failed, sums[0].Succeeded)
	}
	for _, r := range recs {
		if r.ErrorClass != loadgen.ErrClassTimeout {
			t.Errorf("class %q (%s), want timeout", r.ErrorClass, r.Error)
		}
	}
}

// blockUntilGone 让处理函数一直等到客户端断开（或服务关闭）。先读完请求体：net/http 只在
// 请求体读完后才在后台探测连接关闭，否则 r.Context() 不会因客户端断开而结束。
func blockUntilGone(r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	select {
	case <-r.Context().Done():
	case <-time.After(hangBound):
	}
}

// TestStallAfterFirstChunksIsIdleTimeout 钉住"先发几个 chunk 然后卡住"的挂死：总超时很长（1 分钟）
// 时，请求由流内静默超时切断，计为 idle_timeout 失败。
func TestStallAfterFirstChunksIsIdleTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"hi"`) {
			sseWrite(w, contentChunk("a"), "[DONE]")
			return
		}
		sseWrite(w, roleChunk, contentChunk("one"), contentChunk(" two"))
		blockUntilGone(r)
	}))
	t.Cleanup(srv.Close)
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{srv.URL + "/v1"}, Model: "m"}}
	p := loadgen.Profile{Timeout: time.Minute, IdleTimeout: 200 * time.Millisecond, NumRequests: []int{3}, Concurrency: []int{3}}
	recs, sums, el, err := runBounded(t, tgt, p)
	// 三个请求都没有回答完：服务停止回答（ErrUnresponsive），这一行照样交回、标为不完整。
	if !errors.Is(err, loadgen.ErrUnresponsive) {
		t.Fatalf("err %v, want ErrUnresponsive", err)
	}
	if len(sums) != 1 || !sums[0].Incomplete {
		t.Fatalf("rows %+v, want one incomplete row", sums)
	}
	if sums[0].Failed != 3 {
		t.Fatalf("failed %d", sums[0].Failed)
	}
	for _, r := range recs {
		if r.ErrorClass != loadgen.ErrClassIdleTimeout || !strings.Contains(r.Error, "idle_timeout") {
			t.Errorf("class %q error %q, want idle_timeout", r.ErrorClass, r.Error)
		}
		if r.E2E < 200*time.Millisecond {
			t.Errorf("cut after %v, before the idle timeout", r.E2E)
		}
	}
	if el > 30*time.Second {
		t.Errorf("took %v", el)
	}
}

// TestSilentTokenizeAndMetrics 钉住 /tokenize 静默时的挂死：提示长度校准与它之前的探测曾没有期限。
// /tokenize 与 /metrics 都接受请求但从不应答时，运行在辅助请求的超时后退回本地计数并完成，
// 服务端指标记为不可得。
func TestSilentTokenizeAndMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/tokenize", "/metrics":
			blockUntilGone(r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		sseWrite(w, roleChunk, contentChunk("one"), contentChunk(" two"), "[DONE]")
	}))
	t.Cleanup(srv.Close)
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{srv.URL + "/v1"}, Model: "m"}}
	p := loadgen.Profile{Timeout: 5 * time.Second, IdleTimeout: 300 * time.Millisecond, NumRequests: []int{2}}
	_, sums, el, err := runBounded(t, tgt, p)
	if err != nil {
		t.Fatal(err)
	}
	if s := sums[0]; s.Succeeded != 2 || s.ServerTTFT.Valid() {
		t.Fatalf("ok %d, server TTFT %+v", s.Succeeded, s.ServerTTFT)
	}
	t.Logf("finished after %v with silent /tokenize and /metrics", el)
}

// TestOversizedEventIsTooLarge 验证超过 MaxEventBytes 的事件（流式）与响应体（非流式）计为
// too_large 失败，而不是被整个读进内存。上限设得很小，测试因此很便宜。
func TestOversizedEventIsTooLarge(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			tgt := scripted(t, func(w http.ResponseWriter, body string) {
				if strings.Contains(body, `"hi"`) {
					sseWrite(w, contentChunk("a"), "[DONE]")
					return
				}
				if !stream {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"%s"},"finish_reason":"length"}]}`, big)
					return
				}
				sseWrite(w, roleChunk, contentChunk(big), "[DONE]")
			})
			st := stream
			recs, sums, _, err := runBounded(t, tgt, loadgen.Profile{MaxEventBytes: 4096, Stream: &st, NumRequests: []int{2}})
			if err != nil {
				t.Fatal(err)
			}
			if sums[0].Failed != 2 {
				t.Fatalf("failed %d", sums[0].Failed)
			}
			for _, r := range recs {
				if r.ErrorClass != loadgen.ErrClassTooLarge || !strings.Contains(r.Error, "4096") {
					t.Errorf("class %q error %q, want too_large naming the 4096-byte limit", r.ErrorClass, r.Error)
				}
			}
			if got := sums[0].FailureClasses[loadgen.ErrClassTooLarge]; got != 2 {
				t.Errorf("summary failure classes %v, want too_large=2", sums[0].FailureClasses)
			}
		})
	}
}

// TestServerEchoedKeyIsRedacted 钉住密钥泄漏：服务端把 Authorization 头（原文与 base64）回显进
// 错误体与流内错误事件，记录的 Error 中不得出现密钥的任何形式。
func TestServerEchoedKeyIsRedacted(t *testing.T) {
	const key = "canary-7f3a9c1e5b"
	var n sync.Mutex
	i := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		auth := r.Header.Get("Authorization")
		if strings.Contains(string(b), `"hi"`) {
			sseWrite(w, contentChunk("a"), "[DONE]")
			return
		}
		n.Lock()
		i++
		k := i
		n.Unlock()
		b64 := base64.StdEncoding.EncodeToString([]byte(strings.TrimPrefix(auth, "Bearer ")))
		if k%2 == 1 {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"bad header %s (b64 %s)","code":401}}`, auth, b64)
			return
		}
		sseWrite(w, roleChunk, fmt.Sprintf(`{"error":{"message":"engine saw key %s / %s","code":500}}`, strings.TrimPrefix(auth, "Bearer "), b64), "[DONE]")
	}))
	t.Cleanup(srv.Close)
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{srv.URL + "/v1"}, Model: "m", APIKey: key}}
	recs, _, _, err := runBounded(t, tgt, loadgen.Profile{NumRequests: []int{4}})
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(key))
	classes := map[string]int{}
	for _, r := range recs {
		classes[r.ErrorClass]++
		if strings.Contains(r.Error, key) || strings.Contains(r.Error, b64) || strings.Contains(r.Error, "canary") {
			t.Errorf("secret in record error: %q", r.Error)
		}
		if !strings.Contains(r.Error, "[REDACTED]") {
			t.Errorf("error %q: server text should be kept with the key masked", r.Error)
		}
	}
	if classes[loadgen.ErrClassHTTP] != 2 || classes[loadgen.ErrClassStreamError] != 2 {
		t.Fatalf("classes %v", classes)
	}
}

// TestServerEchoedKeyInFinishReasonIsRedacted 钉住另一条泄漏路径：finish_reason 是服务端的任意文本
// （至多 64 字节），原样进逐请求记录——记录会写进逐请求 CSV，Kubernetes 分片还把它们写进 Pod 日志
// （集群的日志系统可能收集它）。服务端把密钥回显进 finish_reason 时，记录里不得出现密钥；常见取值
// （length、stop……）原样保留。
func TestServerEchoedKeyInFinishReasonIsRedacted(t *testing.T) {
	const key = "canary-finish-42"
	var n sync.Mutex
	i := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		finish := "stop"
		n.Lock()
		i++
		if i%2 == 0 && !strings.Contains(string(b), `"hi"`) {
			finish = "saw " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		n.Unlock()
		sseWrite(w, roleChunk, contentChunk("a"), `{"choices":[{"index":0,"delta":{},"finish_reason":"`+finish+`"}]}`, "[DONE]")
	}))
	t.Cleanup(srv.Close)
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{srv.URL + "/v1"}, Model: "m", APIKey: key}}
	recs, _, _, err := runBounded(t, tgt, loadgen.Profile{NumRequests: []int{4}})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, r := range recs {
		reasons[r.FinishReason]++
		if strings.Contains(r.FinishReason, key) || strings.Contains(r.FinishReason, "canary") {
			t.Errorf("secret in the record's finish reason: %q", r.FinishReason)
		}
	}
	if reasons["stop"] == 0 || reasons["saw [REDACTED]"] == 0 || reasons["stop"]+reasons["saw [REDACTED]"] != len(recs) {
		t.Fatalf("finish reasons %v, want stop and the masked echo", reasons)
	}
}

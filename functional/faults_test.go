package functional_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/functional"
)

// fakeServer 启动一个按请求是否流式分别应答的 httptest 服务器（故意作恶用），返回 Target。
// /tokenize 等其他路径回 404。
func fakeServer(t *testing.T, key string, nonStream, stream http.HandlerFunc) functional.Target {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/chat/completions") && !strings.HasPrefix(r.URL.Path, "/v1/completions") {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Stream {
			stream(w, r)
			return
		}
		nonStream(w, r)
	}))
	t.Cleanup(srv.Close)
	return functional.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{srv.URL + "/v1"}, Model: "m", APIKey: key, HTTPClient: srv.Client()}}
}

// sseWrite 以 text/event-stream 写出 events（每个是 data 的内容），逐个刷新。
func sseWrite(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	for _, e := range events {
		fmt.Fprintf(w, "data: %s\n\n", e)
		if fl != nil {
			fl.Flush()
		}
	}
}

// chunk 返回 choice 0 的一个 chat chunk；finish 为空表示 null。
func chunk(role, content, finish string) string {
	delta := map[string]any{"content": content}
	if role != "" {
		delta["role"] = role
	}
	ch := map[string]any{"index": 0, "delta": delta, "finish_reason": nil}
	if finish != "" {
		ch["finish_reason"] = finish
	}
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", "choices": []any{ch}})
	return string(b)
}

// resultOf 返回报告中 id 的结果。
func resultOf(t *testing.T, rep functional.Report, id string) functional.Result {
	t.Helper()
	res, ok := rep.Result(id)
	if !ok {
		t.Fatalf("no result for %s", id)
	}
	return res
}

// TestResponseSizeIsCapped 证明响应体与单个 SSE 事件有上限：超过 MaxResponseBytes 的回答
// 让用例以 too_large 失败，且客户端在上限附近就停止读取（服务端写不完它的 64 MiB），
// 声明了过大 Content-Length 的回答根本不读。修复前两者都被整个读进内存。
func TestResponseSizeIsCapped(t *testing.T) {
	const limit = 1 << 20
	var written atomic.Int64
	// endless 写出 64 MiB 的 "a"（客户端断开时停止），记录实际写出的字节数。
	endless := func(w http.ResponseWriter, prefix string) {
		_, _ = w.Write([]byte(prefix))
		buf := bytes.Repeat([]byte("a"), 64<<10)
		for range 1024 {
			n, err := w.Write(buf)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}
	target := fakeServer(t, "",
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			endless(w, `{"id":"chatcmpl-1","choices":[{"index":0,"message":{"role":"assistant","content":"`)
		},
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			endless(w, "data: ")
		})
	rep := run(t, target, functional.Options{Retries: -1, MaxResponseBytes: limit}, pick(t, "chat_core/basic", "chat_core/ids_object", "chat_core/stream")...)
	for _, res := range rep.Results {
		if res.Status != functional.StatusFail || res.Class != functional.ClassTooLarge || !strings.Contains(res.Reason, "1048576") {
			t.Errorf("%s: want fail/too_large naming the 1048576-byte cap, got %s/%s %q", res.CaseID, res.Status, res.Class, res.Reason)
		}
	}
	// 三个用例各读到上限附近就断开；没有上限时服务端会写完 3×64 MiB。
	if w := written.Load(); w > 3*(limit+8<<20) {
		t.Errorf("server wrote %d bytes before the client gave up, want about 3×%d", w, limit)
	}

	// 声明的 Content-Length 已经超过上限：不读响应体，直接失败。
	var served atomic.Int64
	target = fakeServer(t, "", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(1<<30))
		n, _ := w.Write([]byte(`{"choices":[`))
		served.Add(int64(n))
	}, nil)
	rep = run(t, target, functional.Options{Retries: -1, MaxResponseBytes: limit}, pick(t, "chat_core/ids_object")...)
	if res := rep.Results[0]; res.Class != functional.ClassTooLarge || !strings.Contains(res.Reason, "Content-Length 1073741824") {
		t.Errorf("want too_large naming the Content-Length, got %s/%s %q", res.Status, res.Class, res.Reason)
	}
}

// TestDefaultResponseCap 证明默认上限是 64 MiB（与 loadgen 的 max_event_bytes、accuracy 一致），
// 16 MiB 的正常事件（作恶服务的 big 故障）在默认上限下照常通过。
func TestDefaultResponseCap(t *testing.T) {
	if got := functional.DefaultOptions().MaxResponseBytes; got != 64<<20 {
		t.Errorf("DefaultOptions().MaxResponseBytes = %d, want 64 MiB", got)
	}
	if got := functional.DefaultConfig().Request; got.MaxResponseBytes != 64<<20 || got.Timeout != 120*time.Second {
		t.Errorf("DefaultConfig().Request = %+v, want 120s and 64 MiB", got)
	}
	big := strings.Repeat("x", 16<<20)
	target := fakeServer(t, "", nil, func(w http.ResponseWriter, r *http.Request) {
		sseWrite(w, chunk("assistant", "", ""), chunk("", big, ""), chunk("", "", "stop"), "[DONE]")
	})
	rep := run(t, target, functional.Options{Retries: -1}, pick(t, "chat_core/stream")...)
	if res := rep.Results[0]; res.Status != functional.StatusPass {
		t.Errorf("16 MiB event under the default cap: %s/%s %q, want pass", res.Status, res.Class, res.Reason)
	}
}

// TestServerErrorTextIsQuoted 证明 HTTP 200 里的错误（非流式的 {"error":…} 体、流里带内的
// error 事件、流式请求得到的 JSON 错误体）以 server_error 失败，原因引用服务端原话（截短，
// 密钥已抹掉），而不是“want 1 choice, got 0”或“stream delivered no content”。
func TestServerErrorTextIsQuoted(t *testing.T) {
	const key = "sk-faults-canary"
	msg := "engine exploded: CUDA out of memory " + key
	errBody := func(m string) string {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": m, "type": "InternalServerError", "code": 500}})
		return string(b)
	}
	for _, tc := range []struct {
		name   string
		non    http.HandlerFunc
		stream http.HandlerFunc
		ids    []string
	}{
		{name: "200 error body", ids: []string{"chat_core/basic", "chat_core/ids_object", "chat_core/stream"},
			non: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(errBody(msg)))
			},
			stream: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(errBody(msg)))
			}},
		{name: "in-band error event", ids: []string{"chat_core/stream", "streaming/done"},
			stream: func(w http.ResponseWriter, r *http.Request) {
				sseWrite(w, chunk("assistant", "", ""), chunk("", "Hel", ""), errBody(msg), "[DONE]")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := fakeServer(t, key, tc.non, tc.stream)
			rep := run(t, target, functional.Options{Retries: -1}, pick(t, tc.ids...)...)
			for _, res := range rep.Results {
				if res.Status != functional.StatusFail || res.Class != functional.ClassServerError {
					t.Errorf("%s: want fail/server_error, got %s/%s %q", res.CaseID, res.Status, res.Class, res.Reason)
				}
				if !strings.Contains(res.Reason, "engine exploded: CUDA out of memory") || !strings.Contains(res.Reason, "InternalServerError") {
					t.Errorf("%s: reason %q does not quote the server's message and type", res.CaseID, res.Reason)
				}
				if strings.Contains(res.Reason, key) {
					t.Errorf("%s: the API key reached the reason: %q", res.CaseID, res.Reason)
				}
			}
		})
	}

	// 原话有上限：100 KiB 的错误信息在原因里被截短。
	long := strings.Repeat("overflow ", 100<<10/9)
	target := fakeServer(t, "", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(errBody(long)))
	}, nil)
	rep := run(t, target, functional.Options{Retries: -1}, pick(t, "chat_core/ids_object")...)
	if res := rep.Results[0]; res.Class != functional.ClassServerError || len(res.Reason) > 2048 || !strings.Contains(res.Reason, "overflow overflow") {
		t.Errorf("want a bounded quote of the long message, got %s (%d bytes) %.200q", res.Class, len(res.Reason), res.Reason)
	}

	// 最终的 429（重试用尽）同样引用服务端原话并归为 http_429。
	target = fakeServer(t, "", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(errBody("rate limited: slow down")))
	}, nil)
	rep = run(t, target, functional.Options{Retries: -1}, pick(t, "chat_core/ids_object", "chat_core/basic")...)
	for _, res := range rep.Results {
		if res.Class != functional.ClassHTTP429 || !strings.Contains(res.Reason, "429") {
			t.Errorf("%s: want http_429 naming the status, got %s %q", res.CaseID, res.Class, res.Reason)
		}
	}
	if res := resultOf(t, rep, "chat_core/ids_object"); !strings.Contains(res.Reason, "rate limited: slow down") {
		t.Errorf("429 reason %q lost the server's message", res.Reason)
	}
}

// TestStreamProtocolViolationsFail 证明 vLLM 从不产生的流形状——重复的 finish chunk、finish 之后
// 同一 choice 的内容、[DONE] 之后的事件、没有任何 SSE 事件的 200——让每个流式用例以 protocol
// 失败并写明原因；修复前 chat_core/stream 对前三种都通过。
func TestStreamProtocolViolationsFail(t *testing.T) {
	role, hello, stop := chunk("assistant", "", ""), chunk("", "Hello", ""), chunk("", "", "stop")
	for _, tc := range []struct {
		name   string
		events []string
		raw    string
		reason string
	}{
		{name: "duplicated finish", events: []string{role, hello, stop, stop, "[DONE]"}, reason: "finish_reason sent twice"},
		{name: "content after finish", events: []string{role, hello, stop, chunk("", " again", ""), "[DONE]"}, reason: "after its finish_reason"},
		{name: "chunk after DONE", events: []string{role, hello, stop, "[DONE]", hello}, reason: "after data: [DONE]"},
		{name: "not SSE", raw: "\x00\x01garbage that is not an event stream", reason: "no SSE event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := fakeServer(t, "", nil, func(w http.ResponseWriter, r *http.Request) {
				if tc.raw != "" {
					w.Header().Set("Content-Type", "text/event-stream")
					_, _ = w.Write([]byte(tc.raw))
					return
				}
				sseWrite(w, tc.events...)
			})
			rep := run(t, target, functional.Options{Retries: -1}, pick(t, "chat_core/stream", "streaming/role_first")...)
			for _, res := range rep.Results {
				if res.Status != functional.StatusFail || res.Class != functional.ClassProtocol || !strings.Contains(res.Reason, tc.reason) {
					t.Errorf("%s: want fail/protocol with %q, got %s/%s %q", res.CaseID, tc.reason, res.Status, res.Class, res.Reason)
				}
			}
		})
	}
	// 对照：同样的服务端发出合法的流时两个用例都通过（证明上面的失败来自违规本身）。
	target := fakeServer(t, "", nil, func(w http.ResponseWriter, r *http.Request) { sseWrite(w, role, hello, stop, "[DONE]") })
	rep := run(t, target, functional.Options{Retries: -1}, pick(t, "chat_core/stream", "streaming/role_first")...)
	for _, res := range rep.Results {
		if res.Status != functional.StatusPass {
			t.Errorf("%s on a well-formed stream: %s %q", res.CaseID, res.Status, res.Reason)
		}
	}
}

// TestFailureClassInReports 证明每个失败带着故障类别，并写进 report.json（class）与 JUnit
// （failure 的 type）：5xx、429、超时、断言、取消各得其类。
func TestFailureClassInReports(t *testing.T) {
	status := func(code int) func(http.Handler) http.Handler {
		return func(http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(code)
				_, _ = w.Write([]byte(`{"error":{"message":"nope","type":"X","code":` + fmt.Sprint(code) + `}}`))
			})
		}
	}
	silent := func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// 读完请求体，服务器才会察觉客户端断开并取消 r.Context()。
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		})
	}
	for _, tc := range []struct {
		name string
		wrap func(http.Handler) http.Handler
		cfg  emulator.Config
		opts functional.Options
		want functional.Class
	}{
		{name: "5xx", wrap: status(503), want: functional.ClassHTTP5xx},
		{name: "429", wrap: status(429), want: functional.ClassHTTP429},
		{name: "401", wrap: status(401), want: functional.ClassHTTPAuth},
		{name: "timeout", wrap: silent, opts: functional.Options{RequestTimeout: 50 * time.Millisecond}, want: functional.ClassTimeout},
		{name: "assertion", cfg: emulator.Config{Defects: emulator.Defects{WrongIDPrefix: true}}, want: functional.ClassAssertion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wrap := tc.wrap
			if wrap == nil {
				wrap = func(h http.Handler) http.Handler { return h }
			}
			target := serveEmulator(t, tc.cfg, wrap)
			opts := tc.opts
			opts.Retries = -1
			rep := run(t, target, opts, pick(t, "chat_core/ids_object")...)
			res := rep.Results[0]
			if res.Status != functional.StatusFail || res.Class != tc.want {
				t.Fatalf("want fail/%s, got %s/%s %q", tc.want, res.Status, res.Class, res.Reason)
			}
			var js bytes.Buffer
			if err := functional.WriteJSON(&js, rep); err != nil {
				t.Fatal(err)
			}
			var raw struct {
				Results []map[string]any `json:"results"`
			}
			if err := json.Unmarshal(js.Bytes(), &raw); err != nil {
				t.Fatal(err)
			}
			if got := raw.Results[0]["class"]; got != string(tc.want) {
				t.Errorf("report.json class = %v, want %s", got, tc.want)
			}
			var ju bytes.Buffer
			if err := functional.WriteJUnit(&ju, rep); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Suites []struct {
					Cases []struct {
						Failure *struct {
							Type string `xml:"type,attr"`
						} `xml:"failure"`
					} `xml:"testcase"`
				} `xml:"testsuite"`
			}
			if err := xml.Unmarshal(ju.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if f := doc.Suites[0].Cases[0].Failure; f == nil || f.Type != string(tc.want) {
				t.Errorf("JUnit failure type = %+v, want %s", f, tc.want)
			}
		})
	}

	// 取消：用例记为 cancelled，类别 cancelled。
	_, target := startEmulator(t, emulator.Config{})
	r, err := functional.NewRunner(target, functional.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, _ := r.Run(ctx, pick(t, "chat_core/ids_object"))
	if res := rep.Results[0]; res.Status != functional.StatusCancelled || res.Class != functional.ClassCancelled {
		t.Errorf("want cancelled/cancelled, got %s/%s", res.Status, res.Class)
	}
	// 通过的用例没有类别。
	rep = run(t, target, functional.Options{}, pick(t, "chat_core/ids_object")...)
	if res := rep.Results[0]; res.Status != functional.StatusPass || res.Class != "" {
		t.Errorf("passing case: %s class %q", res.Status, res.Class)
	}
}

// TestRequestBoundsFromConfig 证明单个请求的超时与响应上限来自套件配置的 request.yaml
// （ci 功能阶段因此可以由矩阵配置树设置它们），非法取值在运行前以 file:line 报错。
func TestRequestBoundsFromConfig(t *testing.T) {
	cfg, err := functional.LoadConfig(fstest.MapFS{"request.yaml": {Data: []byte("request:\n  timeout: 80ms\n  max_response_bytes: 4096\n")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Request.Timeout != 80*time.Millisecond || cfg.Request.MaxResponseBytes != 4096 {
		t.Fatalf("request config = %+v", cfg.Request)
	}
	silent := func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// 读完请求体，服务器才会察觉客户端断开并取消 r.Context()。
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		})
	}
	target := serveEmulator(t, emulator.Config{}, silent)
	rep := run(t, target, functional.Options{Retries: -1, Config: &cfg}, pick(t, "chat_core/ids_object")...)
	if res := rep.Results[0]; res.Class != functional.ClassTimeout || !strings.Contains(res.Reason, "80ms") {
		t.Errorf("want a timeout naming the configured 80ms, got %s %q", res.Class, res.Reason)
	}
	_, target = startEmulator(t, emulator.Config{})
	rep = run(t, target, functional.Options{Retries: -1, Config: &cfg}, pick(t, "chat_core/ids_object")...)
	if res := rep.Results[0]; res.Status != functional.StatusPass {
		// 4096 字节足够一个短回答：上限不影响正常用例。
		t.Errorf("normal answer under a 4096-byte cap: %s %q", res.Status, res.Reason)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"# bounds\nrequest:\n  timeout: 0s\n", "functional: invalid config: request.yaml:3:12: request.timeout: must be > 0"},
		{"# bounds\nrequest:\n  timeout: -1s\n", `request.yaml:3:12: request.timeout: duration must not be negative (got "-1s")`},
		{"request:\n  max_response_bytes: 0\n", "functional: invalid config: request.yaml:2:23: request.max_response_bytes: must be > 0"},
		{"request:\n  timeout: 120\n", `request.yaml:2:12: request.timeout: want a duration such as "30s" or "20m", got an integer (got "120")`},
	} {
		_, err := functional.LoadConfig(fstest.MapFS{"request.yaml": {Data: []byte(tc.yaml)}}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.yaml, err, tc.want)
		}
	}
}

// TestBadJSONIsClassified 证明 200 但不是合法 JSON 的回答（截断的或垃圾）归为 bad_json，
// 经 openai-go 的用例（chat_core/basic）与直接解码的用例（chat_core/ids_object）都是；
// 修复前经 SDK 的用例记为 assertion。
func TestBadJSONIsClassified(t *testing.T) {
	for _, body := range []string{`{"id":"chatcmpl-1","choices":[`, "garbage \x00\x01"} {
		target := fakeServer(t, "", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
		}, nil)
		rep := run(t, target, functional.Options{Retries: -1}, pick(t, "chat_core/basic", "chat_core/ids_object")...)
		for _, res := range rep.Results {
			if res.Status != functional.StatusFail || res.Class != functional.ClassBadJSON {
				t.Errorf("%q %s: want fail/bad_json, got %s/%s %q", body, res.CaseID, res.Status, res.Class, res.Reason)
			}
		}
	}
}

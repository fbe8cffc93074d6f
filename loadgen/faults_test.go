package loadgen_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
)

// jsonWrite 写出一个 HTTP 200 的 application/json 响应体（不是 SSE）。
func jsonWrite(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, body)
}

// finishChunk 返回带 finish_reason 的 chunk（可带 content）。
func finishChunk(text, reason string) string {
	return `{"choices":[{"index":0,"delta":{"content":"` + text + `"},"finish_reason":"` + reason + `"}]}`
}

// TestProtocolFaultClasses 钉住作恶服务测出的分类缺陷：流内的非法 JSON 曾记为 stream_error
// （该类别文档上只指服务端的 {"error":…} 事件）；流式请求收到 200 的 JSON 错误体曾记为
// truncated 且丢掉服务端原话；重复的 finish、finish 之后的内容、[DONE] 之后的事件、有内容却
// 报 completion_tokens 0 的 usage 曾全部记为成功。vLLM 从不这样做（每个 choice 恰好一个带
// finish_reason 的 chunk，之后不再发它的 chunk；[DONE] 是最后一个事件），所以它们是 protocol 失败。
func TestProtocolFaultClasses(t *testing.T) {
	cases := []struct {
		name   string
		stream bool
		fn     func(w http.ResponseWriter, body string)
		class  string
		errRe  string // Error 必须包含的片段
	}{
		{"invalid JSON event", true, func(w http.ResponseWriter, _ string) {
			sseWrite(w, roleChunk, `{"choices":[{"index":0,"delta":{"content":" hi"`, "[DONE]")
		}, loadgen.ErrClassBadResponse, "unparseable stream event"},
		{"JSON error body on a streaming request", true, func(w http.ResponseWriter, _ string) {
			jsonWrite(w, `{"error":{"message":"hostile: error in a 200 body","type":"InternalServerError","code":500}}`)
		}, loadgen.ErrClassStreamError, "hostile: error in a 200 body"},
		{"old flat JSON error body on a streaming request", true, func(w http.ResponseWriter, _ string) {
			jsonWrite(w, `{"object":"error","message":"flat engine error","type":"InternalServerError","code":500}`)
		}, loadgen.ErrClassStreamError, "flat engine error"},
		{"completion JSON on a streaming request", true, func(w http.ResponseWriter, _ string) {
			jsonWrite(w, `{"object":"chat.completion","choices":[{"index":0,"message":{"content":"a b"},"finish_reason":"stop"}]}`)
		}, loadgen.ErrClassProtocol, "application/json"},
		{"garbage JSON body on a streaming request", true, func(w http.ResponseWriter, _ string) {
			jsonWrite(w, "\xff\xfe{not json")
		}, loadgen.ErrClassBadResponse, "not JSON"},
		{"binary garbage on an SSE stream", true, func(w http.ResponseWriter, _ string) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "\x89PNG\r\n\x1a\n\x00\x01xdata: \xff\xfe{\n\n\x7f\x02\n")
		}, loadgen.ErrClassBadResponse, "no SSE data event"},
		{"duplicated finish chunk", true, func(w http.ResponseWriter, _ string) {
			sseWrite(w, roleChunk, contentChunk("a"), finishChunk("b", "length"), `{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"length"}]}`, "[DONE]")
		}, loadgen.ErrClassProtocol, "finish_reason twice"},
		{"content after finish", true, func(w http.ResponseWriter, _ string) {
			sseWrite(w, roleChunk, finishChunk("a", "stop"), contentChunk("b"), "[DONE]")
		}, loadgen.ErrClassProtocol, "after its finish_reason"},
		{"two choices with index 0 in one chunk", true, func(w http.ResponseWriter, _ string) {
			sseWrite(w, roleChunk, `{"choices":[{"index":0,"delta":{"content":"a"}},{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}]}`, "[DONE]")
		}, loadgen.ErrClassProtocol, "index 0"},
		{"usage completion_tokens 0 after content", true, func(w http.ResponseWriter, _ string) {
			sseWrite(w, roleChunk, contentChunk("a b"), finishChunk("", "stop"), `{"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":0,"total_tokens":16}}`, "[DONE]")
		}, loadgen.ErrClassProtocol, "completion_tokens 0"},
		{"event after DONE", true, func(w http.ResponseWriter, _ string) {
			sseWrite(w, roleChunk, contentChunk("a"), finishChunk("b", "stop"), "[DONE]", contentChunk("c"))
		}, loadgen.ErrClassProtocol, "after [DONE]"},
		{"second DONE", true, func(w http.ResponseWriter, _ string) {
			sseWrite(w, roleChunk, finishChunk("a b", "stop"), "[DONE]", "[DONE]")
		}, loadgen.ErrClassProtocol, "after [DONE]"},
		{"non-streaming: two choices with index 0", false, func(w http.ResponseWriter, _ string) {
			jsonWrite(w, `{"object":"chat.completion","choices":[{"index":0,"message":{"content":"a b"},"finish_reason":"stop"},{"index":0,"message":{"content":"a b"},"finish_reason":"stop"}]}`)
		}, loadgen.ErrClassProtocol, "index 0"},
		{"non-streaming: error in a 200 body", false, func(w http.ResponseWriter, _ string) {
			jsonWrite(w, `{"error":{"message":"hostile: error in a 200 body","code":500}}`)
		}, loadgen.ErrClassStreamError, "hostile: error in a 200 body"},
		{"non-streaming: old flat error in a 200 body", false, func(w http.ResponseWriter, _ string) {
			jsonWrite(w, `{"object":"error","message":"flat engine error","type":"InternalServerError","param":null,"code":500}`)
		}, loadgen.ErrClassStreamError, "flat engine error"},
		{"non-streaming: invalid JSON", false, func(w http.ResponseWriter, _ string) {
			jsonWrite(w, `{"choices":[{"index":0,"message":{"content":" hi"`)
		}, loadgen.ErrClassBadResponse, "not JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := c.stream
			recs, s := runOne(t, scripted(t, c.fn), loadgen.Profile{Stream: &st}, 3)
			if s.Failed != 3 || s.Succeeded != 0 || s.FailureClasses[c.class] != 3 {
				t.Fatalf("summary failed=%d ok=%d classes=%v, want 3 × %q", s.Failed, s.Succeeded, s.FailureClasses, c.class)
			}
			for _, r := range recs {
				if r.OK || r.ErrorClass != c.class || r.Status != 200 || !strings.Contains(r.Error, c.errRe) {
					t.Fatalf("record ok=%v class=%q status=%d error=%q, want %q with %q", r.OK, r.ErrorClass, r.Status, r.Error, c.class, c.errRe)
				}
			}
		})
	}
}

// TestJSONErrorBodyOnStreamIsRedacted 验证流式请求收到的 200 JSON 错误体保留服务端原话，
// 但其中回显的 API key 被抹掉（它和 HTTP 错误体一样是服务端文本）。
func TestJSONErrorBodyOnStreamIsRedacted(t *testing.T) {
	const key = "canary-key-7f3e9a1c"
	tgt := scripted(t, func(w http.ResponseWriter, _ string) {
		jsonWrite(w, `{"error":{"message":"denied for Bearer `+key+` (raw `+key+`)","code":500}}`)
	})
	tgt.APIKey = key
	recs, _ := runOne(t, tgt, loadgen.Profile{}, 2)
	for _, r := range recs {
		if r.ErrorClass != loadgen.ErrClassStreamError || strings.Contains(r.Error, key) || !strings.Contains(r.Error, "denied for") {
			t.Fatalf("class %q error %q: want stream_error with the message kept and the key redacted", r.ErrorClass, r.Error)
		}
	}
}

// TestVLLMShapedStreamsStayGreen 验证协议检查不误伤 vLLM 的合法形态：role 首块（连续 usage 下
// completion_tokens 为 0）、finish 与最后一个 token 同块、choices 为空的 usage 终块、finish 之后
// 只剩 usage 块、以及 usage 为 null 的 chunk；completions 接口的 text 形态同样。
func TestVLLMShapedStreamsStayGreen(t *testing.T) {
	u := func(c int) string {
		return `,"usage":{"prompt_tokens":16,"completion_tokens":` + string(rune('0'+c)) + `,"total_tokens":` + string(rune('0'+c)) + `}`
	}
	cases := map[string][]string{
		"continuous usage": {
			`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]` + u(0) + `}`,
			`{"choices":[{"index":0,"delta":{"content":" a"},"finish_reason":null}]` + u(1) + `}`,
			`{"choices":[{"index":0,"delta":{"content":" b"},"finish_reason":null}]` + u(2) + `}`,
			`{"choices":[{"index":0,"delta":{"content":" c"},"finish_reason":"length","stop_reason":null}]` + u(3) + `}`,
			`{"choices":[]` + u(3) + `}`,
			"[DONE]",
		},
		"final usage only": {
			`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`,
			`{"choices":[{"index":0,"delta":{"content":" a b"},"finish_reason":null}],"usage":null}`,
			`{"choices":[{"index":0,"delta":{"content":" c"},"finish_reason":"stop"}],"usage":null}`,
			`{"choices":[]` + u(3) + `}`,
			"[DONE]",
		},
		"finish in an empty-delta chunk": {
			roleChunk, contentChunk("a"), contentChunk("b"), contentChunk("c"),
			`{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`,
			"[DONE]",
		},
	}
	for name, events := range cases {
		t.Run(name, func(t *testing.T) {
			recs, s := runOne(t, scripted(t, func(w http.ResponseWriter, _ string) { sseWrite(w, events...) }), loadgen.Profile{}, 2)
			if s.Failed != 0 || len(recs) != 2 {
				t.Fatalf("failed=%d classes=%v", s.Failed, s.FailureClasses)
			}
			for _, r := range recs {
				if !r.OK || r.CompletionTokens != 3 {
					t.Fatalf("record ok=%v class=%q error=%q tokens=%d", r.OK, r.ErrorClass, r.Error, r.CompletionTokens)
				}
			}
		})
	}
}

// TestStreamEndsMidEventIsTruncated 验证流在一个事件中途干净地结束（没有连接错误）时记为
// truncated：半个 JSON 是截断造成的，不是服务端发了坏数据（bad_response）。
func TestStreamEndsMidEventIsTruncated(t *testing.T) {
	tgt := scripted(t, func(w http.ResponseWriter, _ string) {
		sseWrite(w, roleChunk, contentChunk("a"))
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"del`)
	})
	recs, _ := runOne(t, tgt, loadgen.Profile{}, 2)
	for _, r := range recs {
		if r.ErrorClass != loadgen.ErrClassTruncated || !strings.Contains(r.Error, "mid-event") {
			t.Fatalf("class %q error %q, want truncated mid-event", r.ErrorClass, r.Error)
		}
	}
}

// TestAfterDone 验证 [DONE] 之后的处理：响应体迟迟不结束由静默超时截断并记为 protocol
// （时延仍按 [DONE] 的到达计），[DONE] 之后连接被重置不算失败（响应已经完整）。
func TestAfterDone(t *testing.T) {
	t.Run("body held open", func(t *testing.T) {
		tgt := scripted(t, func(w http.ResponseWriter, body string) {
			sseWrite(w, roleChunk, finishChunk("a b", "stop"), "[DONE]")
			if !strings.Contains(body, `"hi"`) { // 探测请求正常结束
				time.Sleep(2 * time.Second)
			}
		})
		recs, _ := runOne(t, tgt, loadgen.Profile{IdleTimeout: 100 * time.Millisecond, Timeout: 5 * time.Second}, 2)
		for _, r := range recs {
			if r.ErrorClass != loadgen.ErrClassProtocol || !strings.Contains(r.Error, "not closed after [DONE]") {
				t.Fatalf("class %q error %q, want protocol: not closed after [DONE]", r.ErrorClass, r.Error)
			}
			if r.E2E >= time.Second {
				t.Fatalf("E2E %v includes the wait after [DONE]", r.E2E)
			}
		}
	})
	t.Run("reset after DONE", func(t *testing.T) {
		tgt := scripted(t, func(w http.ResponseWriter, _ string) {
			sseWrite(w, roleChunk, finishChunk("a b", "stop"), "[DONE]")
			panic(http.ErrAbortHandler) // 不写 chunked 结束块就断开
		})
		recs, s := runOne(t, tgt, loadgen.Profile{}, 2)
		if s.Failed != 0 {
			t.Fatalf("failed=%d classes=%v, want the complete responses counted", s.Failed, s.FailureClasses)
		}
		for _, r := range recs {
			if !r.OK || r.CompletionTokens != 2 || r.FinishReason != "stop" {
				t.Fatalf("record ok=%v tokens=%d finish=%q", r.OK, r.CompletionTokens, r.FinishReason)
			}
		}
	})
}

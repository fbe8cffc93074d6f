package emulator_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"image"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// emuSdk 返回指向 ep 的 openai-go 客户端（关闭 SDK 自带重试，避免掩盖错误）。
func emuSdk(ep deploy.Endpoint) openai.Client {
	opts := []option.RequestOption{option.WithBaseURL(ep.BaseURL() + "/"), option.WithMaxRetries(0)}
	if ep.APIKey != "" {
		opts = append(opts, option.WithAPIKey(ep.APIKey))
	} else {
		opts = append(opts, option.WithAPIKey("unused"))
	}
	return openai.NewClient(opts...)
}

// TestChatNonStreamSDK 用 openai-go 验证非流式 chat 的 id、object、usage 算术与 ignore_eos。
func TestChatNonStreamSDK(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "qwen"})
	_, ep2 := emulator.Start(t, emulator.Config{Model: "m"})
	c := emuSdk(ep)
	ctx := context.Background()
	resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "qwen",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("你是一个助手。"),
			openai.UserMessage("介绍一下 vLLM 的 PagedAttention."),
			openai.AssistantMessage("PagedAttention 是一种 KV cache 管理方法。"),
			openai.UserMessage("继续 please"),
		},
		MaxCompletionTokens: openai.Int(7),
		Temperature:         openai.Float(0),
	}, option.WithJSONSet("ignore_eos", true))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.ID, "chatcmpl-") || resp.Object != "chat.completion" || resp.Model != "qwen" {
		t.Fatalf("id/object/model = %q %q %q", resp.ID, resp.Object, resp.Model)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != "length" || resp.Usage.CompletionTokens != 7 {
		t.Fatalf("finish=%q completion=%d, want length/7", ch.FinishReason, resp.Usage.CompletionTokens)
	}
	if got := tokenize.Count(ch.Message.Content); got != 7 {
		t.Fatalf("content %q has %d tokens, want 7", ch.Message.Content, got)
	}
	wantPrompt := tokenize.Count("你是一个助手。") + tokenize.Count("介绍一下 vLLM 的 PagedAttention.") +
		tokenize.Count("PagedAttention 是一种 KV cache 管理方法。") + tokenize.Count("继续 please")
	if resp.Usage.PromptTokens != int64(wantPrompt) || resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
		t.Fatalf("usage = %+v, want prompt %d", resp.Usage, wantPrompt)
	}
	if !emuContainsCJK(ch.Message.Content) && !emuContainsCJK(emuGenerate(t, ep2, "another prompt")) {
		t.Fatalf("generated text should mix Chinese and English: %q", ch.Message.Content)
	}
}

// emuContainsCJK 报告 s 是否含有汉字。
func emuContainsCJK(s string) bool {
	for _, r := range s {
		if r >= 0x4e00 && r <= 0x9fff {
			return true
		}
	}
	return false
}

// emuGenerate 以 temperature 0 生成 200 个 token 的文本。
func emuGenerate(t *testing.T, ep deploy.Endpoint, prompt string) string {
	st, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody(prompt, map[string]any{"max_tokens": 200, "ignore_eos": true}))
	if st != 200 {
		t.Fatalf("status %d: %s", st, b)
	}
	return emuStr(emuJget(emuObj(t, b), "choices", 0, "message", "content"))
}

// TestChatStreamWireShape 用原始 SSE 字节验证流式 chat 的 role chunk、单一 finish、usage chunk 与 [DONE]。
func TestChatStreamWireShape(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m"})
	body := emuChatBody("hello 世界", map[string]any{"max_tokens": 6, "stream_options": map[string]any{"include_usage": true}})
	st, h, raw := emuPost(t, ep, "/v1/chat/completions", map[string]any{"stream": true, "model": "m", "max_tokens": 6,
		"temperature": 0, "messages": body["messages"], "stream_options": map[string]any{"include_usage": true}})
	if st != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d content-type %q", st, h.Get("Content-Type"))
	}
	if !bytes.HasSuffix(raw, []byte("data: [DONE]\n\n")) || !bytes.HasPrefix(raw, []byte(`data: {"id":"chatcmpl-`)) {
		t.Fatalf("raw framing wrong:\n%s", raw)
	}
	chunks, done, _ := emuStreamChunks(t, ep, "/v1/chat/completions", body)
	if !done {
		t.Fatal("no [DONE]")
	}
	first := chunks[0]
	if d := emuJget(first, "choices", 0, "delta"); d == nil || emuStr(emuJget(d, "role")) != "assistant" || emuJget(d, "content") != "" {
		t.Fatalf("first chunk delta = %v", d)
	}
	var text strings.Builder
	finishes := 0
	id := emuStr(first["id"])
	for i, c := range chunks {
		if emuStr(c["id"]) != id || emuStr(c["object"]) != "chat.completion.chunk" {
			t.Fatalf("chunk %d id/object = %v %v", i, c["id"], c["object"])
		}
		last := i == len(chunks)-1
		if last {
			if choices := c["choices"].([]any); len(choices) != 0 {
				t.Fatalf("usage chunk choices = %v", choices)
			}
			u := c["usage"]
			if emuNum(emuJget(u, "completion_tokens")) != 6 || emuNum(emuJget(u, "total_tokens")) != emuNum(emuJget(u, "prompt_tokens"))+6 {
				t.Fatalf("usage = %v", u)
			}
			continue
		}
		if v, ok := c["usage"]; !ok || v != nil {
			t.Fatalf("chunk %d usage = %v (present %v), want null", i, v, ok)
		}
		if i > 0 && emuJget(c, "choices", 0, "delta", "role") != nil {
			t.Fatalf("role repeated in chunk %d", i)
		}
		text.WriteString(emuStr(emuJget(c, "choices", 0, "delta", "content")))
		if fr := emuJget(c, "choices", 0, "finish_reason"); fr != nil {
			finishes++
			if fr != "length" {
				t.Fatalf("finish_reason = %v", fr)
			}
			if _, ok := emuJget(c, "choices", 0).(map[string]any)["stop_reason"]; !ok {
				t.Fatal("finish chunk lacks stop_reason")
			}
		}
	}
	if finishes != 1 {
		t.Fatalf("finish chunks = %d, want 1", finishes)
	}
	// 流式与非流式在 temperature 0 下文本一致，且每个 delta 恰为一个 token。
	st, _, nb := emuPost(t, ep, "/v1/chat/completions", emuChatBody("hello 世界", map[string]any{"max_tokens": 6}))
	if st != 200 || emuStr(emuJget(emuObj(t, nb), "choices", 0, "message", "content")) != text.String() {
		t.Fatalf("stream text %q != non-stream %s", text.String(), nb)
	}
	if len(chunks) != 1+6+1 {
		t.Fatalf("chunks = %d, want role + 6 + usage", len(chunks))
	}
}

// TestStreamNoUsageByDefaultAndContinuous 验证没有 stream_options 时不带 usage，continuous_usage_stats 时单调。
func TestStreamNoUsageByDefaultAndContinuous(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m"})
	chunks, _, _ := emuStreamChunks(t, ep, "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}}, "max_tokens": 3})
	for _, c := range chunks {
		if _, ok := c["usage"]; ok {
			t.Fatalf("usage present without stream_options: %v", c)
		}
	}
	chunks, _, _ = emuStreamChunks(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 5,
		"stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}}))
	prev := -1
	for _, c := range chunks {
		ct := emuNum(emuJget(c, "usage", "completion_tokens"))
		if emuJget(c, "usage") == nil || ct < prev {
			t.Fatalf("continuous usage missing or decreasing: %v", c)
		}
		prev = ct
	}
	if prev != 5 {
		t.Fatalf("final completion_tokens = %d", prev)
	}
}

// TestCompletions 验证 /v1/completions 的默认 max_tokens、批量提示、echo、logprobs、流式与 token id 提示。
func TestCompletions(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m"})
	st, _, b := emuPost(t, ep, "/v1/completions", map[string]any{"model": "m", "prompt": "Once upon a time", "temperature": 0, "ignore_eos": true})
	m := emuObj(t, b)
	if st != 200 || !strings.HasPrefix(emuStr(m["id"]), "cmpl-") || m["object"] != "text_completion" {
		t.Fatalf("%d %s", st, b)
	}
	if emuNum(emuJget(m, "usage", "completion_tokens")) != 16 || emuJget(m, "choices", 0, "finish_reason") != "length" {
		t.Fatalf("default max_tokens should be 16: %s", b)
	}
	if tokenize.Count(emuStr(emuJget(m, "choices", 0, "text"))) != 16 || emuNum(emuJget(m, "usage", "prompt_tokens")) != 4 {
		t.Fatalf("token counts: %s", b)
	}
	// 批量提示 + echo + logprobs
	st, _, b = emuPost(t, ep, "/v1/completions", map[string]any{"model": "m", "prompt": []string{"a b", "你好"}, "echo": true,
		"max_tokens": 3, "logprobs": 2, "temperature": 0})
	m = emuObj(t, b)
	if st != 200 || len(m["choices"].([]any)) != 2 {
		t.Fatalf("%d %s", st, b)
	}
	if !strings.HasPrefix(emuStr(emuJget(m, "choices", 1, "text")), "你好") || emuNum(emuJget(m, "choices", 1, "index")) != 1 {
		t.Fatalf("echo/index wrong: %s", b)
	}
	tops := emuJget(m, "choices", 0, "logprobs", "top_logprobs").([]any)
	if len(tops) != 3 || len(tops[0].(map[string]any)) != 2 {
		t.Fatalf("logprobs wrong: %v", emuJget(m, "choices", 0, "logprobs"))
	}
	// 流式
	chunks, done, _ := emuStreamChunks(t, ep, "/v1/completions", map[string]any{"model": "m", "prompt": "x", "max_tokens": 4,
		"stream_options": map[string]any{"include_usage": true}})
	if !done || len(chunks) != 5 || emuJget(chunks[3], "choices", 0, "finish_reason") != "length" {
		t.Fatalf("completion stream: %v", chunks)
	}
	if _, ok := emuJget(chunks[0], "choices", 0).(map[string]any)["stop_reason"]; !ok {
		t.Fatal("completion chunk lacks stop_reason")
	}
	// token id 提示
	st, _, b = emuPost(t, ep, "/v1/completions", map[string]any{"model": "m", "prompt": []int{1, 2, 3}, "max_tokens": 1})
	if st != 200 || emuNum(emuJget(emuObj(t, b), "usage", "prompt_tokens")) != 3 {
		t.Fatalf("%d %s", st, b)
	}
}

// TestErrors 验证 404/400 错误的形状与 param，以及未知字段被忽略。
func TestErrors(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", MaxModelLen: 100})
	st, h, b := emuPost(t, ep, "/v1/chat/completions", map[string]any{"model": "nope", "messages": []any{map[string]any{"role": "user", "content": "x"}}})
	e := emuObj(t, b)
	if st != 404 || emuJget(e, "error", "message") != "The model `nope` does not exist." || emuJget(e, "error", "param") != "model" ||
		emuNum(emuJget(e, "error", "code")) != 404 || emuJget(e, "error", "type") != "NotFoundError" || h.Get("Content-Type") != "application/json" {
		t.Fatalf("404: %d %s", st, b)
	}
	long := strings.Repeat("word ", 94) + "word"
	st, _, b = emuPost(t, ep, "/v1/chat/completions", emuChatBody(long, map[string]any{"max_tokens": 6}))
	if st != 400 || !strings.Contains(emuStr(emuJget(emuObj(t, b), "error", "message")), "maximum context length") {
		t.Fatalf("overflow: %d %s", st, b)
	}
	if st, _, b = emuPost(t, ep, "/v1/chat/completions", emuChatBody(long, map[string]any{"max_tokens": 5})); st != 200 {
		t.Fatalf("exact fit should pass: %d %s", st, b)
	}
	cases := []struct {
		name  string
		path  string
		body  any
		param string
	}{
		{"malformed", "/v1/chat/completions", `{"model": "m", "messages": [`, ""},
		{"temperature", "/v1/chat/completions", emuChatBody("x", map[string]any{"temperature": -1}), "temperature"},
		{"top_p", "/v1/chat/completions", emuChatBody("x", map[string]any{"top_p": 0}), "top_p"},
		{"top_k", "/v1/chat/completions", emuChatBody("x", map[string]any{"top_k": -2}), "top_k"},
		{"min_p", "/v1/chat/completions", emuChatBody("x", map[string]any{"min_p": 1.5}), "min_p"},
		{"presence", "/v1/chat/completions", emuChatBody("x", map[string]any{"presence_penalty": 2.5}), "presence_penalty"},
		{"frequency", "/v1/chat/completions", emuChatBody("x", map[string]any{"frequency_penalty": -3}), "frequency_penalty"},
		{"repetition", "/v1/chat/completions", emuChatBody("x", map[string]any{"repetition_penalty": 0}), "repetition_penalty"},
		{"max_tokens", "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 0}), "max_tokens"},
		{"min_tokens", "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 2, "min_tokens": 3}), "min_tokens"},
		{"stop empty", "/v1/chat/completions", emuChatBody("x", map[string]any{"stop": []string{""}}), "stop"},
		{"n greedy", "/v1/chat/completions", emuChatBody("x", map[string]any{"n": 2}), "n"},
		{"top_logprobs>20", "/v1/chat/completions", emuChatBody("x", map[string]any{"logprobs": true, "top_logprobs": 21}), "top_logprobs"},
		{"top_logprobs alone", "/v1/chat/completions", emuChatBody("x", map[string]any{"top_logprobs": 2}), "top_logprobs"},
		{"logit_bias", "/v1/chat/completions", emuChatBody("x", map[string]any{"logit_bias": map[string]float64{"5": 101}}), "logit_bias"},
		{"stream_options", "/v1/chat/completions", emuChatBody("x", map[string]any{"stream_options": map[string]any{"include_usage": true}}), "stream_options"},
		{"suffix", "/v1/completions", map[string]any{"model": "m", "prompt": "x", "suffix": "y"}, "suffix"},
		{"tool_choice no tools", "/v1/chat/completions", emuChatBody("x", map[string]any{"tool_choice": "auto"}), "tool_choice"},
		{"tools empty", "/v1/chat/completions", emuChatBody("x", map[string]any{"tools": []any{}}), "tools"},
		{"bad schema", "/v1/chat/completions", emuChatBody("x", map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "s", "schema": map[string]any{"type": 5}}}}), "response_format"},
		{"two constraints", "/v1/chat/completions", emuChatBody("x", map[string]any{"structured_outputs": map[string]any{"choice": []string{"a"}, "regex": "a+"}}), "structured_outputs"},
		{"bad regex", "/v1/chat/completions", emuChatBody("x", map[string]any{"structured_outputs": map[string]any{"regex": "a(("}}), "structured_outputs"},
		{"completions logprobs", "/v1/completions", map[string]any{"prompt": "x", "logprobs": 21}, "logprobs"},
		{"no messages", "/v1/chat/completions", map[string]any{"model": "m"}, "messages"},
	}
	for _, c := range cases {
		st, _, b := emuPost(t, ep, c.path, c.body)
		if st != 400 {
			t.Errorf("%s: status %d, want 400: %s", c.name, st, b)
			continue
		}
		e := emuObj(t, b)
		if emuNum(emuJget(e, "error", "code")) != 400 || emuJget(e, "error", "type") != "BadRequestError" || emuStr(emuJget(e, "error", "message")) == "" {
			t.Errorf("%s: error body %s", c.name, b)
		}
		if c.param != "" && emuJget(e, "error", "param") != c.param {
			t.Errorf("%s: param = %v, want %s", c.name, emuJget(e, "error", "param"), c.param)
		}
	}
	// 未知顶层字段被忽略；错误之后服务仍然正常。
	if st, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 2, "foo_bar": 1, "priority": 3})); st != 200 {
		t.Fatalf("unknown field: %d %s", st, b)
	}
	// 未知路径 404
	if st, _, b := emuDo(t, ep, http.MethodGet, "/v1/nothing", nil); st != 404 || string(b) != `{"detail":"Not Found"}` {
		t.Fatalf("unknown path: %d %s", st, b)
	}
	if st, _, _ := emuDo(t, ep, http.MethodGet, "/v1/chat/completions", nil); st != 405 {
		t.Fatalf("wrong method: %d", st)
	}
}

// TestAuth 验证 API key 保护 /v1 而不保护 /health。
func TestAuth(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", APIKey: "sekret"})
	if st, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 1})); st != 200 {
		t.Fatalf("with key: %d %s", st, b)
	}
	noKey := ep
	noKey.APIKey = ""
	st, _, b := emuPost(t, noKey, "/v1/chat/completions", emuChatBody("x", nil))
	if st != 401 || string(b) != `{"error":"Unauthorized"}` {
		t.Fatalf("without key: %d %s", st, b)
	}
	wrong := ep
	wrong.APIKey = "nope"
	if st, _, _ := emuDo(t, wrong, http.MethodGet, "/v1/models", nil); st != 401 {
		t.Fatalf("wrong key: %d", st)
	}
	if st, _, _ := emuDo(t, noKey, http.MethodGet, "/health", nil); st != 200 {
		t.Fatalf("/health must stay open: %d", st)
	}
	cl := emuSdk(wrong)
	if _, err := cl.Models.List(context.Background()); err == nil {
		t.Fatal("sdk with wrong key succeeded")
	}
}

// TestModelsVersionTokenize 验证 /v1/models、/version 与 /tokenize，并与 usage 计数一致。
func TestModelsVersionTokenize(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", MaxModelLen: 4096})
	st, _, b := emuDo(t, ep, http.MethodGet, "/v1/models", nil)
	m := emuObj(t, b)
	if st != 200 || m["object"] != "list" || emuJget(m, "data", 0, "id") != "m" || emuJget(m, "data", 0, "owned_by") != "vllm" ||
		emuNum(emuJget(m, "data", 0, "max_model_len")) != 4096 || emuJget(m, "data", 0, "object") != "model" {
		t.Fatalf("models: %s", b)
	}
	if st, _, b := emuDo(t, ep, http.MethodGet, "/version", nil); st != 200 || emuStr(emuObj(t, b)["version"]) == "" {
		t.Fatalf("version: %d %s", st, b)
	}
	prompt := "Hello, 世界! it's fine"
	st, _, b = emuPost(t, ep, "/tokenize", map[string]any{"model": "m", "prompt": prompt})
	m = emuObj(t, b)
	if st != 200 || emuNum(m["count"]) != tokenize.Count(prompt) || emuNum(m["max_model_len"]) != 4096 || len(m["tokens"].([]any)) != emuNum(m["count"]) {
		t.Fatalf("tokenize: %s", b)
	}
	// messages 形式的计数与 chat usage 一致。
	msgs := []map[string]any{{"role": "system", "content": "be brief"}, {"role": "user", "content": prompt}}
	st, _, b = emuPost(t, ep, "/tokenize", map[string]any{"model": "m", "messages": msgs})
	count := emuNum(emuObj(t, b)["count"])
	st2, _, cb := emuPost(t, ep, "/v1/chat/completions", map[string]any{"model": "m", "messages": msgs, "max_tokens": 1})
	if st != 200 || st2 != 200 || emuNum(emuJget(emuObj(t, cb), "usage", "prompt_tokens")) != count {
		t.Fatalf("tokenize messages %d vs usage %s", count, cb)
	}
	if st, _, _ := emuPost(t, ep, "/tokenize", map[string]any{"model": "m"}); st != 400 {
		t.Fatalf("tokenize without input: %d", st)
	}
}

// emuPngDataURL 返回 w×h 的 PNG data URL。
func emuPngDataURL(t *testing.T, w, h int) string {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

// TestMultimodalImageTokens 验证 data URL 图片按 28 像素规则计 token，坏图片 400。
func TestMultimodalImageTokens(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m"})
	content := []map[string]any{
		{"type": "text", "text": "描述这张图片 please"},
		{"type": "image_url", "image_url": map[string]any{"url": emuPngDataURL(t, 56, 30)}},
	}
	st, _, b := emuPost(t, ep, "/v1/chat/completions", map[string]any{"model": "m", "max_tokens": 2,
		"messages": []map[string]any{{"role": "user", "content": content}}})
	want := tokenize.Count("描述这张图片 please") + 2*2 // ceil(56/28)*ceil(30/28)
	if st != 200 || emuNum(emuJget(emuObj(t, b), "usage", "prompt_tokens")) != want {
		t.Fatalf("image tokens: %d %s (want prompt %d)", st, b, want)
	}
	bad := []map[string]any{{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,AAAA"}}}
	if st, _, _ := emuPost(t, ep, "/v1/chat/completions", map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": bad}}}); st != 400 {
		t.Fatalf("undecodable image: %d", st)
	}
}

// TestDeterminism 验证 temperature 0 与 seed 无关、相同 seed 可复现、n>1 的 choices 互不相同。
func TestDeterminism(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m"})
	gen := func(extra map[string]any) string {
		body := emuChatBody("讲个故事 tell a story", map[string]any{"max_tokens": 30})
		for k, v := range extra {
			body[k] = v
		}
		st, _, b := emuPost(t, ep, "/v1/chat/completions", body)
		if st != 200 {
			t.Fatalf("%d %s", st, b)
		}
		return emuStr(emuJget(emuObj(t, b), "choices", 0, "message", "content"))
	}
	if gen(map[string]any{"seed": 1}) != gen(map[string]any{"seed": 2}) {
		t.Fatal("temperature 0 must not depend on seed")
	}
	a := gen(map[string]any{"temperature": 0.8, "seed": 42})
	if a != gen(map[string]any{"temperature": 0.8, "seed": 42}) {
		t.Fatal("same seed must reproduce")
	}
	if a == gen(map[string]any{"temperature": 0.8, "seed": 43}) {
		t.Fatal("different seeds should differ")
	}
	u1 := gen(map[string]any{"temperature": 0.8})
	if u2 := gen(map[string]any{"temperature": 0.8}); u1 == u2 {
		t.Fatal("unseeded sampling should differ")
	}
	// n>1：choices 数量与互不相同的文本
	st, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"n": 3, "temperature": 1, "max_tokens": 8}))
	ch := emuObj(t, b)["choices"].([]any)
	if st != 200 || len(ch) != 3 || emuJget(ch, 0, "message", "content") == emuJget(ch, 1, "message", "content") || emuNum(emuJget(ch, 2, "index")) != 2 {
		t.Fatalf("n=3: %s", b)
	}
}

// TestStopMinTokensIgnoreEOS 验证 stop（单个、多个、Unicode）、include_stop_str_in_output、ignore_eos、min_tokens 与 stop_token_ids。
func TestStopMinTokensIgnoreEOS(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m"})
	for _, stop := range []any{"。", []string{"\n", "END"}, "終わり", []string{"zzz", "ok"}} {
		st, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody("stop test", map[string]any{"stop": stop, "max_tokens": 100}))
		m := emuObj(t, b)
		text := emuStr(emuJget(m, "choices", 0, "message", "content"))
		var stops []string
		switch s := stop.(type) {
		case string:
			stops = []string{s}
		case []string:
			stops = s
		}
		sr := emuStr(emuJget(m, "choices", 0, "stop_reason"))
		if st != 200 || emuJget(m, "choices", 0, "finish_reason") != "stop" || !emuContains(stops, sr) {
			t.Fatalf("stop %v: %s", stop, b)
		}
		for _, s := range stops {
			if strings.Contains(text, s) {
				t.Fatalf("stop %q left in text %q", s, text)
			}
		}
		// include_stop_str_in_output 保留 stop 字符串
		_, _, b = emuPost(t, ep, "/v1/chat/completions", emuChatBody("stop test", map[string]any{"stop": stop, "max_tokens": 100, "include_stop_str_in_output": true}))
		if got := emuStr(emuJget(emuObj(t, b), "choices", 0, "message", "content")); !strings.HasSuffix(got, sr) {
			t.Fatalf("include_stop_str_in_output: %q does not end with %q", got, sr)
		}
		// 流式同样在 stop 前结束
		chunks, _, _ := emuStreamChunks(t, ep, "/v1/chat/completions", emuChatBody("stop test", map[string]any{"stop": stop, "max_tokens": 100}))
		var sb strings.Builder
		for _, c := range chunks {
			sb.WriteString(emuStr(emuJget(c, "choices", 0, "delta", "content")))
		}
		if sb.String() != text {
			t.Fatalf("stream %q != %q", sb.String(), text)
		}
	}
	// ignore_eos：恰好 N 个 token
	for _, n := range []int{1, 128, 700} {
		st, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": n, "ignore_eos": true}))
		m := emuObj(t, b)
		if st != 200 || emuNum(emuJget(m, "usage", "completion_tokens")) != n || emuJget(m, "choices", 0, "finish_reason") != "length" ||
			tokenize.Count(emuStr(emuJget(m, "choices", 0, "message", "content"))) != n {
			t.Fatalf("ignore_eos %d: %s", n, b)
		}
	}
	// 自然结束：长度 <= max_tokens，finish stop
	st, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody("natural", map[string]any{"max_tokens": 1000}))
	m := emuObj(t, b)
	if ct := emuNum(emuJget(m, "usage", "completion_tokens")); st != 200 || ct < 1 || ct >= 1000 || emuJget(m, "choices", 0, "finish_reason") != "stop" ||
		emuJget(m, "choices", 0, "stop_reason") != nil {
		t.Fatalf("natural stop: %s", b)
	}
	// min_tokens 抬高自然长度
	st, _, b = emuPost(t, ep, "/v1/chat/completions", emuChatBody("natural", map[string]any{"max_tokens": 1000, "min_tokens": 500}))
	if ct := emuNum(emuJget(emuObj(t, b), "usage", "completion_tokens")); st != 200 || ct < 500 {
		t.Fatalf("min_tokens: %d %s", ct, b)
	}
	// stop_token_ids：stop_reason 为整数
	st, _, b = emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"stop_token_ids": []int{151645}, "max_tokens": 100}))
	if st != 200 || emuJget(emuObj(t, b), "choices", 0, "stop_reason") != float64(151645) {
		t.Fatalf("stop_token_ids: %s", b)
	}
}

// emuContains 报告 ss 是否含 s。
func emuContains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestChatLogprobs 验证 chat logprobs/top_logprobs 的数量与形状（含流式）。
func TestChatLogprobs(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m"})
	st, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 4, "logprobs": true, "top_logprobs": 3}))
	content := emuJget(emuObj(t, b), "choices", 0, "logprobs", "content").([]any)
	if st != 200 || len(content) != 4 {
		t.Fatalf("%d %s", st, b)
	}
	for _, c := range content {
		tops := emuJget(c, "top_logprobs").([]any)
		if len(tops) != 3 || emuJget(tops, 0, "token") != emuJget(c, "token") || emuJget(c, "logprob").(float64) > 0 {
			t.Fatalf("logprob entry %v", c)
		}
	}
	chunks, _, _ := emuStreamChunks(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 2, "logprobs": true, "top_logprobs": 1}))
	if n := len(emuJget(chunks[1], "choices", 0, "logprobs", "content", 0, "top_logprobs").([]any)); n != 1 {
		t.Fatalf("stream top_logprobs = %d", n)
	}
}

// TestArchiveLogsAndTeardown 验证日志归档不含密钥、Teardown 幂等并真正停止监听。
func TestArchiveLogsAndTeardown(t *testing.T) {
	em, err := emulator.New(emulator.Config{Model: "m", APIKey: "topsecret-key"})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := em.Deploy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ep := dep.Endpoint()
	if strings.Contains(ep.String(), "topsecret") {
		t.Fatal("endpoint string leaks key")
	}
	emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 2}))
	dir := t.TempDir()
	if err := dep.ArchiveLogs(context.Background(), filepath.Join(dir, "logs")); err != nil {
		t.Fatal(err)
	}
	logb, err := os.ReadFile(filepath.Join(dir, "logs", "emulator-access.log"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(dir, "logs", "emulator-summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logb), "POST /v1/chat/completions 200") || strings.Contains(string(logb)+string(sum), "topsecret") {
		t.Fatalf("access log: %s", logb)
	}
	if emuNum(emuObj(t, sum)["requests"]) != 1 {
		t.Fatalf("summary: %s", sum)
	}
	prom, err := os.ReadFile(filepath.Join(dir, "logs", "emulator-metrics.prom"))
	if err != nil || !strings.Contains(string(prom), `vllm:request_success_total{finished_reason="length",model_name="m"} 1`) {
		t.Fatalf("metrics snapshot: %v %s", err, prom)
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal("second teardown:", err)
	}
	if _, err := http.Get(ep.BaseURL() + "/models"); err == nil {
		t.Fatal("server still listening after teardown")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := dep.ArchiveLogs(ctx, dir); err == nil {
		t.Fatal("ArchiveLogs with cancelled ctx should fail")
	}
}

// TestTeardownDoesNotHangOnLongStream 验证进行中的长流不会让 Teardown 无限期阻塞。
func TestTeardownDoesNotHangOnLongStream(t *testing.T) {
	em, err := emulator.New(emulator.Config{Model: "m", ITL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := em.Deploy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(dep.Endpoint().BaseURL()+"/completions", "application/json",
		strings.NewReader(`{"prompt":"x","max_tokens":1000,"ignore_eos":true,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- dep.Teardown(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Teardown hung on a 1000-second stream")
	}
}

// TestUnhealthy 验证 Unhealthy 让 /health 返回 503 且 Deploy 等不到健康。
func TestUnhealthy(t *testing.T) {
	em, ep := emulator.Start(t, emulator.Config{Model: "m"})
	if err := em.Update(func(c *emulator.Config) { c.Unhealthy = true }); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := emuDo(t, ep, http.MethodGet, "/health", nil); st != 503 {
		t.Fatalf("/health = %d, want 503", st)
	}
	sick, err := emulator.New(emulator.Config{Unhealthy: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := sick.Deploy(ctx); !errors.Is(err, deploy.ErrNotReady) {
		t.Fatalf("Deploy of an unhealthy emulator: %v", err)
	}
}

// TestConfigValidation 验证构造与 Update 的配置校验、默认值与错误信息。
func TestConfigValidation(t *testing.T) {
	bad := []emulator.Config{
		{TTFT: -1}, {ITL: -1}, {PrefillPerToken: -1}, {MaxNumSeqs: -1}, {TokensPerChunk: -1}, {SpecAcceptRate: 2},
		{ReasoningField: "thoughts"}, {EmbeddingDim: -3}, {FailureRate: 1.5}, {FailureKinds: []string{"boom"}},
		{Addr: "no-port"}, {Model: "a b"}, {MaxModelLen: -1},
	}
	for _, c := range bad {
		if _, err := emulator.New(c); !errors.Is(err, emulator.ErrConfig) {
			t.Errorf("%+v: err = %v", c, err)
		}
	}
	_, err := emulator.New(emulator.Config{FailureKinds: []string{"boom"}})
	if err == nil || !strings.Contains(err.Error(), "FailureKinds=boom") {
		t.Fatalf("error should name field and value: %v", err)
	}
	em, err := emulator.New(emulator.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := em.Config()
	if c.Model != emulator.DefaultModel || c.MaxModelLen != 32768 || c.TokensPerChunk != 1 || c.EmbeddingDim != 1024 || c.ReasoningField != "reasoning" {
		t.Fatalf("defaults: %+v", c)
	}
	if err := em.Update(func(c *emulator.Config) { c.ITL = -5 }); !errors.Is(err, emulator.ErrConfig) {
		t.Fatalf("update validation: %v", err)
	}
	if em.Config().ITL != 0 {
		t.Fatal("failed update must not change config")
	}
	if err := em.Update(func(c *emulator.Config) { c.Model = "other" }); !errors.Is(err, emulator.ErrConfig) {
		t.Fatalf("model change must be rejected: %v", err)
	}
	if err := em.Update(func(c *emulator.Config) { c.MaxNumSeqs = 4 }); err != nil || em.Config().MaxNumSeqs != 4 {
		t.Fatalf("update: %v", err)
	}
	if em.Handler() == nil || em.Registry() == nil {
		t.Fatal("handler/registry nil")
	}
}

// TestLogitBiasEffect 验证 logit_bias 加在分布采样的 logits 上：+100 让该 token 占满输出，
// -100 让它消失；贪心下不足以超过贪心 token 的小偏置不改变文本。
func TestLogitBiasEffect(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m"})
	idOf := func(word string) string {
		_, _, b := emuPost(t, ep, "/tokenize", map[string]any{"prompt": word})
		return strconv.Itoa(emuNum(emuJget(emuObj(t, b), "tokens", 0)))
	}
	text := func(extra map[string]any) string {
		extra["max_tokens"] = 50
		extra["ignore_eos"] = true
		st, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody("bias", extra))
		if st != 200 {
			t.Fatalf("%d %s", st, b)
		}
		return emuStr(emuJget(emuObj(t, b), "choices", 0, "message", "content"))
	}
	base := text(map[string]any{})
	if got := text(map[string]any{"logit_bias": map[string]float64{idOf("的"): 5}}); got != base {
		t.Fatal("a small bias must not change the text")
	}
	forced := text(map[string]any{"logit_bias": map[string]float64{idOf("cache"): 100}})
	if forced != "cache"+strings.Repeat(" cache", 49) {
		t.Fatalf("forced token: %q", forced)
	}
	// 禁止基线文本中出现过的每个汉字与英文词的 id：结果中不再出现它们。
	banned := map[string]float64{}
	for _, p := range tokenize.Split(base) {
		w := strings.TrimSpace(p)
		if w != "" && w[0] >= 'a' && w[0] <= 'z' || containsCJKOnly(w) {
			banned[idOf(w)] = -100
		}
	}
	out := text(map[string]any{"logit_bias": banned})
	for _, p := range tokenize.Split(out) {
		if _, ok := banned[idOf(strings.TrimSpace(p))]; ok {
			t.Fatalf("banned token %q appeared in %q", p, out)
		}
	}
}

// containsCJKOnly 报告 s 是否是单个汉字。
func containsCJKOnly(s string) bool {
	r := []rune(s)
	return len(r) == 1 && r[0] >= 0x4e00 && r[0] <= 0x9fff
}

// TestLogitBiasPromptToken 验证生成词表之外的 id 在本请求的提示词中查找：/tokenize 给出的
// 提示词 token 被 +100 后占满 chat 与 completions 的输出；既不在词表也不在提示词中的 id
// 不改变文本。
func TestLogitBiasPromptToken(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m"})
	_, _, b := emuPost(t, ep, "/tokenize", map[string]any{"prompt": " robot"})
	robot := strconv.Itoa(emuNum(emuJget(emuObj(t, b), "tokens", 0)))
	_, _, b = emuPost(t, ep, "/tokenize", map[string]any{"prompt": " zeppelin"})
	absent := strconv.Itoa(emuNum(emuJget(emuObj(t, b), "tokens", 0)))
	const prompt = "Tell me a story about a robot."
	chat := func(bias map[string]any) string {
		st, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody(prompt, map[string]any{"max_tokens": 4, "ignore_eos": true, "logit_bias": bias}))
		if st != 200 {
			t.Fatalf("%d %s", st, b)
		}
		return emuStr(emuJget(emuObj(t, b), "choices", 0, "message", "content"))
	}
	if got := chat(map[string]any{robot: 100}); got != "robot robot robot robot" {
		t.Fatalf("chat +100 on a prompt token: %q", got)
	}
	if base, got := chat(nil), chat(map[string]any{absent: 100}); got != base {
		t.Fatalf("an id outside vocabulary and prompt changed the text: %q vs %q", got, base)
	}
	st, _, b := emuPost(t, ep, "/v1/completions", map[string]any{"model": "m", "prompt": prompt, "max_tokens": 3, "ignore_eos": true,
		"temperature": 0, "logit_bias": map[string]any{robot: 100}})
	if got := emuStr(emuJget(emuObj(t, b), "choices", 0, "text")); st != 200 || got != "robot robot robot" {
		t.Fatalf("completions +100 on a prompt token: %d %q", st, got)
	}
}

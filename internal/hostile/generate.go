package hostile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// discardLog 丢弃 net/http 服务端自己的日志（故意断开的连接会让它抱怨）。
func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }

// genRequest 是生成请求中本服务关心的字段。
type genRequest struct {
	Stream        bool `json:"stream"`
	MaxTokens     *int `json:"max_tokens"`
	MaxCompletion *int `json:"max_completion_tokens"`
	StreamOptions *struct {
		IncludeUsage    bool `json:"include_usage"`
		ContinuousUsage bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
	Prompt   any `json:"prompt"`
	Messages []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
}

// exchange 是一次生成请求的应答状态。
type exchange struct {
	s       *Server
	w       http.ResponseWriter
	r       *http.Request
	chat    bool
	req     genRequest
	id      string
	created int64
	prompt  string // 最后一条用户消息或 prompt
	pTokens int
}

// maxTokens 返回请求的输出上限（chat 优先 max_completion_tokens；缺省 16，与 vLLM completions 一致）。
func (x *exchange) maxTokens() int {
	switch {
	case x.req.MaxCompletion != nil && *x.req.MaxCompletion > 0:
		return *x.req.MaxCompletion
	case x.req.MaxTokens != nil && *x.req.MaxTokens > 0:
		return *x.req.MaxTokens
	}
	return 16
}

// text 把 content（字符串或 OpenAI 的分段数组）里的文字取出来。
func text(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if m, ok := p.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					b.WriteString(t)
				}
			}
		}
		return b.String()
	}
	return ""
}

// generate 处理 /v1/chat/completions 与 /v1/completions：先读请求，再按故障应答。
func (s *Server) generate(w http.ResponseWriter, r *http.Request, rt route, chat bool) {
	s.gens.Add(1)
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes))
	if err != nil {
		return
	}
	x := &exchange{s: s, w: w, r: r, chat: chat, created: time.Now().Unix()}
	if err := json.Unmarshal(body, &x.req); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", "hostile: request body is not JSON")
		return
	}
	if x.req.StreamOptions != nil && !x.req.Stream {
		writeError(w, http.StatusBadRequest, "BadRequestError", "Stream options can only be defined when `stream=True`.")
		return
	}
	x.id = "cmpl-hostile-" + strconv.FormatInt(s.gens.Load(), 10)
	if chat {
		x.id = "chatcmpl-hostile-" + strconv.FormatInt(s.gens.Load(), 10)
		for _, m := range x.req.Messages {
			t := text(m.Content)
			x.pTokens += tokenize.Count(t)
			if m.Role == "user" {
				x.prompt = t
			}
		}
	} else {
		switch p := x.req.Prompt.(type) {
		case string:
			x.prompt = p
		case []any:
			if len(p) > 0 {
				x.prompt, _ = p[0].(string)
			}
		}
		x.pTokens = tokenize.Count(x.prompt)
	}
	if n := x.pTokens + x.maxTokens(); n > s.cfg.MaxModelLen {
		// vLLM 在生成之前校验上下文长度，所以它先于任何故障。
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf(
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			s.cfg.MaxModelLen, n, x.pTokens, x.maxTokens()))
		return
	}
	f := s.faultFor(rt)
	if f != FaultNone {
		s.faulted.Add(1)
	}
	switch f {
	case FaultNone:
		x.healthy(false)
	case FaultDupFinish:
		x.healthy(true)
	case FaultTruncate:
		x.truncate()
	case FaultReset:
		reset(w)
	case FaultErrorEvent:
		x.errorEvent()
	case Fault429:
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(s.cfg.RetryAfter.Round(time.Second)/time.Second))))
		writeError(w, http.StatusTooManyRequests, "TooManyRequestsError", "hostile: rate limited, retry later")
	case Fault500:
		writeError(w, http.StatusInternalServerError, "InternalServerError", "hostile: engine crashed")
	case FaultSilence:
		s.silence(r.Context())
	case FaultStall:
		x.stall()
	case FaultBig:
		x.payload(s.cfg.BigSize)
	case FaultHuge:
		x.payload(s.cfg.HugeSize)
	case FaultInvalidJSON:
		x.invalidJSON()
	case FaultZeroTokens:
		x.zeroTokens()
	case FaultGarbage:
		x.garbage()
	case FaultError200:
		writeJSON(w, http.StatusOK, errorBody(http.StatusInternalServerError, "InternalServerError", "hostile: error in a 200 body"))
	case FaultEchoAuth:
		writeError(w, http.StatusUnauthorized, "AuthenticationError", echo(r))
	}
}

// reset 劫持连接并以 RST 关闭（SO_LINGER 0），客户端看到 connection reset。
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// abort 让 net/http 不写 chunked 结束块就关闭连接：客户端读到的是意外 EOF，而不是正常结束。
func abort() { panic(http.ErrAbortHandler) }

// startStream 写出 SSE 响应头。
func (x *exchange) startStream() {
	h := x.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	x.w.WriteHeader(http.StatusOK)
}

// event 写一个 data 事件并立即刷出。
func (x *exchange) event(data []byte) {
	_, _ = x.w.Write([]byte("data: "))
	_, _ = x.w.Write(data)
	_, _ = x.w.Write([]byte("\n\n"))
	x.flush()
}

// flush 把已写的数据推到连接上。
func (x *exchange) flush() {
	if f, ok := x.w.(http.Flusher); ok {
		f.Flush()
	}
}

// usage 返回 usage 对象。
func (x *exchange) usage(completion int) map[string]any {
	return map[string]any{"prompt_tokens": x.pTokens, "completion_tokens": completion, "total_tokens": x.pTokens + completion}
}

// chunk 返回一个流式块；delta 为内容（role 为 true 时是 role 首块），finish 为空表示未结束。
// continuous_usage_stats 时每块带累计 usage，否则 usage 为 null（vLLM 的形态）。
func (x *exchange) chunk(content string, role bool, finish string, done int) []byte {
	var choice map[string]any
	if x.chat {
		delta := map[string]any{"content": content}
		if role {
			delta["role"] = "assistant"
		}
		choice = map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": nil}
	} else {
		choice = map[string]any{"index": 0, "text": content, "logprobs": nil, "finish_reason": nil}
	}
	if finish != "" {
		choice["finish_reason"] = finish
		choice["stop_reason"] = nil
	}
	obj := map[string]any{"id": x.id, "object": x.object(true), "created": x.created, "model": x.s.cfg.Model,
		"choices": []any{choice}, "usage": nil}
	if x.req.StreamOptions != nil && x.req.StreamOptions.ContinuousUsage {
		obj["usage"] = x.usage(done)
	}
	b, _ := json.Marshal(obj)
	return b
}

// object 返回 object 字段。
func (x *exchange) object(stream bool) string {
	switch {
	case x.chat && stream:
		return "chat.completion.chunk"
	case x.chat:
		return "chat.completion"
	}
	return "text_completion"
}

// finalUsage 在 include_usage 时写出 choices 为空、带 usage 的最后一块。
func (x *exchange) finalUsage(completion int) {
	if x.req.StreamOptions == nil || !(x.req.StreamOptions.IncludeUsage || x.req.StreamOptions.ContinuousUsage) {
		return
	}
	b, _ := json.Marshal(map[string]any{"id": x.id, "object": x.object(true), "created": x.created,
		"model": x.s.cfg.Model, "choices": []any{}, "usage": x.usage(completion)})
	x.event(b)
}

// pieces 返回健康回复的内容片段与结束原因：Config.Answer 给出非空回复时整段一次、stop；
// 否则 max_tokens 个 " hi"（每个一个 token）、length。
func (x *exchange) pieces() ([]string, string) {
	if x.s.cfg.Answer != nil {
		if a := x.s.cfg.Answer(x.prompt); a != "" {
			return []string{a}, "stop"
		}
	}
	n := x.maxTokens()
	out := make([]string, n)
	for i := range out {
		out[i] = " hi"
	}
	return out, "length"
}

// message 返回非流式响应对象；content 为 nil 时由调用方自己写。
func (x *exchange) message(content string, finish string, completion int, choices int) map[string]any {
	var cs []any
	for range choices {
		if x.chat {
			cs = append(cs, map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content},
				"logprobs": nil, "finish_reason": finish, "stop_reason": nil})
		} else {
			cs = append(cs, map[string]any{"index": 0, "text": content, "logprobs": nil, "finish_reason": finish, "stop_reason": nil})
		}
	}
	return map[string]any{"id": x.id, "object": x.object(false), "created": x.created, "model": x.s.cfg.Model,
		"choices": cs, "usage": x.usage(completion)}
}

// healthy 写出正常的回复；dup 为 true 时结束块发两次（非流式：两个 index 0 的 choice）。
func (x *exchange) healthy(dup bool) {
	ps, finish := x.pieces()
	tokens := 0
	for _, p := range ps {
		tokens += max(1, tokenize.Count(p))
	}
	if !x.req.Stream {
		choices := 1
		if dup {
			choices = 2
		}
		writeJSON(x.w, http.StatusOK, x.message(strings.Join(ps, ""), finish, tokens, choices))
		x.s.countOK(tokens)
		return
	}
	x.startStream()
	if x.chat {
		x.event(x.chunk("", true, "", 0))
	}
	done := 0
	for i, p := range ps {
		done += max(1, tokenize.Count(p))
		f := ""
		if i == len(ps)-1 {
			f = finish
		}
		x.event(x.chunk(p, false, f, done))
	}
	if dup {
		x.event(x.chunk("", false, finish, done))
	}
	x.finalUsage(tokens)
	x.event([]byte("[DONE]"))
	x.s.countOK(tokens)
}

// truncate 流式：两个内容块后写半个事件再断开；非流式：声明的长度大于实际写出的字节。
func (x *exchange) truncate() {
	if !x.req.Stream {
		b, _ := json.Marshal(x.message(" hi hi", "length", 2, 1))
		x.w.Header().Set("Content-Type", "application/json")
		x.w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		x.w.WriteHeader(http.StatusOK)
		_, _ = x.w.Write(b[:len(b)/2])
		x.flush()
		abort()
	}
	x.startStream()
	if x.chat {
		x.event(x.chunk("", true, "", 0))
	}
	x.event(x.chunk(" hi", false, "", 1))
	x.event(x.chunk(" hi", false, "", 2))
	_, _ = x.w.Write([]byte(`data: {"id":"` + x.id + `","choices":[{"index":0,"del`))
	x.flush()
	abort()
}

// errorEvent 流式：一个内容块后发 {"error":…} 事件与 [DONE]（HTTP 200）；非流式：200 + {"error":…}。
func (x *exchange) errorEvent() {
	e := errorBody(http.StatusInternalServerError, "InternalServerError", "hostile: engine failed after the stream started")
	if !x.req.Stream {
		writeJSON(x.w, http.StatusOK, e)
		return
	}
	x.startStream()
	if x.chat {
		x.event(x.chunk("", true, "", 0))
	}
	x.event(x.chunk(" hi", false, "", 1))
	b, _ := json.Marshal(e)
	x.event(b)
	x.event([]byte("[DONE]"))
}

// stall 发出开头后卡住，直到客户端断开或服务关闭。
func (x *exchange) stall() {
	if !x.req.Stream {
		x.w.Header().Set("Content-Type", "application/json")
		x.w.Header().Set("Content-Length", "4096")
		x.w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(x.w, `{"id":"`+x.id+`","object":"`+x.object(false)+`","choices":[`)
		x.flush()
	} else {
		x.startStream()
		if x.chat {
			x.event(x.chunk("", true, "", 0))
		}
		x.event(x.chunk(" hi", false, "", 1))
	}
	x.s.silence(x.r.Context())
}

// payloadPiece 是大载荷的写出单位：64 KiB 的 'a'，加一个空格让它也像文字。
var payloadPiece = append(bytes.Repeat([]byte("a"), 64<<10-1), ' ')

// writePayload 边生成边写 n 字节；客户端断开（写失败）或服务关闭时立即停止，返回是否写完。
func (x *exchange) writePayload(n int64) bool {
	for n > 0 {
		select {
		case <-x.s.done:
			return false
		default:
		}
		p := payloadPiece[:min(int64(len(payloadPiece)), n)]
		k, err := x.w.Write(p)
		x.s.payload.Add(int64(k))
		if err != nil {
			return false
		}
		n -= int64(k)
	}
	return true
}

// payload 写一个 n 字节内容的合法事件（流式）或响应体（非流式）。内容以健康回复开头
// （Config.Answer 给出时是它），其后是填充；JSON 的首尾由固定字符串拼出，载荷从不整体驻留内存。
func (x *exchange) payload(n int64) {
	ps, _ := x.pieces()
	head := strings.Join(ps, "") + " "
	tokens := max(1, x.maxTokens())
	if !x.req.Stream {
		obj := x.message("\x00", "length", tokens, 1)
		b, _ := json.Marshal(obj)
		pre, post, _ := bytes.Cut(b, []byte(`\u0000`))
		hq, _ := json.Marshal(head)
		total := int64(len(pre)) + int64(len(hq)-2) + n + int64(len(post))
		x.w.Header().Set("Content-Type", "application/json")
		x.w.Header().Set("Content-Length", strconv.FormatInt(total, 10))
		x.w.WriteHeader(http.StatusOK)
		_, _ = x.w.Write(pre)
		_, _ = x.w.Write(hq[1 : len(hq)-1])
		if !x.writePayload(n) {
			abort()
		}
		_, _ = x.w.Write(post)
		x.s.countOK(tokens)
		return
	}
	x.startStream()
	if x.chat {
		x.event(x.chunk("", true, "", 0))
	}
	b := x.chunk("\x00", false, "", tokens)
	pre, post, _ := bytes.Cut(b, []byte(`\u0000`))
	hq, _ := json.Marshal(head)
	_, _ = x.w.Write([]byte("data: "))
	_, _ = x.w.Write(pre)
	_, _ = x.w.Write(hq[1 : len(hq)-1])
	if !x.writePayload(n) {
		abort()
	}
	_, _ = x.w.Write(post)
	_, _ = x.w.Write([]byte("\n\n"))
	x.event(x.chunk("", false, "length", tokens))
	x.finalUsage(tokens)
	x.event([]byte("[DONE]"))
	x.s.countOK(tokens)
}

// invalidJSON 流式：一个不完整的 JSON 事件后 [DONE]；非流式：不完整的 JSON 体。
func (x *exchange) invalidJSON() {
	broken := `{"id":"` + x.id + `","object":"` + x.object(x.req.Stream) + `","choices":[{"index":0,"delta":{"content":" hi"`
	if !x.req.Stream {
		x.w.Header().Set("Content-Type", "application/json")
		x.w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(x.w, broken)
		return
	}
	x.startStream()
	x.event([]byte(broken))
	x.event([]byte("[DONE]"))
}

// zeroTokens 正常结束但没有内容：finish_reason stop，completion_tokens 0。
func (x *exchange) zeroTokens() {
	if !x.req.Stream {
		writeJSON(x.w, http.StatusOK, x.message("", "stop", 0, 1))
		return
	}
	x.startStream()
	if x.chat {
		x.event(x.chunk("", true, "", 0))
	}
	x.event(x.chunk("", false, "stop", 0))
	x.finalUsage(0)
	x.event([]byte("[DONE]"))
}

// garbage 声明正常的 Content-Type，体是确定性的二进制垃圾（含换行与 "data:" 前缀的碎片）。
func (x *exchange) garbage() {
	ct := "application/json"
	if x.req.Stream {
		ct = "text/event-stream"
	}
	x.w.Header().Set("Content-Type", ct)
	x.w.WriteHeader(http.StatusOK)
	rng := rand.New(rand.NewPCG(14, 14))
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
		if i%997 == 0 {
			buf[i] = '\n'
		}
	}
	copy(buf[100:], "data: \xff\xfe{\n\n")
	_, _ = x.w.Write(buf)
	_, _ = fmt.Fprint(x.w, "\n\n")
}

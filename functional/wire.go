package functional

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"
)

// 本文件是用例共用的线上结构与请求助手。为了看到 vLLM 的扩展字段
// （reasoning、stop_reason、continuous usage…）以及区分 "null" 与“缺失”，
// 这里用自己的结构解码原始字节，而不依赖 SDK 的类型。

// wireUsage 是 usage 对象。
type wireUsage struct {
	PromptTokens            int `json:"prompt_tokens"`
	CompletionTokens        int `json:"completion_tokens"`
	TotalTokens             int `json:"total_tokens"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// wireToolCall 是 message.tool_calls 或 delta.tool_calls 的一项。
type wireToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// wireMessage 是 message 或 delta；raw 保留全部字段以便按键名查找推理字段。
type wireMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	ToolCalls []wireToolCall `json:"tool_calls"`
	raw       map[string]json.RawMessage
}

// UnmarshalJSON 同时解码已知字段与原始键值。
func (m *wireMessage) UnmarshalJSON(b []byte) error {
	type plain wireMessage
	if err := json.Unmarshal(b, (*plain)(m)); err != nil {
		return err
	}
	return json.Unmarshal(b, &m.raw)
}

// text 返回 content（null 或缺失时为空串）。
func (m wireMessage) text() string {
	if m.Content == nil {
		return ""
	}
	return *m.Content
}

// field 返回键 key 的字符串值；键缺失或为 null 时 ok 为 false。
func (m wireMessage) field(key string) (string, bool) {
	v, ok := m.raw[key]
	if !ok || string(v) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return string(v), true
	}
	return s, true
}

// wireLogprob 是 chat logprobs.content 的一项。
type wireLogprob struct {
	Token       string  `json:"token"`
	Logprob     float64 `json:"logprob"`
	TopLogprobs []struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
	} `json:"top_logprobs"`
}

// wireChatChoice 是非流式 chat 的一个 choice。
type wireChatChoice struct {
	Index        int             `json:"index"`
	Message      wireMessage     `json:"message"`
	FinishReason *string         `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason"`
	Logprobs     *struct {
		Content []wireLogprob `json:"content"`
	} `json:"logprobs"`
}

// wireChat 是非流式 chat 响应。
type wireChat struct {
	ID      string           `json:"id"`
	Object  string           `json:"object"`
	Created int64            `json:"created"`
	Model   string           `json:"model"`
	Choices []wireChatChoice `json:"choices"`
	Usage   *wireUsage       `json:"usage"`
}

// wireChunkChoice 是流式 chat chunk 的一个 choice。
type wireChunkChoice struct {
	Index        int         `json:"index"`
	Delta        wireMessage `json:"delta"`
	FinishReason *string     `json:"finish_reason"`
	Logprobs     *struct {
		Content []wireLogprob `json:"content"`
	} `json:"logprobs"`
	// Text 只在 completions 流中出现。
	Text *string `json:"text"`
}

// wireChunk 是一个流式 chunk（chat 或 completions）；Usage 区分 null 与缺失。
type wireChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Model   string            `json:"model"`
	Choices []wireChunkChoice `json:"choices"`
	Usage   json.RawMessage   `json:"usage"`
	Error   json.RawMessage   `json:"error"`
}

// usage 解码 chunk 的 usage；缺失或 null 时返回 nil。
func (c wireChunk) usage() *wireUsage {
	if len(c.Usage) == 0 || string(c.Usage) == "null" {
		return nil
	}
	var u wireUsage
	if json.Unmarshal(c.Usage, &u) != nil {
		return nil
	}
	return &u
}

// wireCompletionChoice 是非流式 completions 的一个 choice。
type wireCompletionChoice struct {
	Index        int     `json:"index"`
	Text         string  `json:"text"`
	FinishReason *string `json:"finish_reason"`
	Logprobs     *struct {
		Tokens []string `json:"tokens"`
	} `json:"logprobs"`
}

// wireCompletion 是非流式 completions 响应。
type wireCompletion struct {
	ID      string                 `json:"id"`
	Object  string                 `json:"object"`
	Model   string                 `json:"model"`
	Choices []wireCompletionChoice `json:"choices"`
	Usage   *wireUsage             `json:"usage"`
}

// wireError 同时兼容 v0.10.1+ 的 {"error":{…}} 与旧版平铺的错误体。
type wireError struct {
	Error json.RawMessage `json:"error"`
	// 旧版平铺字段。
	Object  string          `json:"object"`
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// errorInfo 是错误体中可断言的部分。
type errorInfo struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Param   *string         `json:"param"`
	Code    json.RawMessage `json:"code"`
}

// parseError 解析错误体，返回 message/type/param/code；不是可识别的错误体时返回错误。
func parseError(body []byte) (errorInfo, error) {
	var w wireError
	if err := json.Unmarshal(body, &w); err != nil {
		return errorInfo{}, fmt.Errorf("error body is not JSON: %w", err)
	}
	if len(w.Error) > 0 && w.Error[0] == '{' {
		var e errorInfo
		if err := json.Unmarshal(w.Error, &e); err != nil {
			return errorInfo{}, fmt.Errorf("error object: %w", err)
		}
		return e, nil
	}
	if w.Object == "error" && w.Message != "" {
		return errorInfo{Message: w.Message, Type: w.Type, Code: w.Code}, nil
	}
	return errorInfo{}, fmt.Errorf("no error object in body")
}

// str 安全解引用字符串指针。
func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// body 是一个请求体；用 map 是因为用例需要叠加任意 vLLM 扩展参数。
type body map[string]any

// with 返回叠加 extra 后的新请求体；值为 nil 的键被删除。
func (b body) with(extra map[string]any) body {
	out := maps.Clone(b)
	for k, v := range extra {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = v
	}
	return out
}

// chatBody 构造一个基础 chat 请求体。
func (t *T) chatBody(prompt string, maxTokens int) body {
	return body{
		"model":       t.Model(),
		"messages":    []any{map[string]any{"role": "user", "content": prompt}},
		"max_tokens":  maxTokens,
		"temperature": 0.0,
	}
}

// plainBody 与 chatBody 相同，但在场景开启推理时附上 reasoning.disable_kwargs：
// 参数与结构化输出用例断言的是正文，推理模型的思考会先耗尽 max_tokens。
func (t *T) plainBody(prompt string, maxTokens int) body {
	b := t.chatBody(prompt, maxTokens)
	if t.Has(FeatureReasoning) && len(t.cfg.Reasoning.DisableKwargs) > 0 {
		b["chat_template_kwargs"] = t.cfg.Reasoning.DisableKwargs
	}
	return b
}

// output 返回一条消息的全部生成文本（推理 + 正文 + 工具参数），用于比较两次生成
// 是否相同：思考没有关掉时正文可能为空，只比正文会把“都为空”误当作相同。
func (t *T) output(m wireMessage) string {
	var sb strings.Builder
	for _, k := range t.reasoningKeys() {
		if v, ok := m.field(k); ok {
			sb.WriteString(v)
			break
		}
	}
	sb.WriteString("\x00")
	sb.WriteString(m.text())
	for _, tc := range m.ToolCalls {
		sb.WriteString("\x00" + tc.Function.Name + tc.Function.Arguments)
	}
	return sb.String()
}

// completionBody 构造一个基础 completions 请求体。
func (t *T) completionBody(prompt any, maxTokens int) body {
	return body{"model": t.Model(), "prompt": prompt, "max_tokens": maxTokens, "temperature": 0.0}
}

// postOK 发送请求并要求 200，否则以失败结束用例；返回响应体。
func (t *T) postOK(ctx context.Context, p string, b any) []byte {
	resp, err := t.Post(ctx, p, b)
	if err != nil {
		t.failErr(p, err)
	}
	if resp.Status != http.StatusOK {
		t.failStatus(p, resp.Status, resp.Body)
	}
	return resp.Body
}

// need 在 caps 中任一能力被场景声明为 unsupported 时跳过用例（不发请求）。
// 用例应在发出第一个请求前调用，使“声明不支持”的用例完全不触碰服务端。
func (t *T) need(caps ...Capability) {
	for _, c := range caps {
		if t.target.Support(c) == SupportUnsupported {
			t.Skipf("capability %q declared unsupported by the scenario", c)
		}
	}
}

// postCap 与 postOK 相同，但请求使用了可选能力 caps（what 是写进原因的参数描述）。
// 非 200 时由 rejected 按声明给出结论；先调用 need。
func (t *T) postCap(ctx context.Context, p string, b any, what string, caps ...Capability) []byte {
	t.need(caps...)
	resp, err := t.Post(ctx, p, b)
	if err != nil {
		t.failErr(p, err)
	}
	if resp.Status != http.StatusOK {
		t.rejected(p, what, resp.Status, resp.Body, caps)
	}
	return resp.Body
}

// rejected 对使用可选能力的请求的非 200 回答下结论并结束用例：
//   - 401/403/408/429/5xx（501 除外）与其他非“参数拒绝”的状态：失败，写明状态；
//   - 参数拒绝（400/404/405/422/501）且 caps 中有能力声明为 probe：unsupported；
//   - 参数拒绝且全部声明为 supported：失败，引用服务端的回答。
func (t *T) rejected(p, what string, status int, body []byte, caps []Capability) {
	answer := serverMessage(body)
	if !probeRejection(status) {
		t.failf(rejectionClass(status), "%s with %s: HTTP %d is a fault, not a capability rejection: %s", p, what, status, answer)
	}
	var probed, declared []string
	for _, c := range caps {
		if t.target.Support(c) == SupportProbe {
			probed = append(probed, string(c))
		} else {
			declared = append(declared, string(c))
		}
	}
	if len(probed) > 0 {
		t.unsupportedf("probe: server rejected %s (HTTP %d), so %s is unsupported: %s", what, status, strings.Join(probed, ", "), answer)
	}
	t.failf(rejectionClass(status), "server rejected %s (HTTP %d) although the scenario declares %s supported: %s", what, status, strings.Join(declared, ", "), answer)
}

// firstLine 取响应体的第一行，用于简短的原因文本。
func firstLine(b []byte) string {
	s := string(b)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// chat 发送非流式 chat 请求并解码；非 200 时失败。
func (t *T) chat(ctx context.Context, b body) *wireChat {
	return t.decodeChat(t.postOK(ctx, "/v1/chat/completions", b))
}

// chatCap 与 chat 相同，但请求使用了可选能力 caps（见 postCap）。
func (t *T) chatCap(ctx context.Context, b body, what string, caps ...Capability) *wireChat {
	return t.decodeChat(t.postCap(ctx, "/v1/chat/completions", b, what, caps...))
}

// decodeChat 解码并做最基本的形状检查（至少一个 choice）。200 的错误体以 server_error
// 失败并引用服务端原话，而不是只说“没有 choice”。
func (t *T) decodeChat(raw []byte) *wireChat {
	var c wireChat
	if err := json.Unmarshal(raw, &c); err != nil {
		t.failf(ClassBadJSON, "chat response is not valid JSON: %v: %s", err, bound(string(raw)))
	}
	if len(c.Choices) == 0 {
		t.noChoices("chat", raw)
	}
	return &c
}

// noChoices 以失败结束用例：回答没有 choice。是错误体时以 server_error 引用服务端原话。
func (t *T) noChoices(what string, raw []byte) {
	if errorBody(raw) {
		t.failf(ClassServerError, "server returned an error in a 200 body: %s", serverMessage(raw))
	}
	t.Fatalf("%s response has no choices", what)
}

// completion 发送非流式 completions 请求并解码。
func (t *T) completion(ctx context.Context, b body) *wireCompletion {
	raw := t.postOK(ctx, "/v1/completions", b)
	var c wireCompletion
	if err := json.Unmarshal(raw, &c); err != nil {
		t.failf(ClassBadJSON, "completion response is not valid JSON: %v: %s", err, bound(string(raw)))
	}
	if len(c.Choices) == 0 {
		t.noChoices("completion", raw)
	}
	return &c
}

// streamed 是一次流式响应解码后的视图。
type streamed struct {
	raw    *Stream
	chunks []wireChunk
	// text/reasoning 按 choice index 拼接的内容与推理增量；pieces 是 text 的逐个非空增量
	// （流式与非流式比较时据此把字节位置换算成 token 序号）。
	text      map[int]string
	reasoning map[int]string
	pieces    map[int][]string
	// seq 是按到达顺序的推理与内容增量（推理在前的模型先推理后回答），流式与非流式整体比较用。
	seq map[int][]string
	// argPieces 按 choice 与 tool index 记录工具参数的逐个增量。
	argPieces map[int]map[int][]string
	// finish 按 choice 记录 finish_reason 出现的次数与最后的值。
	finishes map[int]int
	finish   map[int]string
	// roleChunks 按 choice 记录携带 role 的 delta 次数；firstRole 报告每个 choice
	// 的第一个 delta 是否带 role=assistant。
	roleChunks map[int]int
	firstRole  map[int]bool
	// usageChunk 是 choices 为空且带 usage 的最后一个 chunk 的 usage。
	usageChunk *wireUsage
	// usages 是每个 chunk 的 usage（null/缺失为 nil）。
	usages []*wireUsage
	// contentChunks 是携带非空内容或推理增量的 chunk 数。
	contentChunks int
	// tools 按 choice 与 tool index 重组的工具调用。
	tools map[int]map[int]*wireToolCall
	// toolIDDeltas/toolNameDeltas 统计同一 tool index 出现 id/name 的次数。
	toolIDDeltas map[int]map[int]int
}

// stream 发送流式请求（body 中自动设置 stream=true），检查 HTTP 200 与
// 在带内的错误事件，并把 chunk 解码重组。reasoningKeys 用于识别推理增量。
func (t *T) stream(ctx context.Context, p string, b body) *streamed {
	b = b.with(map[string]any{"stream": true})
	s, err := t.Stream(ctx, p, b)
	if err != nil {
		t.failErr(p, err)
	}
	if s.Status != http.StatusOK {
		t.failStatus(p+" (stream)", s.Status, s.Body)
	}
	return t.decodeStream(s)
}

// streamCap 与 stream 相同，但请求使用了可选能力 caps（见 postCap）。
func (t *T) streamCap(ctx context.Context, p string, b body, what string, caps ...Capability) *streamed {
	t.need(caps...)
	b = b.with(map[string]any{"stream": true})
	s, err := t.Stream(ctx, p, b)
	if err != nil {
		t.failErr(p, err)
	}
	if s.Status != http.StatusOK {
		t.rejected(p+" (stream)", what, s.Status, s.Body, caps)
	}
	return t.decodeStream(s)
}

// streamBudget 与 streamCap 相同，但最多读 budget 这么久：预算先到时停止读取（关闭连接，
// 服务端随之中止生成），返回已收到的完整事件并报告 cut=true。预算之外的其它故障照常失败。
func (t *T) streamBudget(ctx context.Context, p string, b body, budget time.Duration, what string, caps ...Capability) (*streamed, bool) {
	t.need(caps...)
	b = b.with(map[string]any{"stream": true})
	bctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	s, err := t.Stream(bctx, p, b)
	cut := err != nil && errors.Is(bctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil && s != nil && s.Status == http.StatusOK
	if err != nil && !cut {
		t.failErr(p, err)
	}
	if s.Status != http.StatusOK {
		t.rejected(p+" (stream)", what, s.Status, s.Body, caps)
	}
	if cut {
		s.Done = true           // 是我们停止了读取：不按"没有 [DONE]"判定
		t.rec.setFault(fault{}) // 读取被我们的预算打断，不是服务端的故障
	}
	return t.decodeStream(s), cut
}

// decodeStream 解码全部事件。以下情况让用例失败（vLLM 从不这样做，见
// docs/vllm-wire.md）：带内错误事件（HTTP 200 但 data 为 {"error":…}，
// server_error，引用服务端原话）、HTTP 200 的错误体代替事件流（server_error）、
// 事件不是 JSON（bad_json）、同一 choice 的 finish_reason 出现两次或 finish 之后还有
// 该 choice 的 chunk、[DONE] 之后还有事件（protocol）。
func (t *T) decodeStream(s *Stream) *streamed {
	if f := t.rec.pending(); f.class == ClassServerError {
		t.failf(f.class, "stream request: %s", f.detail)
	}
	if s.AfterDone > 0 {
		t.failf(ClassProtocol, "stream sent %d event(s) after data: [DONE]", s.AfterDone)
	}
	if len(s.Events) == 0 && !s.Done {
		// 没有一个 data 事件、也没有 [DONE]：响应体根本不是 SSE 事件流。
		_, resp := t.rec.snapshot()
		t.failf(ClassProtocol, "HTTP 200 stream holds no SSE event and no data: [DONE] (Content-Type %q); body starts: %q",
			s.Header.Get("Content-Type"), bound(strings.TrimPrefix(resp, "HTTP 200\n")))
	}
	finishedAt := map[int]int{}
	out := &streamed{raw: s, text: map[int]string{}, reasoning: map[int]string{}, pieces: map[int][]string{}, seq: map[int][]string{},
		argPieces: map[int]map[int][]string{}, finishes: map[int]int{},
		finish: map[int]string{}, roleChunks: map[int]int{}, firstRole: map[int]bool{},
		tools: map[int]map[int]*wireToolCall{}, toolIDDeltas: map[int]map[int]int{}}
	keys := t.reasoningKeys()
	seen := map[int]bool{}
	for i, ev := range s.Events {
		var c wireChunk
		if err := json.Unmarshal(ev, &c); err != nil {
			t.failf(ClassBadJSON, "stream event %d is not JSON: %v: %s", i, err, bound(string(ev)))
		}
		if len(c.Error) > 0 && string(c.Error) != "null" {
			t.failf(ClassServerError, "server sent an in-band error event (event %d): %s", i, serverMessage(ev))
		}
		out.chunks = append(out.chunks, c)
		u := c.usage()
		out.usages = append(out.usages, u)
		if len(c.Choices) == 0 && u != nil {
			out.usageChunk = u
		}
		for _, ch := range c.Choices {
			if at, done := finishedAt[ch.Index]; done {
				if ch.FinishReason != nil {
					t.failf(ClassProtocol, "choice %d: finish_reason sent twice (events %d and %d); vLLM sends exactly one", ch.Index, at, i)
				}
				t.failf(ClassProtocol, "choice %d: event %d continues the choice after its finish_reason (event %d)", ch.Index, i, at)
			}
			if ch.FinishReason != nil {
				finishedAt[ch.Index] = i
			}
			if !seen[ch.Index] {
				seen[ch.Index] = true
				out.firstRole[ch.Index] = ch.Delta.Role == "assistant"
			}
			if ch.Delta.Role != "" {
				out.roleChunks[ch.Index]++
			}
			piece := ch.Delta.text()
			if ch.Text != nil {
				piece += *ch.Text
			}
			var rpiece string
			for _, k := range keys {
				if v, ok := ch.Delta.field(k); ok {
					rpiece += v
					break
				}
			}
			if piece != "" || rpiece != "" {
				out.contentChunks++
			}
			out.text[ch.Index] += piece
			if rpiece != "" {
				out.seq[ch.Index] = append(out.seq[ch.Index], rpiece)
			}
			if piece != "" {
				out.pieces[ch.Index] = append(out.pieces[ch.Index], piece)
				out.seq[ch.Index] = append(out.seq[ch.Index], piece)
			}
			out.reasoning[ch.Index] += rpiece
			if ch.FinishReason != nil {
				out.finishes[ch.Index]++
				out.finish[ch.Index] = *ch.FinishReason
			}
			for _, tc := range ch.Delta.ToolCalls {
				idx := 0
				if tc.Index != nil {
					idx = *tc.Index
				}
				if out.tools[ch.Index] == nil {
					out.tools[ch.Index] = map[int]*wireToolCall{}
					out.toolIDDeltas[ch.Index] = map[int]int{}
				}
				cur := out.tools[ch.Index][idx]
				if cur == nil {
					cur = &wireToolCall{}
					out.tools[ch.Index][idx] = cur
				}
				if tc.ID != "" {
					cur.ID = tc.ID
					out.toolIDDeltas[ch.Index][idx]++
				}
				if tc.Function.Name != "" {
					cur.Function.Name += tc.Function.Name
				}
				cur.Function.Arguments += tc.Function.Arguments
				if tc.Function.Arguments != "" {
					if out.argPieces[ch.Index] == nil {
						out.argPieces[ch.Index] = map[int][]string{}
					}
					out.argPieces[ch.Index][idx] = append(out.argPieces[ch.Index][idx], tc.Function.Arguments)
				}
			}
		}
	}
	return out
}

// reasoningKeys 返回推理字段候选键名：Target 的在前，配置的在后，去重。
func (t *T) reasoningKeys() []string {
	var out []string
	for _, k := range append(append([]string{}, t.target.ReasoningKeys...), t.cfg.Reasoning.Keys...) {
		if k != "" && !contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// contains 报告 s 是否包含 v。
func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// checkUsage 断言 usage 的加法关系与正值。
func (t *T) checkUsage(where string, u *wireUsage) {
	if u == nil {
		t.Fatalf("%s: usage missing", where)
	}
	if u.PromptTokens <= 0 {
		t.Errorf("%s: usage.prompt_tokens=%d, want > 0", where, u.PromptTokens)
	}
	if u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Fatalf("%s: usage.total_tokens=%d != prompt_tokens %d + completion_tokens %d", where, u.TotalTokens, u.PromptTokens, u.CompletionTokens)
	}
}

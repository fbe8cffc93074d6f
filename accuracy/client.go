package accuracy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vllm-cibench/cibench/endpoint"

	"github.com/vllm-cibench/cibench/internal/redact"
	"github.com/vllm-cibench/cibench/internal/retry"
)

// ChatConfig 描述被测的 OpenAI 兼容服务与采样参数（对应参考命令行的
// --url、--served-model-name、--max-tokens、--temperature）。
//
// 被测服务是嵌入的 endpoint.Endpoint（约定见 endpoint 包文档）：请求发往
// BaseURL + "/chat/completions"，多个 BaseURLs 时按轮询分发、重试换到下一个实例；
// APIKey 非空时以 Bearer 方式发送，不会出现在任何错误或日志中；HTTPClient 为 nil 时
// 使用基于 http.DefaultTransport 的新客户端。由 Target 构造：ChatConfig{Endpoint: t.Endpoint, …}。
type ChatConfig struct {
	endpoint.Endpoint
	MaxTokens   int
	Temperature float64
	// SystemMessage 非空时作为 system 消息前置（参考实现的默认采样器没有）。
	SystemMessage string
	// Timeout 是单次请求的时限，0 表示只受 ctx 约束。
	Timeout time.Duration
	// Retries 是失败后的最大重试次数（参考实现无限重试，这里必须有界）：0 取
	// DefaultRetries，负数表示不重试（与 functional、metrics 推送同一语义）。
	Retries int
	// Backoff 是首次重试前的等待，之后每次翻倍（参考实现为 2**trial 秒：1s、2s、4s……）；0 取 1s。
	Backoff time.Duration
	// MaxBodyBytes 是响应体上限，0 取 DefaultMaxResponseBytes；超出记为 ErrBodyTooLarge。
	MaxBodyBytes int64
	// ExtraBody 是合并进每个请求体顶层的额外字段（例如 vLLM 的
	// chat_template_kwargs: {enable_thinking: false}）；不能覆盖 model、messages、temperature、
	// max_tokens、stream。参考实现不发这些字段：为空时请求体与 simple-evals 逐字段相同。
	ExtraBody map[string]any
}

// HTTPError 是服务返回的非 2xx 响应；Body 只保留前 512 字节，且已脱敏（不含 API Key）。
type HTTPError struct {
	StatusCode int
	Body       string
}

// Error 输出状态码与响应体摘要。
func (e *HTTPError) Error() string {
	return fmt.Sprintf("accuracy: chat completions: HTTP %d: %s", e.StatusCode, e.Body)
}

// ServerError 是服务在 2xx 响应里带回的错误（JSON 的 {"error": …} / {"object": "error"}，
// 或 SSE 流中的 error 事件）。Message 是服务自己的说明（已脱敏）。
type ServerError struct {
	// Where 是 "JSON body" 或 "SSE event"。
	Where   string
	Type    string
	Code    string
	Message string
}

// Error 写明这是服务端报告的错误，并保留服务的原话。
func (e *ServerError) Error() string {
	s := "accuracy: chat completions: server reported an error in the " + e.Where + " of a 2xx response"
	if e.Type != "" || e.Code != "" {
		s += " (" + strings.Trim(e.Type+" "+e.Code, " ") + ")"
	}
	return s + ": " + e.Message
}

// 采样失败的哨兵错误，可用 errors.Is 区分。
var (
	// ErrEmptyContent 表示 message.content 为 null（例如推理模型在 max_tokens 内没有
	// 输出正文）。参考实现对此重试；重试用尽后记为失败。
	ErrEmptyContent = errors.New("accuracy: chat completions: message.content is null")
	// ErrReasoningTruncated 表示 content 为 null 或空、finish_reason 为 length 且有推理文本：思考模型把
	// 全部 max_tokens 花在了推理上，没有写出答案。它是 ErrEmptyContent 的一种（errors.Is 两者都成立），
	// 分类为 reasoning_truncated，错误信息写明怎么办。
	ErrReasoningTruncated = fmt.Errorf("%w: the model spent all max_tokens reasoning (finish_reason length) and wrote no answer; "+
		"raise max_tokens or disable thinking with extra_body: {chat_template_kwargs: {enable_thinking: false}}", ErrEmptyContent)
	// ErrEmptyReply 表示 content 是空串：按参考实现照常计分，但计为失败的请求。
	ErrEmptyReply = errors.New("accuracy: chat completions: message.content is empty")
	// ErrNoChoices 表示 2xx 响应里没有 choices，也没有错误说明。
	ErrNoChoices = errors.New("accuracy: chat completions: response has no choices and no error")
	// ErrBodyTooLarge 表示响应体超过 ChatConfig.MaxBodyBytes。
	ErrBodyTooLarge = errors.New("accuracy: chat completions: response body exceeds the size limit")
)

// BadRequestReply 是参考实现（simple-evals ChatCompletionSampler）遇到 HTTP 400 时
// 当作模型回复计分的固定文本。
const BadRequestReply = "No response (bad request)."

// ErrorClass 返回采样错误的分类，写进结果与报告：bad_request、http_<状态码>、
// server_error、null_content、empty_content、no_choices、body_too_large、decode、
// timeout、transport、cancelled。
func ErrorClass(err error) string {
	var he *HTTPError
	var se *ServerError
	var ne net.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &he) && he.StatusCode == http.StatusBadRequest:
		return "bad_request"
	case errors.As(err, &he):
		return fmt.Sprintf("http_%d", he.StatusCode)
	case errors.As(err, &se):
		return "server_error"
	case errors.Is(err, ErrReasoningTruncated):
		return "reasoning_truncated"
	case errors.Is(err, ErrEmptyContent):
		return "null_content"
	case errors.Is(err, ErrEmptyReply):
		return "empty_content"
	case errors.Is(err, ErrNoChoices):
		return "no_choices"
	case errors.Is(err, ErrBodyTooLarge):
		return "body_too_large"
	case errors.Is(err, errDecode):
		return "decode"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "transport"
}

// redactedError 让传输错误的文本经过脱敏（URL 或服务端回显里可能带密钥），
// 同时保留原错误链供 errors.Is/As 判断类别；Error 只返回脱敏后的文本。
type redactedError struct {
	msg string
	err error
}

// Error 返回脱敏后的文本。
func (e *redactedError) Error() string { return e.msg }

// Unwrap 返回原错误，使 errors.Is(err, context.DeadlineExceeded) 等判断照常成立。
func (e *redactedError) Unwrap() error { return e.err }

// errDecode 标记响应体无法解析。
var errDecode = errors.New("cannot decode response")

// ChatSampler 通过 /v1/chat/completions 采样，实现 Sampler；可并发使用。
//
// 错误处理逐条对齐 simple-evals（sampler/chat_completion_sampler.py）的
// ChatCompletionSampler：HTTP 400 立即返回 BadRequestReply 作为回复（不重试，
// 参考实现对它计分）；content 为 null、没有 choices、其他任何异常都按 2**trial 秒
// （1s、2s、4s……）退避后重试。参考实现无限重试，这里至多 Retries 次，用尽后返回
// 错误，由 Run 以空回复计分。每个失败都同时作为错误返回，Run 把它计入 Errors。
//
// 多实例：第 k 次调用 Sample（从 0 数）的第一次尝试发往 BaseURLs[k mod n]，第 a 次重试
// 发往 BaseURLs[(k+a) mod n]——请求均匀分到全部实例，一个实例的故障由下一个实例重试。
// 由 Run 驱动时，每个实例收到与失败的尝试记在 EvalResult.Instances 中，每个回复来自
// 哪个实例记在 SingleResult.Instances 中，被重试掩盖的实例故障因此仍然看得见。
type ChatSampler struct {
	cfg       ChatConfig
	endpoints []string // 每个实例的 .../chat/completions
	instances []string // 每个实例屏蔽凭据后的基础地址，写进结果
	next      atomic.Uint64
	red       *redact.Redactor
}

// attempt 是一次请求尝试：发往的实例下标与失败分类（成功时为空）。
type attempt struct {
	instance int
	class    string
}

// tracer 是 ChatSampler 给 Run 的附加能力（以类型断言发现，Sampler 接口不变）：
// 报告一次采样的每次尝试发往哪个实例、是否失败。
type tracer interface {
	instanceURLs() []string
	sampleTraced(ctx context.Context, messages []Message) (string, []attempt, error)
}

var _ tracer = (*ChatSampler)(nil)

// NewChatSampler 校验配置并构造采样器。端点写错时错误同时包装 ErrConfig 与
// endpoint.ErrInvalid。
func NewChatSampler(cfg ChatConfig) (*ChatSampler, error) {
	if err := cfg.Endpoint.Validate(); err != nil {
		return nil, optWrap("accuracy: chat", err)
	}
	if cfg.MaxTokens < 0 || cfg.Timeout < 0 || cfg.Backoff < 0 || cfg.MaxBodyBytes < 0 {
		return nil, optErrf("accuracy: chat: negative max_tokens/timeout/backoff/max_body_bytes")
	}
	for _, k := range reservedBodyKeys {
		if _, ok := cfg.ExtraBody[k]; ok {
			return nil, optErrf("accuracy: chat: extra_body must not set %q (it is set by the evaluator)", k)
		}
	}
	cfg.Retries = retry.Count(cfg.Retries, DefaultRetries)
	if cfg.Backoff == 0 {
		cfg.Backoff = time.Second
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxResponseBytes
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	cfg.BaseURLs = slices.Clone(cfg.BaseURLs)
	c := &ChatSampler{cfg: cfg, red: newKeyRedactor(cfg.APIKey)}
	for _, b := range cfg.BaseURLs {
		c.endpoints = append(c.endpoints, strings.TrimRight(b, "/")+"/chat/completions")
		c.instances = append(c.instances, endpoint.RedactURL(b))
	}
	return c, nil
}

// instanceURLs 返回各实例屏蔽凭据后的基础地址（下标即 attempt.instance）。
func (c *ChatSampler) instanceURLs() []string { return c.instances }

// newKeyRedactor 返回认识 key 的各种编码（原文、Bearer 头、base64）的脱敏器。
func newKeyRedactor(key string) *redact.Redactor {
	return redact.New(secretForms(key)...)
}

// secretForms 返回 key 在请求与错误回显中可能出现的形式。
func secretForms(key string) []string {
	if key == "" {
		return nil
	}
	return []string{key, "Bearer " + key, base64.StdEncoding.EncodeToString([]byte(key)),
		base64.RawStdEncoding.EncodeToString([]byte(key)), base64.URLEncoding.EncodeToString([]byte(key)),
		base64.RawURLEncoding.EncodeToString([]byte(key))}
}

// chatRequest 是请求体；只发送参考实现发送的字段。
type chatRequest struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	Temperature float64   `json:"temperature"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
}

// chatResponse 是响应体中用到的部分（含两种常见的错误形状）。
type chatResponse struct {
	Choices []struct {
		Message struct {
			Content          *string `json:"content"`
			Reasoning        string  `json:"reasoning"`
			ReasoningContent string  `json:"reasoning_content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Error   json.RawMessage `json:"error"`
	Object  string          `json:"object"`
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    any             `json:"code"`
}

// Sample 发送请求并返回 choices[0].message.content。失败时返回的文本就是参考实现
// 会计分的回复（400 为 BadRequestReply，其余为空串），同时返回错误供 Run 计数。
func (c *ChatSampler) Sample(ctx context.Context, messages []Message) (string, error) {
	text, _, err := c.sampleTraced(ctx, messages)
	return text, err
}

// sampleTraced 是 Sample 的实现，另外返回每次尝试的实例与失败分类（按发生顺序）。
func (c *ChatSampler) sampleTraced(ctx context.Context, messages []Message) (string, []attempt, error) {
	if c.cfg.SystemMessage != "" {
		messages = append([]Message{{Role: "system", Content: c.cfg.SystemMessage}}, messages...)
	}
	body, err := c.requestBody(messages)
	if err != nil {
		return "", nil, fmt.Errorf("accuracy: chat: %w", err)
	}
	n := uint64(len(c.endpoints))
	first := c.next.Add(1) - 1
	var text string
	var tries []attempt
	pol := retry.Policy{Retries: c.cfg.Retries, Backoff: c.cfg.Backoff}
	attempts, werr := retry.Do(ctx, pol, func(a int, _ bool) retry.Verdict {
		inst := int((first + uint64(a)) % n)
		text, err = c.once(ctx, c.endpoints[inst], body)
		tries = append(tries, attempt{instance: inst, class: ErrorClass(err)})
		var he *HTTPError
		switch {
		case err == nil, errors.As(err, &he) && he.StatusCode == http.StatusBadRequest, errors.Is(err, ErrEmptyReply), ctx.Err() != nil:
			return retry.Stop
		}
		return retry.Again()
	})
	var he *HTTPError
	switch {
	case werr != nil:
		return "", tries, werr
	case err == nil:
		return text, tries, nil
	case errors.As(err, &he) && he.StatusCode == http.StatusBadRequest:
		// simple-evals: except openai.BadRequestError → "No response (bad request)."
		return BadRequestReply, tries, err
	case errors.Is(err, ErrEmptyReply):
		// 参考实现只对 None 重试；空串照常返回并计分。
		return "", tries, err
	case ctx.Err() != nil:
		return "", tries, ctx.Err()
	}
	if n > 1 {
		return "", tries, fmt.Errorf("accuracy: chat: giving up after %d attempts (last on %s): %w", attempts, c.instances[tries[len(tries)-1].instance], err)
	}
	return "", tries, fmt.Errorf("accuracy: chat: giving up after %d attempts: %w", attempts, err)
}

// once 发送一次请求。响应体最多读 MaxBodyBytes 字节，超出即 ErrBodyTooLarge：
// 内存由配置决定，而不是由服务决定。
func (c *ChatSampler) once(ctx context.Context, url string, body []byte) (string, error) {
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("accuracy: chat: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		// 文本脱敏，但保留错误链：超时（context.DeadlineExceeded、net.Error.Timeout）
		// 必须仍能被 errorClass 认出，否则会被归为 transport。
		return "", fmt.Errorf("accuracy: chat: %w", &redactedError{msg: c.red.String(err.Error()), err: err})
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxBodyBytes+1))
	if err != nil {
		return "", fmt.Errorf("accuracy: chat: read body: %w", err)
	}
	if int64(len(data)) > c.cfg.MaxBodyBytes {
		return "", fmt.Errorf("%w (%d bytes, HTTP %d)", ErrBodyTooLarge, c.cfg.MaxBodyBytes, resp.StatusCode)
	}
	if resp.StatusCode/100 != 2 {
		b := c.red.String(string(data))
		if len(b) > 512 {
			b = b[:512]
		}
		return "", &HTTPError{StatusCode: resp.StatusCode, Body: b}
	}
	trimmed := bytes.TrimSpace(data)
	if bytes.HasPrefix(trimmed, []byte("data:")) || bytes.HasPrefix(trimmed, []byte("event:")) {
		return "", c.sseError(trimmed)
	}
	var cr chatResponse
	if err := json.Unmarshal(data, &cr); err != nil {
		return "", fmt.Errorf("accuracy: chat: %w: %w", errDecode, err)
	}
	if se := c.inBandError(cr); se != nil {
		return "", se
	}
	if len(cr.Choices) == 0 {
		return "", ErrNoChoices
	}
	content := cr.Choices[0].Message.Content
	switch {
	case (content == nil || *content == "") && cr.Choices[0].FinishReason == "length" &&
		(cr.Choices[0].Message.Reasoning != "" || cr.Choices[0].Message.ReasoningContent != ""):
		// 推理解析器把全部输出当作推理（没有 </think>）：新版 vLLM 给 null，有的服务给 ""。
		return "", ErrReasoningTruncated
	case content == nil:
		return "", ErrEmptyContent
	case *content == "":
		return "", ErrEmptyReply
	}
	return *content, nil
}

// inBandError 识别 2xx 响应体中的错误：OpenAI 形状 {"error": {...}} 或 {"error": "..."}，
// 以及 vLLM 旧版的 {"object": "error", "message": ...}。
func (c *ChatSampler) inBandError(cr chatResponse) *ServerError {
	se := &ServerError{Where: "JSON body"}
	switch {
	case len(cr.Error) > 0 && string(cr.Error) != "null":
		var obj struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		}
		if json.Unmarshal(cr.Error, &obj) == nil {
			se.Message, se.Type, se.Code = obj.Message, obj.Type, codeString(obj.Code)
		} else {
			var s string
			if json.Unmarshal(cr.Error, &s) == nil {
				se.Message = s
			} else {
				se.Message = string(cr.Error)
			}
		}
	case cr.Object == "error":
		se.Message, se.Type, se.Code = cr.Message, cr.Type, codeString(cr.Code)
	default:
		return nil
	}
	se.Message = c.clip(se.Message)
	return se
}

// sseError 从一个（不该出现的）SSE 响应中找出 error 事件并保留服务的原话；
// 找不到时说明服务对非流式请求回了一个流。
func (c *ChatSampler) sseError(body []byte) error {
	for _, line := range strings.Split(string(body), "\n") {
		line = strings.TrimSpace(line)
		payload, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		var cr chatResponse
		if json.Unmarshal([]byte(strings.TrimSpace(payload)), &cr) == nil {
			if se := c.inBandError(cr); se != nil {
				se.Where = "SSE event"
				return se
			}
		}
	}
	return fmt.Errorf("accuracy: chat: %w: server answered a non-streaming request with an SSE stream: %s", errDecode, c.clip(string(body)))
}

// clip 脱敏并截断服务给出的文本。
func (c *ChatSampler) clip(s string) string {
	s = c.red.String(s)
	if len(s) > 512 {
		s = s[:512] + "…"
	}
	return s
}

// codeString 把 JSON 里的 code（字符串或数字）写成文本。
func codeString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// reservedBodyKeys 是 ExtraBody 不能覆盖的请求字段。
var reservedBodyKeys = []string{"model", "messages", "temperature", "max_tokens", "stream"}

// requestBody 编码请求体：参考实现的四个字段，再加上 ExtraBody（为空时与参考实现逐字段相同）。
func (c *ChatSampler) requestBody(messages []Message) ([]byte, error) {
	req := chatRequest{Model: c.cfg.Model, Messages: messages, Temperature: c.cfg.Temperature, MaxTokens: c.cfg.MaxTokens}
	if len(c.cfg.ExtraBody) == 0 {
		return json.Marshal(req)
	}
	base, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(base, &m); err != nil {
		return nil, err
	}
	for k, v := range c.cfg.ExtraBody {
		m[k] = v
	}
	return json.Marshal(m)
}

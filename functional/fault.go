package functional

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"

	"github.com/openai/openai-go/v3"

	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/internal/sse"
)

// Class 是失败用例的故障类别，写进 Result.Class、report.json 与 JUnit 的 failure type，
// 工具与作恶服务测试据此断言，而不必解析原因文本。
type Class string

// 故障类别。一个失败用例只有一个类别：第一个失败的来源。
const (
	// ClassAssertion：服务端正常应答，但内容不满足用例的断言。
	ClassAssertion Class = "assertion"
	// ClassHTTP429：重试（与 Retry-After）用尽后仍是 429，或 Retry-After 超过上限。
	ClassHTTP429 Class = "http_429"
	// ClassHTTP5xx：重试用尽后仍是 5xx。
	ClassHTTP5xx Class = "http_5xx"
	// ClassHTTPAuth：401/403（密钥没配或服务端拒绝）。
	ClassHTTPAuth Class = "http_auth"
	// ClassHTTP4xx：其他 4xx（被声明支持的参数遭拒绝等）。
	ClassHTTP4xx Class = "http_4xx"
	// ClassTimeout：单个请求超过 request_timeout（含读完响应体）。
	ClassTimeout Class = "timeout"
	// ClassTooLarge：响应体或单个 SSE 事件超过 max_response_bytes。
	ClassTooLarge Class = "too_large"
	// ClassServerError：HTTP 200 却带着错误（流内的 error 事件、200 的 {"error":…} 体）。
	ClassServerError Class = "server_error"
	// ClassBadJSON：响应体或 SSE 事件不是合法 JSON。
	ClassBadJSON Class = "bad_json"
	// ClassProtocol：流的形状违反 vLLM 的线上约定（重复的 finish_reason、finish 之后的内容、
	// [DONE] 之后的事件）。
	ClassProtocol Class = "protocol"
	// ClassTransport：连接被重置、响应被截断等传输错误。
	ClassTransport Class = "transport"
	// ClassCancelled：运行被取消（作业超时、中断），用例没有结论。
	ClassCancelled Class = "cancelled"
	// ClassPanic：用例代码 panic。
	ClassPanic Class = "panic"
	// ClassUnresponsive：服务已被判为无响应（几个用例接连以超时或传输故障结束、其间没有收到服务端的
	// 任何字节），这个用例没有运行或被中途取消；原因写明从哪个用例起。它是失败，不是跳过。
	ClassUnresponsive Class = "unresponsive"
)

// DefaultMaxResponseBytes 是响应体与单个 SSE 事件的默认上限：endpoint.DefaultMaxResponseBytes
// （64 MiB，与 loadgen 的 max_event_bytes 与 accuracy 的上限同一个定义）。
const DefaultMaxResponseBytes int64 = endpoint.DefaultMaxResponseBytes

// ErrResponseTooLarge 表示响应体超过了 Options.MaxResponseBytes；用例以 too_large 失败。
var ErrResponseTooLarge = errors.New("functional: response too large")

// ErrRequestTimeout 表示单个请求（含读完响应体）超过了 Options.RequestTimeout；用例以 timeout 失败。
var ErrRequestTimeout = errors.New("functional: request timeout")

// messageLimit 是引用服务端错误原话时保留的最大字节数。
const messageLimit = 512

// fault 是最近一次 HTTP 交换观察到的故障：类别与（需要时）写进原因的说明。
type fault struct {
	class  Class
	detail string
}

// statusClass 返回一个最终（重试之后）状态码的故障类别；2xx/3xx 与普通 4xx 返回空：
// 普通 4xx 可能正是用例期望的回答，由用例自己判断。
func statusClass(status int) Class {
	switch {
	case status == http.StatusTooManyRequests:
		return ClassHTTP429
	case status >= 500:
		return ClassHTTP5xx
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ClassHTTPAuth
	}
	return ""
}

// rejectionClass 返回用例期望 200 却得到 status 时的类别（普通 4xx 为 http_4xx）。
func rejectionClass(status int) Class {
	if c := statusClass(status); c != "" {
		return c
	}
	if status >= 400 {
		return ClassHTTP4xx
	}
	return ClassAssertion
}

// classifyErr 把请求或读响应时的错误归类。
func classifyErr(err error) Class {
	var ne net.Error
	var apiErr *openai.Error
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrResponseTooLarge), errors.Is(err, sse.ErrEventTooLarge):
		return ClassTooLarge
	case errors.Is(err, ErrRetryAfterTooLong):
		return ClassHTTP429
	case errors.As(err, &apiErr):
		return rejectionClass(apiErr.StatusCode)
	case errors.Is(err, ErrRequestTimeout), errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ClassTimeout
	case errors.Is(err, context.Canceled):
		return ClassCancelled
	case errors.As(err, &syn), errors.As(err, &typ), errors.Is(err, io.ErrUnexpectedEOF) && strings.Contains(strings.ToLower(err.Error()), "json"):
		return ClassBadJSON
	}
	return ClassTransport
}

// serverMessage 从错误体中取出服务端的原话（message，及 type/code），截短；不是可识别的
// 错误体时返回第一行的截短文本。
func serverMessage(body []byte) string {
	if e, err := parseError(body); err == nil {
		msg := fmt.Sprintf("%q", bound(strings.TrimSpace(e.Message)))
		var extra []string
		if e.Type != "" {
			extra = append(extra, "type "+e.Type)
		}
		if len(e.Code) > 0 && string(e.Code) != "null" {
			extra = append(extra, "code "+string(e.Code))
		}
		if len(extra) > 0 {
			msg += " (" + strings.Join(extra, ", ") + ")"
		}
		return msg
	}
	return bound(strings.TrimSpace(firstLine(body)))
}

// bound 把文本截短到 messageLimit 字节（不切断 UTF-8 字符）。
func bound(s string) string {
	if len(s) <= messageLimit {
		return s
	}
	cut := messageLimit
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…(%d bytes)", len(s))
}

// utf8Start 报告 b 是否是一个 UTF-8 字符的首字节。
func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// errorBody 报告 200 响应体 b 是否只是一个错误对象（{"error":…} 或旧版平铺形式），
// 而不是正常回答：正常的 chat/completions/embeddings 回答总有 choices/data/results 之一。
func errorBody(b []byte) bool {
	if _, err := parseError(b); err != nil {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	for _, k := range []string{"choices", "data", "results"} {
		if _, ok := m[k]; ok {
			return false
		}
	}
	return true
}

// failf 以类别 class 记录失败并结束用例。
func (t *T) failf(class Class, format string, args ...any) {
	t.record(class, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// failErr 以 err 的类别记录“where: err”并结束用例；用于请求本身失败（传输错误、
// 超时、响应过大、Retry-After 过长、SDK 解不开的回答）。传输层亲眼看到的故障优先：
// SDK 包装错误时不一定保留原始错误链。
func (t *T) failErr(where string, err error) {
	class := t.rec.pending().class
	if class == "" {
		class = classifyErr(err)
	}
	t.failf(class, "%s: %v", where, err)
}

// failStatus 以状态码的类别记录“期望 200 却得到 status”并结束用例，引用服务端原话。
func (t *T) failStatus(where string, status int, body []byte) {
	t.failf(rejectionClass(status), "%s: want HTTP 200, got %d: %s", where, status, serverMessage(body))
}

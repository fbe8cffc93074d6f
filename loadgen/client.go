package loadgen

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/vllm-cibench/cibench/internal/redact"
	"github.com/vllm-cibench/cibench/internal/rxstamp"
	"github.com/vllm-cibench/cibench/internal/sse"
	"github.com/vllm-cibench/cibench/internal/tokenize"
	"github.com/vllm-cibench/cibench/loadgen/internal/chunk"
	"github.com/vllm-cibench/cibench/loadgen/internal/h1"
)

// streamUsage 是请求中 stream_options 的级别；服务端拒绝时逐级降级。
type streamUsage int

const (
	usageContinuous streamUsage = iota // include_usage + continuous_usage_stats
	usageFinal                         // 仅 include_usage
	usageNone                          // 不发送 stream_options
)

// bodyTemplate 是预先拼好的请求体片段：head + prompt + mid + max_tokens + tail。
// 每个请求只做一次 append 拼接，不走 encoding/json。
type bodyTemplate struct {
	head, mid, tail []byte
	chat            bool
	image           bool
}

// newBodyTemplate 根据 Profile 与降级级别生成请求体模板。
func newBodyTemplate(model string, p *Profile, level streamUsage) (*bodyTemplate, error) {
	mq, err := jsonString(model)
	if err != nil {
		return nil, err
	}
	chat := p.Backend == BackendChat
	var h bytes.Buffer
	h.WriteString(`{"model":`)
	h.Write(mq)
	stream := *p.Stream
	fmt.Fprintf(&h, `,"stream":%t`, stream)
	if stream {
		switch level {
		case usageContinuous:
			h.WriteString(`,"stream_options":{"include_usage":true,"continuous_usage_stats":true}`)
		case usageFinal:
			h.WriteString(`,"stream_options":{"include_usage":true}`)
		}
	}
	fmt.Fprintf(&h, `,"ignore_eos":%t,"temperature":%s,"top_p":%s`, *p.IgnoreEOS,
		strconv.FormatFloat(*p.Temperature, 'g', -1, 64), strconv.FormatFloat(*p.TopP, 'g', -1, 64))
	if *p.TopK != -1 {
		fmt.Fprintf(&h, `,"top_k":%d`, *p.TopK)
	}
	t := &bodyTemplate{chat: chat, image: p.ModalType == ModalImageText}
	switch {
	case t.image:
		h.WriteString(`,"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"`)
		t.mid = []byte(`}]}],"max_completion_tokens":`)
	case chat:
		h.WriteString(`,"messages":[{"role":"user","content":`)
		t.mid = []byte(`}],"max_completion_tokens":`)
	default:
		h.WriteString(`,"prompt":`)
		t.mid = []byte(`,"max_tokens":`)
	}
	t.head = h.Bytes()
	t.tail = []byte(`}`)
	return t, nil
}

// build 把一个请求体拼到 dst[:0]；image 仅在 image-text 模态下使用。
func (t *bodyTemplate) build(dst, prompt []byte, image string, maxTokens int) []byte {
	dst = append(dst[:0], t.head...)
	if t.image {
		dst = append(dst, image...)
		dst = append(dst, `"}},{"type":"text","text":`...)
	}
	dst = append(dst, prompt...)
	dst = append(dst, t.mid...)
	dst = strconv.AppendInt(dst, int64(maxTokens), 10)
	return append(dst, t.tail...)
}

// jsonString 返回 s 的 JSON 字符串字面量。
func jsonString(s string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.Bytes(), nil
}

// unsafeString 零拷贝地把字节切片视为字符串；结果只在切片内容不变期间使用。
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// thinkState 跟踪"内容中的 <think>…</think>"（服务端没有推理解析器时）。
type thinkState uint8

const (
	thinkUnknown thinkState = iota // 尚未见到内容
	thinkInside                    // 在 <think> 之内：内容计为推理
	thinkDone                      // 已离开（或从未进入）思考段
)

// exchange 是一个 worker 复用的请求状态：缓冲区、SSE 读取器与逐 chunk 时间线，
// 使热路径上每个请求几乎不分配内存。不是并发安全的，一个 worker 一个。
type exchange struct {
	// oneShot 为 true 表示响应是一次性 JSON（Source.Generative 为 false：embeddings、rerank），见 finishOneShot。
	oneShot bool
	body    []byte
	reader  *sse.Reader
	scan    chunk.Scanner
	rec     Record
	think   thinkState
	pend    string // 可能是思考标签一部分、尚未判定的 content 尾部
	// 客户端计数的 token（usage 缺失时使用）
	estTokens, estReason int
	lastUsage            int // 连续 usage 下上一个 chunk 的 completion_tokens
	// udelta 与 rec.ChunkTokens 一一对应：该 chunk 自带 usage 时为 completion_tokens 的增量，
	// 否则为 -1（此时 rec.ChunkTokens 里是本地计数，finish 时按 usage 总数重新分摊）。
	udelta []int32
	// rem 是分摊时复用的余数表
	rem []attrRem
	// 由 runner 设置的请求约束：流内静默上限（0 为不限）、单事件字节上限、服务端文本的脱敏器
	idle     time.Duration
	maxEvent int
	red      *redact.Redactor
	// 当前请求的 ctx（net/http 路径），只在 send 期间有效
	rctx context.Context
	// watch 监视当前请求的总超时（h1 路径）与静默超时；watching 表示它在本请求中已 begin
	watch       reqWatch
	watching    bool
	sawUsage    bool
	sawCompl    bool    // 见过非 null 的 usage.completion_tokens
	finished    []int64 // 已收到 finish_reason 的 choice index（协议检查用）
	usageReason int     // usage.completion_tokens_details.reasoning_tokens，-1 为无
	promptUsage int
	complUsage  int
	// conn 是本次请求所用连接的接收时间戳来源（GotConn 时取得）；nil 表示不可得
	conn  rxstamp.Stamper
	trace *httptrace.ClientTrace
	// lastStamp / lastAt 是本请求上一次用到的内核时间戳及其换算出的到达时刻，见 arrived
	lastStamp time.Time
	lastAt    time.Duration
	// h1.Pool 非 nil 时，地址在池中的生成请求走专用的 HTTP/1.1 传输（loadgen/internal/h1）；
	// h1 同时保存该路径的中止状态与复用的请求缓冲。监视器与运行取消在别的 goroutine 中经
	// abortFn（h1.Abort 的方法值，只建一次）中止请求。
	h1      h1.Session
	abortFn func(error)
	// session 非空时作为 X-Session-ID 请求头发出，turn 是多轮会话的轮次（写进记录）
	session string
	turn    int
	// prompt 是轨迹回放时现生成 prompt 的复用缓冲
	prompt []byte
	// keepText 为 true 时把回答的 content 收集到 text（多轮会话要把实时回答放进历史）
	keepText bool
	text     []byte
	// cachedUsage 是 usage.prompt_tokens_details.cached_tokens，-1 为没有
	cachedUsage int
	// 复用的请求头，见 header
	hdr       http.Header
	hdrKey    string
	hdrStream bool
}

// newExchange 创建一个 worker 的请求状态。
func newExchange() *exchange {
	x := &exchange{reader: sse.NewReader(bytes.NewReader(nil)), maxEvent: DefaultMaxEventBytes}
	x.trace = &httptrace.ClientTrace{GotConn: x.gotConn}
	x.abortFn = x.h1.Abort
	return x
}

// gotConn 是 httptrace 的 GotConn 回调（在发请求的 goroutine 中同步调用）：
// 记下连接的接收时间戳来源。
func (x *exchange) gotConn(info httptrace.GotConnInfo) { x.conn = rxstamp.Of(info.Conn) }

// withTrace 给 ctx 挂上 GotConn 跟踪。ctx 里已有调用方的跟踪时，WithClientTrace 会把
// 两者组合并修改传入的结构，因此这时每次新建一个，不复用 x.trace。
func (x *exchange) withTrace(ctx context.Context) context.Context {
	if httptrace.ContextClientTrace(ctx) != nil {
		return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: x.gotConn})
	}
	return httptrace.WithClientTrace(ctx, x.trace)
}

// arrived 返回刚读到的数据的到达时刻（相对 intended），以及客户端读取滞后
// （now − 内核接收时刻；没有可信的内核时间戳时为 -1）。连接在这次读取上没拿到内核时间戳时
// 到达时刻取读取返回的时刻（rxstamp 的退路），连完全没有可信时刻时退回 now。
// 到达时刻按 now − 滞后计算，整段仍在单调时钟上（见 rxstamp.Lag）；滞后超过本请求
// 发出以来的时间说明时间戳属于更早的数据，不可信。
//
// 一次读取交出的多个事件共享同一个内核时间戳，它们得到完全相同的到达时刻（复用上一次
// 的结果）；两次读时钟之间墙上时钟与单调时钟有纳秒级抖动，因此到达时刻也不允许倒退。
//
// needLag 为 false 表示调用方不用滞后（只有本请求的第一个内容 chunk 记 ClientLag）：这时
// 与上一个事件同一个时间戳的事件直接复用上一次的到达时刻，不再读时钟（热路径上每次读取
// 交出的第二个及以后的事件省一次 time.Now），返回的滞后为 -1。到达时刻与读时钟时完全相同。
func (x *exchange) arrived(intended time.Time, needLag bool) (at, lag time.Duration) {
	var t time.Time
	kernel := false
	if x.conn != nil {
		t, kernel = x.conn.LastRx()
	}
	if !needLag && !x.lastStamp.IsZero() && t.Equal(x.lastStamp) {
		return x.lastAt, -1
	}
	now := time.Now()
	since := now.Sub(intended)
	lag, ok := rxstamp.Lag(t, now, now.Sub(x.rec.Sent))
	if !ok {
		return since, -1
	}
	if !t.Equal(x.lastStamp) {
		at = max(since-lag, x.lastAt)
		x.lastStamp, x.lastAt = t, at
	}
	if !kernel {
		// 内核没给时间戳（见 rxstamp 包文档）：t 是读取返回的时刻，到达时刻照样用它（比 now 更近），
		// 但 now − t 不是“内核接收 → 读取”的滞后，不当作 ClientLag 报告。
		lag = -1
	}
	return x.lastAt, lag
}

// send 发出一个请求并测量，结果留在 x.rec 中。intended 是意图发送时刻（时延起点）。
// body 已在 x.body 中。整个请求受 timeout 约束；流开始后相邻事件之间受 x.idle 约束。
func (x *exchange) send(ctx context.Context, c *http.Client, url, apiKey string, stream bool, intended time.Time, timeout time.Duration) {
	rec := &x.rec
	rec.ChunkTimes, rec.ChunkTokens, rec.ChunkTokensEstimated = rec.ChunkTimes[:0], rec.ChunkTokens[:0], true
	x.udelta = x.udelta[:0]
	rec.TTFT, rec.FirstToSecond, rec.TPOT, rec.E2E = -1, -1, -1, 0
	rec.PromptTokens, rec.CompletionTokens, rec.ReasoningTokens = 0, 0, 0
	rec.TokenSource, rec.FinishReason = TokenSourceEstimate, ""
	rec.OK, rec.Status, rec.ErrorClass, rec.Error = false, 0, ErrClassNone, ""
	rec.Sent, rec.SlotWait, rec.ClientLag, rec.Headers = time.Time{}, 0, -1, 0
	x.conn, x.lastStamp, x.lastAt = nil, time.Time{}, 0
	x.think, x.pend, x.estTokens, x.estReason, x.lastUsage, x.sawUsage = thinkUnknown, "", 0, 0, 0, false
	x.usageReason, x.promptUsage, x.complUsage = -1, 0, 0
	x.sawCompl, x.finished = false, x.finished[:0]
	x.text, x.cachedUsage, rec.CachedTokens = x.text[:0], -1, -1

	var ht *h1.Target
	if x.h1.Pool != nil {
		ht = x.h1.Pool.Target(url)
	}
	var (
		status int
		ctype  string
		body   io.Reader
	)
	if ht != nil {
		// h1 传输：不建逐请求的 ctx，总超时与静默超时由复用的 x.watch 负责，运行取消由
		// 每个 exchange 一次登记的 context.AfterFunc 负责（见 h1.Session.Begin）。
		rec.Sent = time.Now()
		rec.SlotWait = rec.Sent.Sub(intended)
		deadline := rec.Sent.Add(timeout)
		x.h1.Begin(ctx)
		x.watch.begin(deadline, x.abortFn)
		x.watching = true
		defer x.h1end()
		hc, err := x.h1.RoundTrip(ctx, ht, deadline, x.body, x.session)
		if err != nil {
			class := ErrClassTransport
			if errors.Is(err, h1.ErrHeadersTooLarge) {
				class = ErrClassTooLarge
			}
			x.fail(ctx, class, err, intended)
			return
		}
		x.conn = hc.Stamper()
		status, ctype, body = hc.Status(), hc.ContentType(), hc
	} else {
		// 两层 ctx：外层可带原因取消（静默超时），内层是总超时。
		ictx, icancel := context.WithCancelCause(x.withTrace(ctx))
		defer icancel(nil)
		rctx, cancel := context.WithTimeout(ictx, timeout)
		defer cancel()
		x.rctx = rctx
		defer func() { x.rctx = nil }()
		x.watch.begin(time.Time{}, icancel)
		x.watching = true
		defer x.watchEnd()
		req, err := http.NewRequestWithContext(rctx, http.MethodPost, url, bytes.NewReader(x.body))
		if err != nil {
			x.fail(ctx, ErrClassTransport, err, intended)
			return
		}
		req.Header = x.header(apiKey, stream)
		rec.Sent = time.Now()
		rec.SlotWait = rec.Sent.Sub(intended)
		resp, err := c.Do(req)
		if err != nil {
			class := ErrClassTransport
			if strings.Contains(err.Error(), "server response headers exceeded") {
				class = ErrClassTooLarge // net/http 的 MaxResponseHeaderBytes（没有可判别的错误类型）
			}
			x.fail(ctx, class, err, intended)
			return
		}
		defer resp.Body.Close()
		status, ctype, body = resp.StatusCode, resp.Header.Get("Content-Type"), resp.Body
	}
	rec.Status = status
	rec.Headers = time.Since(intended)
	if status != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(body, 512))
		_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10)) // 读完小错误体，连接可复用
		rec.E2E = time.Since(intended)
		rec.ErrorClass = ErrClassHTTP
		rec.Error = x.redactText(fmt.Sprintf("HTTP %d: %s", status, errorMessage(msg)))
		return
	}
	switch {
	case stream && !isJSONType(ctype):
		x.readStream(ctx, body, intended)
	default:
		// 流式请求得到 application/json：服务端没有开流（多半是一个 {"error":…} 体），
		// 整体读取，让错误以服务端原话记下，而不是记成"流在 [DONE] 之前结束"。
		x.readWhole(ctx, body, intended, stream)
	}
}

// h1end 结束一个走 h1 传输的请求：先停止监视（之后不会再有 Abort），再让 h1.Session 把连接
// 放回池中或关闭。
func (x *exchange) h1end() {
	x.watchEnd()
	x.h1.End()
}

// watchEnd 结束 x.watch 对当前请求的监视。
func (x *exchange) watchEnd() {
	x.watch.end()
	x.watching = false
}

// reqCause 返回当前请求被中止的原因（静默超时 errIdle、总超时 context.DeadlineExceeded、
// 运行取消），没有中止时为 nil。
func (x *exchange) reqCause() error {
	if cause, on := x.h1.Cause(); on {
		return cause
	}
	if x.rctx != nil {
		return context.Cause(x.rctx)
	}
	return nil
}

// isJSONType 报告 Content-Type 是否为 application/json（忽略参数与大小写）。
func isJSONType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

// errIdle 是静默超时取消请求时的原因。
var errIdle = errors.New("stream idle")

// errBodyTooLarge 表示非流式响应体超过 Profile.MaxEventBytes。
var errBodyTooLarge = errors.New("response body too large")

// reqWatch 是一个 exchange 复用的请求监视器：一个定时器同时负责 h1 传输的总超时与流内的
// 静默超时（idle_timeout）。每个事件只原子地记下到达时刻（热路径上不重置定时器）；定时器到期
// 时检查是否已过总超时时刻、距上次事件是否已超过 idle，未超过则按剩余时间重新挂起，超过则以
// context.DeadlineExceeded 或 errIdle 调用 cancel。定时器回调在另一个 goroutine 中。
//
// 定时器跨请求复用（省去每个请求的定时器与 ctx 分配）：上一个请求留下的回调可能在下一个请求
// 期间才运行，它在锁内看到的是当前请求的状态，按当前请求的时刻判断，因此结果仍然正确。
type reqWatch struct {
	mu       sync.Mutex
	t        *time.Timer
	active   bool      // 有请求在监视中
	deadline time.Time // 总超时时刻；零值表示总超时由 ctx 负责（net/http 路径）
	idleOn   bool      // 已见到第一个事件，开始按 idle 计
	intended time.Time
	idle     time.Duration
	last     atomic.Int64 // 上一个事件的到达时刻（相对 intended 的纳秒）
	cancel   func(error)
}

// schedule 让定时器在 d 之后到期（首次使用时创建）。调用方持有 w.mu。
func (w *reqWatch) schedule(d time.Duration) {
	if w.t == nil {
		w.t = time.AfterFunc(d, w.check)
		return
	}
	w.t.Reset(d)
}

// begin 开始监视一个请求：deadline 非零时到点以 context.DeadlineExceeded 调用 cancel。
func (w *reqWatch) begin(deadline time.Time, cancel func(error)) {
	w.mu.Lock()
	w.active, w.idleOn, w.deadline, w.cancel = true, false, deadline, cancel
	if !deadline.IsZero() {
		w.schedule(time.Until(deadline))
	}
	w.mu.Unlock()
}

// startIdle 在第一个事件到达时开始静默监视；last 是该事件相对 intended 的时刻。
func (w *reqWatch) startIdle(intended time.Time, idle, last time.Duration) {
	w.mu.Lock()
	w.idleOn, w.intended, w.idle = true, intended, idle
	w.last.Store(int64(last))
	d := idle
	if !w.deadline.IsZero() {
		d = min(d, time.Until(w.deadline))
	}
	w.schedule(d)
	w.mu.Unlock()
}

// touch 记下一个事件的到达时刻（相对 intended）。
func (w *reqWatch) touch(at time.Duration) { w.last.Store(int64(at)) }

// end 结束对当前请求的监视。
func (w *reqWatch) end() {
	w.mu.Lock()
	w.active, w.cancel = false, nil
	if w.t != nil {
		w.t.Stop()
	}
	w.mu.Unlock()
}

// check 是定时器回调。
func (w *reqWatch) check() {
	w.mu.Lock()
	if !w.active {
		w.mu.Unlock()
		return
	}
	var fire error
	next := time.Duration(-1)
	if !w.deadline.IsZero() {
		if left := time.Until(w.deadline); left <= 0 {
			fire = context.DeadlineExceeded
		} else {
			next = left
		}
	}
	if fire == nil && w.idleOn {
		quiet := time.Since(w.intended) - time.Duration(w.last.Load())
		if quiet >= w.idle {
			fire = errIdle
		} else if next < 0 || w.idle-quiet < next {
			next = w.idle - quiet
		}
	}
	if fire != nil {
		cancel := w.cancel
		w.active, w.cancel = false, nil
		w.mu.Unlock()
		cancel(fire)
		return
	}
	if next >= 0 {
		w.schedule(next)
	}
	w.mu.Unlock()
}

// redactText 抹掉服务端文本中的 API key（原文、Bearer 形式、base64 形式），见 secretRedactor。
func (x *exchange) redactText(s string) string {
	if x.red == nil {
		return s
	}
	return x.red.String(s)
}

// header 返回本 worker 复用的请求头：内容在各请求间相同，只在 apiKey 或 stream
// 变化时重建，省去每个请求的 map 与切片分配。net/http 发送时只读请求头，不会修改它。
func (x *exchange) header(apiKey string, stream bool) http.Header {
	if x.session != "" {
		// 会话请求每次的 X-Session-ID 不同：复制一份再加，复用的那份保持不变。
		h := x.header0(apiKey, stream).Clone()
		h["X-Session-Id"] = []string{x.session}
		return h
	}
	return x.header0(apiKey, stream)
}

// header0 返回不含会话头的复用请求头（见 header）。
func (x *exchange) header0(apiKey string, stream bool) http.Header {
	if x.hdr != nil && x.hdrKey == apiKey && x.hdrStream == stream {
		return x.hdr
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if stream {
		h["Accept"] = []string{"text/event-stream"}
	}
	if apiKey != "" {
		h["Authorization"] = []string{"Bearer " + apiKey}
	}
	x.hdr, x.hdrKey, x.hdrStream = h, apiKey, stream
	return h
}

// fail 记录一次失败；运行取消、静默超时、总超时与超限分开归类。
func (x *exchange) fail(ctx context.Context, class string, err error, intended time.Time) {
	rec := &x.rec
	rec.E2E = time.Since(intended)
	if rec.Sent.IsZero() {
		rec.Sent = time.Now()
	}
	msg := err.Error()
	cause := x.reqCause()
	switch {
	case ctx.Err() != nil:
		class = ErrClassCanceled
	case errors.Is(cause, errIdle):
		class = ErrClassIdleTimeout
		msg = fmt.Sprintf("no stream event for %s (idle_timeout)", x.idle)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(cause, context.DeadlineExceeded):
		class = ErrClassTimeout
	case errors.Is(err, sse.ErrEventTooLarge) || errors.Is(err, errBodyTooLarge) || errors.Is(err, h1.ErrHeadersTooLarge):
		class = ErrClassTooLarge
	}
	rec.OK = false
	rec.ErrorClass = class
	rec.Error = x.redactText(validUTF8Prefix(msg, 200))
}

// errorMessage 从 OpenAI / vLLM 错误体中取出 message，取不到时返回截断的原文。
func errorMessage(b []byte) string {
	s := unsafeString(b)
	for _, path := range []string{"error.message", "message", "error"} {
		if r := gjson.Get(s, path); r.Exists() && r.Type == gjson.String {
			return validUTF8Prefix(r.Str, 200)
		}
	}
	return validUTF8Prefix(string(b), 200)
}

// readStream 逐事件读取 SSE 响应并记录每个输出 chunk 的到达时刻与 token 增量。
// 第一个事件到达后启动静默监视（见 reqWatch）。
func (x *exchange) readStream(ctx context.Context, body io.Reader, intended time.Time) {
	rec := &x.rec
	if hc, ok := body.(*h1.Conn); ok && hc.Chunked() {
		// h1 的 chunked 响应体：SSE 读取器直接在连接的读缓冲区里找行，不再经 bufio 拷贝一次
		// （读连接的时机不变：都只在缓冲区里没有载荷时才读）。
		x.reader.ResetSource(hc)
	} else {
		x.reader.Reset(body)
	}
	x.reader.SetMaxEventSize(x.maxEvent)
	done, lagged, events, idleOn := false, false, 0, false
	for {
		ev, err := x.reader.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				x.fail(ctx, ErrClassTruncated, err, intended)
				return
			}
			break
		}
		now, lag := x.arrived(intended, !lagged)
		rec.E2E = now
		if x.idle > 0 && x.watching {
			if !idleOn {
				idleOn = true
				x.watch.startIdle(intended, x.idle, time.Since(intended))
			} else {
				x.watch.touch(now)
			}
		}
		events++
		if ev.IsDone() {
			done = true
			break
		}
		if len(ev.Data) == 0 {
			continue
		}
		if class, msg := x.chunk(unsafeString(ev.Data), now); class != ErrClassNone {
			if class == ErrClassBadResponse && ev.Unterminated {
				// 流在一个事件中途干净地结束：是截断，不是服务端发了坏 JSON。
				class, msg = ErrClassTruncated, "stream ended mid-event before [DONE]"
			}
			rec.ErrorClass = class
			rec.Error = x.redactText(strings.Clone(validUTF8Prefix(msg, 200))) // msg 可能引用读缓冲区
			return
		}
		if len(rec.ChunkTimes) == 1 && !lagged {
			lagged, rec.ClientLag = true, lag
		}
	}
	if !done {
		if n := x.reader.Unrecognized(); events == 0 && n > 0 {
			// 一个事件都没有、却有不是 SSE 字段的行：服务端发的根本不是 SSE。
			rec.ErrorClass = ErrClassBadResponse
			rec.Error = fmt.Sprintf("unparseable response: no SSE data event, %d unrecognised lines", n)
			return
		}
		rec.ErrorClass = ErrClassTruncated
		rec.Error = "stream ended before [DONE]"
		return
	}
	if msg := x.afterDone(ctx); msg != "" {
		rec.ErrorClass, rec.Error = ErrClassProtocol, x.redactText(msg)
		return
	}
	x.finish()
}

// afterDone 在 [DONE] 之后把响应体读到结束（仍受总超时与静默超时约束），返回协议违例的说明，
// 没有违例时返回 ""。vLLM 的 [DONE] 是最后一个事件，随后立即结束响应体；之后再有 data 事件
// （包括第二个 [DONE]）或响应体迟迟不结束都是服务端缺陷。[DONE] 之后的连接错误不算失败：
// 响应已经完整。读到 EOF 也让连接得以复用。时延在 [DONE] 到达时已经记下，这里不改动。
func (x *exchange) afterDone(ctx context.Context) string {
	for {
		ev, err := x.reader.Next()
		switch {
		case err == nil && len(ev.Data) > 0:
			return "data event after [DONE]: " + strings.Clone(validUTF8Prefix(unsafeString(ev.Data), 80))
		case err == nil:
			continue
		case errors.Is(err, io.EOF), ctx.Err() != nil:
			return ""
		case errors.Is(err, sse.ErrEventTooLarge):
			return "oversized event after [DONE]"
		}
		cause := x.reqCause()
		switch {
		case errors.Is(cause, errIdle):
			return fmt.Sprintf("stream not closed after [DONE]: no end of body within idle_timeout %s", x.idle)
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(cause, context.DeadlineExceeded):
			return "stream not closed after [DONE] before the request timeout"
		}
		return ""
	}
}

// readWhole 处理非流式响应：整个响应作为一个 chunk，TTFT 等于 E2E。响应体超过
// x.maxEvent 时不再读下去，计为 too_large。streamWanted 为 true 表示请求要的是流、服务端却回了
// JSON：其中的 {"error":…} 记为 stream_error 并保留原话，其余 JSON 记为 protocol。
func (x *exchange) readWhole(ctx context.Context, body io.Reader, intended time.Time, streamWanted bool) {
	rec := &x.rec
	b, err := io.ReadAll(io.LimitReader(body, int64(x.maxEvent)+1))
	if err == nil && len(b) > x.maxEvent {
		err = fmt.Errorf("%w: more than %d bytes", errBodyTooLarge, x.maxEvent)
	}
	if err != nil {
		x.fail(ctx, ErrClassTruncated, err, intended)
		return
	}
	now, lag := x.arrived(intended, true)
	rec.E2E, rec.ClientLag = now, lag
	s := unsafeString(b)
	if !gjson.Valid(s) {
		rec.ErrorClass, rec.Error = ErrClassBadResponse, "response is not JSON"
		return
	}
	if x.oneShot {
		x.finishOneShot(s, now)
		return
	}
	if class, msg := x.chunk(s, now); class != ErrClassNone {
		rec.ErrorClass, rec.Error = class, x.redactText(strings.Clone(validUTF8Prefix(msg, 200)))
		return
	}
	if streamWanted {
		rec.ErrorClass, rec.Error = ErrClassProtocol, "stream requested but the 200 response is application/json, not an SSE stream"
		return
	}
	x.finish()
	rec.FirstToSecond, rec.TPOT = -1, -1
}

// chunk 解析一个 JSON 事件（流式 chunk 或非流式整体），事件可用时返回 (ErrClassNone, "")，
// 否则返回失败类别与说明（说明可能引用读缓冲区，调用方保留前须复制）：无法解析为 bad_response，
// 服务端的 {"error":…} 为 stream_error（说明是服务端原话），违反协议为 protocol（见 checkChoices）。
func (x *exchange) chunk(s string, now time.Duration) (class, msg string) {
	f, err := x.scan.Scan(s)
	if err != nil {
		return ErrClassBadResponse, "unparseable stream event: " + validUTF8Prefix(s, 80)
	}
	if f.HasError {
		if f.ErrMsg == "" {
			f.ErrMsg = "in-band error event"
		}
		return ErrClassStreamError, f.ErrMsg
	}
	if msg := x.checkChoices(f.Choices); msg != "" {
		return ErrClassProtocol, msg
	}
	if f.Finish != "" {
		x.rec.FinishReason = x.finishReason(f.Finish)
	}
	// usage：连续 usage 给出逐 chunk 的精确 token 增量。
	delta := int32(-1)
	if f.HasUsage {
		x.sawUsage = true
		x.promptUsage = int(f.PromptTokens)
		if f.CachedTokens >= 0 {
			x.cachedUsage = int(f.CachedTokens)
		}
		if f.ReasoningTokens >= 0 {
			x.usageReason = int(f.ReasoningTokens)
		}
	}
	if f.HasCompletion {
		x.sawCompl = true
		ct := int(f.CompletionTokens)
		delta = int32(max(ct-x.lastUsage, -1)) // 回退的 usage（服务端缺陷）当作没有
		x.lastUsage, x.complUsage = ct, ct
	}
	if f.Content == "" && f.Reasoning == "" && !f.Tools {
		return ErrClassNone, "" // 角色 chunk、纯 usage chunk、空 delta：不是输出 token
	}
	if x.keepText {
		x.text = append(x.text, f.Content...) // f.Content 引用读缓冲区，这里复制
	}
	// 客户端估算：思考段内的 content 计为推理。
	reasonTok, contentTok := tokenize.Count(f.Reasoning), 0
	if f.Content != "" {
		r, c := x.splitThink(f.Content)
		reasonTok += tokenize.Count(r)
		contentTok = tokenize.Count(c)
	}
	est := reasonTok + contentTok
	if f.Tools && est == 0 {
		est = 1
	}
	x.estTokens += est
	x.estReason += reasonTok
	x.rec.ChunkTimes = append(x.rec.ChunkTimes, now)
	x.rec.ChunkTokens = append(x.rec.ChunkTokens, int32(est))
	x.udelta = append(x.udelta, delta)
	return ErrClassNone, ""
}

// checkChoices 按 vLLM 的流协议检查一个事件里的 choices 并登记收到 finish_reason 的 index，
// 返回违例说明（没有时为 ""）。vLLM 每个 choice 恰好发一次 finish_reason，之后不再发这个
// choice 的 chunk（serving_chat/serving_completion 的 finish_reason_sent），一个事件（或非流式
// 响应）里的 index 互不相同。finish 之后的空 delta 不算违例：它不改变任何测量。
func (x *exchange) checkChoices(cs []chunk.Choice) string {
	for i, c := range cs {
		for _, d := range cs[:i] {
			if d.Index == c.Index {
				return fmt.Sprintf("two choices with index %d in one response", c.Index)
			}
		}
		if slices.Contains(x.finished, c.Index) {
			switch {
			case c.Finish:
				return fmt.Sprintf("choice %d received finish_reason twice", c.Index)
			case c.Output:
				return fmt.Sprintf("choice %d received output after its finish_reason", c.Index)
			}
		}
	}
	for _, c := range cs {
		if c.Finish {
			x.finished = append(x.finished, c.Index)
		}
	}
	return ""
}

// attrRem 是分摊时一个 chunk 的余数（最大余数法）。
type attrRem struct {
	rem int64
	i   int
}

// attribute 让 rec.ChunkTokens 之和等于服务端 usage（total），返回分摊是否为估算。
//
// 每个 chunk 都自带 usage 增量且其和等于 total 时直接用增量（精确）。否则 chunk 数等于
// total 时每个 chunk 一个：带正文的 chunk 至少对应一个 token，这是唯一相容的分法。其余情况
// 按权重（有增量时用增量，否则用本地计数）分摊：total 不少于 chunk 数时每个 chunk 先得一个，
// 多出的按权重超出 1 的部分分；少于 chunk 数时直接按权重分（有的 chunk 得 0）。
// 余数按最大余数法分配，并列时靠前的 chunk 优先，结果确定。
func (x *exchange) attribute(total int) bool {
	toks := x.rec.ChunkTokens
	n := len(toks)
	w := toks // 本地计数
	exact, sum := true, 0
	for _, d := range x.udelta {
		if d < 0 {
			exact = false
			break
		}
		sum += int(d)
	}
	if exact {
		if sum == total {
			copy(toks, x.udelta)
			return false
		}
		w = x.udelta
	}
	if total == n {
		for i := range toks {
			toks[i] = 1
		}
		return false
	}
	base, extra := int32(0), int64(total)
	if total > n {
		base, extra = 1, int64(total-n)
	}
	var wsum int64
	for _, v := range w {
		wsum += int64(max(v-base, 0))
	}
	x.rem = x.rem[:0]
	var given int64
	for i, v := range w {
		wi := int64(max(v-base, 0))
		if wsum == 0 {
			wi = 1 // 没有可用的权重：平均分
		}
		den := max(wsum, 1)
		if wsum == 0 {
			den = int64(n)
		}
		q := extra * wi / den
		x.rem = append(x.rem, attrRem{rem: extra * wi % den, i: i})
		toks[i] = base + int32(q) // 就地改写：w 可能就是 toks，本项的权重已经读过
		given += q
	}
	slices.SortFunc(x.rem, func(a, b attrRem) int {
		if a.rem != b.rem {
			return cmp.Compare(b.rem, a.rem)
		}
		return cmp.Compare(a.i, b.i)
	})
	for k := 0; given < extra; k++ {
		toks[x.rem[k].i]++
		given++
	}
	return n > 1
}

// finishReason 返回记录里的 finish_reason：常见取值原样（常量，不分配），其余是服务端的任意文本
// （截到 64 字节并复制），与错误信息一样抹掉密钥——记录会写进逐请求 CSV，Kubernetes 分片
// 还把它们写进 Pod 日志，集群的日志系统可能收集它。
func (x *exchange) finishReason(s string) string {
	switch s {
	case "length":
		return "length"
	case "stop":
		return "stop"
	case "tool_calls":
		return "tool_calls"
	case "abort":
		return "abort"
	case "content_filter":
		return "content_filter"
	}
	// s 引用 SSE 读取器复用的缓冲区，后续事件会覆盖它：先截断、复制，再脱敏。
	return x.redactText(strings.Clone(validUTF8Prefix(s, 64)))
}

// 思考标签。没有推理解析器的服务把它们原样放在 content 里。
const (
	openThink  = "<think>"
	closeThink = "</think>"
)

// splitThink 把一段 content 按 <think>…</think> 分成推理部分与正文部分（标签本身不计）。
// 思考标签只在内容开头出现时才识别（与 vLLM 推理解析器的行为一致）。标签可能被
// 拆在多个 chunk 里（逐字符流出的 "<"、"think"、">"），所以可能是标签前缀的尾部
// 暂存在 x.pend，等下一个 chunk 再判定；暂存的是副本，因为 c 引用的是读缓冲区。
func (x *exchange) splitThink(c string) (reason, content string) {
	switch x.think {
	case thinkDone:
		return "", c
	case thinkUnknown:
		t := x.pend + c
		tt := strings.TrimLeft(t, " \n\r\t")
		if len(tt) < len(openThink) && strings.HasPrefix(openThink, tt) {
			x.pend = strings.Clone(t) // 还无法判定
			return "", ""
		}
		x.pend = ""
		if !strings.HasPrefix(tt, openThink) {
			x.think = thinkDone
			return "", t
		}
		x.think = thinkInside
		c = tt[len(openThink):]
	case thinkInside:
		c = x.pend + c
		x.pend = ""
	}
	if i := strings.Index(c, closeThink); i >= 0 {
		x.think = thinkDone
		return c[:i], c[i+len(closeThink):]
	}
	if k := partialSuffix(c, closeThink); k > 0 {
		j := len(c) - k
		for j > 0 && strings.ContainsRune(" \n\r\t", rune(c[j-1])) {
			j-- // 前导空白随标签一起暂存，避免它在计数时变成单独的 token
		}
		x.pend = strings.Clone(c[j:])
		return c[:j], ""
	}
	return c, ""
}

// partialSuffix 返回 s 的最长后缀长度，该后缀是 tag 的真前缀。
func partialSuffix(s, tag string) int {
	for k := min(len(s), len(tag)-1); k > 0; k-- {
		if strings.HasSuffix(s, tag[:k]) {
			return k
		}
	}
	return 0
}

// flushThink 在流结束时处理暂存的文本：思考段内的算推理，否则算正文。
func (x *exchange) flushThink() {
	if x.pend == "" {
		return
	}
	n := tokenize.Count(x.pend)
	x.estTokens += n
	if x.think == thinkInside {
		x.estReason += n
	}
	x.pend = ""
}

// finish 在流正常结束后汇总 token 数并派生 TTFT、TPOT 等。
func (x *exchange) finish() {
	rec := &x.rec
	rec.CachedTokens = x.cachedUsage
	x.flushThink()
	if len(rec.ChunkTimes) == 0 {
		rec.ErrorClass, rec.Error = ErrClassNoTokens, "HTTP 200 but no output tokens"
		return
	}
	if x.sawCompl && x.complUsage == 0 {
		// 有输出却报 0 个生成 token：vLLM 的 usage 是实际生成数，不会这样；按本地计数
		// 继续会把服务端的错误账目当成测量结果。
		rec.ErrorClass = ErrClassProtocol
		rec.Error = fmt.Sprintf("usage.completion_tokens 0 but %d output chunks arrived", len(rec.ChunkTimes))
		return
	}
	if x.sawUsage && x.complUsage > 0 {
		rec.CompletionTokens, rec.PromptTokens, rec.TokenSource = x.complUsage, x.promptUsage, TokenSourceUsage
		rec.ChunkTokensEstimated = x.attribute(x.complUsage)
	} else {
		rec.CompletionTokens, rec.TokenSource = x.estTokens, TokenSourceEstimate
		rec.PromptTokens = x.promptUsage
		rec.ChunkTokensEstimated = true
	}
	switch {
	case x.usageReason >= 0:
		rec.ReasoningTokens = x.usageReason
	case x.estTokens > 0 && rec.TokenSource == TokenSourceUsage:
		// 按客户端计数的比例把服务端总数分给推理与正文。
		rec.ReasoningTokens = int(float64(rec.CompletionTokens)*float64(x.estReason)/float64(x.estTokens) + 0.5)
	default:
		rec.ReasoningTokens = x.estReason
	}
	rec.TTFT = rec.ChunkTimes[0]
	switch {
	case rec.ChunkTokens[0] >= 2 && (!rec.ChunkTokensEstimated || len(rec.ChunkTimes) == 1):
		rec.FirstToSecond = 0 // 前两个 token 确实在同一个 chunk 到达
	case len(rec.ChunkTimes) > 1:
		// 分摊是估算时不凭估算造出 0 间隔：量到第二个 chunk（真实值的上界）。
		rec.FirstToSecond = rec.ChunkTimes[1] - rec.ChunkTimes[0]
	}
	if rec.CompletionTokens >= 2 {
		rec.TPOT = (rec.E2E - rec.TTFT) / time.Duration(rec.CompletionTokens-1)
	}
	rec.OK = true
}

// finishOneShot 结束一次性 JSON 响应（Source.Generative 为 false）：服务端的 {"error":…} 记为
// stream_error（说明是服务端原话，经脱敏），否则成功——E2E 是整个响应的时延，TTFT 记为同一个值
// （响应就是第一个也是唯一的结果），TPOT、第一到第二个 token 的间隔不可测（-1），输入 token 取
// usage.prompt_tokens（没有时保留调用方给的数）。
func (x *exchange) finishOneShot(s string, now time.Duration) {
	rec := &x.rec
	if e := gjson.Get(s, "error"); e.Exists() && e.Type != gjson.Null {
		msg := e.Get("message").String()
		if msg == "" {
			msg = e.Raw
		}
		rec.ErrorClass, rec.Error = ErrClassStreamError, x.redactText(strings.Clone(validUTF8Prefix(msg, 200)))
		return
	}
	if pt := gjson.Get(s, "usage.prompt_tokens"); pt.Exists() {
		rec.PromptTokens, rec.TokenSource = int(pt.Int()), TokenSourceUsage
	}
	rec.TTFT, rec.FirstToSecond, rec.TPOT = now, -1, -1
	rec.OK = true
}

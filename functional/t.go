package functional

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/vllm-cibench/cibench/internal/retry"
	"github.com/vllm-cibench/cibench/internal/sse"
)

// Failure 是用例失败的结构化描述，调用方可用 errors.As 取出期望与实际值。
type Failure struct {
	// Case 是用例 ID。
	Case string
	// What 是被比较的东西（T.Expect 的 what，如 "number of choices"）；没有结构化断言时为空。
	What string
	// Want 与 Got 是同一格式的两边取值（fmt.Sprint）；没有结构化断言时 Want 为 "pass"、Got 为失败原因。
	Want string
	Got  string
}

// Error 实现 error："functional: case <ID>: <What>: want <Want>, got <Got>"（What 为空时省略）。
func (f *Failure) Error() string {
	if f.What == "" {
		return fmt.Sprintf("functional: case %s: want %s, got %s", f.Case, f.Want, f.Got)
	}
	return fmt.Sprintf("functional: case %s: %s: want %s, got %s", f.Case, f.What, f.Want, f.Got)
}

// T 是用例运行时的句柄，角色类似 testing.T：发请求、记录失败与跳过。
//
// 并发约定：一个 T 只属于一个用例，只能在执行该用例 Run 的 goroutine 中调用
// Fatalf/Skipf（它们通过 runtime.Goexit 结束该 goroutine）；Errorf/Notef 可以
// 在任意 goroutine 调用。
type T struct {
	id     string
	target Target
	base   string // 以 /v1 结尾的基础地址
	root   string // 去掉 /v1 的服务根地址，用于 /tokenize、/health
	hc     *http.Client
	sdk    openai.Client
	rec    *recorder
	cfg    *Config
	// params 是用例声明的 Case.Params（默认参数），T.Params 用它给零值的 out 填默认值。
	params any
	// maxBody 是响应体与单个 SSE 事件的上限（Options.MaxResponseBytes）。
	maxBody int64

	mu          sync.Mutex
	failed      bool
	class       Class
	skipped     bool
	unsupported bool
	reasons     []string
	notes       []string
	failure     *Failure
	// reqTimeout 是单个请求的超时（Options.RequestTimeout），长生成用例据此定预算。
	reqTimeout time.Duration
}

// newT 为一个用例构造 T，并把调用方的 http.Client 包装成带超时、重试、记录的客户端。
func newT(id string, target Target, cfg *Config, opts Options) *T {
	base := strings.TrimRight(target.BaseURLs[0], "/")
	src := target.HTTPClient
	if src == nil {
		src = &http.Client{}
	}
	rt := src.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	rec := &recorder{}
	hc := &http.Client{
		Transport: &caseTransport{base: rt, timeout: opts.RequestTimeout, retries: opts.Retries, backoff: opts.RetryBackoff,
			maxRetryAfter: opts.MaxRetryAfter, maxBody: opts.MaxResponseBytes, rec: rec},
		CheckRedirect: src.CheckRedirect,
		Jar:           src.Jar,
	}
	// openai-go 会从 OPENAI_* 环境变量读取默认值；这里显式覆盖地址与密钥，并删掉
	// 组织/项目头，使被测请求只由 Target 决定，不受运行环境影响。
	sdkOpts := []option.RequestOption{
		option.WithBaseURL(base + "/"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
		option.WithHeaderDel("OpenAI-Organization"),
		option.WithHeaderDel("OpenAI-Project"),
	}
	// 总是设置密钥（可能为空），以免 SDK 把环境变量 OPENAI_API_KEY 发给被测服务。
	sdkOpts = append(sdkOpts, option.WithAPIKey(target.APIKey))
	if target.APIKey == "" {
		sdkOpts = append(sdkOpts, option.WithHeaderDel("Authorization"))
	}
	return &T{
		id: id, target: target, base: base, root: strings.TrimSuffix(base, "/v1"),
		hc: hc, sdk: openai.NewClient(sdkOpts...), rec: rec, cfg: cfg, maxBody: opts.MaxResponseBytes, reqTimeout: opts.RequestTimeout,
	}
}

// ID 返回当前用例的 ID。
func (t *T) ID() string { return t.id }

// Model 返回被测模型名。
func (t *T) Model() string { return t.target.Model }

// Has 报告场景是否开启了能力 f，供用例在运行中细分分支。
func (t *T) Has(f Feature) bool { return t.target.Has(f) }

// Config 返回本次运行使用的套件配置（只读）。
func (t *T) Config() *Config { return t.cfg }

// Client 返回已配置好地址、密钥、超时与重试、且关闭 SDK 自身重试的 openai-go 客户端。
//
// Deprecated: 返回值的类型来自 openai-go v3，它的下一个大版本会连带破坏本包的 API，团队也
// 无法选择自己的 openai-go 版本。请用 BaseURL、APIKey 与 HTTPClient 在自己的模块里构造客户端
// （见 ExampleT_HTTPClient）：
//
//	c := openai.NewClient(option.WithBaseURL(t.BaseURL()+"/"), option.WithHTTPClient(t.HTTPClient()),
//		option.WithAPIKey(t.APIKey()), option.WithMaxRetries(0))
//
// 这样构造的客户端与本方法返回的一样经过用例的超时、重试与故障记录。
func (t *T) Client() *openai.Client { return t.openai() }

// openai 返回内置套件使用的 openai-go 客户端（不在导出 API 中出现 openai-go 的类型）。
func (t *T) openai() *openai.Client { return &t.sdk }

// BaseURL 返回被测服务以 /v1 结尾的基础地址（Target.BaseURLs[0]，去掉末尾的 /），供用例用
// 自己选择的 SDK 构造客户端；原始 HTTP 请求用 Post/Get/Stream 或 URL。
func (t *T) BaseURL() string { return t.base }

// APIKey 返回发给被测服务的 API Key（Target.APIKey，可能为空），只用来构造客户端。用例结果
// 里的原因与请求/响应记录会抹掉这个密钥，报告产物再按 report.Secrets 脱敏它的各种编码；
// 但用例自己写的日志或文件不经过这些，不要把它写进去。
func (t *T) APIKey() string { return t.target.APIKey }

// HTTPClient 返回带超时、重试与请求记录的 http.Client，供需要原始字节的用例、或用自己的
// SDK 构造客户端（与 BaseURL、APIKey 一起，见 ExampleT_HTTPClient）的用例使用：经它发出的
// 请求与 Post/Get/Stream 一样受单请求超时、重试、响应上限约束，故障也按类别记录。
// 它不会自动附加 API Key，请用 Post/Get/Stream 或自行设置。
func (t *T) HTTPClient() *http.Client { return t.hc }

// URL 把路径解析为完整地址："/v1/…" 与 "/tokenize"、"/health" 等都相对服务根地址。
func (t *T) URL(p string) string { return t.root + p }

// Errorf 记录一次失败但继续执行。第一次失败决定用例的故障类别：最近一次 HTTP 交换
// 观察到故障（传输错误、超时、过大、429/5xx/401、200 里的错误体）时取它的类别，
// 否则是 assertion。
func (t *T) Errorf(format string, args ...any) {
	t.record("", fmt.Sprintf(format, args...))
}

// record 记录一条失败原因；class 为空时按最近一次交换的故障推断（见 Errorf）。
// 推断出 server_error 时把服务端的原话放在原因前面，使“0 个 choice”之类的后果
// 说明不会掩盖真正的原因。
func (t *T) record(class Class, msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
	if t.class == "" {
		if class == "" {
			class = ClassAssertion
			if f := t.rec.pending(); f.class != "" {
				class = f.class
				if f.detail != "" && !strings.Contains(msg, f.detail) {
					msg = f.detail + ": " + msg
				}
			}
		}
		t.class = class
	}
	t.reasons = append(t.reasons, msg)
}

// Fatalf 记录失败并立即结束用例。
func (t *T) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	runtime.Goexit()
}

// Expect 在 got != want 时以结构化的 Failure 结束用例；what 说明比较的对象。
func (t *T) Expect(what string, want, got any) {
	ws, gs := fmt.Sprint(want), fmt.Sprint(got)
	if ws == gs {
		return
	}
	t.mu.Lock()
	if t.failure == nil {
		t.failure = &Failure{Case: t.id, What: what, Want: ws, Got: gs}
	}
	t.mu.Unlock()
	t.Fatalf("%s: want %s, got %s", what, ws, gs)
}

// structured 返回 Expect 记录的第一个结构化失败。
func (t *T) structured() *Failure {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failure
}

// Skipf 把用例标记为跳过（写明原因）并结束它。只用于“服务/场景不支持”，
// 不得用来掩盖失败。
func (t *T) Skipf(format string, args ...any) {
	t.mu.Lock()
	t.skipped = true
	t.reasons = append(t.reasons, fmt.Sprintf(format, args...))
	t.mu.Unlock()
	runtime.Goexit()
}

// unsupportedf 把用例标记为“探测结果：不支持”并结束它，只由能力声明为 probe 且
// 服务端以参数拒绝回答时调用。
func (t *T) unsupportedf(format string, args ...any) {
	t.mu.Lock()
	t.unsupported = true
	t.reasons = append(t.reasons, fmt.Sprintf(format, args...))
	t.mu.Unlock()
	runtime.Goexit()
}

// Support 返回场景对能力 c 的声明，供自定义用例决定是否发送可选参数。
func (t *T) Support(c Capability) Support { return t.target.Support(c) }

// Notef 记录一条信息（例如服务端使用的推理字段形式），通过时写入 Result.Reason。
func (t *T) Notef(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

// Failed 报告用例是否已记录失败。
func (t *T) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

// Response 是一次原始 HTTP 交换的结果，Body 已完整读入。
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Post 以 JSON 发送 body 到 p（见 URL），返回完整响应；传输错误（重试后仍失败）
// 作为 error 返回。4xx/5xx 不是 error，由用例断言。
func (t *T) Post(ctx context.Context, p string, body any) (*Response, error) {
	return t.do(ctx, http.MethodPost, p, body, true)
}

// Get 以 GET 请求 p（路径相对服务根地址而不是 BaseURL，OpenAI 接口写作 "/v1/models"，见 URL），
// 返回完整响应；错误的约定与 Post 相同。
func (t *T) Get(ctx context.Context, p string) (*Response, error) {
	return t.do(ctx, http.MethodGet, p, nil, true)
}

// do 发送请求；auth 为 false 时不带 API Key（用于鉴权用例）。
func (t *T) do(ctx context.Context, method, p string, body any, auth bool) (*Response, error) {
	req, err := t.newRequest(ctx, method, p, body, auth)
	if err != nil {
		return nil, err
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("functional: %s %s: %w", method, p, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("functional: %s %s: read body: %w", method, p, err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// newRequest 构造请求：body 为 []byte 时原样发送（用于畸形 JSON），否则 JSON 编码。
func (t *T) newRequest(ctx context.Context, method, p string, body any, auth bool) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, ok := body.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(body); err != nil {
				return nil, fmt.Errorf("functional: encode request for %s: %w", p, err)
			}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.URL(p), rd)
	if err != nil {
		return nil, fmt.Errorf("functional: %s %s: %w", method, p, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth && t.target.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.target.APIKey)
	}
	return req, nil
}

// Stream 是一次流式请求在字节层面的完整记录。
type Stream struct {
	Status int
	Header http.Header
	// Events 是 [DONE] 之前所有 data 事件的内容（已复制）。
	Events [][]byte
	// Done 报告是否收到 `data: [DONE]`。
	Done bool
	// AfterDone 是 [DONE] 之后又收到的事件数（应为 0）。
	AfterDone int
	// Body 在状态码非 200 时保存响应体。
	Body []byte
}

// Stream 以 JSON POST body 到 p（见 URL）并按 SSE 读完整个响应。非 200 时 Body 为响应体、Events 为空。
func (t *T) Stream(ctx context.Context, p string, body any) (*Stream, error) {
	req, err := t.newRequest(ctx, http.MethodPost, p, body, true)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := t.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("functional: stream %s: %w", p, err)
	}
	defer resp.Body.Close()
	s := &Stream{Status: resp.StatusCode, Header: resp.Header}
	if resp.StatusCode != http.StatusOK {
		// 响应体的总量由 caseTransport 按 MaxResponseBytes 截断。
		s.Body, err = io.ReadAll(resp.Body)
		if err != nil {
			return s, fmt.Errorf("functional: stream %s: read body: %w", p, err)
		}
		return s, nil
	}
	r := sse.NewReader(resp.Body)
	if t.maxBody > 0 {
		// 单个事件的上限给出更准确的说明（"event too large"）；整个流的总量同样受
		// caseTransport 的 MaxResponseBytes 约束，所以保存的事件也不会超过它。
		r.SetMaxEventSize(int(min(t.maxBody, int64(maxInt))))
	}
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return s, nil
		}
		if err != nil {
			return s, fmt.Errorf("functional: stream %s: %w", p, err)
		}
		switch {
		case s.Done:
			s.AfterDone++
		case ev.IsDone():
			s.Done = true
		default:
			s.Events = append(s.Events, bytes.Clone(ev.Data))
		}
	}
}

// maxInt 是 int 的最大值（sse 的上限参数是 int）。
const maxInt = int(^uint(0) >> 1)

// outcome 汇总 T 的状态；失败时 class 是第一次失败的故障类别。
func (t *T) outcome() (Status, Class, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.failed:
		return StatusFail, t.class, strings.Join(t.reasons, "; ")
	case t.unsupported:
		return StatusUnsupported, "", strings.Join(t.reasons, "; ")
	case t.skipped:
		return StatusSkip, "", strings.Join(t.reasons, "; ")
	default:
		return StatusPass, "", strings.Join(t.notes, "; ")
	}
}

// traceLimit 是失败结果中请求与响应各保留的最大字节数。
const traceLimit = 2048

// recorder 保存用例最后一次 HTTP 交换的摘要，失败时写入结果。
type recorder struct {
	mu       sync.Mutex
	request  string
	response string
	attempts int
	// retried 是被重试的尝试的说明（至多 MaxRetryReasons 条）。
	retried []string
	// fault 是最近一次交换观察到的故障（没有则为零值），新请求开始时清空。
	fault fault
}

// setFault 记录最近一次交换的故障。
func (r *recorder) setFault(f fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fault = f
}

// pending 返回最近一次交换的故障。
func (r *recorder) pending() fault {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fault
}

// setRequest 记录请求行与截断后的请求体（请求头不记录，因此不含密钥）。
func (r *recorder) setRequest(method, path string, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.request = method + " " + path + "\n" + trim(string(body))
	r.response = ""
	r.fault = fault{}
}

// setResponse 记录状态行与截断后的响应体前缀。
func (r *recorder) setResponse(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.response = trim(s)
}

// retries 返回被重试的尝试次数与说明（副本）。
func (r *recorder) retries() (int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts, slices.Clone(r.retried)
}

// snapshot 返回请求与响应摘要。
func (r *recorder) snapshot() (string, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.request, r.response
}

// trim 截断过长的文本并注明原长度。
func trim(s string) string {
	if len(s) <= traceLimit {
		return s
	}
	return s[:traceLimit] + fmt.Sprintf("…(%d bytes)", len(s))
}

// caseTransport 为每个请求加上超时，在传输错误、5xx 与 429 时重试（429 按 Retry-After
// 等待，超过上限则不等），并记录交换摘要。
type caseTransport struct {
	base          http.RoundTripper
	timeout       time.Duration
	retries       int
	backoff       time.Duration
	maxRetryAfter time.Duration
	// maxBody 是响应体的上限（0 表示不限）：Content-Length 超过它时不读，读到超过它时
	// 以 ErrResponseTooLarge 中止，内存由配置而不是服务端决定。
	maxBody int64
	rec     *recorder
	// heard 在收到服务端的响应头或响应体字节时调用（可为 nil）：Runner 据此判断服务是否还在回答。
	heard func()
}

// ErrRetryAfterTooLong 表示服务端以 429 要求等待的时间超过 Options.MaxRetryAfter。
var ErrRetryAfterTooLong = errors.New("functional: Retry-After beyond the bound")

// retryAfter 解析 Retry-After（秒数或 HTTP 日期）；缺失或无法解析时 ok 为 false。
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// RoundTrip 实现 http.RoundTripper。请求体先读入内存，以便重试时重放。
func (c *caseTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	c.rec.setRequest(req.Method, req.URL.Path, body)
	var (
		resp   *http.Response
		err    error
		ctx    context.Context
		cancel context.CancelFunc
	)
	pol := retry.Policy{Retries: c.retries, Backoff: c.backoff, Linear: true}
	_, werr := retry.Do(req.Context(), pol, func(_ int, last bool) retry.Verdict {
		if c.timeout > 0 {
			ctx, cancel = context.WithTimeout(req.Context(), c.timeout)
		} else {
			ctx, cancel = context.WithCancel(req.Context())
		}
		r2 := req.Clone(ctx)
		if body != nil {
			r2.Body = io.NopCloser(bytes.NewReader(body))
			r2.ContentLength = int64(len(body))
			r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
		resp, err = c.base.RoundTrip(r2)
		if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && req.Context().Err() == nil {
			err = fmt.Errorf("%w %v exceeded: %w", ErrRequestTimeout, c.timeout, err)
		}
		v := retry.Again()
		if err == nil && resp.StatusCode == http.StatusTooManyRequests {
			if d, ok := retryAfter(resp.Header, time.Now()); ok {
				if d > c.maxRetryAfter {
					b, _ := io.ReadAll(io.LimitReader(resp.Body, traceLimit))
					_ = resp.Body.Close()
					cancel()
					c.rec.setResponse(fmt.Sprintf("HTTP 429 (Retry-After %s)\n%s", resp.Header.Get("Retry-After"), b))
					c.rec.setFault(fault{class: ClassHTTP429})
					resp, err = nil, fmt.Errorf("%w: HTTP 429 with Retry-After %v exceeds the %v bound: %s", ErrRetryAfterTooLong, d, c.maxRetryAfter, trim(firstLine(b)))
					return retry.Stop
				}
				v = retry.After(d)
			}
		}
		retryable := err != nil || resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests
		if !retryable || last || req.Context().Err() != nil {
			return retry.Stop
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			_ = resp.Body.Close()
		}
		cancel()
		why := req.Method + " " + req.URL.Path + ": "
		if err != nil {
			why += "transport error: " + err.Error()
		} else {
			why += "HTTP " + strconv.Itoa(resp.StatusCode)
		}
		c.rec.mu.Lock()
		c.rec.attempts++
		if len(c.rec.retried) < MaxRetryReasons {
			c.rec.retried = append(c.rec.retried, why)
		}
		c.rec.mu.Unlock()
		return v
	})
	if werr != nil {
		// 两次尝试之间的等待被取消：上一次的响应已丢弃，超时也已释放。
		return nil, werr
	}
	if errors.Is(err, ErrRetryAfterTooLong) {
		return nil, err
	}
	if err != nil {
		cancel()
		c.rec.setResponse("transport error: " + err.Error())
		c.rec.setFault(fault{class: classifyErr(err)})
		return nil, err
	}
	c.rec.setResponse(fmt.Sprintf("HTTP %d", resp.StatusCode))
	if c.heard != nil {
		c.heard()
	}
	if c.maxBody > 0 && resp.ContentLength > c.maxBody {
		_ = resp.Body.Close()
		cancel()
		c.rec.setFault(fault{class: ClassTooLarge})
		return nil, fmt.Errorf("%w: HTTP %d with Content-Length %d exceeds max_response_bytes %d", ErrResponseTooLarge, resp.StatusCode, resp.ContentLength, c.maxBody)
	}
	c.rec.setFault(fault{class: statusClass(resp.StatusCode)})
	resp.Body = &recordingBody{rc: resp.Body, ctx: ctx, cancel: cancel, rec: c.rec, status: resp.StatusCode, limit: c.maxBody, timeout: c.timeout, heard: c.heard}
	return resp, nil
}

// recordingBody 在读取响应时保留前 traceLimit 字节、按 limit 截断响应体，把读取中的
// 故障（超时、过大、传输错误、200 里的错误体）记到 recorder，并在 Close 时释放超时。
type recordingBody struct {
	rc      io.ReadCloser
	ctx     context.Context
	cancel  context.CancelFunc
	rec     *recorder
	status  int
	buf     []byte
	read    int64
	limit   int64
	timeout time.Duration
	err     error
	// heard 见 caseTransport.heard：读到字节就说明服务端还在回答。
	heard func()
}

// Read 实现 io.Reader。超过 limit 后返回 ErrResponseTooLarge（之后的调用也是），
// 只交出 limit 以内的字节。
func (b *recordingBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	b.read += int64(n)
	if n > 0 && b.heard != nil {
		b.heard()
	}
	if b.limit > 0 && b.read > b.limit {
		n -= int(b.read - b.limit)
		b.read = b.limit
		b.err = fmt.Errorf("%w: HTTP %d body exceeds max_response_bytes %d", ErrResponseTooLarge, b.status, b.limit)
		b.rec.setFault(fault{class: ClassTooLarge})
		b.cancel()
		return max(n, 0), b.err
	}
	if n > 0 && len(b.buf) <= traceLimit {
		b.buf = append(b.buf, p[:n]...)
		b.rec.setResponse(fmt.Sprintf("HTTP %d\n%s", b.status, b.buf))
	}
	switch {
	case errors.Is(err, io.EOF):
		// 整个响应体都在 buf 里且只是一个错误对象：HTTP 200 却是错误，记下服务端原话。
		if b.status == http.StatusOK && int64(len(b.buf)) == b.read && errorBody(b.buf) {
			b.rec.setFault(fault{class: ClassServerError, detail: "server returned an error in a 200 body: " + serverMessage(b.buf)})
		}
	case err != nil:
		if errors.Is(b.ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w %v exceeded while reading the body: %w", ErrRequestTimeout, b.timeout, err)
		}
		b.rec.setFault(fault{class: classifyErr(err)})
	}
	return n, err
}

// Close 实现 io.Closer。
func (b *recordingBody) Close() error {
	err := b.rc.Close()
	b.cancel()
	return err
}

package hostile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// Fault 是一种故障；它的字符串就是路径前缀 /f/<fault>/ 中的名字。
type Fault string

// 故障种类（issue 14 列出的全部，外加 FaultMetricsSilent）。流式与非流式请求各有
// 对应的表现，见每个常量的注释。
const (
	// FaultNone 健康应答：工具在它上面必须成功，证明本服务说的协议够用。
	FaultNone Fault = "none"
	// FaultTruncate 流式：两个内容块后写半个事件就断开连接（没有 [DONE]，也没有
	// chunked 结束块）；非流式：Content-Length 大于实际写出的字节后断开。
	FaultTruncate Fault = "truncate"
	// FaultReset 读完请求后以 RST 关闭连接（SO_LINGER 0），一个字节也不回。
	FaultReset Fault = "reset"
	// FaultErrorEvent 流式：HTTP 200，一个内容块后是 data: {"error":…} 再 [DONE]（vLLM
	// 流开始后出错的真实形态）；非流式：HTTP 200 携带 {"error":…}。
	FaultErrorEvent Fault = "error-event"
	// Fault429 HTTP 429，带 Retry-After（Config.RetryAfter）与 vLLM 形态的错误体。
	Fault429 Fault = "429"
	// Fault500 HTTP 500，vLLM 形态的错误体。
	Fault500 Fault = "500"
	// FaultSilence 接受连接、读完请求，然后永不应答（直到客户端断开或 Close）。
	FaultSilence Fault = "silence"
	// FaultStall 流式：发出 role 块与一个内容块后卡住；非流式：发出响应头与半个响应体后卡住。
	FaultStall Fault = "stall"
	// FaultTokenizeSilent 只有 POST /tokenize 永不应答，其余接口健康。
	FaultTokenizeSilent Fault = "tokenize-silent"
	// FaultMetricsSilent 只有 GET /metrics 永不应答，其余接口健康。
	FaultMetricsSilent Fault = "metrics-silent"
	// FaultBig 一个 Config.BigSize（默认 16 MiB）的合法内容事件（流式）或响应体（非流式）：
	// 远低于工具的默认上限，工具应当照常成功——SSE 行不能按 64 KiB 截断。
	FaultBig Fault = "big"
	// FaultHuge 一个 Config.HugeSize（默认 1 GiB）的事件或响应体，边生成边写：
	// 工具必须按自己的上限放弃它并记为失败，内存不随它增长。
	FaultHuge Fault = "huge"
	// FaultInvalidJSON 流式：一个不完整的 JSON 事件后 [DONE]；非流式：不完整的 JSON 体。
	FaultInvalidJSON Fault = "invalid-json"
	// FaultZeroTokens 正常结束（finish_reason stop，usage.completion_tokens 0），但没有任何内容。
	FaultZeroTokens Fault = "zero-tokens"
	// FaultDupFinish 流式：携带 finish_reason 的块发两次；非流式：两个 index 都为 0 的 choice。
	FaultDupFinish Fault = "dup-finish"
	// FaultGarbage HTTP 200，声明的 Content-Type 不变，响应体是确定性的二进制垃圾。
	FaultGarbage Fault = "garbage"
	// FaultError200 HTTP 200，Content-Type application/json，体是 {"error":…}（流式请求也如此）。
	FaultError200 Fault = "error-200"
	// FaultEchoAuth HTTP 401，错误信息原样回显请求头（Authorization 及解码后的 Basic 用户名密码）；
	// Pushgateway 的推送同样被拒并回显。用来证明回显的密钥不会进入任何产物。
	FaultEchoAuth Fault = "echo-auth"
)

// Faults 返回全部故障种类（含 FaultNone），顺序固定。
func Faults() []Fault {
	return []Fault{FaultNone, FaultTruncate, FaultReset, FaultErrorEvent, Fault429, Fault500, FaultSilence,
		FaultStall, FaultTokenizeSilent, FaultMetricsSilent, FaultBig, FaultHuge, FaultInvalidJSON,
		FaultZeroTokens, FaultDupFinish, FaultGarbage, FaultError200, FaultEchoAuth}
}

// Known 报告 f 是否是已知的故障名。
func (f Fault) Known() bool {
	for _, k := range Faults() {
		if k == f {
			return true
		}
	}
	return false
}

// 默认值。
const (
	DefaultModel       = "hostile-model"
	DefaultBigSize     = 16 << 20
	DefaultHugeSize    = 1 << 30
	DefaultRetryAfter  = time.Second
	DefaultMaxModelLen = 4096
	// maxRequestBytes 是本服务读取请求体的上限：工具发来的都是小请求，
	// 作恶的服务自己也不能被客户端撑爆。
	maxRequestBytes = 8 << 20
	// maxAuthSeen 是记录的不同 Authorization 值的上限。
	maxAuthSeen = 16
)

// ErrConfig 被 New 的配置错误包装。
var ErrConfig = errors.New("hostile: invalid config")

// Config 配置服务。零值可用。
type Config struct {
	// Model 是 /v1/models 列出、响应中回显的模型名（默认 DefaultModel）。
	Model string
	// APIKey 非空时，/v1/... 要求 "Authorization: Bearer <APIKey>"，否则 401
	// （vLLM 的 {"error":"Unauthorized"}，不回显）。/health 等不受保护。
	APIKey string
	// BigSize 与 HugeSize 是 FaultBig 与 FaultHuge 的载荷字节数。
	BigSize, HugeSize int64
	// RetryAfter 是 Fault429 的 Retry-After（按整秒发送，至少 1 秒）。
	RetryAfter time.Duration
	// MaxModelLen 出现在 /v1/models 与 /tokenize 的响应中。
	MaxModelLen int
	// Answer 非空且返回非空串时，它决定健康回复的内容（参数是请求中最后一条用户消息
	// 或 prompt），finish_reason 为 stop；否则生成 max_tokens 个 " hi"，finish_reason
	// 为 length（ignore_eos 下 vLLM 的样子）。
	Answer func(prompt string) string
}

// withDefaults 补齐零值字段。
func (c Config) withDefaults() Config {
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.BigSize == 0 {
		c.BigSize = DefaultBigSize
	}
	if c.HugeSize == 0 {
		c.HugeSize = DefaultHugeSize
	}
	if c.RetryAfter == 0 {
		c.RetryAfter = DefaultRetryAfter
	}
	if c.MaxModelLen == 0 {
		c.MaxModelLen = DefaultMaxModelLen
	}
	return c
}

// Stats 是服务端看到的计数，供测试断言"请求确实到达、密钥确实发出"。
type Stats struct {
	// Generations 是收到的生成请求数，Faulted 是其中按故障应答的数目。
	Generations, Faulted int64
	// Pushes 是收到的 Pushgateway 推送数（含被拒的）。
	Pushes int64
	// PayloadBytes 是 FaultBig/FaultHuge 实际写出的载荷字节数。
	PayloadBytes int64
	// Authorization 是见过的不同 Authorization 头（排序，至多 16 个）。
	Authorization []string
}

// Server 是运行中的作恶服务。方法可并发调用。
type Server struct {
	cfg   Config
	ln    net.Listener
	srv   *http.Server
	url   string
	done  chan struct{}
	close sync.Once
	wg    sync.WaitGroup
	// active 计数进行中的处理函数：Close 等它们全部返回，测试因此能在 Close 之后
	// 读到最终的 PayloadBytes。
	active sync.WaitGroup

	gens, faulted, pushes, payload atomic.Int64

	mu     sync.Mutex
	closed bool
	auth   map[string]bool
	served map[string]int // 每个故障前缀已收到的生成请求数（"~N" 计数用）
	ok     map[string]int64
}

// New 校验配置并在 127.0.0.1 的随机端口上启动服务；调用方负责 Close。
func New(cfg Config) (*Server, error) {
	if cfg.BigSize < 0 || cfg.HugeSize < 0 || cfg.RetryAfter < 0 || cfg.MaxModelLen < 0 {
		return nil, fmt.Errorf("%w: negative size, retry-after or max_model_len", ErrConfig)
	}
	cfg = cfg.withDefaults()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("hostile: listen: %w", err)
	}
	s := &Server{cfg: cfg, ln: ln, url: "http://" + ln.Addr().String(), done: make(chan struct{}),
		auth: map[string]bool{}, served: map[string]int{}, ok: map[string]int64{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ErrorLog: discardLog()}
	s.wg.Go(func() { _ = s.srv.Serve(ln) })
	return s, nil
}

// URL 返回服务根地址（健康，不带 /v1）。
func (s *Server) URL() string { return s.url }

// Root 返回故障 f 的服务根（不带 /v1），例如 Pushgateway 地址或 /tokenize 的前缀。
func (s *Server) Root(f Fault) string { return s.RootAfter(f, 0) }

// RootAfter 与 Root 相同，但该前缀下的前 n 个生成请求健康应答，之后才出故障——
// 让压测的探测请求或预热通过，故障落在被测量的请求上。
func (s *Server) RootAfter(f Fault, n int) string {
	if n > 0 {
		return fmt.Sprintf("%s/f/%s~%d", s.url, f, n)
	}
	return s.url + "/f/" + string(f)
}

// BaseURL 返回故障 f 的 OpenAI 基础地址（以 /v1 结尾）。
func (s *Server) BaseURL(f Fault) string { return s.Root(f) + "/v1" }

// BaseURLAfter 返回 RootAfter(f, n) + "/v1"。
func (s *Server) BaseURLAfter(f Fault, n int) string { return s.RootAfter(f, n) + "/v1" }

// Stats 返回当前计数的快照。
func (s *Server) Stats() Stats {
	st := Stats{Generations: s.gens.Load(), Faulted: s.faulted.Load(), Pushes: s.pushes.Load(), PayloadBytes: s.payload.Load()}
	s.mu.Lock()
	for a := range s.auth {
		st.Authorization = append(st.Authorization, a)
	}
	s.mu.Unlock()
	sort.Strings(st.Authorization)
	return st
}

// Close 停止监听，放开所有被故意卡住的请求并关闭全部连接，等服务 goroutine 退出。
func (s *Server) Close() error {
	var err error
	s.close.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		// 先关连接再放开被卡住的处理函数：否则它们返回时 net/http 会补发一个空的 200。
		err = s.srv.Close()
		close(s.done)
		s.wg.Wait()
		s.active.Wait()
	})
	return err
}

// route 是解析后的请求路径：故障、计数前缀与去掉前缀后的路径。
type route struct {
	fault  Fault
	prefix string
	after  int
	path   string
}

// parseRoute 解析 /f/<fault>[~N]/rest；没有前缀时为 FaultNone。未知故障名返回错误，
// 免得测试因为拼错名字而悄悄跑在健康服务上。
func parseRoute(p string) (route, error) {
	rest, ok := strings.CutPrefix(p, "/f/")
	if !ok {
		return route{fault: FaultNone, path: p}, nil
	}
	spec, tail, _ := strings.Cut(rest, "/")
	name, n, hasN := strings.Cut(spec, "~")
	r := route{fault: Fault(name), prefix: spec, path: "/" + tail}
	if !r.fault.Known() {
		return r, fmt.Errorf("unknown fault %q (want one of %v)", name, Faults())
	}
	if hasN {
		v, err := strconv.Atoi(n)
		if err != nil || v < 0 {
			return r, fmt.Errorf("fault %q: %q after ~ is not a count", name, n)
		}
		r.after = v
	}
	return r, nil
}

// ServeHTTP 按路径前缀分派到各接口与故障。
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.active.Add(1)
	s.mu.Unlock()
	defer s.active.Done()
	rt, err := parseRoute(r.URL.Path)
	if err != nil {
		writeError(w, http.StatusNotFound, "NotFoundError", err.Error())
		return
	}
	if a := r.Header.Get("Authorization"); a != "" {
		s.mu.Lock()
		if len(s.auth) < maxAuthSeen {
			s.auth[a] = true
		}
		s.mu.Unlock()
	}
	if strings.HasPrefix(rt.path, "/metrics/job/") {
		s.push(w, r, rt)
		return
	}
	if strings.HasPrefix(rt.path, "/v1/") && s.cfg.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.cfg.APIKey {
		// vLLM 的 401 形态：不回显任何请求内容（回显是 FaultEchoAuth 的事）。
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"Unauthorized"}`)
		return
	}
	switch {
	case r.Method == http.MethodGet && (rt.path == "/health" || rt.path == "/ping"):
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodGet && rt.path == "/version":
		writeJSON(w, http.StatusOK, map[string]string{"version": "hostile"})
	case r.Method == http.MethodGet && rt.path == "/v1/models":
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{map[string]any{
			"id": s.cfg.Model, "object": "model", "created": 0, "owned_by": "vllm", "root": s.cfg.Model, "max_model_len": s.cfg.MaxModelLen}}})
	case r.Method == http.MethodPost && rt.path == "/tokenize":
		if rt.fault == FaultTokenizeSilent {
			s.silence(r.Context())
			return
		}
		s.tokenize(w, r)
	case r.Method == http.MethodGet && rt.path == "/metrics":
		if rt.fault == FaultMetricsSilent {
			s.silence(r.Context())
			return
		}
		s.metrics(w)
	case r.Method == http.MethodPost && (rt.path == "/v1/chat/completions" || rt.path == "/v1/completions"):
		s.generate(w, r, rt, rt.path == "/v1/chat/completions")
	default:
		writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("%s %s: no such route", r.Method, rt.path))
	}
}

// silence 什么都不做，直到客户端断开或服务关闭——"接受后沉默"。
func (s *Server) silence(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-s.done:
	}
}

// push 模拟 Pushgateway：FaultEchoAuth 时以 401 回显凭据，其余情况接受推送。
func (s *Server) push(w http.ResponseWriter, r *http.Request, rt route) {
	s.pushes.Add(1)
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxRequestBytes))
	if rt.fault == FaultEchoAuth {
		writeError(w, http.StatusUnauthorized, "AuthenticationError", echo(r))
		return
	}
	if r.Method == http.MethodPut || r.Method == http.MethodPost {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// echo 把请求中可能携带凭据的头原样写进错误信息，Basic 凭据还附上解码后的明文——
// 一个真实的反向代理或调试模式的网关就会这么做。
func echo(r *http.Request) string {
	var b strings.Builder
	b.WriteString("hostile: rejected credentials; you sent")
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range r.Header[k] {
			fmt.Fprintf(&b, " %s: %s;", k, v)
		}
	}
	if user, pass, ok := r.BasicAuth(); ok {
		fmt.Fprintf(&b, " decoded basic auth user=%s password=%s;", user, pass)
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		fmt.Fprintf(&b, " api key %s;", tok)
	}
	return b.String()
}

// tokenize 按 internal/tokenize 的共享规则计数（与工具的估算一致），应答 vLLM 的形态。
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Prompt   string `json:"prompt"`
		Messages []struct {
			Content any `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxRequestBytes)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", "hostile: tokenize body is not JSON")
		return
	}
	// 逐条消息计数再相加，与生成接口计算 prompt_tokens 的方式一致，
	// 这样"prompt + max_tokens == max_model_len"的边界两边算得一样。
	ids := append([]int{}, tokenize.IDs(req.Prompt)...)
	for _, m := range req.Messages {
		ids = append(ids, tokenize.IDs(text(m.Content))...)
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(ids), "max_model_len": s.cfg.MaxModelLen, "tokens": ids})
}

// metrics 输出最小的 vLLM Prometheus 文本：成功数与 token 计数随健康应答增长。
func (s *Server) metrics(w http.ResponseWriter) {
	s.mu.Lock()
	ok, gen := s.ok["success"], s.ok["generation_tokens"]
	s.mu.Unlock()
	m := strconv.Quote(s.cfg.Model)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=%s} 0\n", m)
	fmt.Fprintf(w, "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=%s} 0\n", m)
	fmt.Fprintf(w, "# TYPE vllm:request_success_total counter\nvllm:request_success_total{finished_reason=\"length\",model_name=%s} %d\n", m, ok)
	fmt.Fprintf(w, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=%s} %d\n", m, gen)
}

// countOK 记一次健康完成的请求，供 /metrics 使用。
func (s *Server) countOK(tokens int) {
	s.mu.Lock()
	s.ok["success"]++
	s.ok["generation_tokens"] += int64(tokens)
	s.mu.Unlock()
}

// faultFor 决定这个生成请求是否按故障应答（"~N" 前缀的前 N 个请求健康）。
func (s *Server) faultFor(rt route) Fault {
	if rt.fault == FaultNone || rt.fault == FaultTokenizeSilent || rt.fault == FaultMetricsSilent {
		return FaultNone
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.served[rt.prefix]++
	if s.served[rt.prefix] <= rt.after {
		return FaultNone
	}
	return rt.fault
}

// writeJSON 写出 JSON 响应。
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// errorBody 返回 vLLM（v0.10.1+）形态的错误体。
func errorBody(status int, typ, msg string) map[string]any {
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": status}}
}

// writeError 写出 vLLM 形态的错误响应。
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, errorBody(status, typ, msg))
}

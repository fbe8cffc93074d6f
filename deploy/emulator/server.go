package emulator

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	emu "github.com/vllm-cibench/cibench/internal/emulator"
	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// emuVersion 是 /version 报告的版本号：标明是模拟器，避免与真实 vLLM 混淆。
const emuVersion = "0.11.0+cibench-emulator"

// emuMaxBody 是请求体上限（64 MiB，足以容纳带图片的多模态请求）。
const emuMaxBody = 64 << 20

// emuBufPool 复用请求体与响应体缓冲，降低每个请求的分配。每个 Server 一个池，
// 不是包级全局状态。
type emuBufPool struct{ p sync.Pool }

// get 取一个缓冲（容量至少 4 KiB）。
func (bp *emuBufPool) get() *[]byte {
	if b, ok := bp.p.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 4096)
	return &b
}

// put 归还缓冲；超过 1 MiB 的大缓冲直接丢弃，避免池长期占用内存。
func (bp *emuBufPool) put(b *[]byte) {
	if cap(*b) <= 1<<20 {
		*b = (*b)[:0]
		bp.p.Put(b)
	}
}

// emuErr 是一个待写出的 vLLM 形状错误。
type emuErr struct {
	status int
	typ    string
	msg    string
	param  string
}

// emuBadRequest 构造 400 BadRequestError。
func emuBadRequest(param, msg string) *emuErr {
	return &emuErr{status: http.StatusBadRequest, typ: "BadRequestError", msg: msg, param: param}
}

// emuErrType 返回 HTTP 状态对应的 vLLM 错误类型名。
func emuErrType(status int) string {
	switch status {
	case 400:
		return "BadRequestError"
	case 401:
		return "Unauthorized"
	case 404:
		return "NotFoundError"
	case 429:
		return "RateLimitError"
	case 503:
		return "ServiceUnavailableError"
	default:
		return "InternalServerError"
	}
}

// appendErrorJSON 追加 vLLM v0.10.1+ 的错误体 {"error":{"message","type","param","code"}}。
func appendErrorJSON(dst []byte, e *emuErr) []byte {
	dst = append(dst, `{"error":{"message":`...)
	dst = emu.AppendString(dst, e.msg)
	dst = append(dst, `,"type":`...)
	dst = emu.AppendString(dst, e.typ)
	dst = append(dst, `,"param":`...)
	if e.param == "" {
		dst = append(dst, "null"...)
	} else {
		dst = emu.AppendString(dst, e.param)
	}
	dst = append(dst, `,"code":`...)
	dst = strconv.AppendInt(dst, int64(e.status), 10)
	return append(dst, "}}"...)
}

// newMux 建立路由。路由表是固定的；是否启用嵌入/rerank 在请求时按当前配置判断，
// 以便 Update 可以在运行中开关。
func (e *Server) newMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", e.handleHealth)
	mux.HandleFunc("GET /ping", e.handleHealth)
	mux.HandleFunc("GET /version", e.handleVersion)
	mux.Handle("GET /metrics", e.metricsHandler())
	mux.HandleFunc("GET /v1/models", e.handleModels)
	mux.HandleFunc("POST /tokenize", e.handleTokenize)
	mux.HandleFunc("POST /v1/chat/completions", e.handleChat)
	mux.HandleFunc("POST /v1/completions", e.handleCompletions)
	mux.HandleFunc("POST /v1/embeddings", e.handleEmbeddings)
	mux.HandleFunc("POST /v1/rerank", e.handleRerank)
	mux.HandleFunc("POST /rerank", e.handleRerank)
	mux.HandleFunc("POST /v2/rerank", e.handleRerank)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cfg := e.cfg.Load()
		if cfg.APIKey != "" && !cfg.Defects.NoAuth && strings.HasPrefix(r.URL.Path, "/v1") {
			if r.Header.Get("Authorization") != "Bearer "+cfg.APIKey {
				// vLLM 的鉴权中间件返回的就是这个非标准形状。
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"error":"Unauthorized"}`)
				e.logAccess(r, http.StatusUnauthorized, false, 0, 0, time.Now(), "")
				return
			}
		}
		h, pattern := mux.Handler(r)
		if pattern == "" {
			// 与 vLLM 背后的 FastAPI 一致：未知路径 404、已知路径方法不对 405，错误体为 {"detail": …}。
			w.Header().Set("Content-Type", "application/json")
			if emuKnownPath(r.URL.Path) {
				w.WriteHeader(http.StatusMethodNotAllowed)
				_, _ = io.WriteString(w, `{"detail":"Method Not Allowed"}`)
			} else {
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, `{"detail":"Not Found"}`)
			}
			return
		}
		h.ServeHTTP(w, r)
	})
}

// metricsHandler 以 Prometheus 文本格式暴露私有注册表。
func (e *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(e.metrics.Registry(), promhttp.HandlerOpts{})
}

// writeError 写出 vLLM 形状的错误；ErrorBodyMalformed 缺陷下 4xx 改写为纯文本。
func (e *Server) writeError(w http.ResponseWriter, cfg *Config, er *emuErr) {
	if er.typ == "" {
		er.typ = emuErrType(er.status)
	}
	if cfg.Defects.ErrorBodyMalformed && er.status >= 400 && er.status < 500 {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(er.status)
		_, _ = io.WriteString(w, "error: "+er.msg)
		return
	}
	bp := e.bufs.get()
	b := appendErrorJSON((*bp)[:0], er)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(er.status)
	_, _ = w.Write(b)
	*bp = b
	e.bufs.put(bp)
}

// writeJSON 用 encoding/json 写出非流式响应（非热路径）。
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"error":{"message":"internal encoding error","type":"InternalServerError","param":null,"code":500}}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// emuKnownPath 报告 path 是否是模拟器提供的端点。
func emuKnownPath(path string) bool {
	switch path {
	case "/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/rerank", "/rerank", "/v2/rerank",
		"/v1/models", "/tokenize", "/health", "/ping", "/version", "/metrics":
		return true
	}
	return false
}

// logAccess 记录一条访问日志；未知路径归并为 "other"，避免探测路径撑大汇总。
func (e *Server) logAccess(r *http.Request, status int, stream bool, prompt, compl int, start time.Time, fault string) {
	path := r.URL.Path
	if !emuKnownPath(path) {
		path = "other"
	}
	e.access.Add(emu.AccessEntry{Time: start, Method: r.Method, Path: path, Status: status, Stream: stream,
		PromptTokens: prompt, CompletionTokens: compl, Duration: time.Since(start), Fault: fault})
}

// handleHealth 实现 GET /health：返回 200 空体（与 vLLM 一致）；Unhealthy 时 503。
func (e *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if e.cfg.Load().Unhealthy {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handleVersion 实现 GET /version。
func (e *Server) handleVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": emuVersion})
}

// emuModelCard 是 /v1/models 列表中的一项（字段顺序与 vLLM 的 ModelCard 一致）。
type emuModelCard struct {
	ID          string  `json:"id"`
	Object      string  `json:"object"`
	Created     int64   `json:"created"`
	OwnedBy     string  `json:"owned_by"`
	Root        string  `json:"root"`
	Parent      *string `json:"parent"`
	MaxModelLen int     `json:"max_model_len"`
	Permission  []any   `json:"permission"`
}

// handleModels 实现 GET /v1/models。
func (e *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	cfg := e.cfg.Load()
	data := []emuModelCard{}
	if !cfg.Defects.ModelMissingFromList {
		data = append(data, emuModelCard{ID: cfg.Model, Object: "model", Created: time.Now().Unix(), OwnedBy: "vllm",
			Root: cfg.Model, MaxModelLen: cfg.MaxModelLen, Permission: []any{}})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
	e.logAccess(r, http.StatusOK, false, 0, 0, time.Now(), "")
}

// readBody 读取请求体到池化缓冲；调用方用完后须调用 release。
func (e *Server) readBody(r *http.Request) (body []byte, release func(), err error) {
	bp := e.bufs.get()
	buf := bytes.NewBuffer((*bp)[:0])
	_, err = buf.ReadFrom(io.LimitReader(r.Body, emuMaxBody))
	b := buf.Bytes()
	return b, func() { *bp = b; e.bufs.put(bp) }, err
}

// readJSON 读取请求体交给 decode 解码，解码结束即归还缓冲区；读取失败时返回 400。
// 各 JSON 端点共用它，保证“读失败”的错误形状一致、缓冲区不会漏还。
func (e *Server) readJSON(r *http.Request, decode func(body []byte) *emuErr) *emuErr {
	body, release, err := e.readBody(r)
	defer release()
	if err != nil {
		return emuBadRequest("", "cannot read request body: "+err.Error())
	}
	return decode(body)
}

// emuTokenizeRequest 是 POST /tokenize 的请求体（prompt 或 messages 二选一）。
type emuTokenizeRequest struct {
	Model            string       `json:"model"`
	Prompt           *string      `json:"prompt"`
	Messages         []emuMessage `json:"messages"`
	AddSpecialTokens *bool        `json:"add_special_tokens"`
}

// handleTokenize 实现 POST /tokenize：与 usage、上下文长度校验使用同一条分词规则。
func (e *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	cfg := e.cfg.Load()
	start := time.Now()
	body, release, err := e.readBody(r)
	defer release()
	var req emuTokenizeRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		e.writeError(w, cfg, emuBadRequest("", "Invalid JSON body: "+err.Error()))
		return
	}
	if er := e.checkModel(cfg, req.Model, true); er != nil {
		e.writeError(w, cfg, er)
		return
	}
	var ids []int
	switch {
	case req.Prompt != nil:
		ids = tokenize.IDs(*req.Prompt)
	case req.Messages != nil:
		p, er := parseMessages(req.Messages, cfg.Defects.ImageNotValidated)
		if er != nil {
			e.writeError(w, cfg, er)
			return
		}
		for _, t := range p.texts {
			ids = append(ids, tokenize.IDs(t)...)
		}
		for i := 0; i < p.imageTokens; i++ {
			ids = append(ids, emuImageTokenID)
		}
	default:
		e.writeError(w, cfg, emuBadRequest("prompt", "Either `prompt` or `messages` must be provided."))
		return
	}
	if ids == nil {
		ids = []int{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(ids), "max_model_len": cfg.MaxModelLen, "tokens": ids})
	e.logAccess(r, http.StatusOK, false, len(ids), 0, start, "")
}

// emuImageTokenID 是图片占位 token 的 id（Qwen2-VL 的 <|image_pad|>）。
const emuImageTokenID = 151655

// checkModel 校验请求中的模型名；empty 为 true 时允许省略（/tokenize 等）。
func (e *Server) checkModel(cfg *Config, model string, empty bool) *emuErr {
	if model == cfg.Model || (empty && model == "") || cfg.Defects.UnknownModelOK {
		return nil
	}
	return &emuErr{status: http.StatusNotFound, typ: "NotFoundError", param: "model",
		msg: "The model `" + model + "` does not exist."}
}

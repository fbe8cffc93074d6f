package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	emu "github.com/vllm-cibench/cibench/internal/emulator"
	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// emuKind 区分两个生成端点。
type emuKind uint8

const (
	emuKindChat emuKind = iota
	emuKindCompletion
)

// emuRun 是一个已校验、已生成完毕、等待按时间表写出的请求。
type emuRun struct {
	kind         emuKind
	id           string
	created      int64
	cfg          *Config
	promptTokens int
	choices      []*emuChoice
	stream       bool
	includeUsage bool
	continuous   bool
	logprobs     bool // chat logprobs=true
	topLogprobs  int  // chat top_logprobs
	cmplLogprobs int  // completions logprobs（-1 表示未请求）
	fault        string
	arrival      time.Time
	scheduled    time.Time // 第一次被调度（出队）的时刻：vLLM 的 scheduled_ts，阶段直方图用
	headSent     bool      // 流式响应的响应头已写出（排队之前，见 streamHead）
	em           *Server
	perf         emuPerfRun    // 性能模型下的进度；模型关闭时为零值
	local        net.Addr      // 连接的本地地址（PD prefill 响应的 remote_host/remote_port）
	ttft         time.Duration // 本请求的 TTFT 基数：cfg.TTFT × 噪声因子（TTFTSigma）
	prefillPer   time.Duration // 本请求每个提示 token 的 prefill 时间（同一因子）
	itl          time.Duration // 本请求的 ITL：cfg.ITL × 噪声因子（ITLSigma）
	finished     func()        // 结束请求、记录指标（serve 设置；finishNow 调用后置为 nil）
}

// finishNow 在响应的最后一段字节写出之前结束本请求并记录指标（只一次；finished 为 nil 时什么也不做）。
func (run *emuRun) finishNow() {
	if f := run.finished; f != nil {
		run.finished = nil
		f()
	}
}

// lognormal 返回第 n 个抽样的对数正态因子 exp(σ·Z)（Box–Muller，由 seed 与 n 决定）；σ 为 0 时为 1。
func lognormal(seed, n uint64, sigma float64) float64 {
	if sigma == 0 {
		return 1
	}
	a := emu.Mix(seed, 2*n)
	b := emu.Mix(seed, 2*n+1)
	u1 := (float64(a>>11) + 0.5) / (1 << 53) // (0,1)，避免 log(0)
	u2 := float64(b>>11) / (1 << 53)
	z := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
	return math.Exp(sigma * z)
}

// scaleDur 把 d 乘以 f。
func scaleDur(d time.Duration, f float64) time.Duration {
	if f == 1 {
		return d
	}
	return time.Duration(float64(d) * f)
}

// sampleLatency 为 run 抽取本请求的 TTFT 与 ITL（TTFTSigma/ITLSigma 为 0 时就是配置值）。
func (e *Server) sampleLatency(run *emuRun) {
	cfg := run.cfg
	run.ttft, run.prefillPer, run.itl = cfg.TTFT, cfg.PrefillPerToken, cfg.ITL
	if cfg.TTFTSigma == 0 && cfg.ITLSigma == 0 {
		return
	}
	n := e.noise.Add(1)
	seed := uint64(cfg.Seed) ^ e.idSalt ^ 0x6e6f697365 // "noise"
	f := lognormal(seed, 2*n, cfg.TTFTSigma)
	run.ttft, run.prefillPer = scaleDur(cfg.TTFT, f), scaleDur(cfg.PrefillPerToken, f)
	run.itl = scaleDur(cfg.ITL, lognormal(seed, 2*n+1, cfg.ITLSigma))
}

// decodeJSON 解析请求体；JSON 语法或类型错误按 vLLM 返回 400。
func decodeJSON(body []byte, v any) *emuErr {
	if err := json.Unmarshal(body, v); err != nil {
		return emuBadRequest("", "Invalid request body: "+err.Error())
	}
	return nil
}

// newID 生成响应 id：前缀 + 32 位十六进制（与 vLLM 的 random_uuid 长度一致）。
// Seed 非 0 时 id 序列可复现（金样测试依赖这一点）；Seed 为 0 时混入构造时刻，跨进程不重复。
func (e *Server) newID(cfg *Config, prefix string) string {
	if cfg.Defects.WrongIDPrefix {
		prefix = "req-"
	}
	n := e.reqSeq.Add(1)
	a := emu.Mix(uint64(cfg.Seed)^e.idSalt, n)
	b := emu.Mix(a, n)
	var buf [64]byte
	out := append(buf[:0], prefix...)
	for _, x := range []uint64{a, b} {
		s := strconv.FormatUint(x, 16)
		for i := len(s); i < 16; i++ {
			out = append(out, '0')
		}
		out = append(out, s...)
	}
	return string(out)
}

// contextCheck 校验提示 + 生成上限不超过 max_model_len，返回有效的 max_tokens。
func contextCheck(cfg *Config, s *emuSampling, prompt int, param string) (int, *emuErr) {
	limit := cfg.MaxModelLen
	if !s.maxGiven {
		if prompt >= limit && !cfg.Defects.NoContextCheck {
			return 0, emuBadRequest("messages", fmt.Sprintf("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.", limit, prompt))
		}
		return max(limit-prompt, 1), nil
	}
	if prompt+s.maxTokens > limit && !cfg.Defects.NoContextCheck {
		return 0, emuBadRequest(param, fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", limit, prompt+s.maxTokens, prompt, s.maxTokens))
	}
	return s.maxTokens, nil
}

// guidedSpec 解析结构化输出约束，返回生成函数；没有约束时 fn 为 nil。
func guidedSpec(cfg *Config, c *emuCommon) (fn func(uint64) string, er *emuErr) {
	var kinds []string
	var schema json.RawMessage
	var regex *string
	var choice []string
	jsonObject := false
	if rf := c.ResponseFormat; rf != nil {
		switch rf.Type {
		case "", "text":
		case "json_object":
			jsonObject = true
			kinds = append(kinds, "json_object")
		case "json_schema":
			if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
				return nil, emuBadRequest("response_format", "response_format.json_schema.schema is required")
			}
			schema = rf.JSONSchema.Schema
			kinds = append(kinds, "json_schema")
		default:
			return nil, emuBadRequest("response_format", "unsupported response_format type "+strconv.Quote(rf.Type))
		}
	}
	if so := c.StructuredOutputs; so != nil {
		n := 0
		if len(so.JSON) > 0 {
			n++
			schema = so.JSON
			if so.JSON[0] == '"' { // 以字符串形式给出的 schema
				var s string
				if err := json.Unmarshal(so.JSON, &s); err == nil {
					schema = json.RawMessage(s)
				}
			}
		}
		if so.Regex != nil {
			n++
			regex = so.Regex
		}
		if so.Choice != nil {
			n++
			choice = so.Choice
		}
		if so.Grammar != nil {
			n++
		}
		if n > 1 {
			return nil, emuBadRequest("structured_outputs", "You can only use one kind of structured outputs constraint but multiple are specified: "+string(mustJSON(so)))
		}
		if so.Grammar != nil {
			return nil, emuBadRequest("structured_outputs", "grammar constraints are not supported by the emulator")
		}
		if n == 1 {
			kinds = append(kinds, "structured_outputs")
		}
	}
	if len(c.GuidedJSON) > 0 {
		schema = c.GuidedJSON
		kinds = append(kinds, "guided_json")
	}
	if c.GuidedRegex != nil {
		regex = c.GuidedRegex
		kinds = append(kinds, "guided_regex")
	}
	if c.GuidedChoice != nil {
		choice = c.GuidedChoice
		kinds = append(kinds, "guided_choice")
	}
	if len(kinds) == 0 {
		return nil, nil
	}
	if len(kinds) > 1 {
		return nil, emuBadRequest("structured_outputs", "You can only use one kind of structured outputs constraint but multiple are specified: "+strings.Join(kinds, ", "))
	}
	if cfg.DisableGuided {
		return nil, emuBadRequest("response_format", "structured outputs are not supported by this server")
	}
	invalid := cfg.Defects.JSONObjectInvalid
	switch {
	case jsonObject:
		return func(h uint64) string {
			if invalid {
				return "Sure! Here is the JSON you asked for: {answer: 42"
			}
			r := emu.NewRand(h)
			return `{"answer": "示例 answer", "confidence": 0.` + strconv.Itoa(10+r.Intn(90)) + `}`
		}, nil
	case schema != nil:
		if er := validateSchema(schema); er != nil {
			return nil, er
		}
		return func(h uint64) string {
			if invalid {
				return "not json: " + strconv.FormatUint(h%1000, 10)
			}
			b, err := emu.GenerateJSON(schema, h)
			if err != nil {
				return "{}"
			}
			return string(b)
		}, nil
	case regex != nil:
		if _, err := emu.GenerateRegex(*regex, 0); err != nil {
			return nil, emuBadRequest("structured_outputs", "Invalid regular expression: "+err.Error())
		}
		pat := *regex
		return func(h uint64) string {
			s, _ := emu.GenerateRegex(pat, h)
			return s
		}, nil
	default:
		if len(choice) == 0 {
			return nil, emuBadRequest("structured_outputs", "choice must be a non-empty list")
		}
		if cfg.Defects.ChoiceViolated {
			return func(h uint64) string { return "none of the choices" }, nil
		}
		return func(h uint64) string { return choice[h%uint64(len(choice))] }, nil
	}
}

// mustJSON 编码 v，失败时返回空对象（只用于错误信息）。
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte("{}")
	}
	return b
}

// validateSchema 用 jsonschema/v6 编译 schema，非法时返回 400（vLLM 对非法 schema 同样 400）。
func validateSchema(schema json.RawMessage) *emuErr {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err == nil {
		c := jsonschema.NewCompiler()
		if err = c.AddResource("mem://schema.json", doc); err == nil {
			_, err = c.Compile("mem://schema.json")
		}
	}
	if err != nil {
		return emuBadRequest("response_format", "Invalid JSON schema: "+err.Error())
	}
	return nil
}

// start 是 chat 与 completions 处理函数的共同收尾：解析或规划失败（er 非 nil）时
// 写错误体并记访问日志，否则带着到达时刻开始按时间表服务。
func (e *Server) start(w http.ResponseWriter, r *http.Request, cfg *Config, arrival time.Time, stream bool, run *emuRun, er *emuErr) {
	if er != nil {
		e.writeError(w, cfg, er)
		e.logAccess(r, er.status, stream, 0, 0, arrival, "")
		return
	}
	run.arrival, run.em = arrival, e
	if run.perf.prefill {
		run.local, _ = r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	}
	e.serve(w, r, run)
}

// handleChat 实现 POST /v1/chat/completions。
func (e *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	arrival := emuArrival(r)
	cfg := e.cfg.Load()
	var req emuChatRequest
	er := e.readJSON(r, func(body []byte) *emuErr { return decodeChatBody(cfg, body, &req) })
	var run *emuRun
	if er == nil {
		run, er = e.planChat(cfg, &req)
	}
	e.start(w, r, cfg, arrival, req.Stream, run, er)
}

// planChat 校验 chat 请求并生成全部 choice。
func (e *Server) planChat(cfg *Config, req *emuChatRequest) (*emuRun, *emuErr) {
	if er := e.checkModel(cfg, req.Model, true); er != nil {
		return nil, er
	}
	maxTok := req.MaxCompletionTokens
	param := "max_completion_tokens"
	if maxTok == nil {
		maxTok, param = req.MaxTokens, "max_tokens"
	}
	s, er := validateSampling(&req.emuCommon, cfg, maxTok)
	if er != nil {
		return nil, er
	}
	p, er := parseMessages(req.Messages, cfg.Defects.ImageNotValidated)
	if er != nil {
		return nil, er
	}
	run := &emuRun{kind: emuKindChat, cfg: cfg, stream: req.Stream, cmplLogprobs: -1, created: time.Now().Unix()}
	// logprobs
	if req.Logprobs != nil && *req.Logprobs {
		if cfg.DisableLogprobs {
			return nil, emuBadRequest("logprobs", "logprobs are not supported by this server")
		}
		run.logprobs = true
	}
	if req.TopLogprobs != nil && !cfg.Defects.NoParamValidation {
		tl := *req.TopLogprobs
		switch {
		case tl < 0:
			return nil, emuBadRequest("top_logprobs", "`top_logprobs` must be a positive value.")
		case tl > 20:
			return nil, emuBadRequest("top_logprobs", "Requested sample logprobs of "+strconv.Itoa(tl)+", which is greater than max allowed: 20")
		case !run.logprobs && tl > 0:
			return nil, emuBadRequest("top_logprobs", "when using `top_logprobs`, `logprobs` must be set to true.")
		}
	}
	if req.TopLogprobs != nil {
		run.topLogprobs = max(*req.TopLogprobs, 0)
	}
	// 工具
	in := &emuGenInput{key: p.all, s: s, ignoreEOS: req.IgnoreEOS, includeStr: req.IncludeStopStrInOutput,
		stopIDs: req.StopTokenIDs, stream: req.Stream}
	e.applyLogitBias(cfg, in, req.LogitBias, slices.Values(p.texts))
	if er := e.planTools(cfg, req, p, in); er != nil {
		return nil, er
	}
	fn, er := guidedSpec(cfg, &req.emuCommon)
	if er != nil {
		return nil, er
	}
	if in.tool == nil {
		if fn != nil {
			in.hasFixed, in.fixedFn = true, fn
		} else if txt, ok := emu.ScriptedAnswer(p.lastUser); ok {
			in.hasFixed, in.fixed = true, txt
		}
	}
	// 推理
	if cfg.Reasoning {
		in.reasoning = true
		if v, ok := req.ChatTemplateKwargs["enable_thinking"].(bool); ok && !v && !cfg.Defects.ThinkingNotDisabled {
			in.reasoning = false
		}
		if v, ok := req.ChatTemplateKwargs["thinking"].(bool); ok && !v && !cfg.Defects.ThinkingNotDisabled {
			in.reasoning = false
		}
		if req.IncludeReasoning != nil && !*req.IncludeReasoning {
			in.reasoning = false
		}
		in.inContent = cfg.ReasoningInContent
	}
	run.promptTokens = p.tokens()
	if cfg.EnablePrefixCaching {
		h := emu.NewTokenHasher(cfg.BlockSize)
		for _, t := range p.texts {
			h.Text(t)
		}
		for i := 0; i < p.imageTokens; i++ {
			h.Token(emuImageTokenID)
		}
		run.perf.hasher, run.perf.hashes = h, h.Hashes
	}
	if cfg.Defects.ImageIgnored {
		run.promptTokens -= p.imageTokens
	}
	if cfg.Defects.HistoryIgnored {
		run.promptTokens = emuCount(p.lastUser)
	}
	budget, er := contextCheck(cfg, s, run.promptTokens, param)
	if er != nil {
		return nil, er
	}
	in.budget = budget
	e.setStreamOpts(run, cfg, &req.emuCommon)
	planPD(cfg, run, req.KVTransferParams)
	run.id = e.newID(cfg, "chatcmpl-")
	n := s.n
	if cfg.Defects.NIgnored {
		n = 1
	}
	for i := 0; i < n; i++ {
		run.choices = append(run.choices, e.genChoice(cfg, in, i))
	}
	return run, nil
}

// setStreamOpts 解析 stream_options（DisableStreamUsage 时忽略）。
func (e *Server) setStreamOpts(run *emuRun, cfg *Config, c *emuCommon) {
	if c.StreamOptions == nil || cfg.DisableStreamUsage || !c.Stream {
		return
	}
	run.includeUsage = c.StreamOptions.IncludeUsage != nil && *c.StreamOptions.IncludeUsage
	run.continuous = run.includeUsage && c.StreamOptions.ContinuousUsageStats != nil && *c.StreamOptions.ContinuousUsageStats &&
		!cfg.UsageOnlyAtEnd
}

// planTools 校验 tools/tool_choice（vLLM 的 400 规则），并决定本轮是否调用工具。
func (e *Server) planTools(cfg *Config, req *emuChatRequest, p *emuPrompt, in *emuGenInput) *emuErr {
	choice := "auto"
	named := ""
	tc := bytes.TrimSpace(req.ToolChoice)
	hasChoice := len(tc) > 0 && string(tc) != "null"
	if hasChoice {
		if tc[0] == '"' {
			_ = json.Unmarshal(tc, &choice)
		} else {
			var obj struct {
				Type     string `json:"type"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if err := json.Unmarshal(tc, &obj); err != nil || obj.Function.Name == "" {
				return emuBadRequest("tool_choice", "Invalid tool_choice: expected \"none\", \"auto\", \"required\" or a named function")
			}
			choice, named = "named", obj.Function.Name
		}
		switch choice {
		case "none", "auto", "required", "named":
		default:
			return emuBadRequest("tool_choice", "Invalid tool_choice "+strconv.Quote(choice))
		}
	}
	validate := !cfg.Defects.NoToolChoiceValidation
	if req.Tools != nil && len(req.Tools) == 0 && validate {
		return emuBadRequest("tools", "`tools` must be a non-empty list when provided.")
	}
	if len(req.Tools) == 0 {
		if hasChoice && choice != "none" && validate {
			return emuBadRequest("tool_choice", "When using `tool_choice`, `tools` must be set.")
		}
		return nil
	}
	for i, t := range req.Tools {
		if t.Function.Name == "" {
			return emuBadRequest("tools", fmt.Sprintf("tools[%d].function.name is required", i))
		}
		if len(t.Function.Parameters) > 0 && validate {
			if er := validateSchema(t.Function.Parameters); er != nil {
				er.param = "tools"
				return er
			}
		}
	}
	if choice == "none" {
		return nil
	}
	if cfg.DisableTools {
		return emuBadRequest("tool_choice", `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`)
	}
	if choice == "named" {
		for i := range req.Tools {
			if req.Tools[i].Function.Name == named {
				in.tool, in.named = &req.Tools[i], true
				return nil
			}
		}
		if validate {
			return emuBadRequest("tool_choice", "Tool '"+named+"' has not been passed in `tools`.")
		}
		in.tool, in.named = &req.Tools[0], true
		return nil
	}
	if choice == "auto" && p.lastRole == "tool" && !cfg.Defects.ToolResultIgnored {
		return nil // 已有工具结果：用正文回答
	}
	in.tool = &req.Tools[emu.Hash(p.all)%uint64(len(req.Tools))]
	return nil
}

// handleCompletions 实现 POST /v1/completions。
func (e *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	arrival := emuArrival(r)
	cfg := e.cfg.Load()
	var req emuCompletionRequest
	er := e.readJSON(r, func(body []byte) *emuErr { return decodeJSON(body, &req) })
	var run *emuRun
	if er == nil {
		run, er = e.planCompletion(cfg, &req)
	}
	e.start(w, r, cfg, arrival, req.Stream, run, er)
}

// parsePrompts 解析 completions 的 prompt：字符串、字符串数组、token id 数组或其数组。
// 返回每个提示的文本（token id 提示以十进制拼接作为生成键）与 token 数。
func parsePrompts(raw json.RawMessage) (texts []string, counts []int, isText bool, er *emuErr) {
	raw = bytes.TrimSpace(raw)
	bad := emuBadRequest("prompt", "prompt must be a string, a list of strings, a list of token ids or a list of lists of token ids")
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, false, emuBadRequest("prompt", "prompt is required")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, []int{tokenize.Count(s)}, true, nil
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		if len(ss) == 0 {
			return nil, nil, false, emuBadRequest("prompt", "prompt must not be empty")
		}
		for _, x := range ss {
			texts, counts = append(texts, x), append(counts, tokenize.Count(x))
		}
		return texts, counts, true, nil
	}
	idsText := func(ids []int) string {
		var sb strings.Builder
		for _, id := range ids {
			sb.WriteString(strconv.Itoa(id))
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		if len(ids) == 0 {
			return nil, nil, false, emuBadRequest("prompt", "prompt must not be empty")
		}
		return []string{idsText(ids)}, []int{len(ids)}, false, nil
	}
	var idss [][]int
	if json.Unmarshal(raw, &idss) == nil && len(idss) > 0 {
		for _, x := range idss {
			texts, counts = append(texts, idsText(x)), append(counts, len(x))
		}
		return texts, counts, false, nil
	}
	return nil, nil, false, bad
}

// emuDefaultCompletionMaxTokens 是 /v1/completions 未给 max_tokens 时的默认值（vLLM 为 16）。
const emuDefaultCompletionMaxTokens = 16

// planCompletion 校验 completions 请求并生成全部 choice（每个提示 n 个）。
func (e *Server) planCompletion(cfg *Config, req *emuCompletionRequest) (*emuRun, *emuErr) {
	if er := e.checkModel(cfg, req.Model, true); er != nil {
		return nil, er
	}
	if req.Suffix != nil && !cfg.Defects.NoParamValidation {
		return nil, emuBadRequest("suffix", "suffix is not currently supported")
	}
	mt := req.MaxTokens
	if mt == nil {
		d := emuDefaultCompletionMaxTokens
		mt = &d
	}
	s, er := validateSampling(&req.emuCommon, cfg, mt)
	if er != nil {
		return nil, er
	}
	texts, counts, isText, er := parsePrompts(req.Prompt)
	if er != nil {
		return nil, er
	}
	if cfg.Defects.BatchIgnored && len(texts) > 1 {
		texts, counts = texts[:1], counts[:1]
	}
	run := &emuRun{kind: emuKindCompletion, cfg: cfg, stream: req.Stream, cmplLogprobs: -1, created: time.Now().Unix()}
	if req.Logprobs != nil {
		switch {
		case cfg.DisableLogprobs:
			return nil, emuBadRequest("logprobs", "logprobs are not supported by this server")
		case (*req.Logprobs < 0 || *req.Logprobs > 20) && !cfg.Defects.NoParamValidation:
			return nil, emuBadRequest("logprobs", "Requested sample logprobs of "+strconv.Itoa(*req.Logprobs)+", which is greater than max allowed: 20")
		}
		run.cmplLogprobs = max(*req.Logprobs, 0)
	}
	fn, er := guidedSpec(cfg, &req.emuCommon)
	if er != nil {
		return nil, er
	}
	e.setStreamOpts(run, cfg, &req.emuCommon)
	planPD(cfg, run, req.KVTransferParams)
	run.id = e.newID(cfg, "cmpl-")
	if cfg.EnablePrefixCaching {
		// 多个提示的批量请求按一条序列建模（各提示依次拼接），见 docs/emulator.md。
		h := emu.NewTokenHasher(cfg.BlockSize)
		for _, t := range texts {
			h.Text(t)
		}
		run.perf.hasher, run.perf.hashes = h, h.Hashes
	}
	n := s.n
	if cfg.Defects.NIgnored {
		n = 1
	}
	for pi, text := range texts {
		budget, er := contextCheck(cfg, s, counts[pi], "max_tokens")
		if er != nil {
			er.param = "prompt"
			return nil, er
		}
		run.promptTokens += counts[pi]
		in := &emuGenInput{key: "\x01" + text, s: s, budget: budget, ignoreEOS: req.IgnoreEOS,
			includeStr: req.IncludeStopStrInOutput, stopIDs: req.StopTokenIDs, stream: req.Stream}
		e.applyLogitBias(cfg, in, req.LogitBias, func(yield func(string) bool) { yield(text) })
		if fn != nil {
			in.hasFixed, in.fixedFn = true, fn
		} else if txt, ok := emu.ScriptedAnswer(text); ok {
			in.hasFixed, in.fixed = true, txt
		}
		for i := 0; i < n; i++ {
			c := e.genChoice(cfg, in, i)
			c.index = pi*n + i
			if req.Echo && isText && !cfg.Defects.EchoIgnored {
				c.echo = text
			}
			run.choices = append(run.choices, c)
		}
	}
	return run, nil
}

package emulator

import (
	"context"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	emu "github.com/vllm-cibench/cibench/internal/emulator"
)

// emuDeltaKind 是一个流式 delta 的种类。
type emuDeltaKind uint8

const (
	emuDReasoning emuDeltaKind = iota
	emuDContent
	emuDToolHead
	emuDToolArgs
	emuDEcho
)

// emuDelta 是一个流式 chunk 的内容；from/to 是它覆盖的正文片段区间（用于 logprobs）。
type emuDelta struct {
	kind     emuDeltaKind
	text     string
	from, to int
	ntok     int
}

// deltas 把一个 choice 切成流式 delta：每个 delta 含 TokensPerChunk 个 token，
// 推理、正文、工具调用互不混在同一个 delta 中。
func (c *emuChoice) deltas(tpc int, showReasoning bool) []emuDelta {
	out := make([]emuDelta, 0, (len(c.reasoning)+len(c.content))/tpc+4)
	if c.echo != "" {
		out = append(out, emuDelta{kind: emuDEcho, text: c.echo})
	}
	group := func(kind emuDeltaKind, pieces []string, lp bool) {
		for i := 0; i < len(pieces); i += tpc {
			j := min(i+tpc, len(pieces))
			var text string
			if j == i+1 {
				text = pieces[i]
			} else {
				text = strings.Join(pieces[i:j], "")
			}
			d := emuDelta{kind: kind, text: text, ntok: j - i}
			if lp {
				d.from, d.to = i, j
			}
			out = append(out, d)
		}
	}
	if showReasoning {
		group(emuDReasoning, c.reasoning, false)
	} else if len(c.reasoning) > 0 {
		// 推理被隐藏时其 token 仍然计入，但不产生可见 delta：并入第一个可见 delta 的计数。
		out = append(out, emuDelta{kind: emuDContent, ntok: len(c.reasoning)})
	}
	group(emuDContent, c.content, true)
	for _, t := range c.tools {
		out = append(out, emuDelta{kind: emuDToolHead, text: t.name})
		group(emuDToolArgs, t.argPieces, false)
	}
	return out
}

// serve 执行故障注入与排队，然后按时间表写出流式或非流式响应，并更新指标与访问日志。
func (e *Server) serve(w http.ResponseWriter, r *http.Request, run *emuRun) {
	cfg := run.cfg
	e.serving.Add(1)
	defer e.serving.Add(-1)
	fault := e.failer.Next(cfg.FailureRate, cfg.FailureKinds)
	run.fault = fault
	e.sampleLatency(run)
	switch fault {
	case "429", "500", "503":
		st, _ := strconv.Atoi(fault)
		msg := map[string]string{"429": "Too many requests (injected fault)", "500": "Internal server error (injected fault)",
			"503": "Service unavailable (injected fault)"}[fault]
		e.writeError(w, cfg, &emuErr{status: st, msg: msg})
		e.logAccess(r, st, run.stream, run.promptTokens, 0, run.arrival, fault)
		return
	}
	if run.stream {
		// vLLM 的流式响应在请求进入引擎之前就发出响应头（uvicorn 收到 http.response.start 即写出，
		// StreamingResponse 之后才迭代生成器、把请求交给引擎）：客户端的“到响应头”因此不含排队与
		// prefill。这里同样在排队之前写出并刷新。
		e.streamHead(w, run)
	}
	ctx := r.Context()
	queued := time.Now()
	var first time.Time
	// release 把请求移出运行批次（释放槽位或 KV 块），只做一次：请求结束时在最后一段字节之前（见下面的
	// run.finished，与 vLLM 的调度器同一步释放结束的请求），没结束（取消、故障、写出失败）时在返回时；
	// 调用过就置为 nil。
	var release func()
	defer func() {
		if release != nil {
			release()
		}
	}()
	if e.perf != nil {
		var ok bool
		if first, ok = e.perfAdmit(ctx, run, queued); !ok {
			e.logAccess(r, 499, run.stream, run.promptTokens, 0, run.arrival, "client_cancelled")
			return
		}
		release = func() { e.perf.Release(run.perf.seq) }
	} else {
		if err := e.sched.Acquire(ctx); err != nil {
			e.logAccess(r, 499, run.stream, run.promptTokens, 0, run.arrival, "client_cancelled")
			return
		}
		release = e.sched.Release
		started := time.Now()
		run.scheduled = started
		// 注入的 TTFT 从请求到达处理函数算起（再加 MaxNumSeqs 排队），模拟器自己读取、
		// 解析、规划请求的时间从这份预算里扣除而不是叠加在上面：否则并发请求同时到达时，
		// 这段 CPU 排队会让客户端看到的 TTFT 系统性地大于注入值。预算不够扣时不早于开始时刻。
		first = started.Add(max(0, run.ttft+time.Duration(run.promptTokens)*run.prefillPer-queued.Sub(run.arrival)))
	}
	// 请求在响应的最后一段字节写出之前离开运行批次并记录指标（run.finishNow 由写出函数在那一刻调用），与 vLLM v1 相同：
	// 输出处理循环在把最终输出交给 API server 的同一轮里记录 FinishedRequestStats，HTTP 层之后才写出
	// 最后的 chunk 与 [DONE]。于是客户端读到结尾后立即抓 /metrics，这个请求一定已在直方图里；以前在写完
	// 之后才记录，分片运行合并出的服务端窗口在负载下会少掉最后的请求。最后的写出失败（客户端已走）时
	// 请求照样算作完成，vLLM 的引擎也已经把它记为成功。
	compl := 0
	for _, c := range run.choices {
		compl += c.tokens
	}
	run.finished = func() {
		e.commitGenerated(run) // 生成的 token 进前缀缓存：要在释放 KV 块之前（Perf.CommitGenerated 只认运行中的序列）
		rel := release
		release = nil
		rel()
		if !run.perf.firstAt.IsZero() {
			first = run.perf.firstAt // 抢占可能推迟了首 token
		}
		e.metrics.PromptTokens.Add(float64(run.promptTokens))
		e.metrics.GenerationTokens.Add(float64(compl))
		for _, c := range run.choices {
			e.metrics.Success(c.finish)
		}
		end := time.Now()
		ttft := first.Sub(run.arrival)
		if first.After(end) {
			ttft = end.Sub(run.arrival)
		}
		e.metrics.TTFT.Observe(ttft.Seconds())
		e.metrics.E2E.Observe(end.Sub(run.arrival).Seconds())
		e.metrics.ObservePhases(queued, run.scheduled, run.arrival.Add(ttft), end)
		if compl > 1 {
			e.metrics.TPOT.Observe((end.Sub(run.arrival) - ttft).Seconds() / float64(compl-1))
		}
		if cfg.SpecDecode {
			e.countSpec(cfg, compl)
		}
	}
	status := http.StatusOK
	var ok bool
	if run.stream {
		ok = e.writeStream(ctx, w, run, first)
	} else {
		status, ok = e.writeNonStream(ctx, w, run, first)
	}
	if ok {
		run.finishNow() // 写出函数的每条成功路径都已调用过（只记一次）；这里兜住将来新增的路径
	} else if status == http.StatusOK {
		status = 499
	}
	e.logAccess(r, status, run.stream, run.promptTokens, compl, run.arrival, run.fault)
}

// countSpec 更新投机解码计数：每步起草 3 个 token，按接受率接受。
func (e *Server) countSpec(cfg *Config, tokens int) {
	const k = 3
	perStep := 1 + k*cfg.SpecAcceptRate
	drafts := int(float64(tokens)/perStep + 0.999)
	e.metrics.SpecDrafts.Add(float64(drafts))
	e.metrics.SpecDraft.Add(float64(drafts * k))
	e.metrics.SpecAccepted.Add(float64(int(float64(drafts*k)*cfg.SpecAcceptRate + 0.5)))
}

// emuWaiter 用一个可复用的 time.Timer 等待到绝对时刻，避免逐次相对睡眠造成的漂移；
// 零延迟时不创建定时器。
type emuWaiter struct{ t *time.Timer }

// until 等待到 deadline；ctx 结束时返回 false。
func (wt *emuWaiter) until(ctx context.Context, deadline time.Time) bool {
	d := time.Until(deadline)
	if d <= 0 {
		return ctx.Err() == nil
	}
	if wt.t == nil {
		wt.t = time.NewTimer(d)
	} else {
		wt.t.Reset(d)
	}
	select {
	case <-ctx.Done():
		wt.t.Stop()
		return false
	case <-wt.t.C:
		return true
	}
}

// spinSlack 是 untilPrecise 最后改为让出 CPU 轮询的时长。Linux 上 Go 的定时器经由
// epoll_wait 的毫秒超时唤醒，空闲进程里会晚到最多约 1 ms，这会原样叠加到注入的 TTFT 上。
const spinSlack = time.Millisecond

// untilPrecise 与 until 相同，但更准：先用定时器睡到 deadline 前 spinSlack，余下的
// 不足 1 ms 用 runtime.Gosched 轮询到点。轮询会占 CPU，所以同一时刻只允许一个流这样做
// （spinner 计数）；其余的流退回普通定时器——并发高时进程本来就忙，定时器也随调度
// 及时得到检查。只用于首 token，逐 chunk 的等待按绝对时刻排程，晚到不会累积。
func (wt *emuWaiter) untilPrecise(ctx context.Context, deadline time.Time, spinner *atomic.Int32) bool {
	if !wt.until(ctx, deadline.Add(-spinSlack)) {
		return false
	}
	if time.Until(deadline) <= 0 {
		return ctx.Err() == nil
	}
	if spinner.Add(1) > 1 {
		spinner.Add(-1)
		return wt.until(ctx, deadline)
	}
	defer spinner.Add(-1)
	for time.Now().Before(deadline) {
		if ctx.Err() != nil {
			return false
		}
		runtime.Gosched()
	}
	return true
}

// stop 释放定时器。
func (wt *emuWaiter) stop() {
	if wt.t != nil {
		wt.t.Stop()
	}
}

// abortConn 模拟连接中断：劫持底层连接后直接关闭（客户端看到 unexpected EOF）；
// 无法劫持（如 HTTP/2）时用 http.ErrAbortHandler 让 net/http 中止响应。
func abortConn(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// emuStreamState 是写流过程中每个 choice 的游标。
type emuStreamState struct {
	c      *emuChoice
	ds     []emuDelta
	sent   int // 已累计的 completion token
	finish bool
}

// streamHead 写出并刷新流式响应的状态行与响应头（只一次）。
func (e *Server) streamHead(w http.ResponseWriter, run *emuRun) {
	h := w.Header()
	if run.cfg.Defects.WrongContentType {
		h.Set("Content-Type", "application/json")
	} else {
		h.Set("Content-Type", "text/event-stream; charset=utf-8")
	}
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	run.headSent = true
}

// writeStream 写出 SSE 流。时间表：第 j 步（每个 choice 各一个 chunk）在
// first + j·ITL 发出；role chunk 与第 0 步一起发出。返回是否完整写完。
func (e *Server) writeStream(ctx context.Context, w http.ResponseWriter, run *emuRun, first time.Time) bool {
	cfg := run.cfg
	d := &cfg.Defects
	if !run.headSent {
		e.streamHead(w, run)
	}
	fl, _ := w.(http.Flusher)
	enc := newEmuEncoder(run)
	defer enc.release()

	showReasoning := !d.ReasoningMissing
	states := make([]emuStreamState, len(run.choices))
	steps := 0
	for i, c := range run.choices {
		states[i] = emuStreamState{c: c, ds: c.deltas(cfg.TokensPerChunk, showReasoning && !c.hideReason)}
		steps = max(steps, len(states[i].ds))
	}
	steps = max(steps, 1)
	faultAt := -1
	switch run.fault {
	case "stream_error", "drop", "truncate":
		faultAt = steps / 2
	}
	var wt emuWaiter
	defer wt.stop()
	perf := run.perf.seq != nil
	zero := cfg.TTFT == 0 && cfg.ITL == 0 && cfg.PrefillPerToken == 0 && !perf
	batch := zero && cfg.CoalesceZeroLatency
	var last time.Time
	for j := 0; j < steps; j++ {
		if perf {
			if !e.perfStep(ctx, &wt, run, j, first) {
				return false
			}
			run.perf.gen += stepTokens(states, j)
		}
		if j == 0 && !zero && !perf && !wt.untilPrecise(ctx, first, &e.spinner) {
			return false
		}
		if j > 0 && !zero && !perf && !wt.until(ctx, first.Add(time.Duration(j)*run.itl)) {
			return false
		}
		if j == faultAt {
			switch run.fault {
			case "stream_error":
				enc.buf = append(enc.buf, "data: "...)
				enc.buf = appendErrorJSON(enc.buf, &emuErr{status: 500, typ: "InternalServerError", msg: "Engine error during generation (injected fault)"})
				enc.buf = append(enc.buf, "\n\ndata: [DONE]\n\n"...)
				enc.flush(w, fl)
				return false
			case "drop":
				enc.flush(w, fl)
				abortConn(w)
				return false
			case "truncate":
				enc.flush(w, fl)
				return false
			}
		}
		for i := range states {
			st := &states[i]
			if j == 0 && run.kind == emuKindChat && !d.NoRoleChunk {
				enc.roleChunk(st.c.index)
			}
			if j >= len(st.ds) {
				if j == 0 { // 没有任何 delta（例如在位置 0 命中 stop）：只发结束 chunk
					st.finish = true
					enc.chunk(st, emuDelta{kind: emuDContent}, true, j)
				}
				continue
			}
			dl := st.ds[j]
			st.sent += dl.ntok
			isLast := j == len(st.ds)-1
			if d.StreamDropsDelta && !isLast && j == max(len(st.ds)/2, 6) && dl.kind == emuDContent && dl.text != "" {
				continue // 缺陷：这个增量不下发（token 已计入 sent）
			}
			enc.chunk(st, dl, isLast, j)
			if isLast && d.DoubleFinish {
				enc.chunk(st, emuDelta{kind: emuDContent}, true, j)
			}
		}
		// 有延迟时每步都刷新到连接，客户端才能测到真实的 ITL；零延迟且开启
		// CoalesceZeroLatency 时整段响应在自己的缓冲里攒到 coalesceBytes 才交给
		// net/http（不主动刷新），常见长度的流因此只有一次大写入，结束时由 net/http
		// 连同分块结束符一起落到连接上：每个响应约 3 次 write 系统调用而不是每 chunk 一次。
		if batch {
			if len(enc.buf) < coalesceBytes {
				continue
			}
			if !enc.write(w) {
				return false
			}
		} else if !enc.flush(w, fl) {
			return false
		}
		now := time.Now()
		if j > 0 {
			e.metrics.ITL.Observe(now.Sub(last).Seconds())
		}
		last = now
	}
	run.finishNow() // 最后的 usage chunk 与 [DONE] 写出之前：见 serve
	if run.includeUsage && !d.NoUsageChunk {
		enc.usageChunk()
	}
	if !d.NoDone {
		enc.buf = append(enc.buf, "data: [DONE]\n\n"...)
	}
	if batch {
		return enc.write(w) // 处理函数返回时 net/http 把它与结束符一起刷新
	}
	return enc.flush(w, fl)
}

// coalesceBytes 是 CoalesceZeroLatency 模式下一次交给 net/http 的最少字节数：
// 足够大以容纳常见的整段流，又远小于缓冲池保留上限（1 MiB）。
const coalesceBytes = 64 << 10

// writeNonStream 等到整段生成完成的时刻后写出 JSON 响应。
func (e *Server) writeNonStream(ctx context.Context, w http.ResponseWriter, run *emuRun, first time.Time) (int, bool) {
	cfg := run.cfg
	steps := 1
	var states []emuStreamState
	if run.perf.seq != nil {
		states = make([]emuStreamState, len(run.choices))
	}
	for i, c := range run.choices {
		ds := c.deltas(cfg.TokensPerChunk, true)
		steps = max(steps, len(ds))
		if states != nil {
			states[i].ds = ds
		}
	}
	var wt emuWaiter
	defer wt.stop()
	if run.perf.seq != nil {
		// 性能模型下逐步走完同样的时间表（每步的 KV 分配、批倍数、可能的抢占），
		// 只是不写出 chunk。
		for j := 0; j < steps; j++ {
			if !e.perfStep(ctx, &wt, run, j, first) {
				return 499, false
			}
			run.perf.gen += stepTokens(states, j)
		}
	} else if !wt.until(ctx, first.Add(time.Duration(steps-1)*run.itl)) {
		return 499, false
	}
	switch run.fault {
	case "stream_error":
		e.writeError(w, cfg, &emuErr{status: 500, msg: "Engine error during generation (injected fault)"})
		return 500, false
	case "drop":
		abortConn(w)
		return 0, false
	case "truncate":
		body := e.nonStreamBody(run)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body[:len(body)/2])
		abortConn(w)
		return 200, false
	}
	body := e.nonStreamBody(run)
	run.finishNow() // 响应体写出之前：见 serve
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(body)
	return http.StatusOK, err == nil
}

// finishFor 返回对外报告的 finish_reason（应用 WrongFinishReason 与 NamedToolFinishToolCalls 缺陷）。
func finishFor(cfg *Config, c *emuChoice) string {
	f := c.finish
	if cfg.Defects.WrongFinishReason {
		switch f {
		case "stop":
			f = "length"
		case "length":
			f = "stop"
		}
	}
	if c.named && cfg.Defects.NamedToolFinishToolCalls && f == "stop" {
		f = "tool_calls"
	}
	return f
}

// usageNumbers 返回 (prompt, completion, total)，应用 WrongUsageTotal 缺陷。
func usageNumbers(run *emuRun) (int, int, int, int) {
	compl, reason := 0, 0
	for _, c := range run.choices {
		compl += c.tokens
		reason += c.reasonToks
	}
	total := run.promptTokens + compl
	if run.cfg.Defects.WrongUsageTotal {
		total++
	}
	return run.promptTokens, compl, total, reason
}

// emuObject 返回 object 字段（应用 WrongObject 缺陷）。
func emuObject(run *emuRun, chunk bool) string {
	wrong := run.cfg.Defects.WrongObject
	if run.kind == emuKindCompletion {
		if wrong {
			return "completion"
		}
		return "text_completion"
	}
	if chunk != wrong {
		return "chat.completion.chunk"
	}
	return "chat.completion"
}

// emuLogprob 返回第 j 个正文 token 的确定性 logprob（[-2, 0) 区间）。
func emuLogprob(c *emuChoice, j int) float64 {
	return -float64(emu.Mix(c.lpSeed, uint64(j))%2000+1) / 1000
}

// emuTopAlternatives 返回第 j 个 token 的 k 个候选（第一个是被采样的 token 本身），
// 候选互不相同，logprob 递减（LogprobsUnsorted 缺陷时倒序，被采样 token 排在最后）。
func (e *Server) emuTopAlternatives(cfg *Config, c *emuChoice, j int, tok string, k int) ([]string, []float64) {
	toks := make([]string, 0, k)
	lps := make([]float64, 0, k)
	if k == 0 {
		return toks, lps
	}
	lp := emuLogprob(c, j)
	toks, lps = append(toks, tok), append(lps, lp)
	seen := map[string]bool{tok: true}
	for s := uint64(0); len(toks) < k && s < 1000; s++ {
		alt := e.engine.Vocab.RandomPiece(emu.Mix(c.lpSeed^uint64(j)<<20, s))
		if seen[alt] {
			continue
		}
		seen[alt] = true
		toks = append(toks, alt)
		lps = append(lps, lp-0.5*float64(len(toks)-1)-0.25)
	}
	if cfg.Defects.LogprobsUnsorted {
		slices.Reverse(toks)
		slices.Reverse(lps)
	}
	return toks, lps
}

// lpCount 返回应输出的候选数（应用 LogprobsWrongCount 缺陷）。
func lpCount(cfg *Config, k int) int {
	if cfg.Defects.LogprobsWrongCount {
		if k <= 1 {
			return k + 1
		}
		return k - 1
	}
	return k
}

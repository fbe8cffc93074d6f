package emulator

import (
	"net/http"
	"strconv"
	"strings"

	emu "github.com/vllm-cibench/cibench/internal/emulator"
)

// emuEncoder 以 append 方式手写 SSE chunk 的 JSON（不经反射），并复用池化缓冲：
// 这是模拟器能支撑每秒数十万 chunk 的关键。每个流一个编码器，不并发使用。
type emuEncoder struct {
	run  *emuRun
	bp   *[]byte
	buf  []byte
	head string // `data: {"id":…,"object":…,"created":…,"model":…,"choices":[`
}

// newEmuEncoder 为 run 准备好公共前缀。
func newEmuEncoder(run *emuRun) *emuEncoder {
	bp := run.em.bufs.get()
	enc := &emuEncoder{run: run, bp: bp, buf: (*bp)[:0]}
	b := append(enc.buf, `data: {"id":`...)
	b = emu.AppendString(b, run.id)
	b = append(b, `,"object":`...)
	b = emu.AppendString(b, emuObject(run, true))
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, run.created, 10)
	b = append(b, `,"model":`...)
	b = emu.AppendString(b, run.cfg.Model)
	b = append(b, `,"choices":[`...)
	enc.head = string(b)
	enc.buf = b[:0]
	return enc
}

// release 归还缓冲。
func (enc *emuEncoder) release() {
	*enc.bp = enc.buf
	enc.run.em.bufs.put(enc.bp)
}

// flush 写出缓冲并刷新到连接；写失败（客户端断开）返回 false。
func (enc *emuEncoder) flush(w http.ResponseWriter, fl http.Flusher) bool {
	if len(enc.buf) == 0 {
		return true
	}
	_, err := w.Write(enc.buf)
	enc.buf = enc.buf[:0]
	if err != nil {
		return false
	}
	if fl != nil {
		fl.Flush()
	}
	return true
}

// write 把缓冲写入 ResponseWriter 但不刷新（由 net/http 的缓冲决定何时落到连接上）。
func (enc *emuEncoder) write(w http.ResponseWriter) bool {
	_, err := w.Write(enc.buf)
	enc.buf = enc.buf[:0]
	return err == nil
}

// tail 追加 usage 字段（如需要）与事件结尾。
func (enc *emuEncoder) tail(completion, step int) {
	run := enc.run
	b := enc.buf
	if run.includeUsage {
		if run.continuous {
			if run.cfg.Defects.UsageNotMonotonic && step == 2 {
				completion = 0
			}
			b = append(b, `,"usage":{"prompt_tokens":`...)
			b = strconv.AppendInt(b, int64(run.promptTokens), 10)
			b = append(b, `,"total_tokens":`...)
			b = strconv.AppendInt(b, int64(run.promptTokens+completion), 10)
			b = append(b, `,"completion_tokens":`...)
			b = strconv.AppendInt(b, int64(completion), 10)
			b = append(b, '}')
		} else {
			b = append(b, `,"usage":null`...)
		}
	}
	enc.buf = append(b, "}\n\n"...)
}

// chunkHead 返回 chunk 的公共前缀。StreamIDChanges 缺陷时每个 chunk 换一个新 id
// （前缀不变），模拟逐 chunk 重新包装的代理；正常情况下整个流共用 run.id。
func (enc *emuEncoder) chunkHead() string {
	run := enc.run
	if !run.cfg.Defects.StreamIDChanges {
		return enc.head
	}
	prefix := run.id[:strings.IndexByte(run.id, '-')+1]
	return strings.Replace(enc.head, run.id, run.em.newID(run.cfg, prefix), 1)
}

// roleChunk 追加 chat 的首个 chunk：{"role":"assistant","content":""}。
func (enc *emuEncoder) roleChunk(index int) {
	b := append(enc.buf, enc.chunkHead()...)
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(b, `,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`...)
	enc.buf = b
	enc.tail(0, 0)
}

// chunk 追加一个 delta chunk；last 为真时带 finish_reason 与 stop_reason。
func (enc *emuEncoder) chunk(st *emuStreamState, dl emuDelta, last bool, step int) {
	run := enc.run
	cfg := run.cfg
	c := st.c
	b := append(enc.buf, enc.chunkHead()...)
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(c.index), 10)
	if run.kind == emuKindChat {
		b = append(b, `,"delta":{`...)
		switch dl.kind {
		case emuDReasoning:
			b = append(b, '"')
			b = append(b, cfg.ReasoningField...)
			b = append(b, `":`...)
			b = emu.AppendString(b, dl.text)
		case emuDToolHead:
			t := c.tools[0]
			b = append(b, `"tool_calls":[{"index":0,"id":`...)
			b = emu.AppendString(b, t.id)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = emu.AppendString(b, t.name)
			b = append(b, `}}]`...)
		case emuDToolArgs:
			b = append(b, `"tool_calls":[{"index":0,"function":{"arguments":`...)
			b = emu.AppendString(b, dl.text)
			b = append(b, `}}]`...)
		default:
			b = append(b, `"content":`...)
			b = appendSkewed(b, cfg, dl, step)
		}
		b = append(b, `},"logprobs":`...)
		if run.logprobs && dl.kind == emuDContent && dl.to > dl.from {
			b = enc.appendChatLogprobs(b, c, dl.from, dl.to)
		} else {
			b = append(b, "null"...)
		}
	} else {
		b = append(b, `,"text":`...)
		b = appendSkewed(b, cfg, dl, step)
		b = append(b, `,"logprobs":`...)
		if run.cmplLogprobs >= 0 && dl.kind == emuDContent && dl.to > dl.from {
			b = enc.appendCmplLogprobs(b, c, dl.from, dl.to)
		} else {
			b = append(b, "null"...)
		}
	}
	if last {
		b = append(b, `,"finish_reason":`...)
		b = emu.AppendString(b, finishFor(cfg, c))
		b = append(b, `,"stop_reason":`...)
		b = append(b, c.stopReason...)
	} else {
		b = append(b, `,"finish_reason":null`...)
		if run.kind == emuKindCompletion {
			b = append(b, `,"stop_reason":null`...)
		}
	}
	b = append(b, "}]"...)
	enc.buf = b
	enc.tail(st.sent, step)
}

// appendSkewed 追加 delta 的文本；CountSkew 时偶数步的正文末尾多一个 "."（见 Config.CountSkew）。
func appendSkewed(b []byte, cfg *Config, dl emuDelta, step int) []byte {
	if cfg.CountSkew && dl.kind == emuDContent && dl.text != "" && step%2 == 0 {
		return emu.AppendString(b, dl.text+".")
	}
	return emu.AppendString(b, dl.text)
}

// appendUsage 追加 usage 对象。
func appendUsage(b []byte, run *emuRun) []byte {
	p, c, t, r := usageNumbers(run)
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(p), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(t), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(c), 10)
	if r > 0 {
		b = append(b, `,"completion_tokens_details":{"reasoning_tokens":`...)
		b = strconv.AppendInt(b, int64(r), 10)
		b = append(b, '}')
	}
	// vLLM 只在 --enable-prompt-tokens-details 且命中数大于 0 时给出
	// prompt_tokens_details（serving_chat.py: `if self.enable_prompt_tokens_details and
	// num_cached_tokens`），否则为 null；逐 chunk 的 continuous usage 不带它。
	if run.cfg.EnablePromptTokensDetails && run.perf.cached > 0 {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(run.perf.cached), 10)
		return append(b, "}}"...)
	}
	b = append(b, `,"prompt_tokens_details":null}`...)
	return b
}

// usageChunk 追加 include_usage 的最后一个 chunk（choices 为空数组）。
func (enc *emuEncoder) usageChunk() {
	b := append(enc.buf, enc.chunkHead()...)
	b = append(b, `],"usage":`...)
	b = appendUsage(b, enc.run)
	enc.buf = append(b, "}\n\n"...)
}

// appendChatLogprobs 追加 chat 形式的 logprobs：{"content":[{token,logprob,bytes,top_logprobs}]}。
func (enc *emuEncoder) appendChatLogprobs(b []byte, c *emuChoice, from, to int) []byte {
	em := enc.run.em
	k := lpCount(enc.run.cfg, enc.run.topLogprobs)
	b = append(b, `{"content":[`...)
	for j := from; j < to; j++ {
		if j > from {
			b = append(b, ',')
		}
		tok := c.content[j]
		b = appendTokenLP(b, tok, emuLogprob(c, j))
		b = b[:len(b)-1]
		b = append(b, `,"top_logprobs":[`...)
		toks, lps := em.emuTopAlternatives(enc.run.cfg, c, j, tok, k)
		for i := range toks {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendTokenLP(b, toks[i], lps[i])
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}"...)
}

// appendTokenLP 追加 {"token":…,"logprob":…,"bytes":[…]}。
func appendTokenLP(b []byte, tok string, lp float64) []byte {
	b = append(b, `{"token":`...)
	b = emu.AppendString(b, tok)
	b = append(b, `,"logprob":`...)
	b = emu.AppendFloat(b, lp)
	b = append(b, `,"bytes":[`...)
	for i := 0; i < len(tok); i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(tok[i]), 10)
	}
	return append(b, "]}"...)
}

// appendCmplLogprobs 追加 completions 形式的 logprobs（text_offset/token_logprobs/tokens/top_logprobs）。
func (enc *emuEncoder) appendCmplLogprobs(b []byte, c *emuChoice, from, to int) []byte {
	em := enc.run.em
	k := lpCount(enc.run.cfg, enc.run.cmplLogprobs)
	off := len(c.echo)
	for j := 0; j < from; j++ {
		off += len(c.content[j])
	}
	b = append(b, `{"text_offset":[`...)
	for j := from; j < to; j++ {
		if j > from {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(off), 10)
		off += len(c.content[j])
	}
	b = append(b, `],"token_logprobs":[`...)
	for j := from; j < to; j++ {
		if j > from {
			b = append(b, ',')
		}
		b = emu.AppendFloat(b, emuLogprob(c, j))
	}
	b = append(b, `],"tokens":[`...)
	for j := from; j < to; j++ {
		if j > from {
			b = append(b, ',')
		}
		b = emu.AppendString(b, c.content[j])
	}
	b = append(b, `],"top_logprobs":[`...)
	for j := from; j < to; j++ {
		if j > from {
			b = append(b, ',')
		}
		toks, lps := em.emuTopAlternatives(enc.run.cfg, c, j, c.content[j], k)
		b = append(b, '{')
		for i := range toks {
			if i > 0 {
				b = append(b, ',')
			}
			b = emu.AppendString(b, toks[i])
			b = append(b, ':')
			b = emu.AppendFloat(b, lps[i])
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// nonStreamBody 构造非流式响应体（chat.completion 或 text_completion）。
func (e *Server) nonStreamBody(run *emuRun) []byte {
	cfg := run.cfg
	enc := &emuEncoder{run: run}
	b := make([]byte, 0, 1024)
	b = append(b, `{"id":`...)
	b = emu.AppendString(b, run.id)
	b = append(b, `,"object":`...)
	b = emu.AppendString(b, emuObject(run, false))
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, run.created, 10)
	b = append(b, `,"model":`...)
	b = emu.AppendString(b, cfg.Model)
	b = append(b, `,"choices":[`...)
	for i, c := range run.choices {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(c.index), 10)
		text := c.echo + strings.Join(c.content, "")
		if run.kind == emuKindChat {
			b = append(b, `,"message":{"role":"assistant","content":`...)
			switch {
			case len(c.tools) > 0 && c.named:
				b = append(b, `""`...)
			case len(c.tools) > 0 && text == "":
				b = append(b, "null"...)
			default:
				b = emu.AppendString(b, text)
			}
			b = append(b, `,"refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[`...)
			for ti, t := range c.tools {
				if ti > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"id":`...)
				b = emu.AppendString(b, t.id)
				b = append(b, `,"type":"function","function":{"name":`...)
				b = emu.AppendString(b, t.name)
				b = append(b, `,"arguments":`...)
				b = emu.AppendString(b, t.args)
				b = append(b, "}}"...)
			}
			b = append(b, ']')
			if !c.hideReason && !cfg.Defects.ReasoningMissing {
				b = append(b, `,"`...)
				b = append(b, cfg.ReasoningField...)
				b = append(b, `":`...)
				if len(c.reasoning) > 0 {
					b = emu.AppendString(b, strings.Join(c.reasoning, ""))
				} else {
					b = append(b, "null"...)
				}
			}
			b = append(b, `},"logprobs":`...)
			if run.logprobs && len(c.content) > 0 {
				b = enc.appendChatLogprobs(b, c, 0, len(c.content))
			} else {
				b = append(b, "null"...)
			}
		} else {
			b = append(b, `,"text":`...)
			b = emu.AppendString(b, text)
			b = append(b, `,"logprobs":`...)
			if run.cmplLogprobs >= 0 && len(c.content) > 0 {
				b = enc.appendCmplLogprobs(b, c, 0, len(c.content))
			} else {
				b = append(b, "null"...)
			}
		}
		b = append(b, `,"finish_reason":`...)
		b = emu.AppendString(b, finishFor(cfg, c))
		b = append(b, `,"stop_reason":`...)
		b = append(b, c.stopReason...)
		if run.kind == emuKindCompletion {
			b = append(b, `,"prompt_logprobs":null`...)
		}
		b = append(b, '}')
	}
	b = append(b, `]`...)
	if run.kind == emuKindChat {
		b = append(b, `,"service_tier":null,"system_fingerprint":null`...)
	}
	b = append(b, `,"usage":`...)
	b = appendUsage(b, run)
	if run.kind == emuKindChat {
		b = append(b, `,"prompt_logprobs":null`...)
	}
	b = append(b, `,"kv_transfer_params":`...)
	b = appendKVTransfer(b, run)
	return append(b, '}')
}

package emulator

import (
	"math"
	"strconv"
	"strings"

	emu "github.com/vllm-cibench/cibench/internal/emulator"
	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// emuToolCall 是一个计划好的工具调用。
type emuToolCall struct {
	id, name, args string
	argPieces      []string
}

// emuChoice 是一个 choice 的完整生成结果；流式与非流式共用，保证两者文本一致。
type emuChoice struct {
	index       int
	echo        string   // completions echo 的提示文本（先于生成文本输出）
	reasoning   []string // 推理 token 片段
	content     []string // 正文 token 片段
	tools       []emuToolCall
	named       bool   // 具名 tool_choice（结束原因为 stop，content 为 ""）
	finish      string // stop | length | tool_calls
	stopReason  []byte // JSON：null、字符串或整数
	tokens      int    // completion_tokens
	reasonToks  int    // usage.completion_tokens_details.reasoning_tokens
	lpSeed      uint64
	hideReason  bool // ReasoningMissing：推理已生成（计入 token）但不返回
	contentNull bool // 非流式 message.content 为 null（auto/required 工具调用）
}

// emuGenInput 汇总生成一个 choice 所需的全部输入。
type emuGenInput struct {
	key        string // 确定性生成的键（提示全文）
	s          *emuSampling
	budget     int // 有效的 max_tokens
	ignoreEOS  bool
	reasoning  bool // 本请求是否输出推理
	inContent  bool // 推理放进 <think>…</think>
	fixed      string
	hasFixed   bool // 内容固定（评测答案、结构化输出）
	fixedFn    func(h uint64) string
	tool       *emuTool
	named      bool
	includeStr bool
	stopIDs    []int
	stream     bool
	// bias 是 logit_bias 解析到片段之后的偏置（片段 → 偏置）；id 先在生成词表中查找，
	// 找不到时在本请求提示词的 token 中查找（/tokenize 给出的 id 正来自提示词）。
	bias map[string]float64
}

// applyLogitBias 把 logit_bias 的 token id 解析为片段，填入 in.bias。prompt 是本请求
// 提示词的全部文本；既不在生成词表、也不在提示词中的 id 没有可见效果（真实模型的词表
// 更大，模拟器只认识它说得出的片段）。
func (e *Server) applyLogitBias(cfg *Config, in *emuGenInput, bias map[string]float64, prompt func(yield func(string) bool)) {
	if len(bias) == 0 || cfg.Defects.LogitBiasIgnored {
		return
	}
	var fromPrompt map[int]string
	for k, v := range bias {
		id, err := strconv.Atoi(k)
		if err != nil || v == 0 {
			continue
		}
		p, ok := e.engine.Vocab.PieceByID(id)
		if !ok {
			if fromPrompt == nil {
				fromPrompt = map[int]string{}
				for text := range prompt {
					tokenize.Walk(text, func(piece string) bool {
						piece = strings.TrimLeft(piece, " \t\r\n")
						if piece != "" {
							if c := piece[0]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
								piece = " " + piece // 词在句中带前导空格，拼接后仍各自成 token
							}
							fromPrompt[tokenize.ID(piece)] = piece
						}
						return true
					})
				}
			}
			if p, ok = fromPrompt[id]; !ok {
				continue
			}
		}
		if in.bias == nil {
			in.bias = map[string]float64{}
		}
		in.bias[p] += v
	}
}

// shaped 报告本请求是否带有改变 token 分布形状的参数，需要走 emu.Vocab.Sample
// 的分布采样；否则走 Text 快路径（贪心或 temperature 1 的默认采样），保持吞吐与既有输出。
func (in *emuGenInput) shaped() bool {
	s := in.s
	return len(in.bias) > 0 || s.presence != 0 || s.frequency != 0 || s.topP < 1 || s.topK > 1 ||
		(!s.greedy() && s.temperature != 1)
}

// emuNullJSON 是 JSON null。
var emuNullJSON = []byte("null")

// genChoice 确定性地生成第 i 个 choice。规则见 docs/emulator.md：
// 贪心（temperature 0，或 top_k 1）只由提示决定；否则由提示、seed、温度与 choice 序号
// 决定，没有 seed 则每次不同。步骤：取随机源（genDraw）→ 推理与正文 → 推理放进正文
// （<think>）→ 按 max_tokens 截断 → stop 字符串与 stop token → 同批的数值差异 → 缺陷。
func (e *Server) genChoice(cfg *Config, in *emuGenInput, i int) *emuChoice {
	d := e.newDraw(cfg, in, i)
	c := &emuChoice{index: i, stopReason: emuNullJSON, lpSeed: emu.Mix(d.h, 13)}
	reasoning, content := e.genText(cfg, in, c, &d)
	if in.inContent && len(reasoning) > 0 {
		content = thinkInContent(reasoning, content, cfg.Defects.ThinkTagsUnclosed)
		reasoning = nil
	}
	content = c.applyBudget(in, &d, reasoning, content)
	c.content = c.applyStops(cfg, in, &d, content)
	if cfg.BatchVariance && len(in.s.stop) == 0 && len(in.stopIDs) == 0 && e.serving.Load() > 0 {
		e.batchVariance(c, &d)
	}
	if cfg.Defects.LengthDropsText && c.finish == "length" && len(c.tools) == 0 {
		c.content, c.reasoning = nil, nil
	}
	if in.reasoning && cfg.Defects.ReasoningMissing {
		c.hideReason = true
	}
	return c
}

// genDraw 是一个 choice 的随机源与采样参数。
type genDraw struct {
	// h 决定本 choice 的文本（含 seed、温度、序号与缺陷的混入）；backbone 是分布采样的
	// “贪心骨架”，只由提示决定。
	h, backbone uint64
	// sp 是分布采样的参数，只在请求带有改变分布形状的参数时非 nil（见 shaped）。
	sp *emu.Sampling
	// budget 是有效的 max_tokens（MaxTokensIgnored 缺陷会多给 3 个）。
	budget int
	// random 报告正文是否是随机文本（不是工具参数或固定内容）：stop 与同批差异只作用于它。
	random bool
}

// newDraw 按 docs/emulator.md 的规则取第 i 个 choice 的随机源。
func (e *Server) newDraw(cfg *Config, in *emuGenInput, i int) genDraw {
	h := emu.Hash(cfg.Model, in.key)
	d := genDraw{backbone: h, budget: in.budget}
	if cfg.Defects.StreamDiffers && in.stream {
		d.backbone = emu.Mix(d.backbone, 0xd1ff)
	}
	sampled := !in.s.greedy() && !cfg.Defects.TemperatureIgnored
	if sampled {
		if in.s.seed != nil && !cfg.Defects.SeedIgnored {
			h = emu.Mix(h, uint64(*in.s.seed))
			h = emu.Mix(h, math.Float64bits(in.s.temperature))
		} else {
			h = emu.Mix(h, e.engine.Fresh(uint64(cfg.Seed)))
		}
		h = emu.Mix(h, uint64(i))
	} else if in.s.greedy() && in.s.seed != nil && cfg.Defects.GreedySeedDependent {
		h = emu.Mix(h, uint64(*in.s.seed))
	}
	if cfg.Defects.StreamDiffers && in.stream {
		h = emu.Mix(h, 0xd1ff)
	}
	d.h = h
	if cfg.Defects.MaxTokensIgnored {
		d.budget += 3
	}
	if in.shaped() {
		d.sp = &emu.Sampling{TopP: in.s.topP, Presence: in.s.presence, Frequency: in.s.frequency, Bias: in.bias}
		if sampled {
			d.sp.Temperature = in.s.temperature
			if in.s.topK > 1 {
				d.sp.TopK = in.s.topK
			}
		} else {
			d.backbone = h // 贪心：骨架就是贪心文本本身（含 GreedySeedDependent 等缺陷的混入）
		}
	}
	return d
}

// pieces 生成 n 个 token 片段：带分布参数时按 sp 采样（骨架 bb、随机源 hh），否则走 Text 快路径。
func (d *genDraw) pieces(v *emu.Vocab, dst []string, bb, hh uint64, n int) []string {
	if d.sp != nil {
		return v.Sample(dst, bb, hh, n, d.sp)
	}
	t := v.NewText(hh)
	return t.AppendPieces(dst, n)
}

// genText 生成推理文本与正文（或工具调用，写进 c.tools）；正文比预算多生成一个，让超出预算的
// 自然长度在 applyBudget 里被判为 length。
func (e *Server) genText(cfg *Config, in *emuGenInput, c *emuChoice, d *genDraw) (reasoning, content []string) {
	v := e.engine.Vocab
	h := d.h
	if in.reasoning {
		reasoning = d.pieces(v, nil, emu.Mix(d.backbone, 1), emu.Mix(h, 1), reasoningLen(cfg, h))
	}
	switch {
	case in.tool != nil:
		args := emuToolArgs(in.tool, emu.Mix(h, 3), cfg.Defects.ToolArgsInvalid)
		c.tools = []emuToolCall{{id: "chatcmpl-tool-" + strconv.FormatUint(emu.Mix(h, 4), 16), name: in.tool.Function.Name,
			args: args, argPieces: tokenize.Split(args)}}
		c.named = in.named
		c.contentNull = !in.named
	case in.hasFixed:
		text := in.fixed
		if in.fixedFn != nil {
			text = in.fixedFn(emu.Mix(h, 5))
		}
		content = tokenize.Split(text)
	default:
		d.random = true
		n := emu.NaturalLength(h)
		if in.ignoreEOS {
			n = d.budget
		}
		if in.reasoning {
			n = max(n-len(reasoning)/2, 1)
		}
		if in.s.minTokens > n+len(reasoning) {
			n = in.s.minTokens - len(reasoning)
		}
		n = min(n, d.budget+1) // 多生成一个，让超出预算的自然长度在下面被判为 length
		content = d.pieces(v, make([]string, 0, n+1), emu.Mix(d.backbone, 2), emu.Mix(h, 2), n)
	}
	return reasoning, content
}

// thinkInContent 把推理文本放进正文开头的 <think>…</think>（unclosed 时缺少结束标签），
// 与正文的第一个片段一起重新切分。
func thinkInContent(reasoning, content []string, unclosed bool) []string {
	var sb strings.Builder
	sb.WriteString("<think>")
	for _, p := range reasoning {
		sb.WriteString(p)
	}
	if !unclosed {
		sb.WriteString("</think>")
	}
	sb.WriteString("\n\n")
	if len(content) == 0 {
		return tokenize.Split(sb.String())
	}
	sb.WriteString(content[0])
	return append(tokenize.Split(sb.String()), content[1:]...)
}

// applyBudget 按预算截断（先推理后正文，工具参数截断成不完整的 JSON），写好 c 的推理、结束
// 原因与 token 数，返回截断后的正文。
func (c *emuChoice) applyBudget(in *emuGenInput, d *genDraw, reasoning, content []string) []string {
	budget := d.budget
	c.finish = "stop"
	if len(reasoning) >= budget {
		reasoning, content, c.tools = reasoning[:budget], nil, nil
		c.finish = "length"
	} else if rest := budget - len(reasoning); len(content) > rest || (in.ignoreEOS && len(content) == rest) {
		if len(content) > rest {
			content = content[:rest]
		}
		c.finish = "length"
	}
	c.reasoning = reasoning
	c.reasonToks = len(reasoning)
	toolTokens := 0
	if len(c.tools) > 0 {
		toolTokens = len(c.tools[0].argPieces)
		if len(reasoning)+toolTokens > budget {
			// 参数被截断：与真实服务一样得到不完整的 JSON。
			keep := budget - len(reasoning)
			c.tools[0].argPieces = c.tools[0].argPieces[:keep]
			c.tools[0].args = strings.Join(c.tools[0].argPieces, "")
			toolTokens = keep
			c.finish = "length"
		} else if !in.named {
			c.finish = "tool_calls"
		}
	}
	c.tokens = len(reasoning) + len(content) + toolTokens
	return content
}

// applyStops 处理 stop 字符串与 stop token，返回最终的正文（结束原因、token 数与 stop_reason
// 写进 c）：随机文本在确定的位置“说出”第一个 stop 字符串；任何内容都扫描首次出现的 stop
// 并在其前截断。
func (c *emuChoice) applyStops(cfg *Config, in *emuGenInput, d *genDraw, content []string) []string {
	if len(in.s.stop) > 0 && len(c.tools) == 0 {
		if d.random {
			p := 3 + int(emu.Mix(d.h, 6)%6)
			p = max(p, in.s.minTokens-len(c.reasoning))
			if p < len(content) {
				content = append(content[:p:p], in.s.stop[0])
			}
		}
		if cut, ntok, stop, ok := emuCutAtStop(content, in.s.stop, in.includeStr || cfg.Defects.StopStringKept); ok {
			content = cut
			c.tokens = len(c.reasoning) + ntok
			c.finish = "stop"
			c.stopReason = emu.AppendString(nil, stop)
		}
	} else if len(in.stopIDs) > 0 && d.random {
		p := 3 + int(emu.Mix(d.h, 6)%6)
		if p < len(content) {
			content = content[:p]
			c.tokens = len(c.reasoning) + p + 1
			c.finish = "stop"
			c.stopReason = strconv.AppendInt(nil, int64(in.stopIDs[0]), 10)
		}
	}
	return content
}

// batchVariance 模拟与别的请求同批时的数值差异：从第 k 个 token 起换成同一采样分布（同样的
// 温度、top_p/top_k、惩罚与 logit_bias）下的另一段文本，就像接近平手的 logits 在另一个批里
// 翻转了一次。只作用于随机正文与推理。
func (e *Server) batchVariance(c *emuChoice, d *genDraw) {
	v := e.engine.Vocab
	h := d.h
	alt := emu.Mix(h, e.batchN.Add(1)^0xba7c)
	if d.random {
		c.content = splice(h, c.content, d.pieces(v, make([]string, 0, len(c.content)), emu.Mix(emu.Mix(d.backbone, alt), 2), emu.Mix(emu.Mix(h, alt), 2), len(c.content)))
	}
	c.reasoning = splice(emu.Mix(h, 7), c.reasoning, d.pieces(v, make([]string, 0, len(c.reasoning)), emu.Mix(emu.Mix(d.backbone, alt), 1), emu.Mix(emu.Mix(h, alt), 1), len(c.reasoning)))
}

// emuCutAtStop 在片段序列拼接成的文本中查找最早出现的 stop 字符串并截断。
// 返回截断后的片段、生成到 stop 结束处所用的 token 数、命中的 stop 与是否命中。
func emuCutAtStop(pieces []string, stops []string, keep bool) ([]string, int, string, bool) {
	var sb strings.Builder
	for _, p := range pieces {
		sb.WriteString(p)
	}
	text := sb.String()
	best, which := -1, ""
	for _, s := range stops {
		if i := strings.Index(text, s); i >= 0 && (best < 0 || i < best) {
			best, which = i, s
		}
	}
	if best < 0 {
		return pieces, len(pieces), "", false
	}
	cutAt := best
	if keep {
		cutAt = best + len(which)
	}
	end := best + len(which)
	var out []string
	ntok, pos := 0, 0
	for _, p := range pieces {
		if pos < end {
			ntok++
		}
		if pos < cutAt {
			if pos+len(p) <= cutAt {
				out = append(out, p)
			} else {
				out = append(out, p[:cutAt-pos])
			}
		}
		pos += len(p)
	}
	return out, ntok, which, true
}

// emuToolArgs 按函数 parameters schema 生成参数 JSON；invalid 为 true 时故意违反 schema。
func emuToolArgs(t *emuTool, seed uint64, invalid bool) string {
	if invalid {
		return `["invalid", 1]`
	}
	out, err := emu.GenerateJSON(t.Function.Parameters, seed)
	if err != nil {
		return "{}"
	}
	return string(out)
}

// splice 模拟与别的请求成批造成的漂移（Config.BatchVariance）：前 k 个片段（k ∈ [4, 11]，
// 由 h 决定；与真实服务一样前几个 token 通常一致）保留 orig，之后取 alt，片段数不变。
func splice(h uint64, orig, alt []string) []string {
	k := 4 + int(emu.Mix(h, 0xba7c)%8)
	if len(orig) <= k || len(alt) != len(orig) {
		return orig
	}
	return append(append(make([]string, 0, len(orig)), orig[:k]...), alt[k:]...)
}

// reasoningLen 返回推理文本的 token 数：Config.ReasoningTokens，或由提示决定的短长度。
func reasoningLen(cfg *Config, h uint64) int {
	if cfg.ReasoningTokens > 0 {
		return cfg.ReasoningTokens
	}
	return emu.ReasoningLength(h)
}

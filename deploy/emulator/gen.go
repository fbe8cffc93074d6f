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
// 决定，没有 seed 则每次不同。
func (e *Server) genChoice(cfg *Config, in *emuGenInput, i int) *emuChoice {
	h := emu.Hash(cfg.Model, in.key)
	backbone := h // 分布采样的“贪心骨架”：只由提示决定
	if cfg.Defects.StreamDiffers && in.stream {
		backbone = emu.Mix(backbone, 0xd1ff)
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
	c := &emuChoice{index: i, stopReason: emuNullJSON, lpSeed: emu.Mix(h, 13)}
	budget := in.budget
	if cfg.Defects.MaxTokensIgnored {
		budget += 3
	}
	v := e.engine.Vocab

	// 分布采样的参数（只在带有改变分布形状的参数时使用，见 shaped）。
	var sp *emu.Sampling
	if in.shaped() {
		sp = &emu.Sampling{TopP: in.s.topP, Presence: in.s.presence, Frequency: in.s.frequency, Bias: in.bias}
		if sampled {
			sp.Temperature = in.s.temperature
			if in.s.topK > 1 {
				sp.TopK = in.s.topK
			}
		} else {
			backbone = h // 贪心：骨架就是贪心文本本身（含 GreedySeedDependent 等缺陷的混入）
		}
	}

	// 推理文本。
	var reasoning []string
	if in.reasoning {
		if sp != nil {
			reasoning = v.Sample(nil, emu.Mix(backbone, 1), emu.Mix(h, 1), reasoningLen(cfg, h), sp)
		} else {
			t := v.NewText(emu.Mix(h, 1))
			reasoning = t.AppendPieces(nil, reasoningLen(cfg, h))
		}
	}

	// 正文（或工具参数）。
	var content []string
	random := false
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
		random = true
		n := emu.NaturalLength(h)
		if in.ignoreEOS {
			n = budget
		}
		if in.reasoning {
			n = max(n-len(reasoning)/2, 1)
		}
		if in.s.minTokens > n+len(reasoning) {
			n = in.s.minTokens - len(reasoning)
		}
		n = min(n, budget+1) // 多生成一个，让超出预算的自然长度在下面被判为 length
		if sp != nil {
			content = v.Sample(make([]string, 0, n+1), emu.Mix(backbone, 2), emu.Mix(h, 2), n, sp)
		} else {
			t := v.NewText(emu.Mix(h, 2))
			content = t.AppendPieces(make([]string, 0, n+1), n)
		}
	}
	if in.inContent && len(reasoning) > 0 {
		var sb strings.Builder
		sb.WriteString("<think>")
		for _, p := range reasoning {
			sb.WriteString(p)
		}
		if !cfg.Defects.ThinkTagsUnclosed {
			sb.WriteString("</think>")
		}
		sb.WriteString("\n\n")
		if len(content) > 0 {
			sb.WriteString(content[0])
			content = append(tokenize.Split(sb.String()), content[1:]...)
		} else {
			content = tokenize.Split(sb.String())
		}
		reasoning = nil
	}

	// 预算：先推理后正文。
	finish := "stop"
	if len(reasoning) >= budget {
		reasoning, content, c.tools = reasoning[:budget], nil, nil
		finish = "length"
	} else if rest := budget - len(reasoning); len(content) > rest || (in.ignoreEOS && len(content) == rest) {
		if len(content) > rest {
			content = content[:rest]
		}
		finish = "length"
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
			finish = "length"
		} else if !in.named {
			finish = "tool_calls"
		}
	}
	tokens := len(reasoning) + len(content) + toolTokens

	// stop 字符串：随机文本在确定的位置“说出”第一个 stop 字符串；任何内容都扫描
	// 首次出现的 stop 并在其前截断。
	if len(in.s.stop) > 0 && len(c.tools) == 0 {
		if random {
			p := 3 + int(emu.Mix(h, 6)%6)
			p = max(p, in.s.minTokens-len(reasoning))
			if p < len(content) {
				content = append(content[:p:p], in.s.stop[0])
			}
		}
		if cut, ntok, stop, ok := emuCutAtStop(content, in.s.stop, in.includeStr || cfg.Defects.StopStringKept); ok {
			content = cut
			tokens = len(reasoning) + ntok
			finish = "stop"
			c.stopReason = emu.AppendString(nil, stop)
		}
	} else if len(in.stopIDs) > 0 && random {
		p := 3 + int(emu.Mix(h, 6)%6)
		if p < len(content) {
			content = content[:p]
			tokens = len(reasoning) + p + 1
			finish = "stop"
			c.stopReason = strconv.AppendInt(nil, int64(in.stopIDs[0]), 10)
		}
	}
	if cfg.BatchVariance && len(in.s.stop) == 0 && len(in.stopIDs) == 0 && e.serving.Load() > 0 {
		// 与别的请求同批：从第 k 个 token 起换成同一采样分布（同样的温度、top_p/top_k、惩罚与
		// logit_bias）下的另一段文本，就像接近平手的 logits 在另一个批里翻转了一次。
		alt := emu.Mix(h, e.batchN.Add(1)^0xba7c)
		regen := func(n int, bb, hh uint64) []string {
			if sp != nil {
				return v.Sample(make([]string, 0, n), bb, hh, n, sp)
			}
			t := v.NewText(hh)
			return t.AppendPieces(make([]string, 0, n), n)
		}
		if random {
			content = splice(h, content, regen(len(content), emu.Mix(emu.Mix(backbone, alt), 2), emu.Mix(emu.Mix(h, alt), 2)))
		}
		c.reasoning = splice(emu.Mix(h, 7), c.reasoning, regen(len(c.reasoning), emu.Mix(emu.Mix(backbone, alt), 1), emu.Mix(emu.Mix(h, alt), 1)))
	}
	c.content = content
	c.tokens = tokens
	c.finish = finish
	if cfg.Defects.LengthDropsText && finish == "length" && len(c.tools) == 0 {
		c.content, c.reasoning = nil, nil
	}
	if in.reasoning && cfg.Defects.ReasoningMissing {
		c.hideReason = true
	}
	return c
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

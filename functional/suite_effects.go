package functional

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// 本文件是 params_boundary 套件中的“参数效果”用例：服务端不仅要接受 top_p、top_k、
// temperature、presence/frequency penalty、logit_bias 与 logprobs，还要让它们真正改变
// 生成结果。每个用例都对同一提示、同一组 seed 做成对比较（A 取值对 B 取值），只断言
// vLLM 采样器在数学上保证的方向，并留出足够余量，使真实模型每次都通过；余量的理由写在
// 各用例的 Description 中（也见 docs/functional.md）。
//
// vLLM（v1 sampler）对每一步 logits 的处理顺序：logit_bias → repetition/frequency/presence
// penalty（frequency、presence 只按本次已生成 token 的计数）→ temperature 为 0 时取 argmax；
// 否则 logits/temperature → top_k → top_p（在 top_k 之后重新归一化的分布上保留累计概率首次
// 达到 top_p 的最小集合，至少一个 token）→ 用按请求 seed 播种的生成器采样。logprobs 默认
// 取自处理前的原始 logits（logprobs_mode=raw_logprobs），top_logprobs 由 topk 得到，降序。

// effectSeeds 是成对比较使用的 seed；effectWideSeeds 用于需要更多样本对的温度用例。
var (
	effectSeeds     = []int{5, 6, 7, 8, 9, 10}
	effectWideSeeds = []int{5, 6, 7, 8, 9, 10, 11, 12}
	penaltySeeds    = []int{5, 6, 7}
)

// 惩罚项用例的生成长度与重复率差的下限；温度用例的公共前缀余量（rune）。
const (
	temperaturePrefixMargin = 8
	penaltyTokens           = 64
	penaltyMargin           = 0.10
)

// effectCases 生成参数效果用例（都属于 params_boundary 套件）。
func effectCases(cfg Config) []Case {
	pc := cfg.ParamsBoundary
	// isolated：用例把输出与另一个请求的贪心输出逐字比较，需要固定的批（Case.Isolated）。
	cs := &caseSet{suite: SuiteParamsBoundary}
	cs.isolated("top_p_effect", fmt.Sprintf("top_p=0.1 versus top_p=1 at temperature 1 over %d seeds: fewer distinct outputs, and closer to the greedy output "+
		"(median common prefix with it is longer). vLLM keeps only the smallest set of most probable tokens whose mass reaches top_p, "+
		"so at 0.1 every step whose top token has ≥10%% probability (almost every step of an instruct model) is the argmax whatever the seed; "+
		"at 1 nothing is cut and %d tokens at temperature 1 over %d seeds do not collapse to fewer outputs", len(effectSeeds), pc.SampleTokens, len(effectSeeds)),
		func(ctx context.Context, t *T) { runTopPEffect(ctx, t, pc) })
	cs.isolated("top_k_effect", fmt.Sprintf("at temperature 1 over %d seeds, top_k=1 always gives the greedy (temperature 0) output while top_k=50 gives at least two "+
		"different outputs. vLLM masks all but the k largest logits before sampling: with k=1 only the argmax is left (temperature does not move it), "+
		"with k=50 dozens of candidates stay at every step", len(effectSeeds)),
		func(ctx context.Context, t *T) { runTopKEffect(ctx, t, pc) })
	cs.add("temperature_effect", fmt.Sprintf("temperature 1.5 versus 0.2 (top_p=1) over %d seeds: at least as many distinct outputs, and the mean pairwise common prefix "+
		"of the 0.2 samples is at least twice that of the 1.5 samples plus %d runes (two unrelated random texts share about 1). vLLM divides the logits by the temperature before softmax, so 0.2 raises every probability ratio to the 5th power "+
		"(samples stay on the greedy path for long stretches) and 1.5 flattens it (samples part within the first tokens)", len(effectWideSeeds), temperaturePrefixMargin),
		func(ctx context.Context, t *T) { runTemperatureEffect(ctx, t, pc) })
	for _, param := range []string{"presence_penalty", "frequency_penalty"} {
		for _, ep := range []string{"chat", "completions"} {
			id := param + "_effect"
			if ep == "completions" {
				id += "_completions"
			}
			cs.add(id, fmt.Sprintf("%s: %s=+2 versus -2 with ignore_eos, %d tokens, temperature 1 and the same %d seeds: the mean repeated-token ratio "+
				"(1 - distinct/total over words, CJK characters and punctuation) is at least %.2f lower. vLLM subtracts %s from the logit of every token "+
				"already generated, so +2 cuts the odds of a repeat by e^2 (7x) or more and -2 multiplies them by as much; real models then loop at -2 "+
				"and avoid repeats at +2, a gap of several tenths", ep, param, penaltyTokens, len(penaltySeeds), penaltyMargin, penaltyWhat(param)),
				func(ctx context.Context, t *T) { runPenaltyEffect(ctx, t, pc, param, ep) })
		}
	}
	if pc.LogitBias {
		cs.isolated("logit_bias_promote", "logit_bias +100 on the id of a prompt word (from /tokenize, add_special_tokens=false) at temperature 0 makes that word "+
			"fill at least half of the output, and appear more often than without the bias. vLLM adds the bias to the logit before penalties and "+
			"argmax; model logits span far less than 100, so the biased token wins every step",
			func(ctx context.Context, t *T) { runLogitBiasPromote(ctx, t, pc) })
		cs.isolated("logit_bias_ban", "logit_bias -100 on the first visible token of the greedy output (its id from /tokenize, leading whitespace "+
			"stripped) at temperature 0: the output changes and no longer starts with that token. vLLM adds -100 to that logit before the argmax, so any other token outranks it",
			func(ctx context.Context, t *T) { runLogitBiasBan(ctx, t, pc) })
	}
	if len(pc.TopLogprobs) > 0 {
		cs.add("logprobs_effect", "greedy decoding with logprobs and top_logprobs=5: every logprob is <= 0, each top_logprobs list is sorted descending, "+
			"the sampled token's logprob equals the first alternative's on at least 90% of tokens and is never below the last listed one. "+
			"vLLM takes top_logprobs with topk (sorted) over log-softmax values (<= 0), and the greedy token is the argmax of the same logits; "+
			"the 10% allowance covers a repetition_penalty from the model's generation_config, which moves the argmax but not the raw logprobs",
			func(ctx context.Context, t *T) { runLogprobsEffect(ctx, t, pc) })
	}
	return cs.cases
}

// penaltyWhat 用一句话说明惩罚项如何作用于 logits。
func penaltyWhat(param string) string {
	if param == "frequency_penalty" {
		return "frequency_penalty × (times the token was generated)"
	}
	return "presence_penalty once"
}

// samples 对每个 seed 发送 base 叠加 {"seed": seed} 的请求，返回输出文本（推理 + 正文）。
// 第一个请求用 chatCap：服务端拒绝该参数时按场景对 caps 的声明下结论（supported 即失败、
// probe 即 unsupported），之后的请求必须成功。
func samples(ctx context.Context, t *T, base body, param string, seeds []int, caps ...Capability) []string {
	out := make([]string, 0, len(seeds))
	for i, seed := range seeds {
		b := base.with(map[string]any{"seed": seed})
		var c *wireChat
		if i == 0 {
			c = t.chatCap(ctx, b, param, caps...)
		} else {
			c = t.chat(ctx, b)
		}
		out = append(out, t.output(c.Choices[0].Message))
	}
	return out
}

// distinct 返回不同字符串的个数。
func distinct(ss []string) int {
	m := map[string]bool{}
	for _, s := range ss {
		m[s] = true
	}
	return len(m)
}

// commonPrefix 返回 a 与 b 的公共前缀长度（按 rune 计）。
func commonPrefix(a, b string) int {
	n := 0
	for a != "" && b != "" {
		ra, sa := utf8.DecodeRuneInString(a)
		rb, sb := utf8.DecodeRuneInString(b)
		if ra != rb {
			break
		}
		n++
		a, b = a[sa:], b[sb:]
	}
	return n
}

// medianPrefix 返回每个样本与 ref 的公共前缀长度的中位数（偶数个取下中位数）。
func medianPrefix(ss []string, ref string) int {
	if len(ss) == 0 {
		return 0
	}
	ls := make([]int, len(ss))
	for i, s := range ss {
		ls[i] = commonPrefix(s, ref)
	}
	slices.Sort(ls)
	return ls[(len(ls)-1)/2]
}

// meanPairPrefix 返回样本两两之间公共前缀长度的平均值：越长说明样本越少分岔。
func meanPairPrefix(ss []string) float64 {
	sum, n := 0, 0
	for i := range ss {
		for j := i + 1; j < len(ss); j++ {
			sum += commonPrefix(ss[i], ss[j])
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(sum) / float64(n)
}

// units 把文本切成比较重复率用的单位：连续的字母数字串（小写）、每个 CJK 字符、
// 每个其他可见字符；空白与 NUL 分隔符不计。它近似 token，且不依赖服务端分词器。
func units(s string) []string {
	var out []string
	var word strings.Builder
	flush := func() {
		if word.Len() > 0 {
			out = append(out, word.String())
			word.Reset()
		}
	}
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Han, r) || unicode.In(r, unicode.Hiragana, unicode.Katakana, unicode.Hangul):
			flush()
			out = append(out, string(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '\'':
			word.WriteRune(unicode.ToLower(r))
		case unicode.IsSpace(r) || r == 0:
			flush()
		default:
			flush()
			out = append(out, string(r))
		}
	}
	flush()
	return out
}

// repeatRatio 返回 1 - 不同单位数/单位总数；空文本为 0。
func repeatRatio(s string) float64 {
	u := units(s)
	if len(u) == 0 {
		return 0
	}
	return 1 - float64(distinct(u))/float64(len(u))
}

// runTopPEffect 实现 top_p_effect。
func runTopPEffect(ctx context.Context, t *T, pc ParamsBoundaryConfig) {
	base := t.plainBody(pc.Prompt, pc.SampleTokens).with(map[string]any{"temperature": 1.0})
	low := samples(ctx, t, base.with(map[string]any{"top_p": 0.1}), "top_p=0.1", effectSeeds, CapTopP)
	high := samples(ctx, t, base.with(map[string]any{"top_p": 1.0}), "top_p=1", effectSeeds, CapTopP)
	greedy := t.output(t.chat(ctx, t.plainBody(pc.Prompt, pc.SampleTokens)).Choices[0].Message)
	dl, dh := distinct(low), distinct(high)
	if dh < 2 {
		t.Fatalf("top_p=1 at temperature 1 gave %d distinct output(s) for %d seeds: the server does not sample, so top_p cannot be judged", dh, len(effectSeeds))
	}
	if dl >= dh {
		t.Fatalf("top_p=0.1 gave %d distinct outputs and top_p=1 gave %d over %d seeds: top_p does not narrow sampling", dl, dh, len(effectSeeds))
	}
	pl, ph := medianPrefix(low, greedy), medianPrefix(high, greedy)
	if pl <= ph {
		t.Fatalf("median common prefix with the greedy output: top_p=0.1 %d runes, top_p=1 %d runes: top_p=0.1 is not closer to greedy", pl, ph)
	}
	t.Notef("distinct outputs top_p=0.1 %d, top_p=1 %d of %d; median prefix with greedy %d vs %d runes", dl, dh, len(effectSeeds), pl, ph)
}

// runTopKEffect 实现 top_k_effect。
func runTopKEffect(ctx context.Context, t *T, pc ParamsBoundaryConfig) {
	base := t.plainBody(pc.Prompt, pc.SampleTokens).with(map[string]any{"temperature": 1.0})
	one := samples(ctx, t, base.with(map[string]any{"top_k": 1}), "top_k=1", effectSeeds, CapTopK)
	fifty := samples(ctx, t, base.with(map[string]any{"top_k": 50, "top_p": 1.0}), "top_k=50", effectSeeds, CapTopK, CapTopP)
	greedy := t.output(t.chat(ctx, t.plainBody(pc.Prompt, pc.SampleTokens)).Choices[0].Message)
	for i, s := range one {
		if s != greedy {
			t.Fatalf("top_k=1 with seed %d differs from the greedy output: %q vs %q", effectSeeds[i], trim(s), trim(greedy))
		}
	}
	d := distinct(fifty)
	if d < 2 {
		t.Fatalf("top_k=50 at temperature 1 gave %d distinct output(s) for %d seeds, the same as top_k=1", d, len(effectSeeds))
	}
	t.Notef("distinct outputs top_k=1 1, top_k=50 %d of %d", d, len(effectSeeds))
}

// runTemperatureEffect 实现 temperature_effect。
func runTemperatureEffect(ctx context.Context, t *T, pc ParamsBoundaryConfig) {
	base := t.plainBody(pc.Prompt, pc.SampleTokens).with(map[string]any{"top_p": 1.0})
	cold := samples(ctx, t, base.with(map[string]any{"temperature": 0.2}), "temperature=0.2", effectWideSeeds)
	hot := samples(ctx, t, base.with(map[string]any{"temperature": 1.5}), "temperature=1.5", effectWideSeeds)
	dc, dh := distinct(cold), distinct(hot)
	if dh < 2 {
		t.Fatalf("temperature 1.5 gave %d distinct output(s) for %d seeds: the server does not sample", dh, len(effectWideSeeds))
	}
	if dh < dc {
		t.Fatalf("temperature 1.5 gave fewer distinct outputs (%d) than 0.2 (%d) over %d seeds", dh, dc, len(effectWideSeeds))
	}
	// 余量：两个独立的随机序列之间公共前缀平均约 1 个 rune，所以“随机但不缩放温度”的服务
	// 两边都约为 1；要求 0.2 至少是 1.5 的两倍再多 temperaturePrefixMargin 个 rune。
	pc2, ph := meanPairPrefix(cold), meanPairPrefix(hot)
	if pc2 < 2*ph+temperaturePrefixMargin {
		t.Fatalf("mean common prefix between samples: temperature 0.2 %.1f runes, 1.5 %.1f runes (want at least twice plus %d): "+
			"a lower temperature does not keep samples closer", pc2, ph, temperaturePrefixMargin)
	}
	t.Notef("distinct outputs 0.2 %d, 1.5 %d of %d; mean pairwise prefix %.1f vs %.1f runes", dc, dh, len(effectWideSeeds), pc2, ph)
}

// runPenaltyEffect 实现 presence/frequency penalty 的效果用例（chat 或 completions）。
func runPenaltyEffect(ctx context.Context, t *T, pc ParamsBoundaryConfig, param, ep string) {
	ratio := func(v float64) float64 {
		sum := 0.0
		for i, seed := range penaltySeeds {
			extra := map[string]any{param: v, "temperature": 1.0, "top_p": 1.0, "seed": seed, "ignore_eos": true}
			label := fmt.Sprintf("%s=%s", param, describe(v))
			var text string
			if ep == "chat" {
				b := t.plainBody(pc.Prompt, penaltyTokens).with(extra)
				var c *wireChat
				if i == 0 {
					c = t.chatCap(ctx, b, label, CapPenalties, CapTopP, CapIgnoreEOS)
				} else {
					c = t.chat(ctx, b)
				}
				text = t.output(c.Choices[0].Message)
			} else {
				b := t.completionBody(pc.Prompt, penaltyTokens).with(extra)
				var raw []byte
				if i == 0 {
					raw = t.postCap(ctx, "/v1/completions", b, label, CapPenalties, CapTopP, CapIgnoreEOS)
				} else {
					raw = t.postOK(ctx, "/v1/completions", b)
				}
				var c wireCompletion
				if err := json.Unmarshal(raw, &c); err != nil || len(c.Choices) == 0 {
					t.Fatalf("completions response without choices (%v)", err)
				}
				text = c.Choices[0].Text
			}
			sum += repeatRatio(text)
		}
		return sum / float64(len(penaltySeeds))
	}
	pos, neg := ratio(2), ratio(-2)
	if neg-pos < penaltyMargin {
		t.Fatalf("%s: mean repeated-token ratio %.3f at +2 and %.3f at -2 (want +2 lower by at least %.2f)", param, pos, neg, penaltyMargin)
	}
	t.Notef("mean repeated-token ratio +2 %.3f, -2 %.3f", pos, neg)
}

// tokenIDs 用 /tokenize（add_special_tokens=false）切分 text；服务端没有可用的 /tokenize 时跳过用例。
func tokenIDs(ctx context.Context, t *T, text string) []int {
	resp, err := t.Post(ctx, "/tokenize", map[string]any{"model": t.Model(), "prompt": text, "add_special_tokens": false})
	if err != nil {
		t.failErr("tokenize", err)
	}
	var tk struct {
		Tokens []int `json:"tokens"`
	}
	if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &tk) != nil {
		t.Skipf("server has no usable /tokenize (HTTP %d); cannot pick a token id for logit_bias", resp.Status)
	}
	return tk.Tokens
}

// runLogitBiasPromote 实现 logit_bias_promote：挑一个单独成 token 的提示词单词，对它加 +100。
func runLogitBiasPromote(ctx context.Context, t *T, pc ParamsBoundaryConfig) {
	t.need(CapTokenize, CapLogitBias)
	var words []string
	for _, w := range strings.FieldsFunc(pc.Prompt, func(r rune) bool { return !unicode.IsLetter(r) || r > unicode.MaxASCII }) {
		if len(w) >= 3 && !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	slices.SortStableFunc(words, func(a, b string) int { return len(b) - len(a) })
	word, id := "", -1
	for _, w := range words[:min(len(words), 4)] {
		for _, form := range []string{" " + w, w} {
			if ids := tokenIDs(ctx, t, form); len(ids) == 1 {
				word, id = w, ids[0]
				break
			}
		}
		if id >= 0 {
			break
		}
	}
	if id < 0 {
		t.Fatalf("no word of the prompt %q is a single token on this server; choose a prompt with a common English word", pc.Prompt)
	}
	b := t.plainBody(pc.Prompt, pc.SampleTokens)
	greedy := t.chat(ctx, b).Choices[0].Message.text()
	biased := t.chatCap(ctx, b.with(map[string]any{"logit_bias": map[string]any{strconv.Itoa(id): 100}}), "logit_bias", CapLogitBias).Choices[0].Message.text()
	count := func(s string) int { return strings.Count(strings.ToLower(s), strings.ToLower(word)) }
	if n := count(biased); n < pc.SampleTokens/2 || n <= count(greedy) {
		t.Fatalf("logit_bias +100 on %q (id %d): it appears %d times in %d tokens (%d times without the bias): %q",
			word, id, n, pc.SampleTokens, count(greedy), trim(biased))
	} else {
		t.Notef("%q (id %d) appears %d times with the bias, %d without", word, id, n, count(greedy))
	}
}

// runLogitBiasBan 实现 logit_bias_ban。
func runLogitBiasBan(ctx context.Context, t *T, pc ParamsBoundaryConfig) {
	t.need(CapTokenize, CapLogitBias)
	b := t.plainBody(pc.Prompt, pc.SampleTokens)
	greedy := t.chat(ctx, b).Choices[0].Message.text()
	if strings.TrimSpace(greedy) == "" {
		t.Fatalf("greedy output is empty: no first token to ban")
	}
	// 去掉开头的空白再取第一个 token：有的模板让回答以换行开始，换行 token 被禁止后模型
	// 可以用两个较短的换行拼出同样的文本；禁止第一个可见 token 才稳定。
	first := tokenIDs(ctx, t, strings.TrimLeftFunc(greedy, unicode.IsSpace))[0]
	biased := t.chatCap(ctx, b.with(map[string]any{"logit_bias": map[string]any{strconv.Itoa(first): -100}}), "logit_bias", CapLogitBias).Choices[0].Message.text()
	if biased == greedy {
		t.Fatalf("logit_bias -100 on the first greedy token (id %d) left the output unchanged: %q", first, trim(greedy))
	}
	if ids := tokenIDs(ctx, t, strings.TrimLeftFunc(biased, unicode.IsSpace)); len(ids) > 0 && ids[0] == first {
		t.Fatalf("logit_bias -100 on token id %d: the output still starts with it: %q", first, trim(biased))
	}
	t.Notef("first greedy token id %d banned; output now starts %q", first, trim(firstRunes(biased, 16)))
}

// firstRunes 返回 s 的前 n 个 rune。
func firstRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// runLogprobsEffect 实现 logprobs_effect。
func runLogprobsEffect(ctx context.Context, t *T, pc ParamsBoundaryConfig) {
	const k, eps = 5, 1e-4
	c := t.chatCap(ctx, t.plainBody(pc.Prompt, pc.SampleTokens).with(map[string]any{"logprobs": true, "top_logprobs": k}), "logprobs", CapLogprobs)
	lp := c.Choices[0].Logprobs
	if lp == nil || len(lp.Content) == 0 {
		t.Fatalf("no logprobs.content in the response")
	}
	top := 0
	for i, e := range lp.Content {
		if len(e.TopLogprobs) == 0 {
			t.Fatalf("entry %d (%q) has no top_logprobs", i, e.Token)
		}
		if e.Logprob > eps || math.IsNaN(e.Logprob) {
			t.Fatalf("entry %d (%q) logprob %g > 0", i, e.Token, e.Logprob)
		}
		for j, alt := range e.TopLogprobs {
			if alt.Logprob > eps {
				t.Fatalf("entry %d alternative %d (%q) logprob %g > 0", i, j, alt.Token, alt.Logprob)
			}
			if j > 0 && alt.Logprob > e.TopLogprobs[j-1].Logprob+eps {
				t.Fatalf("entry %d top_logprobs not sorted descending: %g after %g", i, alt.Logprob, e.TopLogprobs[j-1].Logprob)
			}
		}
		if e.Logprob < e.TopLogprobs[len(e.TopLogprobs)-1].Logprob-eps {
			t.Fatalf("entry %d: greedy token %q (logprob %g) is below every listed alternative (lowest %g)", i, e.Token, e.Logprob, e.TopLogprobs[len(e.TopLogprobs)-1].Logprob)
		}
		if e.Logprob >= e.TopLogprobs[0].Logprob-eps {
			top++
		}
	}
	if top*10 < len(lp.Content)*9 {
		t.Fatalf("the greedy token has the top logprob on only %d of %d tokens", top, len(lp.Content))
	}
	t.Notef("greedy token is the top alternative on %d of %d tokens", top, len(lp.Content))
}

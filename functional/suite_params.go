package functional

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// paramsCases 生成 params_boundary 套件：每个取值一个用例，断言参数的效果
// （精确的 token 数、finish_reason、停止串不在文本中、logprobs 个数……）而不只是 200。
// 各类参数的用例由下面几个函数分别加入，参数效果的统计用例见 effectCases。
func paramsCases(cfg Config) []Case {
	pc := cfg.ParamsBoundary
	cs := &caseSet{suite: SuiteParamsBoundary}
	for _, n := range pc.MaxTokens {
		cs.add(fmt.Sprintf("max_tokens=%d", n), "with ignore_eos the value is accepted and honoured: exactly max_tokens tokens and finish_reason length "+
			"when the whole generation fits in the time budget (half the request timeout); otherwise the stream runs for the budget with no early "+
			"finish_reason and the case reports how many tokens it saw",
			func(ctx context.Context, t *T) { runMaxTokens(ctx, t, pc, n) })
	}
	temperatureCases(cs, pc)
	samplingCases(cs, pc)
	seedCases(cs, pc)
	for _, kind := range pc.Stop {
		cs.isolated("stop="+kind, "generation halts before the stop string: it is absent, the text is a prefix of the unstopped text, finish_reason is stop",
			func(ctx context.Context, t *T) { runStop(ctx, t, pc, kind) })
	}
	logprobCases(cs, pc)
	if pc.LogitBias {
		cs.add("logit_bias", "logit_bias with a token id from /tokenize is accepted and generation stays exact",
			func(ctx context.Context, t *T) { runLogitBias(ctx, t, pc) })
	}
	return append(cs.cases, effectCases(cfg)...)
}

// caseSet 收集一个套件的用例（ID 前缀是套件名）；参数化的套件用它逐个取值地加入用例。
type caseSet struct {
	suite string
	cases []Case
}

// add 加入用例 <suite>/<id>。
func (cs *caseSet) add(id, desc string, run func(ctx context.Context, t *T)) {
	cs.cases = append(cs.cases, Case{ID: cs.suite + "/" + id, Suite: cs.suite, Description: desc, Run: run})
}

// isolated 加入一个比较两次回答是否相同的用例（贪心或固定 seed 可复现，需求要求非流式
// 完全一致）：它需要固定的批，在其它用例之后单独运行（Case.Isolated）。
func (cs *caseSet) isolated(id, desc string, run func(ctx context.Context, t *T)) {
	cs.add(id, desc, run)
	cs.cases[len(cs.cases)-1].Isolated = true
}

// temperatureCases 加入温度的取值用例：0 是确定的（重复请求、带不带 seed 文本都相同），
// 大于 0 时不带 seed 的重复请求不全相同。
func temperatureCases(cs *caseSet, pc ParamsBoundaryConfig) {
	for _, v := range pc.Temperature {
		if v == 0 {
			cs.isolated("temperature=0", "temperature 0 is deterministic: repeated requests (with and without seed) give identical text",
				func(ctx context.Context, t *T) {
					b := t.plainBody(pc.Prompt, pc.SampleTokens)
					a := t.output(t.chat(ctx, b).Choices[0].Message)
					for _, extra := range []map[string]any{nil, {"seed": 11}} {
						got := t.output(t.chat(ctx, b.with(extra)).Choices[0].Message)
						if got != a {
							t.Fatalf("temperature 0 gave different texts: %q vs %q", trim(a), trim(got))
						}
					}
				})
			continue
		}
		cs.add("temperature="+describe(v), "temperature > 0 samples: unseeded repeated requests are not all identical",
			func(ctx context.Context, t *T) {
				seen := map[string]bool{}
				for i := 0; i < pc.Samples; i++ {
					c := t.chat(ctx, t.plainBody(pc.Prompt, pc.SampleTokens).with(map[string]any{"temperature": v}))
					if f := str(c.Choices[0].FinishReason); !validFinish(f) {
						t.Fatalf("finish_reason=%q", f)
					}
					seen[t.output(c.Choices[0].Message)] = true
				}
				if len(seen) < 2 {
					t.Fatalf("%d samples at temperature %g were all identical", pc.Samples, v)
				}
			})
	}
}

// samplingCases 加入 top_p、top_k 与惩罚项的取值用例：服务端接受该取值（或探测为不支持），
// 并且仍精确遵守 max_tokens/ignore_eos、固定 seed 可复现；top_k=1 还必须是贪心。
func samplingCases(cs *caseSet, pc ParamsBoundaryConfig) {
	exact := func(param string, value any, capability Capability) func(ctx context.Context, t *T) {
		return func(ctx context.Context, t *T) { runExact(ctx, t, pc, param, value, capability) }
	}
	for _, v := range pc.TopP {
		capability := CapTopP
		if v == 0 {
			capability = CapTopPZero
		}
		cs.isolated("top_p="+describe(v), "top_p value is accepted (or probed as unsupported) and generation stays exact and seed-reproducible", exact("top_p", v, capability))
	}
	for _, v := range pc.TopK {
		if v == 1 {
			// top_k=1 只剩一个候选，采样结果就是 argmax：与温度、seed 都无关（vLLM 如此）。
			cs.isolated("top_k=1", "top_k=1 is accepted (or probed as unsupported), generation stays exact, and it is greedy: different seeds at temperature 1 give identical text",
				func(ctx context.Context, t *T) {
					exact("top_k", 1, CapTopK)(ctx, t)
					texts := map[string]bool{}
					for _, seed := range []int{5, 6, 7} {
						b := t.plainBody(pc.Prompt, pc.SampleTokens).with(map[string]any{"top_k": 1, "temperature": 1.0, "seed": seed, "ignore_eos": true})
						texts[t.output(t.chat(ctx, b).Choices[0].Message)] = true
					}
					if len(texts) != 1 {
						t.Fatalf("top_k=1 gave %d different texts for 3 seeds: it is not greedy", len(texts))
					}
				})
			continue
		}
		cs.isolated("top_k="+strconv.Itoa(v), "top_k value is accepted (or probed as unsupported) and generation stays exact and seed-reproducible", exact("top_k", v, CapTopK))
	}
	for _, v := range pc.PresencePenalty {
		cs.isolated("presence_penalty="+describe(v), "presence_penalty boundary value is accepted and generation stays exact", exact("presence_penalty", v, CapPenalties))
	}
	for _, v := range pc.FrequencyPenalty {
		cs.isolated("frequency_penalty="+describe(v), "frequency_penalty boundary value is accepted and generation stays exact", exact("frequency_penalty", v, CapPenalties))
	}
}

// runExact 是取值用例的共同断言：带该参数（温度 1、固定 seed、ignore_eos）时 token 数与
// finish_reason 精确，同一请求再发一次文本相同。
func runExact(ctx context.Context, t *T, pc ParamsBoundaryConfig, param string, value any, capability Capability) {
	b := t.plainBody(pc.Prompt, pc.SampleTokens).with(map[string]any{param: value, "temperature": 1.0, "seed": 5, "ignore_eos": true})
	c := t.chatCap(ctx, b, fmt.Sprintf("%s=%v", param, value), capability, CapIgnoreEOS)
	t.Expect("completion_tokens", pc.SampleTokens, c.Usage.CompletionTokens)
	t.Expect("finish_reason", "length", str(c.Choices[0].FinishReason))
	again := t.chat(ctx, b)
	if t.output(again.Choices[0].Message) != t.output(c.Choices[0].Message) {
		t.Fatalf("%s=%v with a fixed seed is not reproducible", param, value)
	}
}

// seedCases 加入 seed 用例：同一 seed 的非流式请求相同；两个以上的 seed 时，不同 seed 不全相同。
func seedCases(cs *caseSet, pc ParamsBoundaryConfig) {
	for _, seed := range pc.Seeds {
		cs.isolated("seed="+strconv.FormatInt(seed, 10), "non-streaming requests with the same seed at temperature 1 are identical",
			func(ctx context.Context, t *T) {
				b := t.plainBody(pc.Prompt, pc.SampleTokens).with(map[string]any{"temperature": 1.0, "seed": seed})
				a := t.output(t.chat(ctx, b).Choices[0].Message)
				for i := 1; i < pc.Samples; i++ {
					if got := t.output(t.chat(ctx, b).Choices[0].Message); got != a {
						t.Fatalf("seed %d gave different texts: %q vs %q", seed, trim(a), trim(got))
					}
				}
			})
	}
	if len(pc.Seeds) >= 2 {
		cs.add("seed_varies", "different seeds at temperature 1 do not all give the same text",
			func(ctx context.Context, t *T) {
				seen := map[string]bool{}
				for _, seed := range pc.Seeds {
					b := t.plainBody(pc.Prompt, pc.SampleTokens).with(map[string]any{"temperature": 1.0, "seed": seed})
					seen[t.output(t.chat(ctx, b).Choices[0].Message)] = true
				}
				if len(seen) < 2 {
					t.Fatalf("%d different seeds produced identical text", len(pc.Seeds))
				}
			})
	}
}

// logprobCases 加入 logprobs 用例：chat 的 top_logprobs=k 每个 token 恰好 k 个候选；completions
// 的 logprobs=k（取最后一个 k）每个生成的 token k 或 k+1 个候选。
func logprobCases(cs *caseSet, pc ParamsBoundaryConfig) {
	for _, k := range pc.TopLogprobs {
		cs.add(fmt.Sprintf("top_logprobs=%d", k), "logprobs=true with top_logprobs=k returns one entry per content token, each with exactly k alternatives",
			func(ctx context.Context, t *T) {
				c := t.chatCap(ctx, t.plainBody(pc.Prompt, pc.SampleTokens).with(map[string]any{"logprobs": true, "top_logprobs": k}), fmt.Sprintf("logprobs with top_logprobs=%d", k), CapLogprobs)
				lp := c.Choices[0].Logprobs
				if lp == nil || len(lp.Content) == 0 {
					t.Fatalf("no logprobs.content in the response")
				}
				if len(lp.Content) > c.Usage.CompletionTokens {
					t.Fatalf("%d logprob entries for %d completion tokens", len(lp.Content), c.Usage.CompletionTokens)
				}
				for i, e := range lp.Content {
					if len(e.TopLogprobs) != k {
						t.Fatalf("entry %d has %d top_logprobs, want %d", i, len(e.TopLogprobs), k)
					}
					if e.Logprob > 0 {
						t.Fatalf("entry %d logprob %g > 0", i, e.Logprob)
					}
				}
			})
	}
	if len(pc.TopLogprobs) > 0 {
		k := pc.TopLogprobs[len(pc.TopLogprobs)-1]
		cs.add(fmt.Sprintf("completions_logprobs=%d", k), "completions logprobs=k returns k alternatives per generated token",
			func(ctx context.Context, t *T) {
				raw := t.postCap(ctx, "/v1/completions", t.completionBody(pc.Prompt, pc.SampleTokens).with(map[string]any{"logprobs": k}), fmt.Sprintf("completions logprobs=%d", k), CapLogprobs)
				var c struct {
					Choices []struct {
						Logprobs *struct {
							Tokens      []string             `json:"tokens"`
							TopLogprobs []map[string]float64 `json:"top_logprobs"`
						} `json:"logprobs"`
					} `json:"choices"`
				}
				if err := json.Unmarshal(raw, &c); err != nil || len(c.Choices) == 0 || c.Choices[0].Logprobs == nil {
					t.Fatalf("no logprobs in the completions response (%v)", err)
				}
				lp := c.Choices[0].Logprobs
				if len(lp.Tokens) == 0 || len(lp.TopLogprobs) != len(lp.Tokens) {
					t.Fatalf("%d tokens but %d top_logprobs entries", len(lp.Tokens), len(lp.TopLogprobs))
				}
				for i, m := range lp.TopLogprobs {
					// vLLM 在采样 token 不在前 k 个时额外带上它，因此允许 k 或 k+1 个。
					if len(m) != k && len(m) != k+1 {
						t.Fatalf("token %d has %d alternatives, want %d", i, len(m), k)
					}
				}
			})
	}
}

// runLogitBias 实现 logit_bias 用例：从 /tokenize 取一个真实的 token id 加偏置，服务端接受
// 且仍精确遵守 max_tokens/ignore_eos。
func runLogitBias(ctx context.Context, t *T, pc ParamsBoundaryConfig) {
	t.need(CapTokenize, CapLogitBias, CapIgnoreEOS)
	raw := t.postCap(ctx, "/tokenize", map[string]any{"model": t.Model(), "prompt": pc.Prompt}, "/tokenize", CapTokenize)
	var tk struct {
		Tokens []int `json:"tokens"`
	}
	if err := json.Unmarshal(raw, &tk); err != nil || len(tk.Tokens) == 0 {
		t.Fatalf("/tokenize gave no tokens (%v): %s", err, trim(string(raw)))
	}
	bias := map[string]any{strconv.Itoa(tk.Tokens[0]): 5}
	b := t.plainBody(pc.Prompt, pc.SampleTokens).with(map[string]any{"logit_bias": bias, "ignore_eos": true})
	c := t.chatCap(ctx, b, "logit_bias", CapLogitBias, CapIgnoreEOS)
	t.Expect("completion_tokens", pc.SampleTokens, c.Usage.CompletionTokens)
	t.Expect("finish_reason", "length", str(c.Choices[0].FinishReason))
}

// runStop 实现 stop 用例：先在温度 0 下生成一次，从输出中挑选确实会出现的停止串，
// 再带 stop 请求，断言输出在停止串之前结束。
func runStop(ctx context.Context, t *T, pc ParamsBoundaryConfig, kind string) {
	b := t.plainBody(pc.Prompt, pc.SampleTokens)
	full := t.chat(ctx, b).Choices[0].Message.text()
	words := strings.Fields(full)
	var stops []string
	switch kind {
	case "single":
		stops = []string{pickWord(words, 3)}
	case "multiple":
		stops = []string{pickWord(words, 2), pickWord(words, 4), "ZZZ-never-said"}
	case "unicode":
		stops = []string{pickUnicode(full)}
	}
	c := t.chat(ctx, b.with(map[string]any{"stop": stops}))
	got := c.Choices[0].Message.text()
	for _, s := range stops {
		if strings.Contains(got, s) {
			t.Fatalf("stop string %q is present in the output %q", s, trim(got))
		}
	}
	if !strings.HasPrefix(full, got) {
		t.Fatalf("stopped output %q is not a prefix of the unstopped output %q", trim(got), trim(full))
	}
	t.Expect("finish_reason", "stop", str(c.Choices[0].FinishReason))
}

// pickWord 从输出中挑选第 i 个（循环）至少 2 个字符的词作为停止串；
// 输出为空时退回一个常见的英文词。
func pickWord(words []string, i int) string {
	var cands []string
	for _, w := range words {
		w = strings.TrimFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if utf8.RuneCountInString(w) >= 2 {
			cands = append(cands, w)
		}
	}
	if len(cands) == 0 {
		return "the"
	}
	return cands[i%len(cands)]
}

// pickUnicode 从输出中挑选第一个非 ASCII 字符作为停止串；没有时用中文句号。
func pickUnicode(s string) string {
	n := 0
	for _, r := range s {
		if r >= utf8.RuneSelf && !unicode.IsSpace(r) {
			n++
			if n == 3 {
				return string(r)
			}
		}
	}
	for _, r := range s {
		if r >= utf8.RuneSelf && !unicode.IsSpace(r) {
			return string(r)
		}
	}
	return "。"
}

// runMaxTokens 检验 max_tokens=n 被接受并被遵守，不要求服务端在请求超时内生成完 n 个 token。
//
// 需求的边界是"值 16384 被接受并被遵守"，而单请求超时是 120s：以 30 ms/token 计，16384 个
// token 要 8 分钟，没有真实服务端能在超时内生成完。所以用流式请求（ignore_eos）读到生成结束
// 或读满预算（MaxTokensBudget，默认请求超时的一半）为止：
//   - 在预算内结束：usage.completion_tokens 必须恰好为 n，finish_reason 必须是 length（与以前
//     的非流式检查相同；模拟器与快的服务端走这条路）；
//   - 预算用完仍在生成：不能已经出现 finish_reason（ignore_eos 下提前结束就是没遵守），
//     收到的 token 数与按观测速度估计的完整生成时间写进结果；
//   - 拒绝这个值（400）或生成少于 n 就结束：失败。
func runMaxTokens(ctx context.Context, t *T, pc ParamsBoundaryConfig, n int) {
	b := t.plainBody(pc.Prompt, n).with(map[string]any{"ignore_eos": true})
	caps := []Capability{CapIgnoreEOS}
	opts := map[string]any{}
	if t.Support(CapStreamUsage) == SupportSupported {
		opts["include_usage"] = true
		caps = append(caps, CapStreamUsage)
	}
	continuous := t.Support(CapContinuousUsage) == SupportSupported
	if continuous {
		opts["continuous_usage_stats"] = true
		caps = append(caps, CapContinuousUsage)
	}
	if len(opts) > 0 {
		b = b.with(map[string]any{"stream_options": opts})
	}
	budget := pc.MaxTokensBudget
	if budget <= 0 {
		budget = t.reqTimeout / 2
	}
	if t.reqTimeout > 0 {
		budget = min(budget, t.reqTimeout*9/10)
	}
	start := time.Now()
	s, cut := t.streamBudget(ctx, "/v1/chat/completions", b, budget, "ignore_eos", caps...)
	elapsed := time.Since(start)
	seen := 0 // 已生成的 token：连续 usage 给出精确值，否则数正文与推理增量
	for _, u := range s.usages {
		if u != nil && u.CompletionTokens > seen {
			seen = u.CompletionTokens
		}
	}
	if seen == 0 {
		seen = s.contentChunks
	}
	if !cut {
		if s.usageChunk != nil {
			t.checkUsage("usage", s.usageChunk)
			t.Expect("completion_tokens", n, s.usageChunk.CompletionTokens)
		} else {
			t.Expect("completion_tokens (streamed deltas, no usage)", n, seen)
		}
		t.Expect("finish_reason", "length", s.finish[0])
		return
	}
	if s.finishes[0] > 0 {
		t.Fatalf("finish_reason %q after %d of %d tokens with ignore_eos", s.finish[0], seen, n)
	}
	if seen == 0 {
		t.failf(ClassTimeout, "max_tokens=%d: no token within the %v budget", n, budget)
		return
	}
	perTok := elapsed / time.Duration(seen)
	t.Notef("max_tokens=%d accepted and honoured so far: %d tokens streamed in the %v budget with no early finish_reason; "+
		"all %d would take about %v at the observed %v/token (the request timeout is %v), so the exact count and finish_reason length were not observed",
		n, seen, budget.Round(time.Millisecond), n, (perTok * time.Duration(n)).Round(time.Second), perTok.Round(10*time.Microsecond), t.reqTimeout)
}

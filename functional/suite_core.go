package functional

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
)

// 套件名。
const (
	SuiteChatCore        = "chat_core"
	SuiteCompletionsCore = "completions_core"
	SuiteStreaming       = "streaming"
	SuiteParamsBoundary  = "params_boundary"
	SuiteGuided          = "guided"
	SuiteFunctionCall    = "function_call"
	SuiteReasoning       = "reasoning"
	SuiteErrors          = "errors"
	SuiteMultimodal      = "multimodal"
	SuiteEmbeddings      = "embeddings"
	SuiteRerank          = "rerank"
)

// validFinish 报告 finish_reason 是否为正常结束的取值。
func validFinish(s string) bool { return s == "stop" || s == "length" }

// chatCoreCases 生成 chat_core 套件。
func chatCoreCases(cfg Config) []Case {
	cc := cfg.ChatCore
	cases := []Case{
		{ID: "chat_core/basic", Suite: SuiteChatCore, Description: "non-streaming chat via openai-go returns assistant content with a normal finish_reason",
			Run: func(ctx context.Context, t *T) {
				resp, err := t.openai().Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
					Model:       t.Model(),
					Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage(cc.Prompt)},
					MaxTokens:   openai.Int(int64(cc.MaxTokens)),
					Temperature: openai.Float(0),
				})
				if err != nil {
					t.failErr("chat completion", err)
				}
				if len(resp.Choices) != 1 {
					t.Fatalf("want 1 choice, got %d", len(resp.Choices))
				}
				ch := resp.Choices[0]
				if ch.Message.Content == "" && len(ch.Message.ToolCalls) == 0 {
					if _, ok := reasoningIn(t, resp.Choices[0].Message.RawJSON()); !ok {
						t.Fatalf("empty assistant message")
					}
				}
				if !validFinish(ch.FinishReason) {
					t.Fatalf("finish_reason=%q, want stop or length", ch.FinishReason)
				}
			}},
		{ID: "chat_core/ids_object", Suite: SuiteChatCore, Description: "id starts with chatcmpl-, object is chat.completion, model echoes the served name",
			Run: func(ctx context.Context, t *T) {
				c := t.chat(ctx, t.chatBody(cc.Prompt, cc.MaxTokens))
				t.checkIdentity(c.ID, "chatcmpl-", c.Object, "chat.completion", c.Model)
				if c.Created <= 0 {
					t.Errorf("created=%d, want a unix timestamp", c.Created)
				}
			}},
		{ID: "chat_core/usage", Suite: SuiteChatCore, Description: "usage.total_tokens = prompt_tokens + completion_tokens and completion_tokens <= max_tokens",
			Run: func(ctx context.Context, t *T) {
				c := t.chat(ctx, t.chatBody(cc.Prompt, cc.MaxTokens))
				t.checkUsage("chat", c.Usage)
				if c.Usage.CompletionTokens < 1 || c.Usage.CompletionTokens > cc.MaxTokens {
					t.Fatalf("completion_tokens=%d, want 1..%d", c.Usage.CompletionTokens, cc.MaxTokens)
				}
			}},
		{ID: "chat_core/multi_turn", Suite: SuiteChatCore, Description: "system + user/assistant history is accepted and counted in prompt_tokens",
			Run: func(ctx context.Context, t *T) {
				msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(cc.System)}
				for i, h := range cc.History {
					if i%2 == 0 {
						msgs = append(msgs, openai.UserMessage(h))
					} else {
						msgs = append(msgs, openai.AssistantMessage(h))
					}
				}
				msgs = append(msgs, openai.UserMessage(cc.Prompt))
				full, err := t.openai().Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
					Model: t.Model(), Messages: msgs, MaxTokens: openai.Int(int64(cc.MaxTokens)), Temperature: openai.Float(0)})
				if err != nil {
					t.failErr("multi-turn chat", err)
				}
				single, err := t.openai().Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
					Model: t.Model(), Messages: msgs[len(msgs)-1:], MaxTokens: openai.Int(int64(cc.MaxTokens)), Temperature: openai.Float(0)})
				if err != nil {
					t.failErr("single-turn chat", err)
				}
				if len(full.Choices) == 0 || !validFinish(full.Choices[0].FinishReason) {
					t.Fatalf("multi-turn: no choice with a normal finish_reason")
				}
				if full.Usage.PromptTokens <= single.Usage.PromptTokens {
					t.Fatalf("prompt_tokens with history=%d, without=%d: history was not counted", full.Usage.PromptTokens, single.Usage.PromptTokens)
				}
			}},
		{ID: "chat_core/n", Suite: SuiteChatCore, Description: "n > 1 returns exactly n choices indexed 0..n-1",
			Run: func(ctx context.Context, t *T) {
				c := t.chat(ctx, t.chatBody(cc.Prompt, cc.MaxTokens).with(map[string]any{"n": cc.N, "temperature": 0.8, "seed": 1}))
				if len(c.Choices) != cc.N {
					t.Fatalf("choices=%d, want n=%d", len(c.Choices), cc.N)
				}
				for i, ch := range c.Choices {
					if ch.Index != i {
						t.Errorf("choices[%d].index=%d", i, ch.Index)
					}
					if ch.FinishReason == nil || !validFinish(*ch.FinishReason) {
						t.Errorf("choices[%d].finish_reason=%s", i, str(ch.FinishReason))
					}
				}
				t.checkUsage("n", c.Usage)
			}},
		{ID: "chat_core/stream", Suite: SuiteChatCore, Description: "streaming chat delivers content and one finish_reason",
			Run: func(ctx context.Context, t *T) {
				s := t.stream(ctx, "/v1/chat/completions", t.chatBody(cc.Prompt, cc.MaxTokens))
				if s.text[0] == "" && s.reasoning[0] == "" {
					t.Fatalf("stream delivered no content")
				}
				if !validFinish(s.finish[0]) {
					t.Fatalf("stream finish_reason=%q", s.finish[0])
				}
			}},
		{ID: "chat_core/models", Suite: SuiteChatCore, Description: "GET /v1/models lists the served model (openai-go)",
			Run: func(ctx context.Context, t *T) {
				page, err := t.openai().Models.List(ctx)
				if err != nil {
					t.failErr("list models", err)
				}
				var ids []string
				for _, m := range page.Data {
					ids = append(ids, m.ID)
				}
				if !contains(ids, t.Model()) {
					t.Fatalf("served model %q not in /v1/models %v", t.Model(), ids)
				}
			}},
	}
	for i, p := range cc.MixedPrompts {
		cases = append(cases, Case{ID: fmt.Sprintf("chat_core/mixed_zh_en_%d", i+1), Suite: SuiteChatCore,
			Description: "mixed Chinese/English prompt yields valid UTF-8 content",
			Run: func(ctx context.Context, t *T) {
				c := t.chat(ctx, t.chatBody(p, cc.MaxTokens))
				txt := c.Choices[0].Message.text()
				if txt == "" {
					t.Fatalf("empty content for mixed prompt")
				}
				if !utf8.ValidString(txt) {
					t.Fatalf("content is not valid UTF-8")
				}
				t.checkUsage("mixed", c.Usage)
			}})
	}
	return cases
}

// reasoningIn 在消息的原始 JSON 中按候选键查找推理文本。
func reasoningIn(t *T, raw string) (string, bool) {
	var m wireMessage
	if json.Unmarshal([]byte(raw), &m) != nil {
		return "", false
	}
	for _, k := range t.reasoningKeys() {
		if v, ok := m.field(k); ok && v != "" {
			return v, true
		}
	}
	return "", false
}

// completionsCases 生成 completions_core 套件。
func completionsCases(cfg Config) []Case {
	cc := cfg.CompletionsCore
	return []Case{
		{ID: "completions_core/basic", Suite: SuiteCompletionsCore, Description: "string prompt via openai-go returns text with a normal finish_reason",
			Run: func(ctx context.Context, t *T) {
				resp, err := t.openai().Completions.New(ctx, openai.CompletionNewParams{
					Model:       openai.CompletionNewParamsModel(t.Model()),
					Prompt:      openai.CompletionNewParamsPromptUnion{OfString: openai.String(cc.Prompt)},
					MaxTokens:   openai.Int(int64(cc.MaxTokens)),
					Temperature: openai.Float(0),
				})
				if err != nil {
					t.failErr("completion", err)
				}
				if len(resp.Choices) != 1 || resp.Choices[0].Text == "" {
					t.Fatalf("want one non-empty choice, got %d", len(resp.Choices))
				}
				if fr := string(resp.Choices[0].FinishReason); !validFinish(fr) {
					t.Fatalf("finish_reason=%q", fr)
				}
			}},
		{ID: "completions_core/ids_object", Suite: SuiteCompletionsCore, Description: "id starts with cmpl-, object is text_completion",
			Run: func(ctx context.Context, t *T) {
				c := t.completion(ctx, t.completionBody(cc.Prompt, cc.MaxTokens))
				t.checkIdentity(c.ID, "cmpl-", c.Object, "text_completion", c.Model)
			}},
		{ID: "completions_core/usage", Suite: SuiteCompletionsCore, Description: "usage arithmetic holds and completion_tokens <= max_tokens",
			Run: func(ctx context.Context, t *T) {
				c := t.completion(ctx, t.completionBody(cc.Prompt, cc.MaxTokens))
				t.checkUsage("completion", c.Usage)
				if c.Usage.CompletionTokens < 1 || c.Usage.CompletionTokens > cc.MaxTokens {
					t.Fatalf("completion_tokens=%d, want 1..%d", c.Usage.CompletionTokens, cc.MaxTokens)
				}
			}},
		{ID: "completions_core/batch", Suite: SuiteCompletionsCore, Description: "a list of prompts returns one choice per prompt with matching indexes",
			Run: func(ctx context.Context, t *T) {
				c := t.completion(ctx, t.completionBody(cc.BatchPrompts, cc.MaxTokens))
				if len(c.Choices) != len(cc.BatchPrompts) {
					t.Fatalf("choices=%d, want %d (one per prompt)", len(c.Choices), len(cc.BatchPrompts))
				}
				idx := map[int]bool{}
				for _, ch := range c.Choices {
					idx[ch.Index] = true
					if ch.Text == "" {
						t.Errorf("choice %d has empty text", ch.Index)
					}
				}
				for i := range cc.BatchPrompts {
					if !idx[i] {
						t.Errorf("no choice with index %d", i)
					}
				}
			}},
		{ID: "completions_core/echo", Suite: SuiteCompletionsCore, Isolated: true, Description: "echo=true returns the prompt followed by the completion",
			Run: func(ctx context.Context, t *T) {
				plain := t.completion(ctx, t.completionBody(cc.Prompt, cc.MaxTokens))
				c := t.completion(ctx, t.completionBody(cc.Prompt, cc.MaxTokens).with(map[string]any{"echo": true}))
				txt := c.Choices[0].Text
				if !strings.HasPrefix(txt, cc.Prompt) {
					t.Fatalf("echo text %q does not start with the prompt %q", trim(txt), cc.Prompt)
				}
				if want := cc.Prompt + plain.Choices[0].Text; txt != want {
					t.Fatalf("echo text %q != prompt + completion %q", trim(txt), trim(want))
				}
			}},
		{ID: "completions_core/default_max_tokens", Suite: SuiteCompletionsCore, Description: "without max_tokens and with ignore_eos the server generates its default (vLLM: 16) tokens",
			Run: func(ctx context.Context, t *T) {
				b := t.completionBody(cc.Prompt, 0).with(map[string]any{"max_tokens": nil, "ignore_eos": true})
				raw := t.postCap(ctx, "/v1/completions", b, "ignore_eos", CapIgnoreEOS)
				var c wireCompletion
				if err := json.Unmarshal(raw, &c); err != nil || c.Usage == nil || len(c.Choices) == 0 {
					t.Fatalf("bad completion response: %v", err)
				}
				t.Expect("completion_tokens", cc.DefaultMaxTokens, c.Usage.CompletionTokens)
				t.Expect("finish_reason", "length", str(c.Choices[0].FinishReason))
			}},
		{ID: "completions_core/stream", Suite: SuiteCompletionsCore, Isolated: true,
			Description: "streamed completion text equals the non-streaming text at temperature 0 (without batch_invariant: may drift after the first 4 tokens, never drop or repeat a delta)",
			Run: func(ctx context.Context, t *T) {
				b := t.completionBody(cc.Prompt, cc.MaxTokens)
				c := t.completion(ctx, b)
				s := t.stream(ctx, "/v1/completions", b)
				t.expectSameOutput("text", s.pieces[0], c.Choices[0].Text)
				if s.finishes[0] != 1 {
					t.Fatalf("finish_reason appeared %d times, want 1", s.finishes[0])
				}
			}},
	}
}

// checkIdentity 检查响应的身份字段：id 带 OpenAI 约定的前缀、object 是该端点的类型、
// model 回显服务的模型名。三项各自报告，不在第一项失败处停下。
func (t *T) checkIdentity(id, idPrefix, object, wantObject, model string) {
	if !strings.HasPrefix(id, idPrefix) {
		t.Errorf("id=%q, want prefix %s", id, idPrefix)
	}
	if object != wantObject {
		t.Errorf("object=%q, want %s", object, wantObject)
	}
	if model != t.Model() {
		t.Errorf("model=%q, want %q", model, t.Model())
	}
}

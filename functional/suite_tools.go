package functional

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// stripThink 去掉正文开头的 <think>…</think> 或 <|thinking|>…<|/thinking|> 块
// （没有推理解析器的服务把思考放在正文里），返回剩余正文。
func stripThink(s string) string {
	if _, rest, _, ok := splitThink(s); ok {
		return rest
	}
	return s
}

// thinkTags 是可识别的思考标签对。
var thinkTags = [][2]string{{"<think>", "</think>"}, {"<|thinking|>", "<|/thinking|>"}}

// splitThink 在正文中查找完整的思考块，返回思考内容、其后的正文、使用的开标签与是否找到。
func splitThink(s string) (thought, rest, tag string, ok bool) {
	trimmed := strings.TrimLeft(s, " \t\r\n")
	for _, tg := range thinkTags {
		if !strings.HasPrefix(trimmed, tg[0]) {
			continue
		}
		body := trimmed[len(tg[0]):]
		end := strings.Index(body, tg[1])
		if end < 0 {
			return "", s, tg[0], false
		}
		return body[:end], strings.TrimLeft(body[end+len(tg[1]):], " \t\r\n"), tg[0], true
	}
	return "", s, "", false
}

// guidedCases 生成 guided 套件。
func guidedCases(cfg Config) []Case {
	gc := cfg.Guided
	schemaJSON, _ := json.Marshal(gc.JSONSchema)
	validate := func(t *T, content string) {
		sch, err := compileSchema(gc.JSONSchema)
		if err != nil {
			t.Fatalf("config schema: %v", err)
		}
		var v any
		if err := json.Unmarshal([]byte(stripThink(content)), &v); err != nil {
			t.Fatalf("output is not JSON: %v: %q", err, trim(content))
		}
		if err := sch.Validate(v); err != nil {
			t.Fatalf("output does not validate against the schema: %v", err)
		}
	}
	return []Case{
		{ID: "guided/json_object", Suite: SuiteGuided, Requires: []Feature{FeatureGuidedDecoding},
			Description: `response_format {"type":"json_object"} yields content that parses as a JSON object`,
			Run: func(ctx context.Context, t *T) {
				c := t.chat(ctx, t.plainBody(gc.JSONObjectPrompt, gc.MaxTokens).with(map[string]any{
					"response_format": map[string]any{"type": "json_object"}, "temperature": 0.6}))
				var obj map[string]any
				content := stripThink(c.Choices[0].Message.text())
				if err := json.Unmarshal([]byte(content), &obj); err != nil {
					t.Fatalf("content is not a JSON object: %v: %q", err, trim(content))
				}
			}},
		{ID: "guided/json_schema", Suite: SuiteGuided, Requires: []Feature{FeatureGuidedDecoding},
			Description: "response_format json_schema (schema from the config) yields content valid against the schema",
			Run: func(ctx context.Context, t *T) {
				c := t.chat(ctx, t.plainBody(gc.JSONSchemaPrompt, gc.MaxTokens).with(map[string]any{
					"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{
						"name": "cibench", "schema": json.RawMessage(schemaJSON), "strict": true}}}))
				validate(t, c.Choices[0].Message.text())
			}},
		{ID: "guided/structured_outputs_json", Suite: SuiteGuided, Requires: []Feature{FeatureStructuredOutputs},
			Description: "vLLM structured_outputs.json constrains the output to the schema",
			Run: func(ctx context.Context, t *T) {
				c := t.chat(ctx, t.plainBody(gc.JSONSchemaPrompt, gc.MaxTokens).with(map[string]any{
					"structured_outputs": map[string]any{"json": json.RawMessage(schemaJSON)}}))
				validate(t, c.Choices[0].Message.text())
			}},
		{ID: "guided/structured_outputs_choice", Suite: SuiteGuided, Requires: []Feature{FeatureStructuredOutputs},
			Description: "vLLM structured_outputs.choice makes the output exactly one of the choices",
			Run: func(ctx context.Context, t *T) {
				c := t.chat(ctx, t.plainBody("Classify the sentiment: I love this! 我很喜欢。", 16).with(map[string]any{
					"structured_outputs": map[string]any{"choice": gc.Choices}}))
				got := strings.TrimSpace(stripThink(c.Choices[0].Message.text()))
				if !contains(gc.Choices, got) {
					t.Fatalf("output %q is not one of %v", got, gc.Choices)
				}
			}},
	}
}

// toolParams 把配置中的工具转换为请求体中的 tools 数组。
func toolParams(tools []ToolConfig) []any {
	out := make([]any, 0, len(tools))
	for _, tl := range tools {
		out = append(out, map[string]any{"type": "function", "function": map[string]any{
			"name": tl.Name, "description": tl.Description, "parameters": tl.Parameters}})
	}
	return out
}

// checkToolCall 断言调用的函数在 tools 中，且参数是满足其 schema 的 JSON。
func checkToolCall(t *T, tools []ToolConfig, tc wireToolCall) {
	var spec *ToolConfig
	for i := range tools {
		if tools[i].Name == tc.Function.Name {
			spec = &tools[i]
		}
	}
	if spec == nil {
		t.Fatalf("called function %q is not among the offered tools", tc.Function.Name)
	}
	if tc.ID == "" {
		t.Errorf("tool call has an empty id")
	}
	sch, err := compileSchema(spec.Parameters)
	if err != nil {
		t.Fatalf("config schema for %s: %v", spec.Name, err)
	}
	var args any
	if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil {
		t.Fatalf("arguments of %s are not JSON: %v: %q", spec.Name, err, trim(tc.Function.Arguments))
	}
	if err := sch.Validate(args); err != nil {
		t.Fatalf("arguments of %s do not validate against its schema: %v", spec.Name, err)
	}
}

// functionCallCases 生成 function_call 套件。
func functionCallCases(cfg Config) []Case {
	fc := cfg.FunctionCall
	one := fc.Tools[:1]
	base := func(t *T, tools []ToolConfig, choice any) body {
		return t.chatBody(fc.Prompt, fc.MaxTokens).with(map[string]any{"tools": toolParams(tools), "tool_choice": choice})
	}
	named := map[string]any{"type": "function", "function": map[string]any{"name": one[0].Name}}
	call := func(ctx context.Context, t *T, b body, wantFinish string) wireToolCall {
		c := t.chat(ctx, b)
		ch := c.Choices[0]
		if len(ch.Message.ToolCalls) != 1 {
			t.Fatalf("want 1 tool call, got %d (content %q)", len(ch.Message.ToolCalls), trim(ch.Message.text()))
		}
		t.Expect("finish_reason", wantFinish, str(ch.FinishReason))
		return ch.Message.ToolCalls[0]
	}
	return []Case{
		{ID: "function_call/auto", Suite: SuiteFunctionCall, Requires: []Feature{FeatureFunctionCall},
			Description: "tool_choice auto (openai-go): one call to the offered function, arguments valid against its schema, finish_reason tool_calls",
			Run: func(ctx context.Context, t *T) {
				p := one[0]
				resp, err := t.openai().Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
					Model:       t.Model(),
					Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fc.Prompt)},
					MaxTokens:   openai.Int(int64(fc.MaxTokens)),
					Temperature: openai.Float(0),
					Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
						Name: p.Name, Description: openai.String(p.Description), Parameters: shared.FunctionParameters(p.Parameters)})},
					ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")},
				})
				if err != nil {
					t.failErr("chat with tools", err)
				}
				if len(resp.Choices) == 0 || len(resp.Choices[0].Message.ToolCalls) != 1 {
					t.Fatalf("want exactly one tool call")
				}
				tc := resp.Choices[0].Message.ToolCalls[0]
				t.Expect("finish_reason", "tool_calls", resp.Choices[0].FinishReason)
				w := wireToolCall{ID: tc.ID, Type: string(tc.Type)}
				w.Function.Name, w.Function.Arguments = tc.Function.Name, tc.Function.Arguments
				checkToolCall(t, fc.Tools, w)
			}},
		{ID: "function_call/required", Suite: SuiteFunctionCall, Requires: []Feature{FeatureFunctionCall},
			Description: "tool_choice required forces a call with schema-valid arguments and finish_reason tool_calls",
			Run: func(ctx context.Context, t *T) {
				checkToolCall(t, fc.Tools, call(ctx, t, base(t, one, "required"), "tool_calls"))
			}},
		{ID: "function_call/named", Suite: SuiteFunctionCall, Requires: []Feature{FeatureFunctionCall},
			Description: "a named tool_choice calls exactly that function; vLLM finishes with stop",
			Run: func(ctx context.Context, t *T) {
				tc := call(ctx, t, base(t, fc.Tools, named), "stop")
				t.Expect("function name", one[0].Name, tc.Function.Name)
				checkToolCall(t, fc.Tools, tc)
			}},
		{ID: "function_call/two_tools", Suite: SuiteFunctionCall, Requires: []Feature{FeatureFunctionCall},
			Description: "with two functions offered, the call names one of them with arguments valid for that function",
			Run: func(ctx context.Context, t *T) {
				if len(fc.Tools) < 2 {
					t.Skipf("function_call.tools has only one function")
				}
				checkToolCall(t, fc.Tools, call(ctx, t, base(t, fc.Tools, "required"), "tool_calls"))
			}},
		{ID: "function_call/stream", Suite: SuiteFunctionCall, Requires: []Feature{FeatureFunctionCall}, Isolated: true,
			Description: "streamed tool-call deltas reassemble into the non-streaming call (arguments: without batch_invariant they may drift after the first 4 tokens, " +
				"never drop or repeat a delta, and must still satisfy the schema); id and name arrive once per index",
			Run: func(ctx context.Context, t *T) {
				b := base(t, one, "required")
				want := call(ctx, t, b, "tool_calls")
				s := t.stream(ctx, "/v1/chat/completions", b)
				calls := s.tools[0]
				if len(calls) != 1 || calls[0] == nil {
					t.Fatalf("streamed %d tool calls, want 1", len(calls))
				}
				got := *calls[0]
				t.Expect("streamed function name", want.Function.Name, got.Function.Name)
				t.expectSameOutput("arguments", s.argPieces[0][0], want.Function.Arguments)
				t.Expect("deltas carrying the tool call id", 1, s.toolIDDeltas[0][0])
				t.Expect("streamed finish_reason", "tool_calls", s.finish[0])
				checkToolCall(t, fc.Tools, got)
			}},
		{ID: "function_call/follow_up", Suite: SuiteFunctionCall, Requires: []Feature{FeatureFunctionCall},
			Description: "after the tool result is sent back, the model answers in content without another call",
			Run: func(ctx context.Context, t *T) {
				first := call(ctx, t, base(t, one, "required"), "tool_calls")
				msgs := []any{
					map[string]any{"role": "user", "content": fc.Prompt},
					map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
						"id": first.ID, "type": "function", "function": map[string]any{"name": first.Function.Name, "arguments": first.Function.Arguments}}}},
					map[string]any{"role": "tool", "tool_call_id": first.ID, "content": fc.ToolResult},
				}
				c := t.chat(ctx, base(t, one, "auto").with(map[string]any{"messages": msgs}))
				ch := c.Choices[0]
				if len(ch.Message.ToolCalls) != 0 {
					t.Fatalf("model called %s again instead of answering", ch.Message.ToolCalls[0].Function.Name)
				}
				if strings.TrimSpace(stripThink(ch.Message.text())) == "" {
					t.Fatalf("follow-up answer has empty content")
				}
				if f := str(ch.FinishReason); !validFinish(f) {
					t.Fatalf("finish_reason=%q, want stop or length", f)
				}
			}},
	}
}

// reasoningForm 描述服务端返回推理的方式。
type reasoningForm struct {
	where string // "message.<key>"、"content <think>" 或 ""
	text  string
}

// findReasoning 在消息中按候选键查找推理；没有时识别正文中的思考块。
func findReasoning(t *T, m wireMessage) (reasoningForm, bool) {
	for _, k := range t.reasoningKeys() {
		if v, ok := m.field(k); ok {
			return reasoningForm{where: "message." + k, text: v}, true
		}
	}
	if thought, _, tag, ok := splitThink(m.text()); ok {
		return reasoningForm{where: "content " + tag, text: thought}, true
	}
	return reasoningForm{}, false
}

// reasoningCases 生成 reasoning 套件。
func reasoningCases(cfg Config) []Case {
	rc := cfg.Reasoning
	req := []Feature{FeatureReasoning}
	return []Case{
		{ID: "reasoning/present", Suite: SuiteReasoning, Requires: req,
			Description: "the reasoning trace is returned in a configured field (or a <think> block in content); empty only if the scenario allows it",
			Run: func(ctx context.Context, t *T) {
				c := t.chat(ctx, t.chatBody(rc.Prompt, rc.MaxTokens))
				f, ok := findReasoning(t, c.Choices[0].Message)
				if !ok {
					t.Fatalf("no reasoning: none of the keys %v present and no complete <think>…</think> block in content", t.reasoningKeys())
				}
				if strings.TrimSpace(f.text) == "" && !rc.AllowEmpty {
					t.Fatalf("reasoning in %s is empty and the scenario does not allow that", f.where)
				}
				t.Notef("reasoning form: %s", f.where)
			}},
		{ID: "reasoning/stream", Suite: SuiteReasoning, Requires: req,
			Description: "streamed reasoning arrives as reasoning deltas (or a think block) before the answer content",
			Run: func(ctx context.Context, t *T) {
				s := t.stream(ctx, "/v1/chat/completions", t.chatBody(rc.Prompt, rc.MaxTokens))
				if s.reasoning[0] != "" {
					t.Notef("reasoning deltas")
					return
				}
				if thought, _, _, ok := splitThink(s.text[0]); ok && (thought != "" || rc.AllowEmpty) {
					t.Notef("think block in streamed content")
					return
				}
				t.Fatalf("stream carried no reasoning deltas (keys %v) and no think block", t.reasoningKeys())
			}},
		{ID: "reasoning/disabled", Suite: SuiteReasoning, Requires: req,
			Description: "chat_template_kwargs from the config switch thinking off: no reasoning, plain content",
			Run: func(ctx context.Context, t *T) {
				c := t.chat(ctx, t.chatBody(rc.Prompt, rc.MaxTokens).with(map[string]any{"chat_template_kwargs": rc.DisableKwargs}))
				m := c.Choices[0].Message
				if f, ok := findReasoning(t, m); ok && strings.TrimSpace(f.text) != "" {
					t.Fatalf("reasoning still present in %s with %v", f.where, rc.DisableKwargs)
				}
				if strings.TrimSpace(m.text()) == "" {
					t.Fatalf("no content with thinking disabled")
				}
			}},
		{ID: "reasoning/separated", Suite: SuiteReasoning, Requires: req,
			Description: "thinking is cleanly separated from the answer: think tags are closed, and a reasoning field means no tags in content",
			Run: func(ctx context.Context, t *T) {
				c := t.chat(ctx, t.chatBody(rc.Prompt, rc.MaxTokens))
				m := c.Choices[0].Message
				content := m.text()
				for _, tg := range thinkTags {
					opens, closes := strings.Count(content, tg[0]), strings.Count(content, tg[1])
					if opens != closes {
						t.Fatalf("content has %d %s but %d %s", opens, tg[0], closes, tg[1])
					}
					if opens > 0 {
						t.Notef("server without reasoning parser (%s in content)", tg[0])
						if _, rest, _, _ := splitThink(content); strings.TrimSpace(rest) == "" && str(c.Choices[0].FinishReason) == "stop" {
							t.Fatalf("no answer after the think block")
						}
					}
				}
				f, ok := findReasoning(t, m)
				if ok && strings.HasPrefix(f.where, "message.") && strings.Contains(content, "<think>") {
					t.Fatalf("reasoning in %s and a <think> tag in content at the same time", f.where)
				}
				if ok {
					t.Notef("reasoning form: %s", f.where)
				}
			}},
	}
}

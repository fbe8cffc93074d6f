package loadgen

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestChunkScannerFields 验证扫描器从各种 chunk 形态（角色、转义、推理新旧字段、工具调用、usage、错误）取出的字段。
func TestChunkScannerFields(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want chunkFields
	}{
		{"role chunk", `{"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}`,
			chunkFields{hasChoice: true, choices: []choiceMark{{}}, reasonTok: -1}},
		{"content", `{"choices":[{"delta":{"content":"你好 world"},"finish_reason":null}]}`,
			chunkFields{hasChoice: true, choices: []choiceMark{{output: true}}, content: "你好 world", reasonTok: -1}},
		{"escaped content", `{"choices":[{"delta":{"content":"a\"b\\c\n\u4e2d\ud83d\ude00"}}]}`,
			chunkFields{hasChoice: true, choices: []choiceMark{{output: true}}, content: "a\"b\\c\n中😀", reasonTok: -1}},
		{"reasoning new", `{"choices":[{"delta":{"reasoning":"think"}}]}`,
			chunkFields{hasChoice: true, choices: []choiceMark{{output: true}}, reasoning: "think", reasonTok: -1}},
		{"reasoning old", `{"choices":[{"delta":{"reasoning_content":"old"}}]}`,
			chunkFields{hasChoice: true, choices: []choiceMark{{output: true}}, reasoning: "old", reasonTok: -1}},
		{"tool call", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}`,
			chunkFields{hasChoice: true, choices: []choiceMark{{output: true}}, tools: true, reasonTok: -1}},
		{"empty tool list", `{"choices":[{"delta":{"tool_calls":[ ]}}]}`,
			chunkFields{hasChoice: true, choices: []choiceMark{{}}, reasonTok: -1}},
		{"completion text", `{"choices":[{"text":" hi","finish_reason":"length","stop_reason":null}]}`,
			chunkFields{hasChoice: true, choices: []choiceMark{{finish: true, output: true}}, content: " hi", finish: "length", reasonTok: -1}},
		{"usage cached tokens", `{"choices":[],"usage":{"prompt_tokens":64,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":48}}}`,
			chunkFields{hasUsage: true, promptTok: 64, complTok: 2, hasCompl: true, reasonTok: -1, cachedTok: 48}},
		{"usage null prompt details", `{"choices":[],"usage":{"prompt_tokens":64,"completion_tokens":2,"prompt_tokens_details":null}}`,
			chunkFields{hasUsage: true, promptTok: 64, complTok: 2, hasCompl: true, reasonTok: -1}},
		{"usage", `{"choices":[],"usage":{"prompt_tokens":12,"total_tokens":20,"completion_tokens":8,"completion_tokens_details":{"reasoning_tokens":3}}}`,
			chunkFields{hasUsage: true, promptTok: 12, complTok: 8, hasCompl: true, choices: []choiceMark{}, reasonTok: 3}},
		{"usage null details", `{"usage":{"prompt_tokens":1,"completion_tokens":2,"completion_tokens_details":null}}`,
			chunkFields{hasUsage: true, promptTok: 1, complTok: 2, hasCompl: true, reasonTok: -1}},
		{"usage null completion", `{"usage":{"prompt_tokens":1,"completion_tokens":null}}`,
			chunkFields{hasUsage: true, promptTok: 1, reasonTok: -1}},
		{"error object", `{"error":{"message":"boom","type":"InternalServerError","code":500}}`,
			chunkFields{hasError: true, errMsg: "boom", reasonTok: -1}},
		{"error null", `{"error":null,"choices":[{"delta":{"content":"x"}}]}`,
			chunkFields{hasChoice: true, choices: []choiceMark{{output: true}}, content: "x", reasonTok: -1}},
		{"flat error", `{"object":"error","message":"m","error":"bad"}`,
			chunkFields{hasError: true, errMsg: "bad", flatError: true, flatMsg: "m", reasonTok: -1}},
		{"old flat error", `{"object":"error","message":"engine \"x\" died","type":"InternalServerError","param":null,"code":500}`,
			chunkFields{hasError: true, errMsg: "engine \"x\" died", flatError: true, flatMsg: "engine \"x\" died", reasonTok: -1}},
		{"chunk object is not an error", `{"object":"chat.completion.chunk","choices":[{"index":3,"delta":{"content":"a"}}]}`,
			chunkFields{hasChoice: true, choices: []choiceMark{{index: 3, output: true}}, content: "a", reasonTok: -1}},
		{"second choice marked, its content ignored", `{"choices":[{"delta":{"content":"a\n"}},{"index":1,"delta":{"content":"b\n"},"finish_reason":"stop"},{"index":2,"delta":{}}]}`,
			chunkFields{hasChoice: true, choices: []choiceMark{{output: true}, {index: 1, finish: true, output: true}, {index: 2}}, content: "a\n", reasonTok: -1}},
		{"whitespace", " { \"choices\" : [ { \"delta\" : { \"content\" : \"z\" } } ] , \"x\" : [1, {\"y\": \"}\"}] } ",
			chunkFields{hasChoice: true, choices: []choiceMark{{output: true}}, content: "z", reasonTok: -1}},
	}
	var sc chunkScanner
	for _, c := range cases {
		got, err := sc.scan(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(got.choices) == 0 && len(c.want.choices) == 0 {
			got.choices, c.want.choices = nil, nil // 复用的空切片与 nil 等价
		}
		if c.want.cachedTok == 0 {
			c.want.cachedTok = -1 // 没有 prompt_tokens_details 时的默认值
		}
		if !reflect.DeepEqual(*got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, *got, c.want)
		}
	}
}

// TestChunkScannerRejectsMalformed 确保残缺或非法的 JSON 被报告为错误而不是被静默接受。
func TestChunkScannerRejectsMalformed(t *testing.T) {
	var sc chunkScanner
	for _, in := range []string{``, `[`, `{"a"`, `{"a":}`, `{"a":"x}`, `{"choices":[{"delta":{"content":"\q"}}]}`,
		`{"usage":{"completion_tokens":abc}}`, `{"a":1 "b":2}`, `{"choices":[{"delta":{"content":"\u12"}}]}`, `not json`} {
		if _, err := sc.scan(in); err == nil {
			t.Errorf("scan(%q) succeeded, want error", in)
		}
	}
}

// FuzzChunkScanner 确保任意输入都不会让扫描器崩溃或越界。
func FuzzChunkScanner(f *testing.F) {
	f.Add(`{"choices":[{"delta":{"content":"a\u4e2d"}}],"usage":{"completion_tokens":3}}`)
	f.Add(`{"error":{"message":"x"}}`)
	f.Fuzz(func(t *testing.T, s string) {
		var sc chunkScanner
		_, _ = sc.scan(s)
	})
}

// TestSplitThink 验证 <think>…</think> 的切分，包括标签被拆到多个 chunk 的情形。
func TestSplitThink(t *testing.T) {
	x := newExchange()
	var reason, content strings.Builder
	for _, piece := range []string{"<think>", "let me", " think", "</think>", "answer", " done"} {
		r, c := x.splitThink(piece)
		reason.WriteString(r)
		content.WriteString(c)
	}
	if reason.String() != "let me think" || content.String() != "answer done" {
		t.Fatalf("reason %q content %q", reason.String(), content.String())
	}
	x = newExchange()
	reason.Reset()
	content.Reset()
	for _, piece := range []string{"\n", "<", "think", ">", "alpha", " beta", " <", "/", "think", ">", "\n\nfinal"} {
		r, c := x.splitThink(piece)
		reason.WriteString(r)
		content.WriteString(c)
	}
	if reason.String() != "alpha beta " || content.String() != "\n\nfinal" {
		t.Fatalf("split tags: reason %q content %q", reason.String(), content.String())
	}
	x = newExchange()
	if r, c := x.splitThink("<"); r != "" || c != "" {
		t.Fatalf("undecided prefix leaked: %q %q", r, c)
	}
	if r, c := x.splitThink("b>"); r != "" || c != "<b>" {
		t.Fatalf("non-tag prefix must become content: %q %q", r, c)
	}
	x = newExchange()
	r, c := x.splitThink("plain <think>not a tag here</think>")
	if r != "" || c != "plain <think>not a tag here</think>" {
		t.Fatalf("think tag not at start must be content: %q %q", r, c)
	}
	x = newExchange()
	r, c = x.splitThink("\n<think>a</think>b")
	if r != "a" || c != "b" {
		t.Fatalf("one-piece think: %q %q", r, c)
	}
}

// BenchmarkChunkScanner 测量单个典型 chunk 的解析开销（热路径）。
func BenchmarkChunkScanner(b *testing.B) {
	in := `{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":128,"total_tokens":140,"completion_tokens":12}}`
	var sc chunkScanner
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := sc.scan(in); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzChunkScannerMatchesEncodingJSON 对合法 JSON 把扫描器的结果与 encoding/json 对照：
// 正文、推理、完成 token 数与是否带 error 必须一致。
func FuzzChunkScannerMatchesEncodingJSON(f *testing.F) {
	f.Add(`{"choices":[{"delta":{"content":"a\"b\u00e9"}}],"usage":{"completion_tokens":3}}`)
	f.Add(`{"id":"x","choices":[{"index":0,"delta":{"reasoning":"r"},"finish_reason":null}],"usage":null}`)
	f.Add(`{"error":{"message":"boom"}}`)
	f.Add(`{"object":"error","message":"flat"}`)
	f.Add(`{"choices":[{"text":"t"}],"x":[1,{"y":"}"}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		var ref struct {
			Error   json.RawMessage `json:"error"`
			Object  string          `json:"object"`
			Choices []struct {
				Delta *struct {
					Content   *string `json:"content"`
					Reasoning *string `json:"reasoning"`
				} `json:"delta"`
				Text *string `json:"text"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int64 `json:"completion_tokens"`
			} `json:"usage"`
		}
		if !utf8.ValidString(s) || json.Unmarshal([]byte(s), &ref) != nil {
			return // 只比较两边都接受的合法 UTF-8 输入（encoding/json 会替换非法字节）
		}
		// encoding/json 的键名匹配不区分大小写，而线上格式区分：含大小写变体的输入不比较。
		for _, k := range []string{`"choices"`, `"delta"`, `"content"`, `"reasoning"`, `"text"`, `"usage"`, `"error"`, `"completion_tokens"`, `"object"`} {
			if strings.Count(strings.ToLower(s), k) != strings.Count(s, k) {
				return
			}
		}
		var sc chunkScanner
		got, err := sc.scan(s)
		if err != nil {
			if strings.TrimSpace(s) == "null" || !strings.HasPrefix(strings.TrimSpace(s), "{") {
				return // 顶层不是对象：扫描器拒绝是正确的
			}
			t.Fatalf("scanner rejected valid JSON %q: %v", s, err)
		}
		wantErr := len(ref.Error) > 0 && string(ref.Error) != "null" || ref.Object == "error"
		if got.hasError != wantErr {
			t.Fatalf("%q: hasError %v, want %v", s, got.hasError, wantErr)
		}
		if wantErr {
			return
		}
		var content, reasoning string
		if len(ref.Choices) > 0 {
			c := ref.Choices[0]
			if c.Delta != nil && c.Delta.Content != nil {
				content = *c.Delta.Content
			}
			if c.Delta != nil && c.Delta.Reasoning != nil {
				reasoning = *c.Delta.Reasoning
			}
			if c.Text != nil && content == "" {
				content = *c.Text
			}
		}
		if got.content != content || got.reasoning != reasoning {
			t.Fatalf("%q: content %q reasoning %q, want %q %q", s, got.content, got.reasoning, content, reasoning)
		}
		if ref.Usage != nil && got.complTok != ref.Usage.CompletionTokens {
			t.Fatalf("%q: completion tokens %d, want %d", s, got.complTok, ref.Usage.CompletionTokens)
		}
	})
}

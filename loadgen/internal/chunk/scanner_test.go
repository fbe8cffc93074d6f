package chunk

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
		want Fields
	}{
		{"role chunk", `{"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}`,
			Fields{HasChoice: true, Choices: []Choice{{}}, ReasoningTokens: -1}},
		{"content", `{"choices":[{"delta":{"content":"你好 world"},"finish_reason":null}]}`,
			Fields{HasChoice: true, Choices: []Choice{{Output: true}}, Content: "你好 world", ReasoningTokens: -1}},
		{"escaped content", `{"choices":[{"delta":{"content":"a\"b\\c\n\u4e2d\ud83d\ude00"}}]}`,
			Fields{HasChoice: true, Choices: []Choice{{Output: true}}, Content: "a\"b\\c\n中😀", ReasoningTokens: -1}},
		{"reasoning new", `{"choices":[{"delta":{"reasoning":"think"}}]}`,
			Fields{HasChoice: true, Choices: []Choice{{Output: true}}, Reasoning: "think", ReasoningTokens: -1}},
		{"reasoning old", `{"choices":[{"delta":{"reasoning_content":"old"}}]}`,
			Fields{HasChoice: true, Choices: []Choice{{Output: true}}, Reasoning: "old", ReasoningTokens: -1}},
		{"tool call", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}`,
			Fields{HasChoice: true, Choices: []Choice{{Output: true}}, Tools: true, ReasoningTokens: -1}},
		{"empty tool list", `{"choices":[{"delta":{"tool_calls":[ ]}}]}`,
			Fields{HasChoice: true, Choices: []Choice{{}}, ReasoningTokens: -1}},
		{"completion text", `{"choices":[{"text":" hi","finish_reason":"length","stop_reason":null}]}`,
			Fields{HasChoice: true, Choices: []Choice{{Finish: true, Output: true}}, Content: " hi", Finish: "length", ReasoningTokens: -1}},
		{"usage cached tokens", `{"choices":[],"usage":{"prompt_tokens":64,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":48}}}`,
			Fields{HasUsage: true, PromptTokens: 64, CompletionTokens: 2, HasCompletion: true, ReasoningTokens: -1, CachedTokens: 48}},
		{"usage null prompt details", `{"choices":[],"usage":{"prompt_tokens":64,"completion_tokens":2,"prompt_tokens_details":null}}`,
			Fields{HasUsage: true, PromptTokens: 64, CompletionTokens: 2, HasCompletion: true, ReasoningTokens: -1}},
		{"usage", `{"choices":[],"usage":{"prompt_tokens":12,"total_tokens":20,"completion_tokens":8,"completion_tokens_details":{"reasoning_tokens":3}}}`,
			Fields{HasUsage: true, PromptTokens: 12, CompletionTokens: 8, HasCompletion: true, Choices: []Choice{}, ReasoningTokens: 3}},
		{"usage null details", `{"usage":{"prompt_tokens":1,"completion_tokens":2,"completion_tokens_details":null}}`,
			Fields{HasUsage: true, PromptTokens: 1, CompletionTokens: 2, HasCompletion: true, ReasoningTokens: -1}},
		{"usage null completion", `{"usage":{"prompt_tokens":1,"completion_tokens":null}}`,
			Fields{HasUsage: true, PromptTokens: 1, ReasoningTokens: -1}},
		{"error object", `{"error":{"message":"boom","type":"InternalServerError","code":500}}`,
			Fields{HasError: true, ErrMsg: "boom", ReasoningTokens: -1}},
		{"error null", `{"error":null,"choices":[{"delta":{"content":"x"}}]}`,
			Fields{HasChoice: true, Choices: []Choice{{Output: true}}, Content: "x", ReasoningTokens: -1}},
		{"flat error", `{"object":"error","message":"m","error":"bad"}`,
			Fields{HasError: true, ErrMsg: "bad", flatError: true, flatMsg: "m", ReasoningTokens: -1}},
		{"old flat error", `{"object":"error","message":"engine \"x\" died","type":"InternalServerError","param":null,"code":500}`,
			Fields{HasError: true, ErrMsg: "engine \"x\" died", flatError: true, flatMsg: "engine \"x\" died", ReasoningTokens: -1}},
		{"chunk object is not an error", `{"object":"chat.completion.chunk","choices":[{"index":3,"delta":{"content":"a"}}]}`,
			Fields{HasChoice: true, Choices: []Choice{{Index: 3, Output: true}}, Content: "a", ReasoningTokens: -1}},
		{"second choice marked, its content ignored", `{"choices":[{"delta":{"content":"a\n"}},{"index":1,"delta":{"content":"b\n"},"finish_reason":"stop"},{"index":2,"delta":{}}]}`,
			Fields{HasChoice: true, Choices: []Choice{{Output: true}, {Index: 1, Finish: true, Output: true}, {Index: 2}}, Content: "a\n", ReasoningTokens: -1}},
		{"whitespace", " { \"choices\" : [ { \"delta\" : { \"content\" : \"z\" } } ] , \"x\" : [1, {\"y\": \"}\"}] } ",
			Fields{HasChoice: true, Choices: []Choice{{Output: true}}, Content: "z", ReasoningTokens: -1}},
	}
	var sc Scanner
	for _, c := range cases {
		got, err := sc.Scan(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(got.Choices) == 0 && len(c.want.Choices) == 0 {
			got.Choices, c.want.Choices = nil, nil // 复用的空切片与 nil 等价
		}
		if c.want.CachedTokens == 0 {
			c.want.CachedTokens = -1 // 没有 prompt_tokens_details 时的默认值
		}
		if !reflect.DeepEqual(*got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, *got, c.want)
		}
	}
}

// TestChunkScannerRejectsMalformed 确保残缺或非法的 JSON 被报告为错误而不是被静默接受。
func TestChunkScannerRejectsMalformed(t *testing.T) {
	var sc Scanner
	for _, in := range []string{``, `[`, `{"a"`, `{"a":}`, `{"a":"x}`, `{"choices":[{"delta":{"content":"\q"}}]}`,
		`{"usage":{"completion_tokens":abc}}`, `{"a":1 "b":2}`, `{"choices":[{"delta":{"content":"\u12"}}]}`, `not json`} {
		if _, err := sc.Scan(in); err == nil {
			t.Errorf("scan(%q) succeeded, want error", in)
		}
	}
}

// FuzzChunkScanner 确保任意输入都不会让扫描器崩溃或越界。
func FuzzChunkScanner(f *testing.F) {
	f.Add(`{"choices":[{"delta":{"content":"a\u4e2d"}}],"usage":{"completion_tokens":3}}`)
	f.Add(`{"error":{"message":"x"}}`)
	f.Fuzz(func(t *testing.T, s string) {
		var sc Scanner
		_, _ = sc.Scan(s)
	})
}

// BenchmarkChunkScanner 测量单个典型 chunk 的解析开销（热路径）。
func BenchmarkChunkScanner(b *testing.B) {
	in := `{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":128,"total_tokens":140,"completion_tokens":12}}`
	var sc Scanner
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := sc.Scan(in); err != nil {
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
		var sc Scanner
		got, err := sc.Scan(s)
		if err != nil {
			if strings.TrimSpace(s) == "null" || !strings.HasPrefix(strings.TrimSpace(s), "{") {
				return // 顶层不是对象：扫描器拒绝是正确的
			}
			t.Fatalf("scanner rejected valid JSON %q: %v", s, err)
		}
		wantErr := len(ref.Error) > 0 && string(ref.Error) != "null" || ref.Object == "error"
		if got.HasError != wantErr {
			t.Fatalf("%q: hasError %v, want %v", s, got.HasError, wantErr)
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
		if got.Content != content || got.Reasoning != reasoning {
			t.Fatalf("%q: content %q reasoning %q, want %q %q", s, got.Content, got.Reasoning, content, reasoning)
		}
		if ref.Usage != nil && got.CompletionTokens != ref.Usage.CompletionTokens {
			t.Fatalf("%q: completion tokens %d, want %d", s, got.CompletionTokens, ref.Usage.CompletionTokens)
		}
	})
}

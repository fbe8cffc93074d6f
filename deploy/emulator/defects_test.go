package emulator_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
)

// emuDefectCase 描述一个缺陷开关及“它确实改变了线上行为”的检查。
type emuDefectCase struct {
	field string
	cfg   emulator.Config
	// visible 在开启缺陷的服务上运行，缺陷可见时返回 true。
	visible func(t *testing.T, ep deploy.Endpoint) bool
}

// firstChoice 发送非流式 chat 请求并返回 choices[0] 与整个响应。
func firstChoice(t *testing.T, ep deploy.Endpoint, body map[string]any) (map[string]any, map[string]any) {
	t.Helper()
	st, _, b := emuPost(t, ep, "/v1/chat/completions", body)
	if st != 200 {
		t.Fatalf("status %d: %s", st, b)
	}
	m := emuObj(t, b)
	return emuJget(m, "choices", 0).(map[string]any), m
}

// streamText 拼接流式 chat 的正文。
func streamText(chunks []map[string]any) string {
	var sb strings.Builder
	for _, c := range chunks {
		sb.WriteString(emuStr(emuJget(c, "choices", 0, "delta", "content")))
	}
	return sb.String()
}

// emuDefectCases 返回每个缺陷开关的线上可见性检查；新增缺陷字段时必须在此补一行，否则测试失败。
func emuDefectCases() []emuDefectCase {
	withUsage := map[string]any{"max_tokens": 5, "stream_options": map[string]any{"include_usage": true}}
	return []emuDefectCase{
		{"NoDone", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, done, _ := emuStreamChunks(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 3}))
			return !done
		}},
		{"WrongUsageTotal", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, m := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 3}))
			u := m["usage"]
			return emuNum(emuJget(u, "total_tokens")) != emuNum(emuJget(u, "prompt_tokens"))+emuNum(emuJget(u, "completion_tokens"))
		}},
		{"NoRoleChunk", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			chunks, _, _ := emuStreamChunks(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 3}))
			return emuJget(chunks[0], "choices", 0, "delta", "role") == nil
		}},
		{"WrongFinishReason", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			c, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 3, "ignore_eos": true}))
			return c["finish_reason"] == "stop"
		}},
		{"StopStringKept", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			c, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 100, "stop": "STOP"}))
			return strings.Contains(emuStr(emuJget(c, "message", "content")), "STOP")
		}},
		{"SeedIgnored", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			body := emuChatBody("x", map[string]any{"max_tokens": 20, "temperature": 0.9, "seed": 5})
			a, _ := firstChoice(t, ep, body)
			b, _ := firstChoice(t, ep, body)
			return emuJget(a, "message", "content") != emuJget(b, "message", "content")
		}},
		{"JSONObjectInvalid", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			c, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"response_format": map[string]any{"type": "json_object"}}))
			return !json.Valid([]byte(emuStr(emuJget(c, "message", "content"))))
		}},
		{"ToolArgsInvalid", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			c, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"tools": []any{weatherTool}, "tool_choice": "required"}))
			args := emuStr(emuJget(c, "message", "tool_calls", 0, "function", "arguments"))
			return validateJSON(t, compileSchema(t, weatherTool["function"].(map[string]any)["parameters"]), args) != nil
		}},
		{"ReasoningMissing", emulator.Config{Reasoning: true}, func(t *testing.T, ep deploy.Endpoint) bool {
			c, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 200}))
			_, has := c["message"].(map[string]any)["reasoning"]
			chunks, _, _ := emuStreamChunks(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 200}))
			for _, ch := range chunks {
				if emuJget(ch, "choices", 0, "delta", "reasoning") != nil {
					return false
				}
			}
			return !has
		}},
		{"NoContextCheck", emulator.Config{MaxModelLen: 10}, func(t *testing.T, ep deploy.Endpoint) bool {
			st, _, _ := emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 50}))
			return st == 200
		}},
		{"MaxTokensIgnored", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, m := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 4}))
			return emuNum(emuJget(m, "usage", "completion_tokens")) > 4
		}},
		{"NoUsageChunk", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			chunks, _, _ := emuStreamChunks(t, ep, "/v1/chat/completions", emuChatBody("x", withUsage))
			return emuJget(chunks[len(chunks)-1], "usage") == nil
		}},
		{"UsageNotMonotonic", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			chunks, _, _ := emuStreamChunks(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 5,
				"ignore_eos": true, "stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}}))
			prev := 0
			for _, c := range chunks {
				ct := emuNum(emuJget(c, "usage", "completion_tokens"))
				if ct < prev {
					return true
				}
				prev = ct
			}
			return false
		}},
		{"WrongIDPrefix", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, m := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 1}))
			return !strings.HasPrefix(emuStr(m["id"]), "chatcmpl-")
		}},
		{"WrongObject", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, m := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 1}))
			return m["object"] != "chat.completion"
		}},
		{"LogprobsWrongCount", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			c, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 2, "logprobs": true, "top_logprobs": 3}))
			return len(emuJget(c, "logprobs", "content", 0, "top_logprobs").([]any)) != 3
		}},
		{"ModelMissingFromList", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, _, b := emuDo(t, ep, http.MethodGet, "/v1/models", nil)
			return len(emuObj(t, b)["data"].([]any)) == 0
		}},
		{"UnknownModelOK", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			body := emuChatBody("x", map[string]any{"max_tokens": 1})
			body["model"] = "nope"
			st, _, _ := emuPost(t, ep, "/v1/chat/completions", body)
			return st == 200
		}},
		{"StreamDiffers", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			c, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 10}))
			chunks, _, _ := emuStreamChunks(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 10}))
			return streamText(chunks) != emuStr(emuJget(c, "message", "content"))
		}},
		// 丢一个中间的正文增量：流式文本比非流式短，且是它挖掉一段（前后缀都对得上）。
		{"StreamDropsDelta", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			body := emuChatBody("x", map[string]any{"max_tokens": 16, "ignore_eos": true})
			c, _ := firstChoice(t, ep, body)
			chunks, _, _ := emuStreamChunks(t, ep, "/v1/chat/completions", body)
			got, want := streamText(chunks), emuStr(emuJget(c, "message", "content"))
			return len(got) < len(want) && strings.HasPrefix(want, got[:4]) && strings.HasSuffix(want, got[len(got)-4:])
		}},
		{"DoubleFinish", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			chunks, _, _ := emuStreamChunks(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 3}))
			n := 0
			for _, c := range chunks {
				if emuJget(c, "choices", 0, "finish_reason") != nil {
					n++
				}
			}
			return n == 2
		}},
		{"WrongContentType", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, h, _ := emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 2, "stream": true}))
			return !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream")
		}},
		{"NIgnored", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, m := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 2, "n": 2, "temperature": 1}))
			return len(m["choices"].([]any)) == 1
		}},
		{"EchoIgnored", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, _, b := emuPost(t, ep, "/v1/completions", map[string]any{"prompt": "ECHO ME", "echo": true, "max_tokens": 2})
			return !strings.HasPrefix(emuStr(emuJget(emuObj(t, b), "choices", 0, "text")), "ECHO ME")
		}},
		{"NamedToolFinishToolCalls", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			c, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"tools": []any{weatherTool},
				"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}}))
			return c["finish_reason"] == "tool_calls"
		}},
		{"NoParamValidation", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			st, _, _ := emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 2, "temperature": -1, "top_p": 0}))
			return st == 200
		}},
		{"NoToolChoiceValidation", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			st, _, _ := emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 2, "tool_choice": "required"}))
			return st == 200
		}},
		{"EmbeddingWrongDim", emulator.Config{EnableEmbeddings: true, EmbeddingDim: 8}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, _, b := emuPost(t, ep, "/v1/embeddings", map[string]any{"input": "x"})
			return len(emuJget(emuObj(t, b), "data", 0, "embedding").([]any)) != 8
		}},
		{"RerankUnsorted", emulator.Config{EnableRerank: true}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, _, b := emuPost(t, ep, "/rerank", map[string]any{"query": "sunny weather", "documents": []string{"stock crash", "sunny weather today"}})
			res := emuObj(t, b)["results"].([]any)
			return emuJget(res, 0, "relevance_score").(float64) < emuJget(res, 1, "relevance_score").(float64)
		}},
		{"ErrorBodyMalformed", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			st, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"temperature": -1}))
			return st == 400 && !json.Valid(b)
		}},
		{"NoAuth", emulator.Config{APIKey: "k"}, func(t *testing.T, ep deploy.Endpoint) bool {
			ep.APIKey = ""
			st, _, _ := emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 1}))
			return st == 200
		}},
		{"ThinkTagsUnclosed", emulator.Config{Reasoning: true, ReasoningInContent: true}, func(t *testing.T, ep deploy.Endpoint) bool {
			c, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 300}))
			s := emuStr(emuJget(c, "message", "content"))
			return strings.HasPrefix(s, "<think>") && !strings.Contains(s, "</think>")
		}},
		{"TemperatureIgnored", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			greedy, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 12, "temperature": 0}))
			sampled, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 12, "temperature": 1, "seed": 7}))
			return emuStr(emuJget(greedy, "message", "content")) == emuStr(emuJget(sampled, "message", "content"))
		}},
		{"TopKIgnored", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			a, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 12, "temperature": 1, "top_k": 1, "seed": 7}))
			b, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 12, "temperature": 1, "top_k": 1, "seed": 8}))
			return emuStr(emuJget(a, "message", "content")) != emuStr(emuJget(b, "message", "content"))
		}},
		{"ThinkingNotDisabled", emulator.Config{Reasoning: true}, func(t *testing.T, ep deploy.Endpoint) bool {
			c, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 50, "chat_template_kwargs": map[string]any{"enable_thinking": false}}))
			return emuStr(emuJget(c, "message", "reasoning")) != ""
		}},
		{"BatchIgnored", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, _, b := emuPost(t, ep, "/v1/completions", map[string]any{"prompt": []string{"a", "b"}, "max_tokens": 2})
			return len(emuObj(t, b)["choices"].([]any)) == 1
		}},
		{"ToolResultIgnored", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			c, _ := firstChoice(t, ep, map[string]any{"max_tokens": 50, "tools": []any{weatherTool}, "messages": []any{
				map[string]any{"role": "user", "content": "weather?"},
				map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "c1", "type": "function",
					"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}}},
				map[string]any{"role": "tool", "tool_call_id": "c1", "content": "sunny"}}})
			return c["finish_reason"] == "tool_calls"
		}},
		{"ImageIgnored", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, m := firstChoice(t, ep, map[string]any{"max_tokens": 2, "messages": []any{map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "x"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": emuPngDataURL(t, 56, 56)}}}}}})
			return emuNum(emuJget(m, "usage", "prompt_tokens")) == 1
		}},
		{"HistoryIgnored", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, m := firstChoice(t, ep, map[string]any{"max_tokens": 2, "messages": []any{
				map[string]any{"role": "system", "content": "be brief"},
				map[string]any{"role": "user", "content": "hello"}}})
			return emuNum(emuJget(m, "usage", "prompt_tokens")) == 1
		}},
		{"EmbeddingBase64Wrong", emulator.Config{EnableEmbeddings: true, EmbeddingDim: 4}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, _, fl := emuPost(t, ep, "/v1/embeddings", map[string]any{"input": "x"})
			_, _, b64 := emuPost(t, ep, "/v1/embeddings", map[string]any{"input": "x", "encoding_format": "base64"})
			raw, err := base64.StdEncoding.DecodeString(emuStr(emuJget(emuObj(t, b64), "data", 0, "embedding")))
			if err != nil || len(raw) < 4 {
				t.Fatalf("base64: %v", err)
			}
			first := emuJget(emuObj(t, fl), "data", 0, "embedding", 0).(float64)
			return math.Float32frombits(binary.LittleEndian.Uint32(raw)) != float32(first)
		}},
		{"RerankIndexWrong", emulator.Config{EnableRerank: true}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, _, b := emuPost(t, ep, "/rerank", map[string]any{"query": "q", "documents": []string{"alpha", "beta"}})
			res := emuObj(t, b)["results"].([]any)
			docs := []string{"alpha", "beta"}
			return emuStr(emuJget(res, 0, "document", "text")) != docs[emuNum(emuJget(res, 0, "index"))]
		}},
		{"ChoiceViolated", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			c, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 5, "structured_outputs": map[string]any{"choice": []string{"yes", "no"}}}))
			s := emuStr(emuJget(c, "message", "content"))
			return s != "yes" && s != "no"
		}},
		{"LengthDropsText", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			c, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 3, "ignore_eos": true}))
			return emuStr(emuJget(c, "message", "content")) == ""
		}},
		{"GreedySeedDependent", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			a, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 20}))
			b, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 20, "seed": 11}))
			return emuStr(emuJget(a, "message", "content")) != emuStr(emuJget(b, "message", "content"))
		}},
		{"TopPZeroServerError", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			st, _, _ := emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 2, "top_p": 0}))
			return st == http.StatusInternalServerError
		}},
		{"MalformedJSONServerError", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			st, _, _ := emuPost(t, ep, "/v1/chat/completions", `{"model": "m", "messages": [`)
			return st == http.StatusInternalServerError
		}},
		{"UnknownFieldRejected", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			st, _, _ := emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 2, "cibench_unknown_field": 1}))
			return st == http.StatusBadRequest
		}},
		{"StreamOptionsUnchecked", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			st, _, _ := emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 2, "stream_options": map[string]any{"include_usage": true}}))
			return st == http.StatusOK
		}},
		{"ImageNotValidated", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			bad := "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("not a png"))
			st, _, _ := emuPost(t, ep, "/v1/chat/completions", map[string]any{"model": "m", "max_tokens": 2, "messages": []any{map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "x"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": bad}}}}}})
			return st == http.StatusOK
		}},
		// 同一 seed 下 0.2 与 1.5 的采样结果相同：温度没有缩放 logits。
		{"TemperatureScaleIgnored", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			a, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 20, "temperature": 0.2, "seed": 3}))
			b, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 20, "temperature": 1.5, "seed": 3}))
			return emuStr(emuJget(a, "message", "content")) == emuStr(emuJget(b, "message", "content"))
		}},
		// top_p=0.1 在模拟器的分布上只留下贪心 token：不同 seed 的结果都等于贪心文本。
		{"TopPIgnored", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			g, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 20, "ignore_eos": true}))
			c, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 20, "ignore_eos": true, "temperature": 1, "top_p": 0.1, "seed": 4}))
			return emuStr(emuJget(g, "message", "content")) != emuStr(emuJget(c, "message", "content"))
		}},
		{"PresencePenaltyIgnored", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			return penaltyText(t, ep, "presence_penalty", 2) == penaltyText(t, ep, "presence_penalty", -2)
		}},
		{"FrequencyPenaltyIgnored", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			return penaltyText(t, ep, "frequency_penalty", 2) == penaltyText(t, ep, "frequency_penalty", -2)
		}},
		{"LogitBiasIgnored", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, _, b := emuPost(t, ep, "/tokenize", map[string]any{"prompt": " cache"})
			id := strconv.Itoa(emuNum(emuJget(emuObj(t, b), "tokens", 0)))
			c, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 5, "ignore_eos": true, "logit_bias": map[string]any{id: 100}}))
			return emuStr(emuJget(c, "message", "content")) != "cache cache cache cache cache"
		}},
		{"LogprobsUnsorted", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			c, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 3, "logprobs": true, "top_logprobs": 3}))
			top := emuJget(c, "logprobs", "content", 0, "top_logprobs").([]any)
			return emuJget(top[0], "logprob").(float64) < emuJget(top[2], "logprob").(float64)
		}},
		// 一个流只有一个 id：缺陷时 role chunk、内容 chunk 与 usage chunk 的 id 各不相同。
		{"StreamIDChanges", emulator.Config{}, func(t *testing.T, ep deploy.Endpoint) bool {
			chunks, _, _ := emuStreamChunks(t, ep, "/v1/chat/completions", emuChatBody("x", withUsage))
			ids := map[string]bool{}
			for _, c := range chunks {
				ids[emuStr(c["id"])] = true
			}
			return len(ids) != 1
		}},
		{"EmbeddingBatchIgnored", emulator.Config{EnableEmbeddings: true, EmbeddingDim: 4}, func(t *testing.T, ep deploy.Endpoint) bool {
			_, _, b := emuPost(t, ep, "/v1/embeddings", map[string]any{"input": []string{"a", "b", "c"}})
			return len(emuObj(t, b)["data"].([]any)) != 3
		}},
	}
}

// penaltyText 返回带某个惩罚项、固定 seed、温度 1 的 40 token 生成文本。
func penaltyText(t *testing.T, ep deploy.Endpoint, param string, v float64) string {
	c, _ := firstChoice(t, ep, emuChatBody("x", map[string]any{"max_tokens": 40, "ignore_eos": true, "temperature": 1, "seed": 9, param: v}))
	return emuStr(emuJget(c, "message", "content"))
}

// TestDefectsChangeWireBehaviour 证明每个缺陷开关都真实改变了线上行为，
// 并且同一检查在没有缺陷的服务上为假（检查本身能区分好坏）。
func TestDefectsChangeWireBehaviour(t *testing.T) {
	cases := emuDefectCases()
	typ := reflect.TypeOf(emulator.Defects{})
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.field] = true
	}
	for i := 0; i < typ.NumField(); i++ {
		if !covered[typ.Field(i).Name] {
			t.Errorf("defect %s has no wire test", typ.Field(i).Name)
		}
	}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			cfg := c.cfg
			cfg.Model = "m"
			_, good := emulator.Start(t, cfg)
			if c.visible(t, good) {
				t.Fatalf("check for %s fires on a faithful server", c.field)
			}
			f := reflect.ValueOf(&cfg.Defects).Elem().FieldByName(c.field)
			f.SetBool(true)
			_, bad := emulator.Start(t, cfg)
			if !c.visible(t, bad) {
				t.Fatalf("defect %s does not change the wire behaviour", c.field)
			}
		})
	}
}

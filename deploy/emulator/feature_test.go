package emulator_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
)

// weatherTool 是测试用的工具定义。
var weatherTool = map[string]any{"type": "function", "function": map[string]any{
	"name": "get_weather", "description": "查询天气",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{
		"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
		"days": map[string]any{"type": "integer", "minimum": 1, "maximum": 7}},
		"required": []string{"city", "unit"}, "additionalProperties": false}}}

// timeTool 是第二个工具。
var timeTool = map[string]any{"type": "function", "function": map[string]any{
	"name": "get_time", "parameters": map[string]any{"type": "object", "properties": map[string]any{
		"tz": map[string]any{"type": "string", "pattern": "^[A-Z][a-z]+/[A-Z][a-z]+$"}}, "required": []string{"tz"}}}}

// compileSchema 用 jsonschema/v6 编译 schema（Go 值）。
func compileSchema(t *testing.T, schema any) *jsonschema.Schema {
	t.Helper()
	b, _ := json.Marshal(schema)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://s.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem://s.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validateJSON 解析 text 并按 schema 校验。
func validateJSON(t *testing.T, s *jsonschema.Schema, text string) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// TestTools 验证 auto/required/具名工具调用的参数满足 schema、结束原因、流式重组与 400 规则。
func TestTools(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m"})
	params := compileSchema(t, weatherTool["function"].(map[string]any)["parameters"])
	for _, choice := range []any{"auto", "required", map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}} {
		st, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody("北京天气怎么样?", map[string]any{"tools": []any{weatherTool}, "tool_choice": choice, "max_tokens": 200}))
		m := emuObj(t, b)
		tc := emuJget(m, "choices", 0, "message", "tool_calls", 0)
		if st != 200 || emuJget(tc, "function", "name") != "get_weather" || !strings.HasPrefix(emuStr(emuJget(tc, "id")), "chatcmpl-tool-") || emuJget(tc, "type") != "function" {
			t.Fatalf("%v: %s", choice, b)
		}
		if err := validateJSON(t, params, emuStr(emuJget(tc, "function", "arguments"))); err != nil {
			t.Fatalf("%v: arguments invalid: %v", choice, err)
		}
		fr, content := emuJget(m, "choices", 0, "finish_reason"), emuJget(m, "choices", 0, "message", "content")
		if _, named := choice.(map[string]any); named {
			if fr != "stop" || content != "" {
				t.Fatalf("named: finish %v content %v", fr, content)
			}
		} else if fr != "tool_calls" || content != nil {
			t.Fatalf("%v: finish %v content %v", choice, fr, content)
		}
		// 流式：用 openai-go 的累加器重组，结果与非流式相同。
		chunks, _, raw := emuStreamChunks(t, ep, "/v1/chat/completions", emuChatBody("北京天气怎么样?", map[string]any{"tools": []any{weatherTool}, "tool_choice": choice, "max_tokens": 200}))
		var acc openai.ChatCompletionAccumulator
		heads := 0
		for _, ev := range emuEvents(t, raw) {
			if string(ev) == "[DONE]" {
				continue
			}
			var c openai.ChatCompletionChunk
			if err := json.Unmarshal(ev, &c); err != nil {
				t.Fatal(err)
			}
			acc.AddChunk(c)
		}
		for _, c := range chunks {
			if id := emuJget(c, "choices", 0, "delta", "tool_calls", 0, "id"); id != nil {
				heads++
				if emuJget(c, "choices", 0, "delta", "tool_calls", 0, "function", "name") != "get_weather" {
					t.Fatalf("head delta lacks name: %v", c)
				}
			}
		}
		got := acc.Choices[0].Message.ToolCalls
		if heads != 1 || len(got) != 1 || got[0].Function.Arguments != emuStr(emuJget(tc, "function", "arguments")) || got[0].ID != emuStr(emuJget(tc, "id")) {
			t.Fatalf("stream reassembly: heads=%d %+v vs %v", heads, got, tc)
		}
	}
	// 两个工具、带 pattern 的参数
	st, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody("what time is it", map[string]any{"tools": []any{weatherTool, timeTool},
		"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_time"}}}))
	args := emuStr(emuJget(emuObj(t, b), "choices", 0, "message", "tool_calls", 0, "function", "arguments"))
	if err := validateJSON(t, compileSchema(t, timeTool["function"].(map[string]any)["parameters"]), args); st != 200 || err != nil {
		t.Fatalf("get_time args %q: %v", args, err)
	}
	// 工具结果之后用正文回答
	msgs := []map[string]any{
		{"role": "user", "content": "北京天气?"},
		{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city": "北京", "unit": "celsius"}`}}}},
		{"role": "tool", "tool_call_id": "call_1", "content": `{"temp": 21}`},
	}
	st, _, b = emuPost(t, ep, "/v1/chat/completions", map[string]any{"model": "m", "messages": msgs, "tools": []any{weatherTool}, "max_tokens": 20})
	m := emuObj(t, b)
	if st != 200 || emuStr(emuJget(m, "choices", 0, "message", "content")) == "" || len(emuJget(m, "choices", 0, "message", "tool_calls").([]any)) != 0 {
		t.Fatalf("follow-up: %s", b)
	}
	// 未知函数名 400；tool_choice none 正常回答
	if st, _, _ := emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"tools": []any{weatherTool},
		"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "nope"}}})); st != 400 {
		t.Fatalf("unknown function: %d", st)
	}
	if st, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"tools": []any{weatherTool}, "tool_choice": "none", "max_tokens": 3})); st != 200 ||
		emuJget(emuObj(t, b), "choices", 0, "finish_reason") != "length" {
		t.Fatalf("tool_choice none: %s", b)
	}
	// 能力关闭
	_, off := emulator.Start(t, emulator.Config{Model: "m", DisableTools: true})
	if st, _, _ := emuPost(t, off, "/v1/chat/completions", emuChatBody("x", map[string]any{"tools": []any{weatherTool}})); st != 400 {
		t.Fatalf("DisableTools: %d", st)
	}
}

// TestGuided 验证 json_object、json_schema、structured_outputs（json/choice/regex）与旧版 guided_* 的输出满足约束。
func TestGuided(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m"})
	st, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody("give json", map[string]any{"response_format": map[string]any{"type": "json_object"}}))
	var anyObj map[string]any
	if err := json.Unmarshal([]byte(emuStr(emuJget(emuObj(t, b), "choices", 0, "message", "content"))), &anyObj); st != 200 || err != nil {
		t.Fatalf("json_object: %v %s", err, b)
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"name":   map[string]any{"type": "string", "minLength": 3, "maxLength": 12},
		"age":    map[string]any{"type": "integer", "minimum": 18, "exclusiveMaximum": 20},
		"score":  map[string]any{"type": "number", "minimum": 0.5, "maximum": 0.75},
		"tags":   map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []string{"a", "b"}}, "minItems": 2, "maxItems": 3},
		"email":  map[string]any{"type": "string", "format": "email"},
		"code":   map[string]any{"type": "string", "pattern": "^[A-Z]{3}-\\d{4}$"},
		"nested": map[string]any{"$ref": "#/$defs/point"},
		"maybe":  map[string]any{"anyOf": []any{map[string]any{"type": "null"}, map[string]any{"type": "boolean"}}},
		"kind":   map[string]any{"const": "fixed"},
	}, "required": []string{"name", "age", "tags", "nested"}, "additionalProperties": false,
		"$defs": map[string]any{"point": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "number"}, "y": map[string]any{"type": "number"}}, "required": []string{"x", "y"}}}}
	compiled := compileSchema(t, schema)
	for seed := 0; seed < 5; seed++ {
		st, _, b = emuPost(t, ep, "/v1/chat/completions", emuChatBody("person "+strconv.Itoa(seed), map[string]any{"max_tokens": 500, "response_format": map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "person", "schema": schema, "strict": true}}}))
		text := emuStr(emuJget(emuObj(t, b), "choices", 0, "message", "content"))
		if err := validateJSON(t, compiled, text); st != 200 || err != nil {
			t.Fatalf("json_schema output %q: %v", text, err)
		}
	}
	// structured_outputs：json、choice、regex
	st, _, b = emuPost(t, ep, "/v1/chat/completions", emuChatBody("so", map[string]any{"max_tokens": 500, "structured_outputs": map[string]any{"json": schema}}))
	if err := validateJSON(t, compiled, emuStr(emuJget(emuObj(t, b), "choices", 0, "message", "content"))); st != 200 || err != nil {
		t.Fatalf("structured_outputs.json: %v %s", err, b)
	}
	st, _, b = emuPost(t, ep, "/v1/chat/completions", emuChatBody("so", map[string]any{"structured_outputs": map[string]any{"choice": []string{"正面", "negative"}}}))
	if got := emuJget(emuObj(t, b), "choices", 0, "message", "content"); st != 200 || (got != "正面" && got != "negative") {
		t.Fatalf("choice: %s", b)
	}
	re := `(cat|dog)-[0-9]{2,3}x?`
	st, _, b = emuPost(t, ep, "/v1/chat/completions", emuChatBody("so", map[string]any{"structured_outputs": map[string]any{"regex": re}}))
	if got := emuStr(emuJget(emuObj(t, b), "choices", 0, "message", "content")); st != 200 || !regexp.MustCompile(`^`+re+`$`).MatchString(got) {
		t.Fatalf("regex output %q", got)
	}
	st, _, b = emuPost(t, ep, "/v1/completions", map[string]any{"prompt": "p", "max_tokens": 50, "guided_choice": []string{"yes", "no"}})
	if got := emuJget(emuObj(t, b), "choices", 0, "text"); st != 200 || (got != "yes" && got != "no") {
		t.Fatalf("completions guided_choice: %s", b)
	}
	_, off := emulator.Start(t, emulator.Config{Model: "m", DisableGuided: true})
	if st, _, _ := emuPost(t, off, "/v1/chat/completions", emuChatBody("x", map[string]any{"response_format": map[string]any{"type": "json_object"}})); st != 400 {
		t.Fatalf("DisableGuided: %d", st)
	}
}

// TestReasoning 验证推理字段、流式推理 delta、reasoning_tokens、关闭推理的两种方式与 <think> 形式。
func TestReasoning(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", Reasoning: true})
	st, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody("think", map[string]any{"max_tokens": 500}))
	m := emuObj(t, b)
	reasoning := emuStr(emuJget(m, "choices", 0, "message", "reasoning"))
	rt := emuNum(emuJget(m, "usage", "completion_tokens_details", "reasoning_tokens"))
	if st != 200 || reasoning == "" || rt < 1 || emuStr(emuJget(m, "choices", 0, "message", "content")) == "" {
		t.Fatalf("reasoning: %s", b)
	}
	chunks, _, _ := emuStreamChunks(t, ep, "/v1/chat/completions", emuChatBody("think", map[string]any{"max_tokens": 500}))
	var rs, cs strings.Builder
	seenContent := false
	for _, c := range chunks[1:] {
		d := emuJget(c, "choices", 0, "delta").(map[string]any)
		if r, ok := d["reasoning"]; ok {
			if _, both := d["content"]; both || seenContent {
				t.Fatalf("reasoning delta mixed with/after content: %v", d)
			}
			rs.WriteString(r.(string))
		}
		if ct, ok := d["content"]; ok {
			seenContent = true
			cs.WriteString(ct.(string))
		}
	}
	if rs.String() != reasoning || cs.String() != emuStr(emuJget(m, "choices", 0, "message", "content")) {
		t.Fatalf("stream reasoning %q vs %q", rs.String(), reasoning)
	}
	for _, off := range []map[string]any{{"chat_template_kwargs": map[string]any{"enable_thinking": false}}, {"include_reasoning": false}} {
		off["max_tokens"] = 50
		_, _, b = emuPost(t, ep, "/v1/chat/completions", emuChatBody("think", off))
		m = emuObj(t, b)
		if emuJget(m, "choices", 0, "message", "reasoning") != nil || emuJget(m, "usage", "completion_tokens_details") != nil {
			t.Fatalf("thinking off %v: %s", off, b)
		}
	}
	_, old := emulator.Start(t, emulator.Config{Model: "m", Reasoning: true, ReasoningField: "reasoning_content"})
	_, _, b = emuPost(t, old, "/v1/chat/completions", emuChatBody("think", map[string]any{"max_tokens": 500}))
	if emuStr(emuJget(emuObj(t, b), "choices", 0, "message", "reasoning_content")) == "" {
		t.Fatalf("reasoning_content: %s", b)
	}
	_, raw := emulator.Start(t, emulator.Config{Model: "m", Reasoning: true, ReasoningInContent: true})
	_, _, b = emuPost(t, raw, "/v1/chat/completions", emuChatBody("think", map[string]any{"max_tokens": 500}))
	content := emuStr(emuJget(emuObj(t, b), "choices", 0, "message", "content"))
	if !regexp.MustCompile(`(?s)^<think>.+</think>\n\n.+`).MatchString(content) {
		t.Fatalf("think tags: %q", content)
	}
	// 推理占满预算：finish length，正文为空
	_, _, b = emuPost(t, ep, "/v1/chat/completions", emuChatBody("think", map[string]any{"max_tokens": 2}))
	m = emuObj(t, b)
	if emuJget(m, "choices", 0, "finish_reason") != "length" || emuJget(m, "choices", 0, "message", "content") != "" {
		t.Fatalf("reasoning budget: %s", b)
	}
}

// TestMultipleChoiceAndMath 验证多选题与 MGSM 类提示得到确定性的 "Answer:" 行。
func TestMultipleChoiceAndMath(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m"})
	q := "Answer the following multiple choice question. The last line of your response should be of the following format: 'Answer: $LETTER' (without quotes) where LETTER is one of ABCD. Think step by step before answering.\n\nWhat is 2+2?\n\nA) 1\nB) 4\nC) 3\nD) 5"
	var first string
	for i := 0; i < 2; i++ {
		st, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody(q, map[string]any{"temperature": 0.5, "max_tokens": 2048}))
		text := emuStr(emuJget(emuObj(t, b), "choices", 0, "message", "content"))
		mm := regexp.MustCompile(`(?i)Answer[ \t]*:[ \t]*\$?([A-D])\$?`).FindStringSubmatch(text)
		if st != 200 || mm == nil {
			t.Fatalf("no answer line: %q", text)
		}
		if i == 0 {
			first = mm[1]
		} else if mm[1] != first {
			t.Fatal("multiple-choice answer not deterministic")
		}
	}
	mq := "Solve this math problem. Give the reasoning steps before giving the final answer on the last line by itself in the format of \"Answer:\". Do not add anything other than the integer answer after \"Answer:\".\n\nTom has 3 apples and buys 4 more."
	_, _, b := emuPost(t, ep, "/v1/chat/completions", emuChatBody(mq, map[string]any{"max_tokens": 2048}))
	if text := emuStr(emuJget(emuObj(t, b), "choices", 0, "message", "content")); !strings.HasSuffix(text, "Answer: 4") {
		t.Fatalf("mgsm answer: %q", text)
	}
}

// TestEmbeddingsAndRerank 验证嵌入向量的确定性、单位长度、dimensions、base64 编码，以及 rerank 的排序与 top_n。
func TestEmbeddingsAndRerank(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "bge", EnableEmbeddings: true, EnableRerank: true, EmbeddingDim: 64})
	st, _, b := emuPost(t, ep, "/v1/embeddings", map[string]any{"model": "bge", "input": []string{"你好 world", "你好 world", "other"}})
	m := emuObj(t, b)
	data := m["data"].([]any)
	if st != 200 || len(data) != 3 || m["object"] != "list" || emuJget(data, 0, "object") != "embedding" || emuNum(emuJget(m, "usage", "prompt_tokens")) != 7 {
		t.Fatalf("embeddings: %s", b)
	}
	vec := func(i int) []float64 {
		var v []float64
		for _, x := range emuJget(data, i, "embedding").([]any) {
			v = append(v, x.(float64))
		}
		return v
	}
	v0, v1 := vec(0), vec(1)
	norm := 0.0
	for i := range v0 {
		norm += v0[i] * v0[i]
		if v0[i] != v1[i] {
			t.Fatal("same input, different vectors")
		}
	}
	if len(v0) != 64 || math.Abs(norm-1) > 1e-5 {
		t.Fatalf("dim %d norm %f", len(v0), norm)
	}
	st, _, b = emuPost(t, ep, "/v1/embeddings", map[string]any{"input": "hi", "dimensions": 16, "encoding_format": "base64"})
	raw, err := base64.StdEncoding.DecodeString(emuStr(emuJget(emuObj(t, b), "data", 0, "embedding")))
	if st != 200 || err != nil || len(raw) != 16*4 {
		t.Fatalf("base64: %v %s", err, b)
	}
	n2 := 0.0
	for i := 0; i < 16; i++ {
		f := float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
		n2 += f * f
	}
	if math.Abs(n2-1) > 1e-4 {
		t.Fatalf("base64 vector norm %f", n2)
	}
	if st, _, _ := emuPost(t, ep, "/v1/embeddings", map[string]any{"input": "hi", "dimensions": 65}); st != 400 {
		t.Fatalf("dimensions too large: %d", st)
	}
	docs := []string{"the weather is sunny today", "天气 weather forecast sunny", "stock market crash"}
	for _, path := range []string{"/v1/rerank", "/rerank"} {
		st, _, b = emuPost(t, ep, path, map[string]any{"model": "bge", "query": "sunny weather", "documents": docs, "top_n": 2})
		res := emuObj(t, b)["results"].([]any)
		if st != 200 || len(res) != 2 {
			t.Fatalf("rerank: %s", b)
		}
		s0, s1 := emuJget(res, 0, "relevance_score").(float64), emuJget(res, 1, "relevance_score").(float64)
		if s0 < s1 || s0 <= 0 || s0 >= 1 || emuNum(emuJget(res, 0, "index")) == 2 || emuJget(res, 0, "document", "text") == nil {
			t.Fatalf("rerank order: %s", b)
		}
	}
	if st, _, _ := emuPost(t, ep, "/rerank", map[string]any{"query": "q", "documents": []string{}}); st != 400 {
		t.Fatalf("empty documents: %d", st)
	}
	_, off := emulator.Start(t, emulator.Config{Model: "m"})
	if st, _, _ := emuPost(t, off, "/v1/embeddings", map[string]any{"input": "x"}); st != 404 {
		t.Fatalf("embeddings disabled: %d", st)
	}
	if st, _, _ := emuPost(t, off, "/v1/rerank", map[string]any{"query": "x", "documents": []string{"a"}}); st != 404 {
		t.Fatalf("rerank disabled: %d", st)
	}
}

// scrape 抓取 /metrics 并返回 名称{标签} → 值。
func scrape(t *testing.T, ep deploy.Endpoint) map[string]float64 {
	t.Helper()
	st, h, b := emuDo(t, ep, http.MethodGet, "/metrics", nil)
	if st != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics: %d %s", st, h.Get("Content-Type"))
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad metrics line %q", line)
		}
		name := line[:i]
		if j := strings.IndexByte(name, '{'); j >= 0 {
			// 去掉 model_name 标签，保留其余标签以便查询
			labels := strings.ReplaceAll(name[j:], `model_name="m",`, "")
			labels = strings.ReplaceAll(labels, `,model_name="m"`, "")
			labels = strings.ReplaceAll(labels, `{model_name="m"}`, "")
			name = name[:j] + labels
		}
		out[name] = v
	}
	return out
}

// TestMetricsUpdatedByTraffic 验证 /metrics 的 vllm:* 计数器与直方图按真实流量更新。
func TestMetricsUpdatedByTraffic(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", SpecDecode: true, SpecAcceptRate: 0.5})
	for i := 0; i < 3; i++ {
		emuPost(t, ep, "/v1/chat/completions", emuChatBody("one two three", map[string]any{"max_tokens": 5, "ignore_eos": true}))
	}
	emuStreamChunks(t, ep, "/v1/completions", map[string]any{"prompt": "a b", "max_tokens": 4, "ignore_eos": true})
	m := scrape(t, ep)
	want := map[string]float64{
		"vllm:prompt_tokens_total": 3*3 + 2, "vllm:generation_tokens_total": 3*5 + 4,
		`vllm:request_success_total{finished_reason="length"}`: 4,
		"vllm:time_to_first_token_seconds_count":               4, "vllm:e2e_request_latency_seconds_count": 4,
		"vllm:inter_token_latency_seconds_count": 3, "vllm:num_requests_running": 0, "vllm:num_requests_waiting": 0,
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if m["vllm:spec_decode_num_draft_tokens_total"] <= 0 || m["vllm:spec_decode_num_accepted_tokens_total"] <= 0 ||
		m["vllm:spec_decode_num_accepted_tokens_total"] > m["vllm:spec_decode_num_draft_tokens_total"] {
		t.Errorf("spec decode counters: %v %v", m["vllm:spec_decode_num_draft_tokens_total"], m["vllm:spec_decode_num_accepted_tokens_total"])
	}
}

// TestQueueingShowsInTTFT 验证 MaxNumSeqs 饱和时请求排队，并体现在 waiting gauge 与队列时间中。
func TestQueueingShowsInTTFT(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", MaxNumSeqs: 1, ITL: 30 * time.Millisecond})
	body := `{"model":"m","stream":true,"max_tokens":10,"ignore_eos":true,"messages":[{"role":"user","content":"q"}]}`
	// A 占住唯一的名额：读到它的第一个字节后它一定在运行。
	respA, err := http.Post(emuRootURL(ep)+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer respA.Body.Close()
	if _, err := respA.Body.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		emuPost(t, ep, "/v1/chat/completions", emuChatBody("q", map[string]any{"max_tokens": 2}))
	}()
	// 服务端指标里必须看到 B 在排队（running=1, waiting=1），以 ctx 轮询而非固定睡眠。
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		m := scrape(t, ep)
		if m["vllm:num_requests_running"] == 1 && m["vllm:num_requests_waiting"] == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("never observed a waiting request: %v", m)
		case <-time.After(time.Millisecond):
		}
	}
	_, _ = io.Copy(io.Discard, respA.Body)
	wg.Wait()
	m := scrape(t, ep)
	if m["vllm:request_queue_time_seconds_count"] != 2 || m["vllm:request_queue_time_seconds_sum"] <= 0 ||
		m["vllm:time_to_first_token_seconds_sum"] < m["vllm:request_queue_time_seconds_sum"] {
		t.Fatalf("queue/TTFT metrics: %v", m)
	}
}

// TestLatencyLowerBounds 验证 TTFT、PrefillPerToken、ITL 与 TokensPerChunk 的时间下界与 chunk 数。
func TestLatencyLowerBounds(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", TTFT: 30 * time.Millisecond, ITL: 5 * time.Millisecond, PrefillPerToken: time.Millisecond, TokensPerChunk: 2})
	start := time.Now()
	req, _ := http.NewRequest(http.MethodPost, emuRootURL(ep)+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true,"max_tokens":6,"ignore_eos":true,"messages":[{"role":"user","content":"a b c d e f g h i j"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var firstByte time.Duration
	buf := make([]byte, 1)
	if _, err := resp.Body.Read(buf); err == nil {
		firstByte = time.Since(start)
	}
	rest, _ := io.ReadAll(resp.Body)
	total := time.Since(start)
	// TTFT >= 30ms + 10·1ms；3 个 chunk（每个 2 token）之后至少再 2·ITL。
	if firstByte < 40*time.Millisecond || total < 50*time.Millisecond {
		t.Fatalf("first byte %v total %v", firstByte, total)
	}
	if n := strings.Count(string(rest), `"content":"`); n != 4 { // role + 3 个 2-token chunk
		t.Fatalf("content deltas = %d: %s", n, rest)
	}
}

// TestFailureInjection 验证每种故障注入的线上表现，以及同一 Seed 下故障序列可复现。
func TestFailureInjection(t *testing.T) {
	for _, kind := range emulator.FailureKinds() {
		t.Run(kind, func(t *testing.T) {
			_, ep := emulator.Start(t, emulator.Config{Model: "m", FailureRate: 1, FailureKinds: []string{kind}})
			body, _ := json.Marshal(emuChatBody("x", map[string]any{"max_tokens": 8, "ignore_eos": true, "stream": true}))
			resp, err := http.Post(emuRootURL(ep)+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			raw, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch kind {
			case "429", "500", "503":
				if strconv.Itoa(resp.StatusCode) != kind || emuNum(emuJget(emuObj(t, raw), "error", "code")) != resp.StatusCode {
					t.Fatalf("%d %s", resp.StatusCode, raw)
				}
			case "stream_error":
				evs := emuEvents(t, raw)
				if resp.StatusCode != 200 || len(evs) < 2 || string(evs[len(evs)-1]) != "[DONE]" || emuJget(emuObj(t, evs[len(evs)-2]), "error", "message") == nil {
					t.Fatalf("stream_error: %s", raw)
				}
			case "drop":
				if rerr == nil {
					t.Fatalf("drop: expected a transport error, got %s", raw)
				}
			case "truncate":
				if rerr != nil || bytes.Contains(raw, []byte("[DONE]")) || !bytes.Contains(raw, []byte(`"content"`)) {
					t.Fatalf("truncate: %v %s", rerr, raw)
				}
			}
		})
	}
	// 确定性：同一 Seed 得到同一故障序列
	seq := func() string {
		_, ep := emulator.Start(t, emulator.Config{Model: "m", FailureRate: 0.5, FailureKinds: []string{"500", "503"}, Seed: 7})
		var sb strings.Builder
		for i := 0; i < 20; i++ {
			st, _, _ := emuPost(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 1}))
			sb.WriteString(strconv.Itoa(st) + ",")
		}
		return sb.String()
	}
	a := seq()
	if a != seq() || !strings.Contains(a, "200") || (!strings.Contains(a, "500") && !strings.Contains(a, "503")) {
		t.Fatalf("failure sequence %s not deterministic or not mixed", a)
	}
}

// TestUpdateAtRuntime 验证 Update 在运行中生效。
func TestUpdateAtRuntime(t *testing.T) {
	em, ep := emulator.Start(t, emulator.Config{Model: "m"})
	if err := em.Update(func(c *emulator.Config) { c.Defects.NoDone = true; c.FailureRate = 0 }); err != nil {
		t.Fatal(err)
	}
	_, done, _ := emuStreamChunks(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"max_tokens": 2}))
	if done {
		t.Fatal("Update did not apply")
	}
}

// TestStreamNChoicesAndCoalesced 验证 n>1 的流式交错、合并写入模式，以及 completions 流式的 echo 与 logprobs。
func TestStreamNChoicesAndCoalesced(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", CoalesceZeroLatency: true})
	chunks, done, _ := emuStreamChunks(t, ep, "/v1/chat/completions", emuChatBody("x", map[string]any{"n": 2, "temperature": 1, "seed": 3,
		"max_tokens": 300, "ignore_eos": true, "stream_options": map[string]any{"include_usage": true}}))
	roles, finishes := map[int]int{}, map[int]int{}
	text := map[int]*strings.Builder{0: {}, 1: {}}
	for _, c := range chunks[:len(chunks)-1] {
		i := emuNum(emuJget(c, "choices", 0, "index"))
		if emuJget(c, "choices", 0, "delta", "role") != nil {
			roles[i]++
		}
		if emuJget(c, "choices", 0, "finish_reason") != nil {
			finishes[i]++
		}
		text[i].WriteString(emuStr(emuJget(c, "choices", 0, "delta", "content")))
	}
	if !done || roles[0] != 1 || roles[1] != 1 || finishes[0] != 1 || finishes[1] != 1 || text[0].String() == text[1].String() {
		t.Fatalf("n=2 stream: roles %v finishes %v", roles, finishes)
	}
	if emuNum(emuJget(chunks[len(chunks)-1], "usage", "completion_tokens")) != 600 {
		t.Fatalf("usage over both choices: %v", chunks[len(chunks)-1])
	}
	// completions 流式：echo 先行，logprobs 每个 chunk 一个 token
	chunks, _, _ = emuStreamChunks(t, ep, "/v1/completions", map[string]any{"prompt": "PROMPT", "echo": true, "logprobs": 1, "max_tokens": 3, "ignore_eos": true})
	if emuJget(chunks[0], "choices", 0, "text") != "PROMPT" || len(emuJget(chunks[1], "choices", 0, "logprobs", "tokens").([]any)) != 1 {
		t.Fatalf("completion stream echo/logprobs: %v", chunks[:2])
	}
}

// TestNonStreamFaults 验证非流式请求上的 stream_error/drop/truncate 故障。
func TestNonStreamFaults(t *testing.T) {
	for kind, check := range map[string]func(st int, err error) bool{
		"stream_error": func(st int, err error) bool { return err == nil && st == 500 },
		"drop":         func(st int, err error) bool { return err != nil },
		"truncate":     func(st int, err error) bool { return err != nil },
	} {
		_, ep := emulator.Start(t, emulator.Config{Model: "m", FailureRate: 1, FailureKinds: []string{kind}})
		body, _ := json.Marshal(emuChatBody("x", map[string]any{"max_tokens": 4}))
		resp, err := http.Post(emuRootURL(ep)+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		st := 0
		if err == nil {
			st = resp.StatusCode
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if !check(st, err) {
			t.Errorf("%s: status %d err %v", kind, st, err)
		}
	}
}

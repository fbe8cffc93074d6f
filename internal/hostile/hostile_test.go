package hostile_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/internal/hostile"
	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// start 启动一个服务并在测试结束时关闭它。
func start(t *testing.T, cfg hostile.Config) *hostile.Server {
	t.Helper()
	s, err := hostile.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// post 以 JSON 发 POST，带可选的 Bearer 密钥。
func post(t *testing.T, ctx context.Context, url, key string, body any) (*http.Response, error) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return http.DefaultClient.Do(req)
}

// get 发 GET 并读完响应体。
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// events 把 SSE 体拆成 data 载荷（不含 "data: " 前缀）。
func events(body string) []string {
	var out []string
	for _, blk := range strings.Split(body, "\n\n") {
		if d, ok := strings.CutPrefix(blk, "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// chatBody 返回一个 chat 请求体。
func chatBody(stream bool, maxTokens int) map[string]any {
	b := map[string]any{"model": hostile.DefaultModel, "max_completion_tokens": maxTokens, "stream": stream,
		"messages": []any{map[string]any{"role": "system", "content": "be brief"}, map[string]any{"role": "user", "content": "hello there"}}}
	if stream {
		b["stream_options"] = map[string]any{"include_usage": true}
	}
	return b
}

// TestHealthyChatStream 检查健康的流式 chat：role 首块、max_tokens 个内容块、
// 最后一个内容块带 length、include_usage 的空 choices 块、[DONE]，usage 数值正确。
func TestHealthyChatStream(t *testing.T) {
	s := start(t, hostile.Config{APIKey: "k1"})
	resp, err := post(t, context.Background(), s.BaseURL(hostile.FaultNone)+"/chat/completions", "k1", chatBody(true, 3))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q", ct)
	}
	b, _ := io.ReadAll(resp.Body)
	ev := events(string(b))
	if len(ev) != 6 {
		t.Fatalf("%d events, want role + 3 content + usage + [DONE]: %q", len(ev), ev)
	}
	var first, last, usage struct {
		Object  string
		Choices []struct {
			Delta struct {
				Role    string  `json:"role"`
				Content *string `json:"content"`
			}
			FinishReason *string `json:"finish_reason"`
		}
		Usage *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		}
	}
	for i, p := range []any{&first, &last, &usage} {
		if err := json.Unmarshal([]byte(ev[[]int{0, 3, 4}[i]]), p); err != nil {
			t.Fatal(err)
		}
	}
	if first.Object != "chat.completion.chunk" || first.Choices[0].Delta.Role != "assistant" || *first.Choices[0].Delta.Content != "" || first.Usage != nil {
		t.Errorf("first chunk %+v", first)
	}
	if *last.Choices[0].Delta.Content != " hi" || last.Choices[0].FinishReason == nil || *last.Choices[0].FinishReason != "length" {
		t.Errorf("last content chunk %s", ev[3])
	}
	wantPrompt := tokenize.Count("be brief") + tokenize.Count("hello there")
	if len(usage.Choices) != 0 || usage.Usage == nil || usage.Usage.CompletionTokens != 3 || usage.Usage.PromptTokens != wantPrompt || usage.Usage.TotalTokens != 3+wantPrompt {
		t.Errorf("usage chunk %s (want prompt %d)", ev[4], wantPrompt)
	}
	if ev[5] != "[DONE]" {
		t.Errorf("last event %q", ev[5])
	}
	st := s.Stats()
	if st.Generations != 1 || st.Faulted != 0 || len(st.Authorization) != 1 || st.Authorization[0] != "Bearer k1" {
		t.Errorf("stats %+v", st)
	}
}

// TestContinuousUsageAndCompletions 检查 completions 流（text 字段、无 role 块）与
// continuous_usage_stats（每块累计 usage，单调不减）。
func TestContinuousUsageAndCompletions(t *testing.T) {
	s := start(t, hostile.Config{})
	resp, err := post(t, context.Background(), s.BaseURL(hostile.FaultNone)+"/completions", "", map[string]any{
		"model": hostile.DefaultModel, "prompt": []any{"a b c"}, "max_tokens": 2, "stream": true,
		"stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ev := events(string(b))
	want := []int{1, 2, 2}
	if len(ev) != 4 {
		t.Fatalf("events %q", ev)
	}
	for i, w := range want {
		var c struct {
			Object  string
			Choices []struct{ Text string }
			Usage   struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(ev[i]), &c); err != nil {
			t.Fatal(err)
		}
		if c.Object != "text_completion" || c.Usage.CompletionTokens != w || c.Usage.PromptTokens != tokenize.Count("a b c") {
			t.Errorf("event %d: %s", i, ev[i])
		}
		if i < 2 && c.Choices[0].Text != " hi" {
			t.Errorf("event %d text %q", i, c.Choices[0].Text)
		}
	}
}

// TestAnswerAndNonStream 检查 Config.Answer 决定非流式回复（stop），以及 stream_options
// 搭配 stream:false 的 400（vLLM 行为）。
func TestAnswerAndNonStream(t *testing.T) {
	var got string
	s := start(t, hostile.Config{Model: "m", Answer: func(p string) string {
		got = p
		if p == "decline" {
			return ""
		}
		return "Answer: C"
	}})
	resp, err := post(t, context.Background(), s.BaseURL(hostile.FaultNone)+"/chat/completions", "", chatBody(false, 5))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		ID, Object, Model string
		Choices           []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got != "hello there" || c.Object != "chat.completion" || c.Model != "m" || !strings.HasPrefix(c.ID, "chatcmpl-") ||
		c.Choices[0].Message.Content != "Answer: C" || c.Choices[0].FinishReason != "stop" || c.Usage.CompletionTokens != tokenize.Count("Answer: C") {
		t.Errorf("prompt %q, response %+v", got, c)
	}
	// Answer 返回空串：退回 max_tokens 个 " hi"。
	resp, err = post(t, context.Background(), s.BaseURL(hostile.FaultNone)+"/completions", "", map[string]any{"prompt": "decline", "max_tokens": 3})
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b2), `"text":" hi hi hi"`) || !strings.Contains(string(b2), `"finish_reason":"length"`) {
		t.Errorf("declined answer: %s", b2)
	}
	b := chatBody(false, 5)
	b["stream_options"] = map[string]any{"include_usage": true}
	resp, err = post(t, context.Background(), s.BaseURL(hostile.FaultNone)+"/chat/completions", "", b)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("stream_options without stream: HTTP %d, want 400", resp.StatusCode)
	}
}

// TestEndpoints 检查 /health、/version、/v1/models、/tokenize、/metrics 的值，
// 以及 401、未知故障名与未知路径。
func TestEndpoints(t *testing.T) {
	s := start(t, hostile.Config{APIKey: "k", MaxModelLen: 999})
	if code, _ := get(t, s.Root(hostile.FaultHuge)+"/health"); code != 200 {
		t.Errorf("/health %d", code)
	}
	if code, body := get(t, s.URL()+"/version"); code != 200 || !strings.Contains(body, `"hostile"`) {
		t.Errorf("/version %d %s", code, body)
	}
	if code, body := get(t, s.BaseURL(hostile.FaultSilence)+"/models"); code != 401 || strings.TrimSpace(body) != `{"error":"Unauthorized"}` {
		t.Errorf("/v1/models without key: %d %s", code, body)
	}
	req, _ := http.NewRequest(http.MethodGet, s.BaseURL(hostile.FaultSilence)+"/models", nil)
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		}
	}
	_ = json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if len(models.Data) != 1 || models.Data[0].ID != hostile.DefaultModel || models.Data[0].MaxModelLen != 999 {
		t.Errorf("models %+v", models)
	}
	for _, body := range []map[string]any{
		{"model": "x", "prompt": "hello 你好 world"},
		{"model": "x", "messages": []any{map[string]any{"role": "user", "content": "hello 你好 world"}}},
	} {
		resp, err := post(t, context.Background(), s.URL()+"/tokenize", "", body)
		if err != nil {
			t.Fatal(err)
		}
		var tr struct {
			Count       int   `json:"count"`
			MaxModelLen int   `json:"max_model_len"`
			Tokens      []int `json:"tokens"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&tr)
		resp.Body.Close()
		if want := tokenize.Count("hello 你好 world"); tr.Count != want || len(tr.Tokens) != want || tr.MaxModelLen != 999 {
			t.Errorf("tokenize %+v, want count %d", tr, want)
		}
	}
	resp, err = http.Post(s.URL()+"/tokenize", "application/json", strings.NewReader("{"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("tokenize with a broken body: %d", resp.StatusCode)
	}
	// 一个健康请求之后 /metrics 的成功数与 token 数随之增长。
	r2, err := post(t, context.Background(), s.BaseURL(hostile.FaultNone)+"/chat/completions", "k", chatBody(false, 4))
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	_, m := get(t, s.URL()+"/metrics")
	for _, want := range []string{
		`vllm:request_success_total{finished_reason="length",model_name="hostile-model"} 1`,
		`vllm:generation_tokens_total{model_name="hostile-model"} 4`,
		`vllm:num_requests_running{model_name="hostile-model"} 0`,
	} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", want, m)
		}
	}
	if code, body := get(t, s.URL()+"/f/nope/v1/models"); code != 404 || !strings.Contains(body, `unknown fault \"nope\"`) {
		t.Errorf("unknown fault: %d %s", code, body)
	}
	if code, body := get(t, s.URL()+"/f/stall~x/health"); code != 404 || !strings.Contains(body, "not a count") {
		t.Errorf("bad count: %d %s", code, body)
	}
	if code, _ := get(t, s.URL()+"/nowhere"); code != 404 {
		t.Errorf("unknown route: %d", code)
	}
	r3, err := post(t, context.Background(), s.BaseURL(hostile.FaultNone)+"/chat/completions", "k", "not an object")
	if err != nil {
		t.Fatal(err)
	}
	r3.Body.Close()
	if r3.StatusCode != 400 {
		t.Errorf("non-object body: %d", r3.StatusCode)
	}
}

// outcome 是对一个故障应答的观察：状态码、读响应体的错误与响应体（截断到 1 MiB）。
type outcome struct {
	status int
	doErr  error
	readEr error
	body   string
	header http.Header
}

// observe 发一个请求并在 limit 之内读响应体。
func observe(t *testing.T, url string, body any, timeout time.Duration) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := post(t, ctx, url, "", body)
	if err != nil {
		return outcome{doErr: err}
	}
	defer resp.Body.Close()
	b, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return outcome{status: resp.StatusCode, readEr: rerr, body: string(b), header: resp.Header}
}

// TestFaults 逐个故障检查流式与非流式请求看到的确切表现。
func TestFaults(t *testing.T) {
	s := start(t, hostile.Config{BigSize: 200 << 10, RetryAfter: 2 * time.Second})
	short := 300 * time.Millisecond
	cases := []struct {
		f      hostile.Fault
		stream bool
		check  func(o outcome) string
	}{
		{hostile.FaultTruncate, true, func(o outcome) string {
			if o.status != 200 || !errors.Is(o.readEr, io.ErrUnexpectedEOF) || strings.Contains(o.body, "[DONE]") || !strings.HasSuffix(o.body, `"del`) {
				return "want 200, half an event, unexpected EOF"
			}
			return ""
		}},
		{hostile.FaultTruncate, false, func(o outcome) string {
			if o.status != 200 || !errors.Is(o.readEr, io.ErrUnexpectedEOF) || json.Valid([]byte(o.body)) {
				return "want 200, half a JSON body, unexpected EOF"
			}
			return ""
		}},
		{hostile.FaultReset, true, func(o outcome) string {
			if !errors.Is(o.doErr, syscall.ECONNRESET) && !errors.Is(o.doErr, io.EOF) {
				return "want connection reset"
			}
			return ""
		}},
		{hostile.FaultErrorEvent, true, func(o outcome) string {
			ev := events(o.body)
			if o.status != 200 || len(ev) != 4 || !strings.HasPrefix(ev[2], `{"error":{`) || !strings.Contains(ev[2], `"code":500`) || ev[3] != "[DONE]" {
				return "want role, content, error event, [DONE] on a 200"
			}
			return ""
		}},
		{hostile.FaultErrorEvent, false, func(o outcome) string {
			if o.status != 200 || !strings.HasPrefix(o.body, `{"error":{`) {
				return "want a 200 carrying an error"
			}
			return ""
		}},
		{hostile.Fault429, false, func(o outcome) string {
			if o.status != 429 || o.header.Get("Retry-After") != "2" || !strings.Contains(o.body, `"code":429`) {
				return "want 429 with Retry-After 2"
			}
			return ""
		}},
		{hostile.Fault500, true, func(o outcome) string {
			if o.status != 500 || !strings.Contains(o.body, `"type":"InternalServerError"`) {
				return "want 500"
			}
			return ""
		}},
		{hostile.FaultSilence, true, func(o outcome) string {
			if !errors.Is(o.doErr, context.DeadlineExceeded) {
				return "want no response before the deadline"
			}
			return ""
		}},
		{hostile.FaultStall, true, func(o outcome) string {
			if o.status != 200 || !errors.Is(o.readEr, context.DeadlineExceeded) || len(events(o.body)) != 2 {
				return "want two events then silence"
			}
			return ""
		}},
		{hostile.FaultStall, false, func(o outcome) string {
			if o.status != 200 || !errors.Is(o.readEr, context.DeadlineExceeded) || !strings.HasSuffix(o.body, `"choices":[`) {
				return "want a partial body then silence"
			}
			return ""
		}},
		{hostile.FaultTokenizeSilent, true, func(o outcome) string {
			if o.status != 200 || !strings.HasSuffix(o.body, "data: [DONE]\n\n") {
				return "generation stays healthy"
			}
			return ""
		}},
		{hostile.FaultBig, true, func(o outcome) string {
			ev := events(o.body)
			var c struct {
				Choices []struct{ Delta struct{ Content string } }
			}
			if o.status != 200 || len(ev) != 5 || json.Unmarshal([]byte(ev[1]), &c) != nil || len(c.Choices[0].Delta.Content) != 200<<10+len(" hi hi ") {
				return "want one valid 200 KiB content event"
			}
			return ""
		}},
		{hostile.FaultBig, false, func(o outcome) string {
			var c struct {
				Choices []struct{ Message struct{ Content string } }
			}
			if o.status != 200 || json.Unmarshal([]byte(o.body), &c) != nil || len(c.Choices[0].Message.Content) != 200<<10+len(" hi hi ") ||
				o.header.Get("Content-Length") != "" && o.header.Get("Content-Length") != strconv.Itoa(len(o.body)) {
				return "want one valid 200 KiB JSON body"
			}
			return ""
		}},
		{hostile.FaultInvalidJSON, true, func(o outcome) string {
			ev := events(o.body)
			if o.status != 200 || len(ev) != 2 || json.Valid([]byte(ev[0])) || ev[1] != "[DONE]" {
				return "want an invalid JSON event then [DONE]"
			}
			return ""
		}},
		{hostile.FaultInvalidJSON, false, func(o outcome) string {
			if o.status != 200 || json.Valid([]byte(o.body)) || o.readEr != nil {
				return "want an invalid JSON body"
			}
			return ""
		}},
		{hostile.FaultZeroTokens, true, func(o outcome) string {
			ev := events(o.body)
			if o.status != 200 || len(ev) != 4 || !strings.Contains(ev[1], `"finish_reason":"stop"`) || !strings.Contains(ev[2], `"completion_tokens":0`) {
				return "want role, stop, usage 0, [DONE]"
			}
			return ""
		}},
		{hostile.FaultZeroTokens, false, func(o outcome) string {
			if o.status != 200 || !strings.Contains(o.body, `"content":""`) || !strings.Contains(o.body, `"completion_tokens":0`) {
				return "want empty content and 0 tokens"
			}
			return ""
		}},
		{hostile.FaultDupFinish, true, func(o outcome) string {
			if o.status != 200 || strings.Count(o.body, `"finish_reason":"length"`) != 2 {
				return "want two finish chunks"
			}
			return ""
		}},
		{hostile.FaultDupFinish, false, func(o outcome) string {
			if o.status != 200 || strings.Count(o.body, `"index":0`) != 2 {
				return "want two choices with index 0"
			}
			return ""
		}},
		{hostile.FaultGarbage, true, func(o outcome) string {
			if o.status != 200 || o.header.Get("Content-Type") != "text/event-stream" || len(o.body) != 64<<10+2 || !strings.Contains(o.body, "data: \xff\xfe{") {
				return "want 64 KiB of garbage as an event stream"
			}
			return ""
		}},
		{hostile.FaultError200, true, func(o outcome) string {
			if o.status != 200 || o.header.Get("Content-Type") != "application/json" || !strings.HasPrefix(o.body, `{"error":{`) {
				return "want a JSON error on a 200 even for a stream request"
			}
			return ""
		}},
	}
	for _, c := range cases {
		name := string(c.f) + map[bool]string{true: "/stream", false: "/json"}[c.stream]
		t.Run(name, func(t *testing.T) {
			body := chatBody(c.stream, 2)
			o := observe(t, s.BaseURL(c.f)+"/chat/completions", body, short)
			if why := c.check(o); why != "" {
				t.Errorf("%s: status %d, do %v, read %v, header %v, body %.300q", why, o.status, o.doErr, o.readEr, o.header, o.body)
			}
		})
	}
}

// TestContextLength 检查上下文长度校验先于故障：超长的请求在故障前缀下也得到 vLLM 的 400。
func TestContextLength(t *testing.T) {
	s := start(t, hostile.Config{MaxModelLen: 10})
	o := observe(t, s.BaseURL(hostile.FaultSilence)+"/completions", map[string]any{"prompt": "a b c", "max_tokens": 8}, 5*time.Second)
	if o.status != 400 || !strings.Contains(o.body, "maximum context length is 10 tokens. However, you requested 11 tokens (3 in the messages, 8 in the completion)") {
		t.Errorf("%d %s", o.status, o.body)
	}
}

// TestAfterCount 检查 "~N"：该前缀的前 N 个生成请求健康，之后按故障应答。
func TestAfterCount(t *testing.T) {
	s := start(t, hostile.Config{})
	url := s.BaseURLAfter(hostile.Fault500, 1) + "/completions"
	var codes []int
	for range 3 {
		o := observe(t, url, map[string]any{"model": "m", "prompt": "x", "max_tokens": 1}, 5*time.Second)
		codes = append(codes, o.status)
	}
	if codes[0] != 200 || codes[1] != 500 || codes[2] != 500 {
		t.Errorf("codes %v, want [200 500 500]", codes)
	}
	if st := s.Stats(); st.Generations != 3 || st.Faulted != 2 {
		t.Errorf("stats %+v", st)
	}
	if !strings.HasSuffix(url, "/f/500~1/v1/completions") {
		t.Errorf("url %s", url)
	}
}

// TestSilentEndpoints 检查 tokenize-silent 与 metrics-silent 只让各自的接口沉默，
// 且 Close 会放开被卡住的请求。
func TestSilentEndpoints(t *testing.T) {
	s := start(t, hostile.Config{})
	o := observe(t, s.Root(hostile.FaultTokenizeSilent)+"/tokenize", map[string]any{"prompt": "x"}, 200*time.Millisecond)
	if !errors.Is(o.doErr, context.DeadlineExceeded) {
		t.Errorf("tokenize-silent: %+v", o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Root(hostile.FaultMetricsSilent)+"/metrics", nil)
	if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("metrics-silent: %v", err)
	}
	if code, _ := get(t, s.Root(hostile.FaultMetricsSilent)+"/health"); code != 200 {
		t.Errorf("metrics-silent /health %d", code)
	}
	// 一个没有期限的沉默请求：Close 必须放开它并等它返回。
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Post(s.BaseURL(hostile.FaultSilence)+"/completions", "application/json", strings.NewReader(`{"prompt":"x"}`))
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	for s.Stats().Generations == 0 {
		runtime.Gosched()
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err == nil {
		t.Error("silenced request got a response after Close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestHugeIsLazy 读 1 MiB 后断开：服务端写出的载荷远小于 1 GiB（边生成边写，
// 客户端断开后停止），流式与非流式都如此。
func TestHugeIsLazy(t *testing.T) {
	for _, stream := range []bool{true, false} {
		s, err := hostile.New(hostile.Config{})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := post(t, context.Background(), s.BaseURL(hostile.FaultHuge)+"/chat/completions", "", chatBody(stream, 4))
		if err != nil {
			t.Fatal(err)
		}
		if !stream && resp.ContentLength < hostile.DefaultHugeSize {
			t.Errorf("Content-Length %d, want the full declared size", resp.ContentLength)
		}
		n, _ := io.CopyN(io.Discard, resp.Body, 1<<20)
		resp.Body.Close()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if sent := s.Stats().PayloadBytes; n != 1<<20 || sent > 64<<20 {
			t.Errorf("stream=%v: read %d, server wrote %d payload bytes after the client left", stream, n, sent)
		}
	}
}

// TestEchoAuth 检查回显：生成接口的 401 与 Pushgateway 的 401 都原样带出 Authorization、
// Basic 的明文密码与 Bearer 密钥的 base64；非 echo 前缀的推送被接受并计数。
func TestEchoAuth(t *testing.T) {
	s := start(t, hostile.Config{})
	o := func(url, method string, set func(*http.Request)) (int, string) {
		req, _ := http.NewRequest(method, url, strings.NewReader(`{"prompt":"x"}`))
		set(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := o(s.BaseURL(hostile.FaultEchoAuth)+"/completions", http.MethodPost, func(r *http.Request) { r.Header.Set("Authorization", "Bearer canary123") })
	if code != 401 || !strings.Contains(body, "Authorization: Bearer canary123;") || !strings.Contains(body, "api key canary123;") {
		t.Errorf("generation echo: %d %s", code, body)
	}
	code, body = o(s.Root(hostile.FaultEchoAuth)+"/metrics/job/cibench", http.MethodPut, func(r *http.Request) { r.SetBasicAuth("user", "pw456") })
	if code != 401 || !strings.Contains(body, "Basic "+base64.StdEncoding.EncodeToString([]byte("user:pw456"))) || !strings.Contains(body, "password=pw456;") {
		t.Errorf("push echo: %d %s", code, body)
	}
	for method, want := range map[string]int{http.MethodPut: 200, http.MethodPost: 200, http.MethodDelete: 202} {
		if code, _ := o(s.URL()+"/metrics/job/cibench/instance/x", method, func(*http.Request) {}); code != want {
			t.Errorf("push %s: %d, want %d", method, code, want)
		}
	}
	if st := s.Stats(); st.Pushes != 4 || len(st.Authorization) != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestNewRejectsNegative 检查构造时的配置校验。
func TestNewRejectsNegative(t *testing.T) {
	for _, c := range []hostile.Config{{BigSize: -1}, {HugeSize: -1}, {RetryAfter: -time.Second}, {MaxModelLen: -1}} {
		if _, err := hostile.New(c); !errors.Is(err, hostile.ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", c, err)
		}
	}
}

// TestFaultsKnown 检查故障列表不重复且每个都 Known，未知名字不是。
func TestFaultsKnown(t *testing.T) {
	seen := map[hostile.Fault]bool{}
	for _, f := range hostile.Faults() {
		if seen[f] || !f.Known() {
			t.Errorf("fault %q duplicated or unknown", f)
		}
		seen[f] = true
	}
	if hostile.Fault("bogus").Known() || len(seen) != 18 {
		t.Errorf("%d faults", len(seen))
	}
}

package loadgen_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/internal/tokenize"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/dataset"
)

// exchangeLog 是服务端看到的一次生成请求：请求头里的会话 id、请求体里的 messages / prompt，
// 以及服务端流出的回答正文（delta.content 拼接）。
type exchangeLog struct {
	session  string
	messages []chatMsg
	prompt   string
	answer   string
}

// chatMsg 是 chat messages 的一项。
type chatMsg struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// recorder 包在模拟器的处理函数外，原样转发，同时记下每个生成请求与其响应正文。
type recorder struct {
	mu   sync.Mutex
	logs []exchangeLog
	next http.Handler
	// metrics 非 nil 时 /metrics 由它回答（服务端已知的计数器值），否则转给模拟器。
	metrics http.HandlerFunc
	served  atomic.Int64
}

// teeWriter 把响应同时写进缓冲，并保留 Flush（流式响应逐 chunk 刷新）。
type teeWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

// Write 写往客户端并记下。
func (w *teeWriter) Write(b []byte) (int, error) { w.buf.Write(b); return w.ResponseWriter.Write(b) }

// Flush 转发刷新。
func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap 让 http.ResponseController 找到底层的 ResponseWriter。
func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ServeHTTP 记录生成请求后转发。
func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/metrics" && rc.metrics != nil {
		rc.metrics(w, r)
		return
	}
	if !strings.HasSuffix(r.URL.Path, "/completions") {
		rc.next.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		Messages []chatMsg `json:"messages"`
		Prompt   string    `json:"prompt"`
	}
	_ = json.Unmarshal(body, &req)
	tw := &teeWriter{ResponseWriter: w}
	rc.next.ServeHTTP(tw, r)
	rc.served.Add(1)
	var answer strings.Builder
	sc := bufio.NewScanner(&tw.buf)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(data), &ev) == nil && len(ev.Choices) > 0 {
			answer.WriteString(ev.Choices[0].Delta.Content)
		}
	}
	rc.mu.Lock()
	rc.logs = append(rc.logs, exchangeLog{session: r.Header.Get("X-Session-ID"), messages: req.Messages, prompt: req.Prompt, answer: answer.String()})
	rc.mu.Unlock()
}

// startRecorded 启动模拟器的处理函数外加 recorder 的回环服务器。
func startRecorded(t *testing.T, cfg emulator.Config, metrics http.HandlerFunc) (*recorder, loadgen.Target) {
	t.Helper()
	em, err := emulator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rc := &recorder{next: em.Handler(), metrics: metrics}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return rc, loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{srv.URL + "/v1"}, Model: cfg.Model}, Provider: "emu"}
}

// TestMultiTurnHistoryGrowsByLiveAnswer 是多轮会话的完成条件：服务端收到的第 k+1 轮 messages
// 恰好是第 k 轮的 messages 加上服务端第 k 轮实际流出的回答与新问题；每个请求带 X-Session-ID；
// 记录与按轮次的汇总对得上。
func TestMultiTurnHistoryGrowsByLiveAnswer(t *testing.T) {
	rc, tgt := startRecorded(t, emulator.Config{Model: "m", ITL: time.Millisecond}, nil)
	p := loadgen.Profile{
		Concurrency: []int{2}, InputLength: []int{8}, OutputLength: []int{5},
		MultiTurn: loadgen.MultiTurnConfig{Conversations: 3, TurnsMean: 3, ThinkTime: 2 * time.Millisecond, MaxActiveConversations: 2},
	}
	c := &collect{}
	sums, err := loadgen.Run(context.Background(), tgt, p, c.observer())
	if err != nil {
		t.Fatal(err)
	}
	bySession := map[string][]exchangeLog{}
	for _, l := range rc.logs {
		if l.session == "" {
			continue // 探测请求
		}
		bySession[l.session] = append(bySession[l.session], l)
	}
	if len(bySession) != 3 {
		t.Fatalf("%d sessions seen by the server, want 3", len(bySession))
	}
	for id, ls := range bySession {
		if len(ls) != 3 {
			t.Fatalf("session %s: %d turns, want 3", id, len(ls))
		}
		for k, l := range ls {
			if len(l.messages) != 2*k+1 {
				t.Fatalf("session %s turn %d: %d messages, want %d", id, k+1, len(l.messages), 2*k+1)
			}
			q := l.messages[len(l.messages)-1]
			if q.Role != "user" || tokenize.Count(q.Content) != 8 {
				t.Fatalf("session %s turn %d: last message %+v is not an 8-token question", id, k+1, q)
			}
			if k == 0 {
				continue
			}
			prev := ls[k-1]
			want := append(append([]chatMsg(nil), prev.messages...), chatMsg{Role: "assistant", Content: prev.answer})
			got := l.messages[:len(l.messages)-1]
			if prev.answer == "" || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("session %s turn %d: history\n got %v\nwant %v", id, k+1, got, want)
			}
		}
	}
	if len(sums) != 1 || sums[0].NumPrompts != 9 || sums[0].Succeeded != 9 {
		t.Fatalf("summary %+v", sums)
	}
	turns := sums[0].Workload.Turns
	if len(turns) != 3 {
		t.Fatalf("turn summaries %+v", turns)
	}
	for i, ts := range turns {
		if ts.Turn != i+1 || ts.Requests != 3 || ts.Succeeded != 3 || !ts.TTFT.Valid() || ts.AvgPromptTokens <= 0 {
			t.Fatalf("turn %d: %+v", i+1, ts)
		}
		if i > 0 && ts.AvgPromptTokens <= turns[i-1].AvgPromptTokens {
			t.Fatalf("prompt tokens do not grow with the turn: %+v", turns)
		}
	}
	seen := map[string]int{}
	for _, r := range c.recs {
		if r.SessionID == "" || r.Turn < 1 || r.Turn > 3 {
			t.Fatalf("record without session/turn: %+v", r)
		}
		seen[r.SessionID]++
	}
	if len(seen) != 3 {
		t.Fatalf("records by session %v", seen)
	}
}

// mooncakeLines 生成一个 n 行、间隔 gap 毫秒的 Mooncake 轨迹：偶数行共享块 1、2，奇数行只有自己的块。
func mooncakeLines(n, gapMS int) string {
	var b strings.Builder
	for i := range n {
		ids := fmt.Sprintf("[1,2,%d]", 100+i)
		if i%2 == 1 {
			ids = fmt.Sprintf("[%d]", 200+i)
		}
		in := 2*16 + 3
		if i%2 == 1 {
			in = 10
		}
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": 3, "hash_ids": %s, "session_id": "s%d"}`+"\n", i*gapMS, in, ids, i%3)
	}
	return b.String()
}

// TestTraceReplayScheduleAndBlocks 回放一个 Mooncake 轨迹：意图时刻与时刻表一致，每个请求带
// 轨迹的 session_id，服务端收到的 prompt 长度精确、共享块的行前缀相同，发出滞后报告了全部请求。
func TestTraceReplayScheduleAndBlocks(t *testing.T) {
	rc, tgt := startRecorded(t, emulator.Config{Model: "m"}, nil)
	trace, err := dataset.ReadMooncakeTrace(strings.NewReader(mooncakeLines(20, 5)), "t.jsonl", 16)
	if err != nil {
		t.Fatal(err)
	}
	p := loadgen.Profile{DatasetType: loadgen.DatasetMooncakeTrace, TraceRequests: trace, Backend: loadgen.BackendCompletion,
		Trace: dataset.TraceConfig{BlockSize: 16, TimeScale: 2}}
	c := &collect{}
	sums, err := loadgen.Run(context.Background(), tgt, p, c.observer())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.recs) != 20 || sums[0].Succeeded != 20 {
		t.Fatalf("%d records, summary %+v", len(c.recs), sums[0])
	}
	var t0 time.Time
	for _, r := range c.recs {
		if r.Index == 0 {
			t0 = r.Intended
		}
	}
	for _, r := range c.recs {
		if want := time.Duration(r.Index) * 10 * time.Millisecond; r.Intended.Sub(t0) != want {
			t.Fatalf("request %d intended at +%s, want +%s (timestamp × time_scale 2)", r.Index, r.Intended.Sub(t0), want)
		}
		if r.SessionID != fmt.Sprintf("s%d", r.Index%3) {
			t.Fatalf("request %d session %q", r.Index, r.SessionID)
		}
	}
	lag := sums[0].Workload.DispatchLag
	if lag.Count != 20 || lag.P50 < 0 {
		t.Fatalf("dispatch lag %+v", lag)
	}
	var shared []string
	for _, l := range rc.logs {
		if l.session == "" {
			continue
		}
		n := tokenize.Count(l.prompt)
		if n != 35 && n != 10 {
			t.Fatalf("server got a %d-token prompt, want 35 or 10", n)
		}
		if n == 35 {
			shared = append(shared, l.prompt)
		}
	}
	if len(shared) != 10 {
		t.Fatalf("%d long prompts", len(shared))
	}
	// 32 个 token（两整块）相同，第三块各不相同。
	pre := commonPrefix(shared[0], shared[1])
	if got := tokenize.Count(pre); got < 32 || got > 33 {
		t.Fatalf("shared prefix of two block-sharing prompts is %d tokens, want 32", got)
	}
}

// commonPrefix 返回两个字符串的公共前缀。
func commonPrefix(a, b string) string {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return a[:n]
}

// TestServerCacheTruth 用一个给出已知计数器值的 /metrics 验证组内的前缀命中率、抢占与 KV 峰值：
// 每个生成请求让 queries 加 100、hits 加 40、抢占加 1、KV 占用加 0.01，所以一组 n 个请求的
// 命中率恰为 0.4，抢占为 n，峰值是组后的占用。
func TestServerCacheTruth(t *testing.T) {
	var rc *recorder
	metrics := func(w http.ResponseWriter, _ *http.Request) {
		n := rc.served.Load()
		fmt.Fprintf(w, "# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{model_name=\"m\"} %d\n", 100*n)
		fmt.Fprintf(w, "# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{model_name=\"m\"} %d\n", 40*n)
		fmt.Fprintf(w, "# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total{model_name=\"m\"} %d\n", n)
		fmt.Fprintf(w, "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=\"m\"} %g\n", 0.2+0.01*float64(n))
	}
	rc, tgt := startRecorded(t, emulator.Config{Model: "m"}, metrics)
	p := loadgen.Profile{Concurrency: []int{2}, InputLength: []int{16}, OutputLength: []int{4}, NumRequests: []int{12, 6}}
	p.Concurrency = []int{2, 3}
	sums, err := loadgen.Run(context.Background(), tgt, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	served := int64(1) // 探测请求
	for i, s := range sums {
		c := s.Workload.Cache
		n := float64(s.NumPrompts)
		served += int64(s.NumPrompts)
		if c.HitRate != 0.4 || c.PrefixQueries != 100*n || c.PrefixHits != 40*n || c.Preemptions != n {
			t.Fatalf("group %d: cache %+v for %v requests", i, c, n)
		}
		if want := 0.2 + 0.01*float64(served); c.PeakKVUsage < want-1e-9 || c.PeakKVUsage > want+1e-9 {
			t.Fatalf("group %d: peak KV %v, want %v", i, c.PeakKVUsage, want)
		}
	}
	// 没有这些计数器的服务：全部为 -1，而不是 0。
	_, tgt2 := startEmulator(t, emulator.Config{Model: "m"})
	sums, err = loadgen.Run(context.Background(), tgt2, loadgen.Profile{InputLength: []int{8}, OutputLength: []int{2}, NumRequests: []int{2}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := sums[0].Workload.Cache; c.HitRate != -1 || c.PrefixHits != -1 {
		t.Fatalf("server without prefix counters: %+v", c)
	}
}

// TestSharedPrefixAndShareGPTRun 端到端发送 shared_prefix 与 sharegpt 集合：请求数、每条的
// max_tokens 来自数据集。
func TestSharedPrefixAndShareGPTRun(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m"})
	p := loadgen.Profile{DatasetType: loadgen.DatasetSharedPrefix, NumRequests: []int{8},
		SharedPrefix: dataset.SharedPrefixConfig{NumGroups: 2, NumPromptsPerGroup: 2, SystemPromptLen: 12, QuestionLen: 4, OutputLen: 3}}
	c := &collect{}
	sums, err := loadgen.Run(context.Background(), tgt, p, c.observer())
	if err != nil {
		t.Fatal(err)
	}
	if sums[0].Succeeded != 8 {
		t.Fatalf("summary %+v", sums[0])
	}
	for _, r := range c.recs {
		if r.CompletionTokens != 3 || r.PromptTokens < 16 {
			t.Fatalf("record %+v", r)
		}
	}
	sg := `[{"id":"a","conversations":[{"from":"human","value":"what is the capital of france please"},{"from":"gpt","value":"the capital of france is paris"}]},
	{"id":"b","conversations":[{"from":"human","value":"hi"}]},
	{"id":"c","conversations":[{"from":"human","value":"x"},{"from":"gpt","value":"too short prompt"}]}]`
	ps, err := dataset.ReadShareGPT(strings.NewReader(sg), "sg.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].MaxTokens != tokenize.Count("the capital of france is paris") {
		t.Fatalf("sharegpt prompts %+v", ps)
	}
	c = &collect{}
	if _, err := loadgen.Run(context.Background(), tgt, loadgen.Profile{DatasetType: loadgen.DatasetShareGPT, Prompts: ps, NumRequests: []int{3}}, c.observer()); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.recs {
		if r.CompletionTokens != ps[0].MaxTokens {
			t.Fatalf("sharegpt record %+v", r)
		}
	}
	if _, err := dataset.ReadShareGPT(strings.NewReader(`{"a":1}`), "x.json"); err == nil || !strings.Contains(err.Error(), "x.json") {
		t.Fatalf("object instead of array: %v", err)
	}
}

// TestWorkloadValidation 验证真实负载参数的校验：错误点名字段与取值。
func TestWorkloadValidation(t *testing.T) {
	trace := []dataset.TraceRequest{{At: 0, InputLength: 20, OutputLength: 2, HashIDs: []int64{1, 2}, Source: "t", Line: 3}}
	cases := []struct {
		p     loadgen.Profile
		field string
	}{
		{loadgen.Profile{DatasetType: "mooncake", InputLength: []int{8}, OutputLength: []int{8}}, "dataset_type"},
		{loadgen.Profile{DatasetType: loadgen.DatasetMooncakeTrace}, "dataset_type"},
		{loadgen.Profile{DatasetType: loadgen.DatasetMooncakeTrace, TraceRequests: trace, Trace: dataset.TraceConfig{BlockSize: 8}}, "trace.block_size"},
		{loadgen.Profile{DatasetType: loadgen.DatasetMooncakeTrace, TraceRequests: trace, Trace: dataset.TraceConfig{TimeScale: -1}}, "trace.time_scale"},
		{loadgen.Profile{DatasetType: loadgen.DatasetMooncakeTrace, TraceRequests: trace, Trace: dataset.TraceConfig{StartOffset: time.Second, EndOffset: time.Millisecond}}, "trace.end_offset"},
		{loadgen.Profile{DatasetType: loadgen.DatasetMooncakeTrace, TraceRequests: trace, Trace: dataset.TraceConfig{StartOffset: time.Second}}, "trace.start_offset/end_offset"},
		{loadgen.Profile{DatasetType: loadgen.DatasetMooncakeTrace, TraceRequests: trace, NumRequests: []int{2}}, "num_requests[0]"},
		{loadgen.Profile{DatasetType: loadgen.DatasetMooncakeTrace, TraceRequests: trace, RequestRate: 5}, "request_rate"},
		{loadgen.Profile{DatasetType: loadgen.DatasetSharedPrefix, InputLength: []int{8}}, "input_length"},
		{loadgen.Profile{DatasetType: loadgen.DatasetSharedPrefix, OutputLength: []int{8}}, "output_length"},
		{loadgen.Profile{DatasetType: loadgen.DatasetSharedPrefix, SharedPrefix: dataset.SharedPrefixConfig{QuestionLen: -1}}, "shared_prefix.question_len"},
		{loadgen.Profile{DatasetType: loadgen.DatasetSharedPrefix, SharedPrefix: dataset.SharedPrefixConfig{NumGroups: 2000, NumPromptsPerGroup: 1000}}, "shared_prefix.num_groups/num_prompts_per_group"},
		{loadgen.Profile{DatasetType: loadgen.DatasetPrefixRepetition, PrefixRepetition: dataset.PrefixRepetitionConfig{NumPrefixes: -2}}, "prefix_repetition.num_prefixes"},
		{loadgen.Profile{DatasetType: loadgen.DatasetShareGPT}, "dataset_type"},
		{loadgen.Profile{InputLength: []int{8}, OutputLength: []int{8}, MultiTurn: loadgen.MultiTurnConfig{Conversations: 2, TurnsMean: 0.5}}, "multi_turn.turns_mean"},
		{loadgen.Profile{InputLength: []int{8}, OutputLength: []int{8}, MultiTurn: loadgen.MultiTurnConfig{Conversations: 2, Sampling: "lru"}}, "multi_turn.sampling"},
		{loadgen.Profile{InputLength: []int{8}, OutputLength: []int{8}, Backend: loadgen.BackendCompletion, MultiTurn: loadgen.MultiTurnConfig{Conversations: 2}}, "backend"},
		{loadgen.Profile{InputLength: []int{8}, OutputLength: []int{8}, RequestRate: 3, MultiTurn: loadgen.MultiTurnConfig{Conversations: 2}}, "request_rate/control_method"},
	}
	for i, c := range cases {
		err := c.p.WithDefaults().Validate()
		var pe *field.Error
		if !errors.As(err, &pe) || pe.Field != c.field {
			t.Errorf("case %d: error %v, want field %s", i, err, c.field)
		}
	}
	// 块检查的错误点名轨迹文件与行号。
	err := loadgen.Profile{DatasetType: loadgen.DatasetMooncakeTrace, TraceRequests: trace, Trace: dataset.TraceConfig{BlockSize: 8}}.WithDefaults().Validate()
	if err == nil || !strings.Contains(err.Error(), "t:3:") {
		t.Fatalf("block error %v does not name the line", err)
	}
	ok := loadgen.Profile{DatasetType: loadgen.DatasetMooncakeTrace, TraceRequests: trace, Trace: dataset.TraceConfig{BlockSize: 16}}.WithDefaults()
	if err := ok.Validate(); err != nil || ok.NumRequests[0] != 1 || ok.Concurrency[0] != 0 {
		t.Fatalf("valid trace profile: %v %+v", err, ok)
	}
}

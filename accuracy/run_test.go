package accuracy_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/accuracy/internal/scripted"
	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
	"github.com/vllm-cibench/cibench/endpoint"
)

// newSampler 构造指向 base 的采样器，重试退避取 1ms 以加快测试。
func newSampler(t *testing.T, base string, retries int) *accuracy.ChatSampler {
	t.Helper()
	s, err := accuracy.NewChatSampler(accuracy.ChatConfig{Endpoint: endpoint.Endpoint{BaseURLs: []string{base}, Model: "scripted"}, MaxTokens: 16, Temperature: 0.6, Retries: retries, Backoff: time.Millisecond, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBadRequestScoredAsUpstream 校验 400 按参考实现的固定回复计分并计为失败（不重试），
// 500 先重试后成功且不计失败。
func TestBadRequestScoredAsUpstream(t *testing.T) {
	m := &scripted.Model{Fail: func(n int, prompt string) int {
		if strings.Contains(prompt, "lamp 6 ") {
			return http.StatusBadRequest
		}
		if n <= 2 {
			return http.StatusInternalServerError
		}
		return 0
	}}
	base := scripted.Serve(t, m)
	e, _ := simpleevals.Registry().New("gpqa", simpleevals.SampleData(), accuracy.EvalOptions{Debug: true})
	res, err := accuracy.Run(context.Background(), newSampler(t, base, 5), e, accuracy.Options{Threads: 1, Model: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 1 || res.Examples != 5 || res.ErrorClasses["bad_request"] != 1 {
		t.Fatalf("errors=%d examples=%d classes=%v", res.Errors, res.Examples, res.ErrorClasses)
	}
	var found bool
	for _, s := range res.Singles {
		if s.ID == "gpqa/row6#r0" {
			found = true
			if s.Response != accuracy.BadRequestReply || s.Score != 0 || s.ExtractedAnswer != "" || s.ErrorClass != "bad_request" || s.FailedRequests != 1 {
				t.Errorf("400 example: %+v", s)
			}
		}
	}
	if !found {
		t.Fatal("row 6 not in debug subset")
	}
}

// TestRetriesExhausted 校验持续 503 时重试耗尽、样本以空回复计分并计入 Errors。
func TestRetriesExhausted(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	s := newSampler(t, srv.URL+"/v1", 2)
	_, err := s.Sample(context.Background(), []accuracy.Message{{Role: "user", Content: "hi"}})
	var he *accuracy.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 503 {
		t.Fatalf("err=%v", err)
	}
	if calls.Load() != 3 {
		t.Fatalf("calls=%d want 3", calls.Load())
	}
	e, _ := simpleevals.Registry().New("mmlu", simpleevals.SampleData(), accuracy.EvalOptions{Debug: true})
	res, err := accuracy.Run(context.Background(), s, e, accuracy.Options{})
	if err != nil || res.Errors != 1 || res.Singles[0].Error == "" || res.Score != 0 {
		t.Fatalf("res=%+v err=%v", res, err)
	}
}

// TestNullContentAndBadJSON 覆盖 content 为 null、没有 choices 与坏响应体：都按参考实现
// 重试，用尽后失败；错误中不含 API Key。
func TestNullContentAndBadJSON(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		switch n.Add(1) {
		case 1:
			w.Write([]byte(`{"choices":[{"message":{"content":null}}]}`))
		case 2:
			w.Write([]byte(`{"choices":[]}`))
		default:
			w.Write([]byte(`not json`))
		}
	}))
	defer srv.Close()
	s, err := accuracy.NewChatSampler(accuracy.ChatConfig{Endpoint: endpoint.Endpoint{BaseURLs: []string{srv.URL + "/v1/"}, Model: "m", APIKey: "sk-test"}, SystemMessage: "sys", Backoff: time.Millisecond, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if text, err := s.Sample(context.Background(), nil); !errors.Is(err, accuracy.ErrEmptyContent) || text != "" {
		t.Fatalf("null content: %q %v", text, err)
	}
	if _, err := s.Sample(context.Background(), nil); err == nil || strings.Contains(err.Error(), "sk-test") {
		t.Fatalf("no choices: %v", err)
	}
	if _, err := s.Sample(context.Background(), nil); err == nil {
		t.Fatal("bad json should fail")
	}
}

// TestChatConfigValidation 校验构造参数。
func TestChatConfigValidation(t *testing.T) {
	for _, c := range []accuracy.ChatConfig{
		{Endpoint: endpoint.Endpoint{BaseURLs: []string{"localhost:8000/v1"}, Model: "m"}},
		{Endpoint: endpoint.Endpoint{BaseURLs: []string{"http://x/v1"}}},
		{Endpoint: endpoint.Endpoint{BaseURLs: []string{"http://x/v1"}, Model: "m"}, Backoff: -1},
		{Endpoint: endpoint.Endpoint{Model: "m"}},
		{Endpoint: endpoint.Endpoint{BaseURLs: []string{"http://x/v1", "ftp://y/v1"}, Model: "m"}},
	} {
		if _, err := accuracy.NewChatSampler(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestRetriesZeroMeansDefault 钉住与 functional、metrics 推送共用的 Retries 语义：
// 0 取 DefaultRetries（持续 503 时共 1+3 次请求），负数不重试（1 次），正数原样。
func TestRetriesZeroMeansDefault(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	for _, c := range []struct{ retries, calls int32 }{{0, 1 + accuracy.DefaultRetries}, {-1, 1}, {1, 2}} {
		calls.Store(0)
		_, err := newSampler(t, srv.URL+"/v1", int(c.retries)).Sample(context.Background(), []accuracy.Message{{Role: "user", Content: "hi"}})
		if err == nil || calls.Load() != c.calls {
			t.Errorf("Retries %d: %d calls (err %v), want %d", c.retries, calls.Load(), err, c.calls)
		}
	}
	if err := (accuracy.Config{Retries: -1}).Validate(simpleevals.Registry()); err != nil {
		t.Errorf("Retries -1 (no retries) rejected: %v", err)
	}
	if got := (accuracy.Config{}).WithDefaults().Retries; got != accuracy.DefaultRetries {
		t.Errorf("WithDefaults().Retries = %d, want %d", got, accuracy.DefaultRetries)
	}
}

// TestCancelKeepsPartial 在一半样本完成后取消，结果保留已完成部分并标记 Partial。
func TestCancelKeepsPartial(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	calls := 0
	sampler := accuracy.SamplerFunc(func(ctx context.Context, _ []accuracy.Message) (string, error) {
		mu.Lock()
		calls++
		c := calls
		mu.Unlock()
		if c > 6 {
			cancel()
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "Answer: A", nil
	})
	e, _ := simpleevals.Registry().New("gpqa", simpleevals.SampleData(), accuracy.EvalOptions{})
	var progress []int
	res, err := accuracy.Run(ctx, sampler, e, accuracy.Options{Threads: 1, Progress: func(done, total int) {
		progress = append(progress, done)
		if total != 120 {
			t.Errorf("total=%d", total)
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err=%v", err)
	}
	if !res.Partial || res.Examples != 6 || res.Planned != 120 || len(progress) != 6 || progress[5] != 6 {
		t.Fatalf("partial=%v examples=%d planned=%d progress=%v", res.Partial, res.Examples, res.Planned, progress)
	}
	v := accuracy.Gate(accuracy.DatasetConfig{Name: "gpqa", Threshold: ptr(0.0)}, res)
	if v.Pass {
		t.Errorf("partial run must not pass: %+v", v)
	}
}

// TestScoreErrorAborts 校验评分基础设施错误会中止运行并被返回。
func TestScoreErrorAborts(t *testing.T) {
	boom := errors.New("boom")
	e := failingEval{err: boom}
	_, err := accuracy.Run(context.Background(), accuracy.SamplerFunc(func(context.Context, []accuracy.Message) (string, error) { return "x", nil }), e, accuracy.Options{Threads: 3})
	if !errors.Is(err, boom) {
		t.Fatalf("err=%v", err)
	}
	_, err = accuracy.Run(context.Background(), accuracy.SamplerFunc(nil), failingEval{loadErr: boom}, accuracy.Options{})
	if !errors.Is(err, boom) {
		t.Fatalf("load err=%v", err)
	}
	if _, err := accuracy.Run(context.Background(), nil, failingEval{}, accuracy.Options{}); err == nil {
		t.Fatal("nil sampler accepted")
	}
	if _, err := (accuracy.FSSource{}).Open(context.Background(), "x"); !errors.Is(err, accuracy.ErrDatasetUnavailable) {
		t.Fatalf("load err=%v", err)
	}
}

// failingEval 是一个评分总是失败的 Eval，用于测试 Run 的错误路径。
type failingEval struct{ err, loadErr error }

// Name 返回固定名称。
func (failingEval) Name() string { return "failing" }

// Examples 返回 10 个样本或加载错误。
func (f failingEval) Examples(context.Context) ([]accuracy.Example, error) {
	if f.loadErr != nil {
		return nil, f.loadErr
	}
	exs := make([]accuracy.Example, 10)
	for i := range exs {
		exs[i] = accuracy.Example{Index: i, Samples: 1}
	}
	return exs, nil
}

// Score 总是返回配置的错误。
func (f failingEval) Score(context.Context, accuracy.Example, []string) (accuracy.SingleResult, error) {
	return accuracy.SingleResult{}, f.err
}

// ptr 返回 v 的指针。
func ptr(v float64) *float64 { return &v }

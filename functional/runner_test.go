package functional_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/functional"
)

// serveEmulator 把模拟器的 Handler 挂在 wrap 之后的 httptest 服务器上，返回 Target。
func serveEmulator(t *testing.T, cfg emulator.Config, wrap func(http.Handler) http.Handler) functional.Target {
	t.Helper()
	em, err := emulator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(wrap(em.Handler()))
	t.Cleanup(srv.Close)
	return functional.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{srv.URL + "/v1"}, Model: em.Config().Model, APIKey: cfg.APIKey, HTTPClient: srv.Client()}, Features: functional.DefaultFeatures().All()}
}

// run 用给定选项执行 cases 并返回报告。
func run(t *testing.T, target functional.Target, opts functional.Options, cases ...functional.Case) functional.Report {
	t.Helper()
	r, err := functional.NewRunner(target, opts)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Run(context.Background(), cases)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// pick 从默认目录中按 ID 选出用例。
func pick(t *testing.T, patterns ...string) []functional.Case {
	t.Helper()
	cs, err := functional.DefaultCatalog().Select(patterns...)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestRetriesOn5xxAndTransportErrors 证明传输错误与 5xx 按配置重试，不重试时用例失败。
func TestRetriesOn5xxAndTransportErrors(t *testing.T) {
	var calls atomic.Int64
	flaky := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch calls.Add(1) % 3 {
			case 1:
				w.WriteHeader(http.StatusServiceUnavailable)
			case 2:
				hj, ok := w.(http.Hijacker)
				if !ok {
					t.Error("no hijacker")
					return
				}
				c, _, _ := hj.Hijack()
				_ = c.Close()
			default:
				h.ServeHTTP(w, r)
			}
		})
	}
	target := serveEmulator(t, emulator.Config{}, flaky)
	cs := pick(t, "chat_core/usage")
	rep := run(t, target, functional.Options{Retries: 2, RetryBackoff: time.Millisecond}, cs...)
	if rep.Results[0].Status != functional.StatusPass {
		t.Fatalf("with 2 retries: %+v", rep.Results[0])
	}
	calls.Store(0)
	rep = run(t, target, functional.Options{Retries: -1}, cs...)
	res := rep.Results[0]
	if res.Status != functional.StatusFail || !strings.Contains(res.Response, "503") {
		t.Fatalf("without retries want a failure showing the 503, got %+v", res)
	}
	var f *functional.Failure
	if !errors.As(res.Err(), &f) || f.Case != "chat_core/usage" {
		t.Fatalf("Err() = %v", res.Err())
	}
}

// TestPassAfterRetryIsRecorded 是 issue 23 的一条：只在重试了 503 与断开的连接之后才通过的用例，
// 旧 Result 与一次就通过的用例一模一样（report.json、JUnit 都看不出）。不稳定的服务本身就是
// 一项发现：结果记下被重试的尝试与原因，套件汇总单独计数，JUnit 的 system-out 写明
// "passed after retry"；一次就通过的用例没有这些字段。
func TestPassAfterRetryIsRecorded(t *testing.T) {
	var calls atomic.Int64
	flaky := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch calls.Add(1) {
			case 1:
				w.WriteHeader(http.StatusServiceUnavailable)
			case 2:
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusTooManyRequests)
			default:
				h.ServeHTTP(w, r)
			}
		})
	}
	target := serveEmulator(t, emulator.Config{}, flaky)
	opts := functional.Options{Retries: 2, RetryBackoff: time.Millisecond}
	rep := run(t, target, opts, pick(t, "chat_core/usage")...)
	flakyRes := rep.Results[0]
	clean := run(t, target, opts, pick(t, "chat_core/ids_object")...).Results[0]
	if flakyRes.Status != functional.StatusPass || flakyRes.Retried != 2 || !flakyRes.PassedAfterRetry() ||
		strings.Join(flakyRes.RetryReasons, ",") != "POST /v1/chat/completions: HTTP 503,POST /v1/chat/completions: HTTP 429" {
		t.Fatalf("flaky case: %+v", flakyRes)
	}
	if clean.Status != functional.StatusPass || clean.Retried != 0 || clean.PassedAfterRetry() || len(clean.RetryReasons) != 0 {
		t.Fatalf("clean case: %+v", clean)
	}
	if len(rep.Suites) != 1 || rep.Suites[0].Passed != 1 || rep.Suites[0].PassedAfterRetry != 1 {
		t.Fatalf("suite summary %+v", rep.Suites)
	}
	var buf bytes.Buffer
	if err := functional.WriteJUnit(&buf, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "passed after retry: 2 retried attempt(s): POST /v1/chat/completions: HTTP 503; POST /v1/chat/completions: HTTP 429") {
		t.Fatalf("JUnit does not show the retry:\n%s", buf.String())
	}
}

// TestRequestTimeoutAndCancel 证明单请求超时让用例失败，而取消 ctx 让用例记为 cancelled（不是跳过）。
func TestRequestTimeoutAndCancel(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var started sync.WaitGroup
	hang := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			started.Done()
			// 读完请求体，服务器才会察觉客户端断开并取消 r.Context()；否则只能等 release。
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-release:
			}
		})
	}
	target := serveEmulator(t, emulator.Config{}, hang)
	cs := pick(t, "chat_core/ids_object")
	started.Add(1)
	rep := run(t, target, functional.Options{RequestTimeout: 50 * time.Millisecond, Retries: -1}, cs...)
	if res := rep.Results[0]; res.Status != functional.StatusFail || !strings.Contains(res.Reason, "deadline") {
		t.Fatalf("want a deadline failure, got %+v", res)
	}

	started.Add(2)
	ctx, cancel := context.WithCancel(context.Background())
	r, err := functional.NewRunner(target, functional.Options{Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	go func() { started.Wait(); cancel() }()
	rep, err = r.Run(ctx, pick(t, "chat_core/ids_object", "chat_core/usage", "chat_core/n"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v, want context.Canceled", err)
	}
	for _, res := range rep.Results {
		if res.Status != functional.StatusCancelled || !strings.Contains(res.Reason, "cancel") {
			t.Errorf("%s: want cancelled, got %s %q", res.CaseID, res.Status, res.Reason)
		}
	}
}

// TestCapabilityProbingSkipsWithReason 证明未开启的能力与声明为不支持的参数是“跳过 + 原因”，
// 声明为 probe 而被服务端拒绝的参数是“unsupported + 服务端原文”，都不是失败也不是通过。
func TestCapabilityProbingSkipsWithReason(t *testing.T) {
	_, target := startEmulator(t, emulator.Config{DisableTopK: true, DisablePenalties: true, DisableLogprobs: true})
	target.Features = []functional.Feature{functional.FeatureGuidedDecoding}
	target.Capabilities = map[functional.Capability]functional.Support{functional.CapTopK: functional.SupportProbe,
		functional.CapPenalties: functional.SupportUnsupported, functional.CapLogprobs: functional.SupportProbe}
	rep := run(t, target, functional.Options{}, functional.DefaultCatalog().Cases()...)
	if f := rep.Failed(); len(f) != 0 {
		t.Fatalf("failures on a server lacking capabilities: %v", f)
	}
	// 8 个：6 个边界用例加上两个效果用例（top_k_effect、logprobs_effect），它们同样带着
	// probe 的能力，被拒绝时是 unsupported 而不是失败。
	if n := rep.Count(functional.StatusUnsupported); n != 8 {
		t.Errorf("%d unsupported, want 8 (top_p=0, top_k=1, top_k=50, top_logprobs=1, top_logprobs=5, completions_logprobs=5, top_k_effect, logprobs_effect)", n)
	}
	for _, id := range []string{"params_boundary/top_k_effect", "params_boundary/logprobs_effect"} {
		if res, _ := rep.Result(id); res.Status != functional.StatusUnsupported {
			t.Errorf("%s: want unsupported, got %s %q", id, res.Status, res.Reason)
		}
	}
	for id, reason := range map[string]string{
		"params_boundary/top_k=1":        "top_k is not supported by this server",
		"params_boundary/top_logprobs=5": "logprobs are not supported by this server",
	} {
		if res, _ := rep.Result(id); res.Status != functional.StatusUnsupported || !strings.Contains(res.Reason, reason) {
			t.Errorf("%s: want unsupported quoting %q, got %s %q", id, reason, res.Status, res.Reason)
		}
	}
	want := map[string]string{
		"params_boundary/presence_penalty=2":       `capability "penalties" declared unsupported`,
		"function_call/auto":                       `feature "function_call" not enabled`,
		"reasoning/present":                        `feature "reasoning" not enabled`,
		"embeddings/batch":                         `feature "embeddings" not enabled`,
		"errors/invalid/tool_choice_without_tools": `feature "function_call" not enabled`,
		"errors/auth":                              "no API key",
	}
	for id, reason := range want {
		res, ok := rep.Result(id)
		if !ok || res.Status != functional.StatusSkip || !strings.Contains(res.Reason, reason) {
			t.Errorf("%s: want skip with %q, got %+v", id, reason, res)
		}
	}
	if res, _ := rep.Result("guided/json_object"); res.Status != functional.StatusPass {
		t.Errorf("guided/json_object should run and pass: %+v", res)
	}
}

// TestParallelismBoundAndPanics 证明并发不超过上限且会用满，用例 panic 被记为失败。
func TestParallelismBoundAndPanics(t *testing.T) {
	target := functional.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{"http://127.0.0.1:1/v1"}, Model: "m"}}
	var cur, peak atomic.Int64
	gate := make(chan struct{})
	var once sync.Once
	var cases []functional.Case
	for i := range 6 {
		cases = append(cases, functional.Case{ID: "c" + string(rune('a'+i)), Suite: "local", Run: func(ctx context.Context, t *functional.T) {
			n := cur.Add(1)
			defer cur.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			if n == 3 {
				once.Do(func() { close(gate) })
			}
			<-gate
		}})
	}
	cases = append(cases, functional.Case{ID: "boom", Suite: "local", Run: func(ctx context.Context, t *functional.T) { panic("kaboom") }})
	rep := run(t, target, functional.Options{Parallelism: 3}, cases...)
	if peak.Load() != 3 {
		t.Fatalf("peak concurrency %d, want 3", peak.Load())
	}
	if res, _ := rep.Result("boom"); res.Status != functional.StatusFail || !strings.Contains(res.Reason, "kaboom") {
		t.Fatalf("panic not recorded as failure: %+v", res)
	}
	s := rep.Suites[0]
	if s.Total != 7 || s.Passed != 6 || s.Failed != 1 || s.Ran != 7 || s.PassRatio == nil || *s.PassRatio != 6.0/7.0 {
		t.Fatalf("summary %+v", s)
	}
}

// TestNewRunnerValidates 检查 Target 与 Options 的校验。
func TestNewRunnerValidates(t *testing.T) {
	ok := functional.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{"http://127.0.0.1:1/v1"}, Model: "m"}}
	for name, tc := range map[string]struct {
		target functional.Target
		opts   functional.Options
	}{
		"no url":      {functional.Target{Endpoint: endpoint.Endpoint{Model: "m"}}, functional.Options{}},
		"bad scheme":  {functional.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{"ftp://x/v1"}, Model: "m"}}, functional.Options{}},
		"no model":    {functional.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{"http://x/v1"}}}, functional.Options{}},
		"bad feature": {functional.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{"http://x/v1"}, Model: "m"}, Features: []functional.Feature{"gpu"}}, functional.Options{}},
		"parallelism": {ok, functional.Options{Parallelism: -1}},
		"timeout":     {ok, functional.Options{RequestTimeout: -time.Second}},
		"config":      {ok, functional.Options{Config: &functional.Config{}}},
	} {
		if _, err := functional.NewRunner(tc.target, tc.opts); err == nil {
			t.Errorf("%s: NewRunner accepted invalid input", name)
		}
	}
	// 端点写错时的文本与 loadgen、accuracy 相同（endpoint.Endpoint.Validate），可用 ErrInvalid 区分；
	// Target.Validate 覆盖嵌入的 Endpoint.Validate，连能力名一起检查。
	_, err := functional.NewRunner(functional.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{"http://x/v1", "x:1/v1"}, Model: "m"}}, functional.Options{})
	if !errors.Is(err, endpoint.ErrInvalid) || err.Error() != `functional: target: endpoint: base_urls[1] "x:1/v1": invalid endpoint: no scheme (want http:// or https://)` {
		t.Errorf("bad second URL: %v", err)
	}
	if err := (functional.Target{Endpoint: ok.Endpoint, Features: []functional.Feature{"gpu"}}).Validate(nil); !errors.Is(err, functional.ErrUnknownFeature) {
		t.Errorf("Validate skipped features: %v", err)
	}
	if err := ok.Validate(nil); err != nil {
		t.Errorf("valid target: %v", err)
	}
}

// TestCatalogAddAndSelect 检查 Add 的校验与 Select 的匹配规则。
func TestCatalogAddAndSelect(t *testing.T) {
	c := functional.DefaultCatalog()
	n := c.Len()
	noop := func(context.Context, *functional.T) {}
	if err := c.Add(functional.Case{ID: "x", Suite: "mine", Run: noop}); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(functional.Case{ID: "mine/x", Suite: "mine", Run: noop}); !errors.Is(err, functional.ErrDuplicateCase) {
		t.Fatalf("duplicate: %v", err)
	}
	for _, bad := range []functional.Case{{ID: "y", Run: noop}, {ID: "y", Suite: "s"}, {ID: "y", Suite: "s", Run: noop, Requires: []functional.Feature{"gpu"}}} {
		if err := c.Add(bad); err == nil {
			t.Errorf("Add accepted %+v", bad)
		}
	}
	if c.Len() != n+1 || functional.DefaultCatalog().Len() != n {
		t.Fatalf("Add leaked into DefaultCatalog: %d %d %d", c.Len(), n, functional.DefaultCatalog().Len())
	}
	sel, err := c.Select("mine", "params_boundary/top_k=*", "errors/unknown_model")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, cs := range sel {
		ids = append(ids, cs.ID)
	}
	if got := strings.Join(ids, ","); got != "params_boundary/top_k=1,params_boundary/top_k=50,errors/unknown_model,mine/x" {
		t.Fatalf("Select = %s", got)
	}
	if _, err := c.Select("chat_core", "no_such_suite"); err == nil {
		t.Fatal("Select accepted a pattern matching nothing")
	}
	if all, _ := c.Select(); len(all) != c.Len() {
		t.Fatal("empty Select is not all")
	}
	if len(c.Suites()) != 12 {
		t.Fatalf("suites = %v", c.Suites())
	}
}

// TestWriters 检查 JSON 往返与 JUnit XML 的计数、失败正文。
func TestWriters(t *testing.T) {
	rep := functional.Report{Model: "m", Started: time.Unix(0, 0).UTC(), Duration: 1500 * time.Millisecond, Results: []functional.Result{
		{CaseID: "a/1", Suite: "a", Status: functional.StatusPass, Duration: time.Second, Reason: "form: x"},
		{CaseID: "a/2", Suite: "a", Status: functional.StatusFail, Reason: "want 1 got 2", Request: "POST /v1/x\n{}", Response: "HTTP 200\n{}"},
		{CaseID: "b/1", Suite: "b", Status: functional.StatusSkip, Reason: "feature off"},
	}}
	rep.Suites = functional.Summarize(rep.Results)
	var buf bytes.Buffer
	if err := functional.WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	back, err := functional.ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Results) != 3 || back.Results[1].Request != "POST /v1/x\n{}" || ratio(back.Suites[0]) != "0.5" || back.Suites[1].PassRatio != nil {
		t.Fatalf("round trip: %+v", back)
	}
	buf.Reset()
	if err := functional.WriteJUnit(&buf, rep); err != nil {
		t.Fatal(err)
	}
	var x struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Time  string `xml:"time,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Body    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &x); err != nil {
		t.Fatal(err)
	}
	if x.Tests != 3 || x.Failures != 1 || x.Skipped != 1 || len(x.Suites) != 2 || x.Suites[0].Time != "1.000" {
		t.Fatalf("junit totals: %+v", x)
	}
	f := x.Suites[0].Cases[1].Failure
	if f == nil || f.Message != "want 1 got 2" || !strings.Contains(f.Body, "POST /v1/x") {
		t.Fatalf("junit failure: %+v", f)
	}
	if _, err := functional.ReadJSON(strings.NewReader("{")); err == nil {
		t.Fatal("ReadJSON accepted garbage")
	}
}

// TestSecretsNeverInResults 证明 API Key 不会出现在失败结果中，即使服务端回显了它。
func TestSecretsNeverInResults(t *testing.T) {
	const key = "sk-very-secret"
	echo := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"message":"bad key ` + r.Header.Get("Authorization") + `"}}`))
		})
	}
	target := serveEmulator(t, emulator.Config{APIKey: key}, echo)
	rep := run(t, target, functional.Options{}, pick(t, "chat_core/usage", "chat_core/basic")...)
	var buf bytes.Buffer
	if err := functional.WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	if rep.Count(functional.StatusFail) != 2 || strings.Contains(buf.String(), key) {
		t.Fatalf("secret leaked or cases did not fail: %s", buf.String())
	}
}

// TestEnvironmentKeyNeverSent 证明 openai-go 从环境读到的 OPENAI_API_KEY 不会被发给
// 一个不需要密钥的被测服务。
func TestEnvironmentKeyNeverSent(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-environment")
	var mu sync.Mutex
	var seen []string
	spy := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Header.Get("Authorization"))
			mu.Unlock()
			h.ServeHTTP(w, r)
		})
	}
	target := serveEmulator(t, emulator.Config{}, spy)
	rep := run(t, target, functional.Options{}, pick(t, "chat_core/basic", "chat_core/models", "chat_core/usage")...)
	if f := rep.Failed(); len(f) != 0 {
		t.Fatalf("failed: %v", f)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 3 {
		t.Fatalf("saw %d requests", len(seen))
	}
	for _, h := range seen {
		if strings.Contains(h, "sk-from-environment") {
			t.Fatalf("environment key sent to the server: %q", h)
		}
	}
}

// TestInBandStreamErrorIsAFailure 证明 HTTP 200 的流里带内的 {"error":…} 事件是失败，
// 而不是“收到了 200 所以通过”（已知的客户端陷阱）。
func TestInBandStreamErrorIsAFailure(t *testing.T) {
	_, target := startEmulator(t, emulator.Config{FailureRate: 1, FailureKinds: []string{"stream_error"}})
	rep := run(t, target, functional.Options{Retries: -1}, pick(t, "chat_core/stream")...)
	if res := rep.Results[0]; res.Status != functional.StatusFail || !strings.Contains(res.Reason, "in-band error") {
		t.Fatalf("want an in-band error failure, got %s %q", res.Status, res.Reason)
	}
}

// ratio 把通过率写成文本，nil（没有执行任何用例）为 "none"。
func ratio(s functional.SuiteSummary) string {
	if s.PassRatio == nil {
		return "none"
	}
	return strconv.FormatFloat(*s.PassRatio, 'g', -1, 64)
}

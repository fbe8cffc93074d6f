package functional_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/functional"
)

// TestRejectedDeclaredCapabilityFails 证明场景声明支持（默认）的参数被服务端以 400 拒绝时
// 用例失败并引用服务端的回答，而不是“跳过”——否则一个开始拒绝 top_k 的 vLLM 版本会保持绿色。
func TestRejectedDeclaredCapabilityFails(t *testing.T) {
	_, target := startEmulator(t, emulator.Config{DisableTopK: true, DisablePenalties: true, DisableLogprobs: true})
	rep := run(t, target, functional.Options{}, pick(t, "params_boundary/top_k=50", "params_boundary/presence_penalty=2", "params_boundary/top_logprobs=5")...)
	want := map[string]string{
		"params_boundary/top_k=50":           "top_k is not supported by this server",
		"params_boundary/presence_penalty=2": "penalties are not supported by this server",
		"params_boundary/top_logprobs=5":     "logprobs",
	}
	for id, msg := range want {
		res, _ := rep.Result(id)
		if res.Status != functional.StatusFail || !strings.Contains(res.Reason, "HTTP 400") || !strings.Contains(res.Reason, msg) {
			t.Errorf("%s: want a failure quoting the server's 400 (%q), got %s %q", id, msg, res.Status, res.Reason)
		}
	}
}

// TestProbedCapabilityIsUnsupportedNotPass 证明声明为 probe 的能力被服务端以 400 拒绝时报告为
// unsupported（带服务端原文），声明为 unsupported 的能力不发请求直接跳过。
func TestProbedCapabilityIsUnsupportedNotPass(t *testing.T) {
	var topK atomic.Int64
	count := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			if bytes.Contains(b, []byte(`"top_k"`)) {
				topK.Add(1)
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			h.ServeHTTP(w, r)
		})
	}
	target := serveEmulator(t, emulator.Config{DisableTopK: true, DisablePenalties: true}, count)
	target.Capabilities = map[functional.Capability]functional.Support{
		functional.CapTopK:      functional.SupportProbe,
		functional.CapPenalties: functional.SupportUnsupported,
	}
	rep := run(t, target, functional.Options{}, pick(t, "params_boundary/top_k=50", "params_boundary/presence_penalty=2")...)
	if res, _ := rep.Result("params_boundary/top_k=50"); res.Status != functional.StatusUnsupported ||
		!strings.Contains(res.Reason, "top_k is not supported by this server") {
		t.Errorf("probed top_k: want unsupported quoting the server, got %s %q", res.Status, res.Reason)
	}
	if topK.Load() != 1 {
		t.Errorf("probe sent %d top_k requests, want 1", topK.Load())
	}
	if res, _ := rep.Result("params_boundary/presence_penalty=2"); res.Status != functional.StatusSkip ||
		!strings.Contains(res.Reason, `capability "penalties" declared unsupported`) {
		t.Errorf("declared-unsupported penalties: want skip, got %s %q", res.Status, res.Reason)
	}
	if rep.Count(functional.StatusPass) != 0 {
		t.Errorf("%d passes, want 0", rep.Count(functional.StatusPass))
	}
}

// TestFaultsOnOptionalParamsAreFailures 证明 401、403、429、5xx 即使落在可选参数的请求上，
// 即使该能力声明为 probe，也是带状态码的失败，从不被当作“不支持”。
func TestFaultsOnOptionalParamsAreFailures(t *testing.T) {
	for _, status := range []int{401, 403, 429, 500} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			fault := func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					b, _ := io.ReadAll(r.Body)
					if bytes.Contains(b, []byte(`"top_k"`)) {
						w.WriteHeader(status)
						_, _ = w.Write([]byte(`{"error":{"message":"injected fault","code":` + itoa(status) + `}}`))
						return
					}
					r.Body = io.NopCloser(bytes.NewReader(b))
					h.ServeHTTP(w, r)
				})
			}
			target := serveEmulator(t, emulator.Config{}, fault)
			for _, decl := range []functional.Support{functional.SupportSupported, functional.SupportProbe} {
				target.Capabilities = map[functional.Capability]functional.Support{functional.CapTopK: decl}
				rep := run(t, target, functional.Options{Retries: -1}, pick(t, "params_boundary/top_k=50")...)
				res := rep.Results[0]
				if res.Status != functional.StatusFail || !strings.Contains(res.Reason, "HTTP "+itoa(status)) || !strings.Contains(res.Reason, "injected fault") {
					t.Errorf("%s, top_k %s: want a failure naming HTTP %d and quoting the body, got %s %q", http.StatusText(status), decl, status, res.Status, res.Reason)
				}
			}
		})
	}
}

// itoa 把状态码转成文本。
func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestRateLimitRetriedAfterRetryAfter 证明 429 按 Retry-After 在重试预算内重试；Retry-After
// 超过上限时不等待而是立刻失败并说明原因；预算用完仍是 429 则失败。
func TestRateLimitRetriedAfterRetryAfter(t *testing.T) {
	var calls atomic.Int64
	retryAfter := "0"
	limited := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				w.Header().Set("Retry-After", retryAfter)
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(`{"error":{"message":"slow down","code":429}}`))
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	target := serveEmulator(t, emulator.Config{}, limited)
	rep := run(t, target, functional.Options{Retries: 2, RetryBackoff: time.Millisecond}, pick(t, "params_boundary/top_k=50")...)
	if res := rep.Results[0]; res.Status != functional.StatusPass {
		t.Fatalf("429 with Retry-After 0 then 200: want pass, got %s %q", res.Status, res.Reason)
	}
	calls.Store(0)
	retryAfter = "3600"
	began := time.Now()
	rep = run(t, target, functional.Options{Retries: 2, RetryBackoff: time.Millisecond}, pick(t, "params_boundary/top_k=50")...)
	if res := rep.Results[0]; res.Status != functional.StatusFail || !strings.Contains(res.Reason, "429") || !strings.Contains(res.Reason, "Retry-After") {
		t.Fatalf("429 with Retry-After 3600: want an immediate failure naming Retry-After, got %s %q", res.Status, res.Reason)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("waited %v for a Retry-After beyond the bound", d)
	}
}

// TestInjected429sAreFailuresNotSkips 复现问题：模拟器注入 429 时，整个目录中被跳过的用例
// 必须与忠实模拟器上完全相同，每个多出来的非通过结果都是写明 429 的失败。
func TestInjected429sAreFailuresNotSkips(t *testing.T) {
	ec := fullEmulator()
	_, faithful := startEmulator(t, ec)
	base := run(t, faithful, functional.Options{}, functional.DefaultCatalog().Cases()...)
	ec.FailureRate, ec.FailureKinds, ec.Seed = 0.05, []string{"429"}, 3
	_, target := startEmulator(t, ec)
	rep := run(t, target, functional.Options{Retries: -1}, functional.DefaultCatalog().Cases()...)
	failed := 0
	for _, res := range rep.Results {
		b, _ := base.Result(res.CaseID)
		switch {
		case res.Status == functional.StatusFail:
			failed++
			if !strings.Contains(res.Reason, "429") {
				t.Errorf("%s failed for another reason than the injected 429: %q", res.CaseID, res.Reason)
			}
		case res.Status != b.Status:
			t.Errorf("%s: %s %q under injected 429s, %s on the faithful emulator", res.CaseID, res.Status, res.Reason, b.Status)
		}
	}
	if failed == 0 {
		t.Fatal("no case hit an injected 429: the test proves nothing")
	}
	t.Logf("%d cases failed with 429", failed)
}

// TestNoExecutedCaseHasNoPassRatio 证明全部跳过的套件没有通过率（JSON 中没有 pass_ratio，
// 表格中为 "-"），而不是 1.00。
func TestNoExecutedCaseHasNoPassRatio(t *testing.T) {
	rep := functional.Report{Model: "m", Results: []functional.Result{
		{CaseID: "a/1", Suite: "a", Status: functional.StatusSkip, Reason: "feature off"},
		{CaseID: "b/1", Suite: "b", Status: functional.StatusPass},
		{CaseID: "b/2", Suite: "b", Status: functional.StatusSkip, Reason: "feature off"},
	}}
	rep.Suites = functional.Summarize(rep.Results)
	var js bytes.Buffer
	if err := functional.WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Suites []map[string]any `json:"suites"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if v, ok := back.Suites[0]["pass_ratio"]; ok && v != nil {
		t.Errorf("suite a (nothing executed): pass_ratio=%v, want absent", v)
	}
	if v := back.Suites[1]["pass_ratio"]; v != 1.0 {
		t.Errorf("suite b: pass_ratio=%v, want 1", v)
	}
	var tab bytes.Buffer
	if err := functional.WriteTable(&tab, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tab.String(), "a      1      0     0     1     0      0       -\n") {
		t.Errorf("table shows a ratio for a suite with no executed case:\n%s", tab.String())
	}
}

// TestLoadConfigErrors 证明不存在的配置目录是错误（不再悄悄使用内置默认值），取值错误
// 在运行前报告文件:行与取值。
func TestLoadConfigErrors(t *testing.T) {
	if _, err := functional.LoadConfigDir("/nonexistent/cibench-functional", nil); err == nil || !strings.Contains(err.Error(), "/nonexistent/cibench-functional") {
		t.Errorf("missing dir: err = %v, want an error naming the path", err)
	}
	fsys := fstest.MapFS{"params_boundary.yaml": {Data: []byte("params_boundary:\n  top_p: [0.1, 1.5]\n  samples: 4\n")}}
	_, err := functional.LoadConfig(fsys, nil)
	if err == nil || !strings.Contains(err.Error(), "params_boundary.yaml:2") || !strings.Contains(err.Error(), "1.5") {
		t.Errorf("bad value: err = %v, want file:line and the value", err)
	}
	fsys = fstest.MapFS{"chat_core.yaml": {Data: []byte("chat_core:\n  prompt: hi\n  n: 1\n")}}
	_, err = functional.LoadConfig(fsys, nil)
	if err == nil || !strings.Contains(err.Error(), "chat_core.yaml:3:6: chat_core.n: ") || !strings.Contains(err.Error(), `(got "1")`) {
		t.Errorf("bad n: err = %v, want file:line, field and value", err)
	}
}

// TestRunnerCancelIsNotSkip 证明被取消（作业超时）的用例状态为 cancelled，而不是 skip。
func TestRunnerCancelIsNotSkip(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hang := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// 读完请求体，服务器才会察觉客户端断开并取消 r.Context()；否则只能等 release。
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-release:
			}
		})
	}
	target := serveEmulator(t, emulator.Config{}, hang)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r, err := functional.NewRunner(target, functional.Options{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	rep, _ := r.Run(ctx, pick(t, "chat_core/ids_object", "chat_core/usage"))
	for _, res := range rep.Results {
		if res.Status != functional.StatusCancelled {
			t.Errorf("%s: want cancelled, got %s %q", res.CaseID, res.Status, res.Reason)
		}
	}
	if s := rep.Suites[0]; s.Skipped != 0 {
		t.Errorf("cancelled cases counted as skipped: %+v", s)
	}
}

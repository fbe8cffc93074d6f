package accuracy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
)

// served 返回模拟器成功完成的请求数（vllm:request_success_total 各标签之和）。
func served(t *testing.T, em *emulator.Server) int {
	t.Helper()
	mfs, err := em.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, mf := range mfs {
		if mf.GetName() == "vllm:request_success_total" {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return int(n)
}

// deadURL 返回一个刚关闭的回环端口的地址：连接会被拒绝（一个挂掉的实例）。
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr + "/v1"
}

// TestRunStageSpreadsOverAllInstances 是 issue 15 的验收条件：多实例部署的精度阶段打全部
// 实例（旧代码只用 Target.BaseURL，第二个实例一个请求也收不到）。单线程时第 k 个请求
// 发往实例 k mod 2，两个模拟器各收到一半，结果逐实例计数，逐样本记下实例。
func TestRunStageSpreadsOverAllInstances(t *testing.T) {
	em1, ep1 := emulator.Start(t, emulator.Config{Model: "m", APIKey: "sk-multi"})
	em2, ep2 := emulator.Start(t, emulator.Config{Model: "m", APIKey: "sk-multi"})
	tgt := accuracy.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{ep1.BaseURL(), ep2.BaseURL()}, Model: "m", APIKey: "sk-multi"}}
	cfg := accuracy.Config{Dataset: accuracy.BuiltinSample, Debug: true, NumThreads: 1, MaxTokens: 16,
		Datasets: []accuracy.DatasetConfig{{Name: "gpqa", Threshold: ptr(0)}}}
	var jsonl bytes.Buffer
	res, err := accuracy.RunStage(context.Background(), cfg, tgt, accuracy.StageOptions{Evals: simpleevals.Registry(), Emulated: true, Create: captureJSONL(&jsonl)})
	if err != nil || len(res.Errors) != 0 || len(res.Results) != 1 {
		t.Fatalf("err=%v errors=%v results=%d", err, res.Errors, len(res.Results))
	}
	r := res.Results[0]
	n := r.Requests
	if n < 2 || r.Errors != 0 {
		t.Fatalf("requests=%d errors=%d", n, r.Errors)
	}
	if a, b := served(t, em1), served(t, em2); a != (n+1)/2 || b != n/2 {
		t.Fatalf("instance 1 served %d, instance 2 served %d, want %d and %d of %d", a, b, (n+1)/2, n/2, n)
	}
	want := []accuracy.InstanceStats{{BaseURL: ep1.BaseURL(), Attempts: (n + 1) / 2}, {BaseURL: ep2.BaseURL(), Attempts: n / 2}}
	if !slices.EqualFunc(r.Instances, want, func(a, b accuracy.InstanceStats) bool {
		return a.BaseURL == b.BaseURL && a.Attempts == b.Attempts && a.Failed == b.Failed && len(a.FailedClasses) == 0
	}) {
		t.Fatalf("Instances = %+v, want %+v", r.Instances, want)
	}
	for i, s := range r.Singles {
		if w := tgt.BaseURLs[i%2]; !slices.Equal(s.Instances, []string{w}) {
			t.Fatalf("single %d served by %q, want [%s]", i, s.Instances, w)
		}
	}
	// 逐样本的 JSONL 记录同样写明实例；密钥不出现在任何地方。
	lines := strings.Split(strings.TrimSpace(jsonl.String()), "\n")
	var first struct{ Instances []string }
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || !slices.Equal(first.Instances, []string{ep1.BaseURL()}) {
		t.Fatalf("jsonl line 1 instances %q (%v): %s", first.Instances, err, lines[0])
	}
	if strings.Contains(jsonl.String(), "sk-multi") {
		t.Fatal("API key in JSONL")
	}
}

// captureJSONL 返回只把 .jsonl 结果写进 buf 的 StageOptions.Create。
func captureJSONL(buf *bytes.Buffer) func(string) (io.WriteCloser, error) {
	return func(name string) (io.WriteCloser, error) {
		if strings.HasSuffix(name, ".jsonl") {
			return nopCloser{buf}, nil
		}
		return nopCloser{&bytes.Buffer{}}, nil
	}
}

// TestDeadInstanceFailuresCounted：两个实例中一个挂掉、不重试时，发往它的请求逐个计为
// transport 失败（样本、数据集与实例三处都有），从不被跳过或算作成功；活着的实例照常应答。
func TestDeadInstanceFailuresCounted(t *testing.T) {
	em, ep := emulator.Start(t, emulator.Config{Model: "m"})
	dead := deadURL(t)
	tgt := accuracy.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{ep.BaseURL(), dead}, Model: "m"}}
	cfg := accuracy.Config{Dataset: accuracy.BuiltinSample, Debug: true, NumThreads: 1, MaxTokens: 16, Retries: -1,
		Datasets: []accuracy.DatasetConfig{{Name: "gpqa", Threshold: ptr(0), MaxErrorRate: ptr(1)}}}
	res, err := accuracy.RunStage(context.Background(), cfg, tgt, accuracy.StageOptions{Evals: simpleevals.Registry(), Emulated: true})
	if err != nil || len(res.Results) != 1 {
		t.Fatalf("err=%v errors=%v", err, res.Errors)
	}
	r := res.Results[0]
	n := r.Requests
	if r.Errors != n/2 || r.ErrorClasses["transport"] != n/2 || len(r.ErrorClasses) != 1 || r.Examples != r.Planned {
		t.Fatalf("requests=%d errors=%d classes=%v examples=%d/%d", n, r.Errors, r.ErrorClasses, r.Examples, r.Planned)
	}
	if got := served(t, em); got != (n+1)/2 {
		t.Fatalf("live instance served %d, want %d", got, (n+1)/2)
	}
	if d := r.Instances[1]; d.BaseURL != dead || d.Attempts != n/2 || d.Failed != n/2 || d.FailedClasses["transport"] != n/2 {
		t.Fatalf("dead instance stats %+v", d)
	}
	for i, s := range r.Singles {
		if i%2 == 1 && (s.ErrorClass != "transport" || s.FailedRequests != 1 || !slices.Equal(s.Instances, []string{dead})) {
			t.Fatalf("single %d: %+v", i, s)
		}
		if i%2 == 0 && (s.Error != "" || !slices.Equal(s.Instances, []string{ep.BaseURL()})) {
			t.Fatalf("single %d: %+v", i, s)
		}
	}
}

// TestRetryGoesToNextInstance：重试换到下一个实例，所以挂掉的实例上的请求都由活着的实例
// 挽回（没有失败的样本），但每次失败的尝试仍按分类记在该实例名下——故障看得见。
func TestRetryGoesToNextInstance(t *testing.T) {
	em, ep := emulator.Start(t, emulator.Config{Model: "m"})
	dead := deadURL(t)
	s, err := accuracy.NewChatSampler(accuracy.ChatConfig{Endpoint: endpoint.Endpoint{BaseURLs: []string{dead, ep.BaseURL()}, Model: "m"},
		MaxTokens: 8, Retries: 1, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e, err := simpleevals.Registry().New("gpqa", simpleevals.SampleData(), accuracy.EvalOptions{Debug: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := accuracy.Run(context.Background(), s, e, accuracy.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := r.Requests
	if r.Errors != 0 || served(t, em) != n {
		t.Fatalf("errors=%d served=%d of %d", r.Errors, served(t, em), n)
	}
	// 单线程：偶数号请求先打挂掉的实例 0，失败后重试到实例 1；奇数号直接打实例 1。
	fails := (n + 1) / 2
	if d := r.Instances[0]; d.BaseURL != dead || d.Attempts != fails || d.Failed != fails || d.FailedClasses["transport"] != fails {
		t.Fatalf("dead instance %+v, want %d failed transport attempts", d, fails)
	}
	if l := r.Instances[1]; l.Attempts != n || l.Failed != 0 {
		t.Fatalf("live instance %+v, want %d attempts", l, n)
	}
	for i, single := range r.Singles {
		if !slices.Equal(single.Instances, []string{ep.BaseURL()}) {
			t.Fatalf("single %d answered by %q", i, single.Instances)
		}
	}
	// 两个实例都挂掉时，放弃的错误写明最后一次尝试的实例。
	s2, _ := accuracy.NewChatSampler(accuracy.ChatConfig{Endpoint: endpoint.Endpoint{BaseURLs: []string{dead, deadURL(t)}, Model: "m"}, Retries: 1, Backoff: time.Millisecond})
	if _, err := s2.Sample(context.Background(), nil); err == nil || accuracy.ErrorClass(err) != "transport" || !strings.Contains(err.Error(), "giving up after 2 attempts (last on http://127.0.0.1:") {
		t.Fatalf("all dead: %v", err)
	}
}

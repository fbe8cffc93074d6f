package accuracy_test

import (
	"context"
	"fmt"
	"github.com/vllm-cibench/cibench/internal/hostile"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/endpoint"
)

// tinyEval 是 n 个单请求样本的评测：答案恒为 "A"，回复以 "A" 开头得 1 分。
type tinyEval struct{ n int }

// Name 返回数据集名。
func (tinyEval) Name() string { return "tiny" }

// Examples 返回 n 个样本。
func (e tinyEval) Examples(context.Context) ([]accuracy.Example, error) {
	out := make([]accuracy.Example, e.n)
	for i := range out {
		out[i] = accuracy.Example{Index: i, ID: fmt.Sprintf("tiny/%d", i), Samples: 1,
			Messages: []accuracy.Message{{Role: "user", Content: "say A"}}}
	}
	return out, nil
}

// Score 给以 "A" 开头的回复 1 分。
func (tinyEval) Score(_ context.Context, ex accuracy.Example, rs []string) (accuracy.SingleResult, error) {
	s := 0.0
	if strings.HasPrefix(rs[0], "A") {
		s = 1
	}
	return accuracy.SingleResult{Index: ex.Index, ID: ex.ID, Score: s, Responses: rs}, nil
}

// silentAddr 返回一个接受连接、读完请求、永不应答的服务（internal/hostile 的 silence 故障）的 /v1 地址；
// 测试结束时关闭。
func silentAddr(t *testing.T) string {
	t.Helper()
	srv, err := hostile.New(hostile.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv.BaseURL(hostile.FaultSilence)
}

// TestSilentServerEndsTheEvalAtOnce 复现 issue 38 在精度阶段的同一问题：对一个接受连接却从不回答的
// 服务，每个样本都等满自己的超时与重试（12 个样本、4 个线程、超时 3 s 重试 1 次时 21 s；每日全量 GPQA
// 在 120 s 超时下就是整个阶段的时限）。现在接连 max(3, 线程数) 个样本的全部请求都以超时或传输故障
// 失败、其间没有一个成功时，服务被判为无响应：其余样本不再发请求，记为 unresponsive 类的失败
// （计分与失败的请求一样），结果完整（不是 Partial）。断言的是结构：真正发出的请求不超过两轮线程数。
func TestSilentServerEndsTheEvalAtOnce(t *testing.T) {
	var sent atomic.Int32
	s, err := accuracy.NewChatSampler(accuracy.ChatConfig{Endpoint: endpointFor(silentAddr(t)), Timeout: 100 * time.Millisecond, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	counting := accuracy.SamplerFunc(func(ctx context.Context, msgs []accuracy.Message) (string, error) {
		sent.Add(1)
		return s.Sample(ctx, msgs)
	})
	res, err := accuracy.Run(context.Background(), counting, tinyEval{n: 60}, accuracy.Options{Threads: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Examples != 60 || res.Partial || res.Score != 0 {
		t.Fatalf("examples %d partial %v score %v", res.Examples, res.Partial, res.Score)
	}
	if got := sent.Load(); got > 8 {
		t.Errorf("%d requests sent to a silent server, want at most two rounds of 4 threads", got)
	}
	if res.ErrorClasses["unresponsive"] < 50 || res.Errors != 60 {
		t.Errorf("classes %v, errors %d", res.ErrorClasses, res.Errors)
	}
	var reason string
	for _, r := range res.Singles {
		if r.ErrorClass == "unresponsive" {
			reason = r.Error
			break
		}
	}
	if !strings.Contains(reason, "server unresponsive since example tiny/") {
		t.Errorf("reason %q does not say since which example", reason)
	}
}

// TestOneSlowExampleDoesNotTrip 检查一个偶尔超时的服务不会被判为无响应：成功的请求夹在超时之间。
func TestOneSlowExampleDoesNotTrip(t *testing.T) {
	var n atomic.Int32
	flaky := accuracy.SamplerFunc(func(ctx context.Context, _ []accuracy.Message) (string, error) {
		if n.Add(1)%3 == 0 {
			return "", fmt.Errorf("read: %w", context.DeadlineExceeded)
		}
		return "A", nil
	})
	res, err := accuracy.Run(context.Background(), flaky, tinyEval{n: 30}, accuracy.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.ErrorClasses["unresponsive"] != 0 || res.ErrorClasses["timeout"] != 10 || res.Score < 0.6 {
		t.Fatalf("classes %v score %v", res.ErrorClasses, res.Score)
	}
}

// endpointFor 返回指向 base 的端点（模型名 m）。
func endpointFor(base string) endpoint.Endpoint {
	return endpoint.Endpoint{BaseURLs: []string{base}, Model: "m"}
}

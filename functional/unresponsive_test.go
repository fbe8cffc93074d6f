package functional_test

import (
	"context"
	"github.com/vllm-cibench/cibench/internal/hostile"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/functional"
)

// silentServer 返回一个接受连接、读完请求、永不应答的服务（internal/hostile 的 silence 故障）的 /v1 地址；
// 测试结束时关闭。
func silentServer(t *testing.T) string {
	t.Helper()
	srv, err := hostile.New(hostile.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv.BaseURL(hostile.FaultSilence)
}

// TestSilentServerFailsTheCatalogAtOnce 复现 issue 38：对一个接受连接却从不回答的服务，整个目录
// （81 个用例）以前每个用例都等满自己的超时与重试——超时 3 s、重试 1 次时 188 秒，确定性用例逐个等。
// 现在几个用例接连以超时（或传输故障）结束、其间没有任何回答之后，服务被判为无响应：其余用例立即
// 以 unresponsive 类失败，原因写明从哪个用例起；进行中的用例被取消，同样记为 unresponsive。
// 断言的是结构（真正等满超时的用例不超过并发数，没有一个成功），而不是墙钟。
func TestSilentServerFailsTheCatalogAtOnce(t *testing.T) {
	base := silentServer(t)
	target := functional.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{base}, Model: "m"}}
	opts := functional.Options{RequestTimeout: 200 * time.Millisecond, Retries: 1, RetryBackoff: time.Millisecond, Parallelism: 4}
	r, err := functional.NewRunner(target, opts)
	if err != nil {
		t.Fatal(err)
	}
	cases := functional.DefaultCatalog().Cases()
	start := time.Now()
	rep, err := r.Run(context.Background(), cases)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[functional.Class]int{}
	var first string
	for _, res := range rep.Results {
		if res.Status == functional.StatusPass {
			t.Errorf("%s passed against a silent server", res.CaseID)
		}
		counts[res.Class]++
		if res.Class == functional.ClassUnresponsive && first == "" {
			first = res.Reason
		}
	}
	waited := counts[functional.ClassTimeout] + counts[functional.ClassTransport]
	if counts[functional.ClassUnresponsive] < len(cases)-2*opts.Parallelism || waited > 2*opts.Parallelism {
		t.Fatalf("classes %v over %d cases: want nearly all unresponsive, at most %d that waited out their timeout", counts, len(cases), 2*opts.Parallelism)
	}
	if !strings.Contains(first, "server unresponsive since case ") {
		t.Errorf("unresponsive reason %q does not say since which case", first)
	}
	// 81 个用例各等 2×200 ms 要 8 秒以上（4 个并发）；判定之后只剩已在途的用例。上限给得很宽，忙碌的机器也过。
	if elapsed > 20*time.Second {
		t.Errorf("the catalog took %v against a silent server", elapsed)
	}
}

// TestOneSlowCaseDoesNotTrip 检查单个慢用例不会触发判定：一个健康的服务上，只有一个用例的请求超时，
// 其余用例照常运行并通过。
func TestOneSlowCaseDoesNotTrip(t *testing.T) {
	_, target := startEmulator(t, emulator.Config{Model: "m"})
	var ran atomic.Int32
	slow := functional.Case{ID: "slow/one", Suite: "slow", Run: func(ctx context.Context, tt *functional.T) {
		// 向一个从不回答的地址发请求：这个用例以超时失败。
		_, err := tt.HTTPClient().Post(silentServer(t)+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			tt.Fatalf("silent: %v", err)
		}
	}}
	var cases []functional.Case
	cases = append(cases, slow)
	for i := range 12 {
		cases = append(cases, functional.Case{ID: "ok/" + string(rune('a'+i)), Suite: "ok", Run: func(ctx context.Context, tt *functional.T) {
			ran.Add(1)
			resp, err := tt.Get(ctx, "/v1/models")
			if err != nil {
				tt.Fatalf("GET /models: %v", err)
			}
			tt.Expect("HTTP status", 200, resp.Status)
		}})
	}
	r, err := functional.NewRunner(target, functional.Options{RequestTimeout: 200 * time.Millisecond, Retries: 1, RetryBackoff: time.Millisecond, Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Run(context.Background(), cases)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range rep.Results[1:] {
		if res.Status != functional.StatusPass {
			t.Errorf("%s: %s %s %s", res.CaseID, res.Status, res.Class, res.Reason)
		}
	}
	if rep.Results[0].Class != functional.ClassTimeout || ran.Load() != 12 {
		t.Fatalf("slow case %+v, ran %d", rep.Results[0], ran.Load())
	}
}

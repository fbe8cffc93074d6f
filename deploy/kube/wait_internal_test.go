package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
)

// slowAfterFirst 启动一个回环 HTTP 服务：第一个请求立即答 body，之后的请求一直挂着，
// 直到客户端放弃（请求的 ctx 结束）——这样截止时间必定落在一个请求的途中，与
// 负载高时 "Get …: context deadline exceeded" 的情形一致，而且是确定的。
func slowAfterFirst(t *testing.T, body string) *httptest.Server {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			_, _ = io.WriteString(w, body)
			return
		}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// getState 是一次"观察"：GET url，成功时返回响应体，失败时返回请求自己的错误文本——
// 与 waitReady 里把 GET 错误当作状态的写法相同。
func getState(ctx context.Context, url string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	return string(b)
}

// TestPollTimeoutKeepsLastObservedState 复现 issue 23 的 TestKubeIntegration/lws 失败：
// 截止时间在途中的 GET 上触发，旧的等待循环把这次 GET 自己的 "context deadline exceeded"
// 当作最后状态，丢掉了之前看到的 "groups want=2 ready=1 Available=True"。
func TestPollTimeoutKeepsLastObservedState(t *testing.T) {
	const state = "LeaderWorkerSet/default/x: groups want=2 ready=1 Available=True AllGroupsReady"
	srv := slowAfterFirst(t, state)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var calls int
	err := Poll(ctx, time.Millisecond, "workloads ready", func() (bool, string, error) {
		calls++
		return false, getState(ctx, srv.URL), nil
	})
	var we *WaitError
	if !errors.As(err, &we) {
		t.Fatalf("err = %v (%T), want *WaitError", err, err)
	}
	// calls 至少 2：第二次请求挂到截止；若复用的空闲连接恰被关掉，客户端会多发一次，结论不变。
	if we.Last != state || we.What != "workloads ready" || calls < 2 {
		t.Fatalf("last = %q what = %q calls = %d, want the state seen before the deadline", we.Last, we.What, calls)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, deploy.ErrNotReady) || errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrNotReady and DeadlineExceeded", err)
	}
	want := "kube: deploy: server not ready: workloads ready: context deadline exceeded (last: " + state + ")"
	if err.Error() != want {
		t.Fatalf("message:\n got %s\nwant %s", err, want)
	}
}

// TestPollFirstObservationAndCancel：第一次请求就撞上截止时（之前什么也没看到），那次请求的错误
// 就是唯一的信息，仍然给出；取消与超时分别包装 context.Canceled，调用方能区分。
func TestPollFirstObservationAndCancel(t *testing.T) {
	srv := slowAfterFirst(t, "unused")
	getState(context.Background(), srv.URL) // 用掉唯一一次快速应答：之后的请求都挂起
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	err := Poll(ctx, time.Millisecond, "CRD x established", func() (bool, string, error) {
		return false, getState(ctx, srv.URL), nil
	})
	var we *WaitError
	if !errors.As(err, &we) || !errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want *WaitError wrapping Canceled", err)
	}
	if want := fmt.Sprintf("Get %q: context canceled", srv.URL); we.Last != want {
		t.Fatalf("last = %q, want %q", we.Last, want)
	}

	// f 的错误原样返回，完成时返回 nil，都不等待下一个间隔。
	boom := errors.New("boom")
	if err := Poll(context.Background(), time.Hour, "x", func() (bool, string, error) { return false, "", boom }); err != boom {
		t.Fatalf("f error: %v", err)
	}
	if err := Poll(context.Background(), time.Hour, "x", func() (bool, string, error) { return true, "", nil }); err != nil {
		t.Fatalf("done: %v", err)
	}
}

// TestDeadlineHit：负载高时截止时刻已到而 ctx 的定时器还没触发，client-go 的限流器立即报
// "rate: Wait(n=1) would exceed context deadline"，ctx.Err() 此时仍是 nil（TestKubeIntegration/lws
// 在两个忙循环旁这样失败过一次）。所以截止前 deadlineGuard 之内完成的观察也算"撞上截止"，
// poll 不让它覆盖之前的状态。
func TestDeadlineHit(t *testing.T) {
	near, cancel := context.WithTimeout(context.Background(), deadlineGuard*9/10)
	defer cancel()
	if near.Err() != nil || !deadlineHit(near) {
		t.Fatalf("deadline %v away: deadlineHit = false (ctx err %v)", deadlineGuard*9/10, near.Err())
	}
	far, cancel2 := context.WithTimeout(context.Background(), time.Hour)
	defer cancel2()
	if deadlineHit(far) || deadlineHit(context.Background()) {
		t.Fatal("a far or missing deadline counts as hit")
	}
	done, cancel3 := context.WithCancel(context.Background())
	cancel3()
	if !deadlineHit(done) {
		t.Fatal("a cancelled ctx does not count as hit")
	}
}

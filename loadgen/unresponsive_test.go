package loadgen_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/loadgen"
)

// stopsAnswering 返回一个服务：探测请求（"hi"）与前 healthy 个压测请求正常回答，之后每个请求都不再回答
// （stall 为真时先发两个 chunk 再卡住，否则连响应头都不发）。
func stopsAnswering(t *testing.T, healthy int64, stall bool) *httptest.Server {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"hi"`) || n.Add(1) <= healthy {
			sseWrite(w, roleChunk, contentChunk("a"), contentChunk(" b"), "[DONE]")
			return
		}
		if stall {
			sseWrite(w, roleChunk, contentChunk("one"))
		}
		blockUntilGone(r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestServerStopsAnsweringMidRun 复现 issue 38 "apply the same to perf"：服务回答了前 6 个请求后不再回答
// （沉默，或发了两个 chunk 后卡住）。以前其余每个请求都等满自己的超时（60 个请求、并发 2、超时 1 秒：
// 约 27 秒），后面的分组照样再等一遍。现在接连 3 个请求没有回答就判定服务停止回答：在途请求被取消，
// 其余请求记为 unresponsive 的失败，行标为不完整，后面的分组不再运行，Run 返回 ErrUnresponsive。
func TestServerStopsAnsweringMidRun(t *testing.T) {
	for _, stall := range []bool{false, true} {
		name := map[bool]string{false: "silence", true: "stall"}[stall]
		t.Run(name, func(t *testing.T) {
			srv := stopsAnswering(t, 6, stall)
			tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{srv.URL + "/v1"}, Model: "m"}}
			p := loadgen.Profile{Timeout: time.Second, IdleTimeout: time.Second, NumRequests: []int{60, 60}, Concurrency: []int{2, 4}}
			_, sums, el, err := runBounded(t, tgt, p)
			if !errors.Is(err, loadgen.ErrUnresponsive) {
				t.Fatalf("err %v, want ErrUnresponsive", err)
			}
			if !strings.Contains(err.Error(), "3 requests in a row got no answer") || !strings.Contains(err.Error(), "in16-out4-c2 round 1") {
				t.Errorf("error %q does not say what happened and where", err)
			}
			if len(sums) != 1 {
				t.Fatalf("%d rows, want the first group only (the second is not run)", len(sums))
			}
			s := sums[0]
			// 预热先用掉几个健康的回答；每个计划的请求都有结局。
			if !s.Incomplete || s.Succeeded < 1 || s.Succeeded+s.Failed != 60 {
				t.Errorf("row: incomplete %v, %d succeeded + %d failed, want incomplete and every planned request (60) with an outcome", s.Incomplete, s.Succeeded, s.Failed)
			}
			noAnswer := s.FailureClasses[loadgen.ErrClassTimeout] + s.FailureClasses[loadgen.ErrClassIdleTimeout]
			if noAnswer < 3 || s.FailureClasses[loadgen.ErrClassUnresponsive] == 0 || noAnswer+s.FailureClasses[loadgen.ErrClassUnresponsive] != s.Failed {
				t.Errorf("failure classes %v: want ≥3 timeouts and the rest unresponsive", s.FailureClasses)
			}
			// 以前约 27 秒（54 个请求 × 1 秒 ÷ 并发 2），第二组再等一遍；界限离它很远，繁忙的机器也不会越过。
			if el > 15*time.Second {
				t.Errorf("took %v", el)
			}
		})
	}
}

// TestOneSlowRequestDoesNotTrip 钉住判定的另一面：一个（甚至每五个里一个）请求超时、其间有请求完成时，
// 服务在回答，不判定停止回答；超时的请求照常计为 timeout 失败。
func TestOneSlowRequestDoesNotTrip(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), `"hi"`) && n.Add(1)%5 == 0 {
			blockUntilGone(r)
			return
		}
		sseWrite(w, roleChunk, contentChunk("a"), "[DONE]")
	}))
	t.Cleanup(srv.Close)
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{srv.URL + "/v1"}, Model: "m"}}
	_, sums, _, err := runBounded(t, tgt, loadgen.Profile{Timeout: 300 * time.Millisecond, NumRequests: []int{20}, Concurrency: []int{1}})
	if err != nil {
		t.Fatalf("err %v: a slow request among answers must not trip", err)
	}
	if s := sums[0]; s.Incomplete || s.Failed != 4 || s.FailureClasses[loadgen.ErrClassTimeout] != 4 {
		t.Errorf("row: incomplete %v, failed %d, classes %v; want 4 timeouts and a complete row", s.Incomplete, s.Failed, s.FailureClasses)
	}
}

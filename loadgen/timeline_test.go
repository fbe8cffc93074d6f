package loadgen_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/loadgen"
)

// timelineSink 在 collect 的基础上保存时间线行；fail 非 nil 时第一行就返回它。
type timelineSink struct {
	collect
	rows []loadgen.Timeline
	fail error
}

// WriteTimeline 保存一行。
func (s *timelineSink) WriteTimeline(t loadgen.Timeline) error {
	s.rows = append(s.rows, t)
	return s.fail
}

// observer 在 collect 的钩子上加 OnTimeline。
func (s *timelineSink) observer() *loadgen.Observer {
	o := s.collect.observer()
	o.OnTimeline = s.WriteTimeline
	return o
}

// checkTimeline 核对时间线的值：行按时间递增、间隔之和等于最后一行的 Elapsed、各行计数之和
// 等于分组的请求数 / 失败数 / 输出 token 数，在途数不超过并发。
func checkTimeline(t *testing.T, s *timelineSink, sum loadgen.Summary, conc int) {
	t.Helper()
	if len(s.rows) < 3 {
		t.Fatalf("%d timeline rows for a group of %v at a 40ms interval, want >= 3", len(s.rows), sum.TotalTime)
	}
	var started, completed, failed int
	var tokens int64
	var span time.Duration
	for i, r := range s.rows {
		if i > 0 && r.Elapsed <= s.rows[i-1].Elapsed {
			t.Fatalf("row %d elapsed %v not after %v", i, r.Elapsed, s.rows[i-1].Elapsed)
		}
		if r.InFlight < 0 || r.InFlight > conc || r.TargetConcurrency != conc {
			t.Errorf("row %d in-flight %d target %d, conc %d", i, r.InFlight, r.TargetConcurrency, conc)
		}
		if r.Completed > 0 && r.Completed > r.Failed && (r.TTFTP50 <= 0 || r.TTFTP99 < r.TTFTP50 || r.ITLP50 < 0 || r.ITLP99 <= 0 || r.ITLP99 < r.ITLP50) {
			t.Errorf("row %d latency p50/p99: ttft %v/%v itl %v/%v", i, r.TTFTP50, r.TTFTP99, r.ITLP50, r.ITLP99)
		}
		if r.Completed == 0 && (r.TTFTP50 != -1 || r.ITLP99 != -1) {
			t.Errorf("row %d without completions must give -1 latencies, got %v %v", i, r.TTFTP50, r.ITLP99)
		}
		if want := float64(r.OutputTokens) / r.Interval.Seconds(); r.OutputTokenThroughput != want {
			t.Errorf("row %d tokens/s %v, want %v", i, r.OutputTokenThroughput, want)
		}
		started += r.Started
		completed += r.Completed
		failed += r.Failed
		tokens += r.OutputTokens
		span += r.Interval
	}
	if last := s.rows[len(s.rows)-1]; span != last.Elapsed {
		t.Errorf("intervals sum to %v, last elapsed %v", span, last.Elapsed)
	}
	var wantTok int64
	for _, r := range s.recs {
		if r.OK {
			wantTok += int64(r.CompletionTokens)
		}
	}
	if started != sum.NumPrompts || completed != sum.NumPrompts || failed != sum.Failed || tokens != wantTok {
		t.Errorf("sums started %d completed %d failed %d tokens %d; want %d %d %d %d",
			started, completed, failed, tokens, sum.NumPrompts, sum.NumPrompts, sum.Failed, wantTok)
	}
}

// TestTimelineRowsAndTotals 对模拟器跑一组约 0.4 秒的压测，40ms 一行，核对行内数值与总数，
// 以及从 /metrics 同步采到的调度状态（模拟器给出 running/waiting/KV-cache，没有抢占计数器 → -1）。
func TestTimelineRowsAndTotals(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m", TTFT: 5 * time.Millisecond, ITL: 2 * time.Millisecond})
	p := loadgen.Profile{Concurrency: []int{4}, InputLength: []int{16}, OutputLength: []int{16}, NumRequests: []int{40},
		BucketInterval: 40 * time.Millisecond}
	s := &timelineSink{}
	sums, err := loadgen.Run(context.Background(), tgt, p, s.observer())
	if err != nil {
		t.Fatal(err)
	}
	checkTimeline(t, s, sums[0], 4)
	busy := false
	for _, r := range s.rows {
		if r.ServerRunning < 0 || r.ServerWaiting < 0 || r.ServerKVCacheUsage < 0 || r.ServerKVCacheUsage > 1 {
			t.Errorf("server fields %v %v %v", r.ServerRunning, r.ServerWaiting, r.ServerKVCacheUsage)
		}
		busy = busy || r.ServerRunning > 0
		if r.ServerPreemptions != -1 {
			t.Errorf("emulator has no preemption counter, got %v", r.ServerPreemptions)
		}
		if r.Group.Concurrency != 4 {
			t.Errorf("group %+v", r.Group)
		}
	}
	if !busy {
		t.Error("no row saw a running request on the server")
	}
}

// TestTimelineWithoutMetrics 让 /metrics 返回 404：服务端字段全部为 -1，其余照常。
func TestTimelineWithoutMetrics(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m", TTFT: 5 * time.Millisecond, ITL: 2 * time.Millisecond})
	u, _ := url.Parse(strings.TrimSuffix(tgt.BaseURLs[0], "/v1"))
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			http.NotFound(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer ts.Close()
	tgt.BaseURLs = []string{ts.URL + "/v1"}
	p := loadgen.Profile{Concurrency: []int{4}, InputLength: []int{16}, OutputLength: []int{16}, NumRequests: []int{40},
		BucketInterval: 40 * time.Millisecond}
	s := &timelineSink{}
	sums, err := loadgen.Run(context.Background(), tgt, p, s.observer())
	if err != nil {
		t.Fatal(err)
	}
	checkTimeline(t, s, sums[0], 4)
	for i, r := range s.rows {
		if r.ServerRunning != -1 || r.ServerWaiting != -1 || r.ServerKVCacheUsage != -1 || r.ServerPreemptions != -1 {
			t.Errorf("row %d server fields without /metrics: %v %v %v %v", i, r.ServerRunning, r.ServerWaiting, r.ServerKVCacheUsage, r.ServerPreemptions)
		}
	}
}

// TestTimelineSinkErrorStopsRun 验证时间线 sink 的错误终止运行并原样上报。
func TestTimelineSinkErrorStopsRun(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m", TTFT: 5 * time.Millisecond, ITL: 2 * time.Millisecond})
	boom := errors.New("disk full")
	p := loadgen.Profile{Concurrency: []int{2}, InputLength: []int{16}, OutputLength: []int{16}, NumRequests: []int{20},
		BucketInterval: 20 * time.Millisecond}
	_, err := loadgen.Run(context.Background(), tgt, p, (&timelineSink{fail: boom}).observer())
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the sink's error", err)
	}
}

// TestBucketIntervalValidation 验证过小或负的间隔在运行前被拒绝并点名字段。
func TestBucketIntervalValidation(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, time.Millisecond} {
		p := loadgen.Profile{Concurrency: []int{1}, InputLength: []int{8}, OutputLength: []int{8}, BucketInterval: d}.WithDefaults()
		if err := p.Validate(); !errors.Is(err, loadgen.ErrInvalidProfile) || !strings.Contains(err.Error(), "bucket_interval") {
			t.Errorf("bucket_interval %v: err = %v", d, err)
		}
	}
}

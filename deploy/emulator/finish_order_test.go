package emulator_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
)

// endWatcher 包装 ResponseWriter：响应的最后一段字节（流式的 "[DONE]"，非流式的 JSON 体）交给
// net/http 的那一刻，调用 at 一次——客户端最早能在那之后读到结尾、接着抓 /metrics。
type endWatcher struct {
	http.ResponseWriter
	stream bool
	buf    bytes.Buffer
	done   bool
	at     func()
}

// Write 记下写出的字节；看到结尾时调用 at。
func (w *endWatcher) Write(p []byte) (int, error) {
	w.buf.Write(p)
	if !w.done && (!w.stream || bytes.Contains(w.buf.Bytes(), []byte("[DONE]"))) {
		w.done = true
		w.at()
	}
	return w.ResponseWriter.Write(p)
}

// Flush 转发给底层的 Flusher。
func (w *endWatcher) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// e2eCount 从模拟器的注册表读出 E2E 直方图与 queue 直方图的样本数。
func e2eCount(t *testing.T, srv *emulator.Server) (e2e, queue uint64) {
	t.Helper()
	mfs, err := srv.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "vllm:e2e_request_latency_seconds":
				e2e += m.GetHistogram().GetSampleCount()
			case "vllm:request_queue_time_seconds":
				queue += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return e2e, queue
}

// TestMetricsRecordedBeforeTheLastByte 检查请求的指标在响应的最后一段字节写出之前就已记录（与 vLLM v1
// 相同：输出处理循环在把最终输出交给 API server 的同一轮里记录 FinishedRequestStats，HTTP 层之后才写出
// 最后的 chunk 与 [DONE]）。以前模拟器在写完 [DONE] 之后才记录：客户端读到结尾立即抓 /metrics 时，
// 最后一个请求可能还不在直方图里。分片运行的最后一个分片的 Settled 等待被别的分片完成的请求满足，
// 冷启动的测试负载下合并出的 queue 直方图因此少了一个样本（TestShardedRunMatchesSingleProcess/open）。
// 流式（逐 chunk 刷新与零延迟合并写两种路径）与非流式各查一次。
func TestMetricsRecordedBeforeTheLastByte(t *testing.T) {
	for _, c := range []struct {
		name   string
		cfg    emulator.Config
		stream bool
	}{
		{"stream", emulator.Config{Model: "m", TTFT: time.Millisecond, ITL: 100 * time.Microsecond}, true},
		{"stream-coalesced", emulator.Config{Model: "m", CoalesceZeroLatency: true}, true},
		{"non-stream", emulator.Config{Model: "m", TTFT: time.Millisecond, ITL: 100 * time.Microsecond}, false},
		{"perf-model", emulator.Config{Model: "m", TTFT: time.Millisecond, ITL: 100 * time.Microsecond, BlockSize: 16, NumKVBlocks: 64, MaxModelLen: 512}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, err := emulator.New(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				body := `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hello there"}]`
				if c.stream {
					body += `,"stream":true`
				}
				req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body+"}"))
				rec := httptest.NewRecorder()
				var e2e, queue uint64
				w := &endWatcher{ResponseWriter: rec, stream: c.stream, at: func() { e2e, queue = e2eCount(t, srv) }}
				srv.Handler().ServeHTTP(w, req)
				if rec.Code != http.StatusOK || !w.done {
					t.Fatalf("status %d, end seen %v: %s", rec.Code, w.done, rec.Body.String())
				}
				if want := uint64(i + 1); e2e != want || queue != want {
					t.Fatalf("request %d: when the last bytes were written, /metrics had %d E2E and %d queue samples, want %d",
						i+1, e2e, queue, want)
				}
			}
		})
	}
}

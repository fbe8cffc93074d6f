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

// e2eCount 从模拟器的注册表读出 E2E 直方图与 queue 直方图的样本数，以及 num_requests_running。
func e2eCount(t *testing.T, srv *emulator.Server) (e2e, queue uint64, running float64) {
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
			case "vllm:num_requests_running":
				running += m.GetGauge().GetValue()
			}
		}
	}
	return e2e, queue, running
}

// TestMetricsRecordedBeforeTheLastByte 检查请求的指标在响应的最后一段字节写出之前就已记录（与 vLLM v1
// 相同：输出处理循环在把最终输出交给 API server 的同一轮里记录 FinishedRequestStats，HTTP 层之后才写出
// 最后的 chunk 与 [DONE]）。以前模拟器在写完 [DONE] 之后才记录：客户端读到结尾立即抓 /metrics 时，
// 最后一个请求可能还不在直方图里。分片运行的最后一个分片的 Settled 等待被别的分片完成的请求满足，
// 冷启动的测试负载下合并出的 queue 直方图因此少了一个样本（TestShardedRunMatchesSingleProcess/open）。
// 同样，请求在那一刻已离开运行批次（num_requests_running 为 0，槽位与 KV 块已释放）：vLLM 的调度器在
// 同一步里释放结束的请求；以前模拟器在写完之后才释放，客户端读到结尾立即发出的下一个请求可能要为一个
// 已经结束的请求排队（max_num_seqs 等于并发时出现并不存在的排队时间）。
// 流式（逐 chunk 刷新与零延迟合并写两种路径）、非流式与性能模型各查一次。
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
		{"max-num-seqs", emulator.Config{Model: "m", TTFT: time.Millisecond, ITL: 100 * time.Microsecond, MaxNumSeqs: 1}, true},
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
				var (
					e2e, queue uint64
					running    float64
				)
				w := &endWatcher{ResponseWriter: rec, stream: c.stream, at: func() { e2e, queue, running = e2eCount(t, srv) }}
				srv.Handler().ServeHTTP(w, req)
				if rec.Code != http.StatusOK || !w.done {
					t.Fatalf("status %d, end seen %v: %s", rec.Code, w.done, rec.Body.String())
				}
				if want := uint64(i + 1); e2e != want || queue != want || running != 0 {
					t.Fatalf("request %d: when the last bytes were written, /metrics had %d E2E and %d queue samples (want %d) and %v running (want 0)",
						i+1, e2e, queue, want, running)
				}
			}
		})
	}
}

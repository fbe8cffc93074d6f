package redact_test

import (
	"io"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/internal/redact"
)

// BenchmarkWriter 测量典型服务端日志经脱敏 Writer 的吞吐（MB/s）。
func BenchmarkWriter(b *testing.B) {
	line := "INFO 11-22 04:30:01 [engine.py:310] Avg prompt throughput: 1234.5 tokens/s, Running: 16 reqs, GPU KV cache usage: 42.1%\n"
	chunk := []byte(strings.Repeat(line, 64))
	r := redact.New("some-secret-value")
	w := r.NewWriter(io.Discard)
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	for range b.N {
		if _, err := w.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
}

package redact_test

import (
	"fmt"
	"os"

	"github.com/vllm-cibench/cibench/internal/redact"
)

// ExampleRedactor_NewWriter 展示把子进程日志经脱敏后写出：运行时读到的
// API Key 先登记，之后无论以何种形式出现都会被替换。
func ExampleRedactor_NewWriter() {
	r := redact.New()
	r.Add("key-from-env-123")
	w := r.NewWriter(os.Stdout)
	fmt.Fprint(w, "POST http://admin:pw@10.0.0.1:8000/v1/chat/completions\n")
	fmt.Fprint(w, "using key key-from-")
	fmt.Fprint(w, "env-123 and Authorization: Bearer abcdefgh12345\n")
	_ = w.Close()
	// Output:
	// POST http://[REDACTED]@10.0.0.1:8000/v1/chat/completions
	// using key [REDACTED] and Authorization: Bearer [REDACTED]
}

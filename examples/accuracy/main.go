// Command accuracy 是 simple-evals 的 Go 版命令行，参数与参考命令一致：
//
//	go run ./examples/accuracy --dataset gpqa [mmlu …] --served-model-name NAME \
//	    --url http://127.0.0.1:8000/v1 --max-tokens 128 --temperature 0.6 --num-threads 32 [--debug]
//	    [--examples N] [--n-repeats N] [--dataset-path DIR] [--out DIR] [--config pr.yaml]
//
// 不给 --url 时，在进程内启动模拟器（emulator.New）并使用内置的合成样例数据，
// 便于在没有 GPU 的机器上端到端演示。给出 --url 时内置样例不可用：数据来自
// --dataset-path、--dataset-url，或默认的 simple-evals 上游公共地址（下载一次后缓存在
// --cache-dir）；拿不到时该数据集失败并写明文件与地址。
// 进度写到 stderr；按 Ctrl-C 会停止派发新样本，已完成样本的结果照常写出
// （JSON/HTML/JSONL），退出码 130。
// 结果文件：{out}/{dataset}_{model}_{时间戳}.json（与 simple-evals 的 JSON 逐字节同格式）、
// .html（逐样本审阅）与 .jsonl（逐样本记录，可离线重评分）。
// 判定与 CI 驱动相同（accuracy.RunStage + accuracy.Gate）：失败的请求比例超过
// --max-error-rate（默认 0）时失败；给出 --config 时还按其中的阈值判定分数。
// 不通过时退出码为 1。
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/internal/yamlstrict"
)

// main 把退出码交给 os.Exit，run 本身可测试。
func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// cliConfig 是解析后的命令行参数。
type cliConfig struct {
	datasets     []string
	model        string
	served       string
	url          string
	apiKey       string
	maxTokens    int
	temperature  float64
	threads      int
	debug        bool
	examples     int
	nRepeats     int
	datasetPath  string
	datasetURL   string
	cacheDir     string
	out          string
	timeout      time.Duration
	retries      int
	python       string
	sandbox      string
	config       string
	maxErrorRate float64
	totalTimeout time.Duration
}

// splitDatasets 把 "--dataset gpqa mmlu --x" 这种 argparse nargs="+" 写法
// 改写为 Go flag 能解析的 "--dataset gpqa,mmlu --x"。
func splitDatasets(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--dataset" || a == "-dataset" {
			var vals []string
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				vals = append(vals, args[i+1])
				i++
			}
			out = append(out, "--dataset="+strings.Join(vals, ","))
			continue
		}
		out = append(out, a)
	}
	return out
}

// parse 解析参数；错误信息写到 stderr。
func parse(args []string, stderr io.Writer) (cliConfig, error) {
	var c cliConfig
	fs := flag.NewFlagSet("accuracy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ds := fs.String("dataset", "gpqa", "dataset(s): "+strings.Join(simpleevals.Names(), "|")+"; several may follow --dataset or be comma-separated")
	fs.StringVar(&c.model, "model", "", "model label (informational, like simple-evals --model)")
	fs.StringVar(&c.served, "served-model-name", "", "served model name sent in requests (default: the emulator's model)")
	fs.StringVar(&c.url, "url", "", "OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 (empty: in-process emulator + built-in synthetic data)")
	fs.StringVar(&c.apiKey, "api-key", os.Getenv("OPENAI_API_KEY"), "API key (default $OPENAI_API_KEY); never printed")
	fs.IntVar(&c.maxTokens, "max-tokens", 128, "max_tokens per request (spec: PR 128, daily 16384)")
	fs.Float64Var(&c.temperature, "temperature", 0.6, "sampling temperature")
	fs.IntVar(&c.threads, "num-threads", 32, fmt.Sprintf("concurrent examples, 1..%d", accuracy.MaxNumThreads))
	fs.BoolVar(&c.debug, "debug", false, "debug sizes: gpqa 5x1, mmlu 1, mgsm 10/lang, drop 10, humaneval 10")
	fs.IntVar(&c.examples, "examples", 0, "number of examples (overrides default, as simple-evals --examples)")
	fs.IntVar(&c.nRepeats, "n-repeats", 0, "gpqa repeats (default: 1 in debug, 10 full)")
	fs.StringVar(&c.datasetPath, "dataset-path", "", "local directory with the reference file names (gpqa_diamond.csv, mmlu.csv, mgsm_*.tsv, drop_v0_*.jsonl.gz, HumanEval.jsonl.gz)")
	fs.StringVar(&c.datasetURL, "dataset-url", "", "mirror of the simple-evals files (default with --url: the upstream URLs, e.g. "+simpleevals.DefaultBaseURL+")")
	fs.StringVar(&c.cacheDir, "cache-dir", defaultCacheDir(), "download cache for the simple-evals data files (upstream URLs or --dataset-url)")
	fs.Float64Var(&c.maxErrorRate, "max-error-rate", 0, "largest fraction of failed requests (after retries, HTTP 400, null/empty content) that still passes, in [0, 1]")
	fs.DurationVar(&c.totalTimeout, "total-timeout", 24*time.Hour, "deadline for the whole evaluation")
	fs.StringVar(&c.out, "out", "results", "output directory")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "per-request timeout")
	fs.IntVar(&c.retries, "retries", 3, fmt.Sprintf("retries per request, 0..%d (HTTP 400 is never retried; as in simple-evals it is scored as %q)", accuracy.MaxRetries, accuracy.BadRequestReply))
	fs.StringVar(&c.python, "python", "", "python3 interpreter for humaneval (looked up on PATH); empty: the first of python3, /usr/bin/python3, /usr/local/bin/python3 that can import numpy/pandas/scipy like upstream")
	fs.StringVar(&c.sandbox, "humaneval-netns", "auto", "run humaneval code in a new network namespace via 'unshare -rn': auto (if it works here), on, off")
	fs.StringVar(&c.config, "config", "", "optional configs/tests/accuracy/{pr,daily}.yaml: its thresholds and max_error_rate gate the exit code")
	if err := fs.Parse(splitDatasets(args)); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	for _, d := range strings.Split(*ds, ",") {
		if d = strings.TrimSpace(d); d != "" {
			c.datasets = append(c.datasets, d)
		}
	}
	if len(c.datasets) == 0 {
		return c, fmt.Errorf("--dataset: at least one of %v", simpleevals.Names())
	}
	return c, checkFlags(c)
}

// defaultCacheDir 返回用户缓存目录下的 cibench/simple-evals（拿不到时为空：不缓存）。
func defaultCacheDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "cibench", "simple-evals")
	}
	return ""
}

// run 执行评测并返回退出码：0 通过，1 未通过或出错，2 参数或配置错误，130 被中断。
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parse(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "accuracy:", err)
		return 2
	}
	var file *accuracy.Config
	if c.config != "" {
		cfg, err := loadConfig(c.config)
		if err != nil {
			fmt.Fprintln(stderr, "accuracy: --config:", err)
			return 2
		}
		file = &cfg
	}
	emulated := c.url == ""
	cfg := stageConfig(c, file, emulated)
	evals := simpleevals.Registry()
	if err := cfg.Validate(evals); err != nil {
		fmt.Fprintln(stderr, "accuracy:", err)
		return 2
	}
	base, model := c.url, c.served
	if emulated {
		em, err := emulator.New(emulator.Config{Model: c.served})
		if err != nil {
			fmt.Fprintln(stderr, "accuracy: emulator:", err)
			return 1
		}
		dep, err := em.Deploy(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "accuracy: emulator:", err)
			return 1
		}
		defer dep.Teardown(context.Background())
		base, model = dep.Endpoint().BaseURL(), dep.Endpoint().Model
		what := "built-in synthetic data (scores mean nothing)"
		if cfg.Dataset != accuracy.BuiltinSample {
			what = "the configured data"
		}
		fmt.Fprintf(stderr, "no --url: evaluating the in-process emulator at %s on %s\n", base, what)
	}
	if model == "" {
		fmt.Fprintln(stderr, "accuracy: --served-model-name is required with --url")
		return 2
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		fmt.Fprintln(stderr, "accuracy: --out:", err)
		return 1
	}
	label := c.model
	if label == "" {
		label = model
	}
	var interp []string
	var pyRuntime *simpleevals.PythonRuntime
	var pyErr error
	if slices.Contains(c.datasets, "humaneval") {
		var cands []string
		if c.python != "" {
			cands = []string{c.python}
		}
		rt, err := simpleevals.FindPython(ctx, cands...)
		if pyErr = err; err == nil {
			pyRuntime = &rt
			interp = interpreter(ctx, rt.Interpreter[0], c.sandbox, stderr)
			fmt.Fprintf(stderr, "humaneval: python %s (%s)\n", rt.Version, rt.Executable)
			if len(rt.Missing) > 0 {
				fmt.Fprintf(stderr, "humaneval: warning: cannot import %v, which upstream preloads; completions importing them fail here and pass upstream\n", rt.Missing)
			}
		}
	}
	start := time.Now()
	res, runErr := accuracy.RunStage(ctx, cfg, accuracy.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{base}, Model: model, APIKey: c.apiKey}}, accuracy.StageOptions{
		Evals: evals, Emulated: emulated, Interpreter: interp, Label: label,
		Create: func(name string) (io.WriteCloser, error) { return os.Create(filepath.Join(c.out, name)) },
		Progress: func(ds string, done, total int) {
			fmt.Fprintf(stderr, "\r%s: %d/%d examples (%s)", ds, done, total, time.Since(start).Round(time.Second))
			if done == total {
				fmt.Fprintln(stderr)
			}
		},
	})
	if errors.Is(runErr, accuracy.ErrConfig) {
		fmt.Fprintln(stderr, "accuracy:", runErr)
		return 2
	}
	code := 0
	for i, r := range res.Results {
		v := res.Verdicts[i]
		verdict := map[bool]string{true: "PASS", false: "FAIL"}[v.Pass]
		stem := filepath.Join(c.out, accuracy.FileStem(r.Dataset, label, r.Started))
		fmt.Fprintf(stdout, "%s: score=%.4f examples=%d/%d errors=%d/%d -> %s.json %s (%s)\n", r.Dataset, r.Score, r.Examples, r.Planned, r.Errors, r.Requests, stem, verdict, v.Reason)
		if src := r.Source; src != nil {
			for _, f := range src.Files {
				fmt.Fprintf(stdout, "  data: %s %s sha256 %s\n", src.Kind, f.Location, f.SHA256)
			}
		}
		if !v.Pass {
			code = 1
		}
		if r.Partial {
			fmt.Fprintf(stderr, "%s: partial results written\n", r.Dataset)
		}
		// HumanEval 的判定取决于解释器（版本决定递归深度，预加载模块决定 import 能否通过），
		// 把实际使用的解释器写在结果旁边，便于复现。
		if r.Dataset == "humaneval" && pyRuntime != nil {
			js, _ := json.MarshalIndent(pyRuntime, "", "  ")
			if err := os.WriteFile(stem+".python.json", append(js, '\n'), 0o644); err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", r.Dataset, err)
				code = 1
			}
		}
	}
	for _, name := range c.datasets {
		if why, ok := res.Skipped[name]; ok {
			fmt.Fprintf(stderr, "%s: skipped: %s: %v\n", name, why, pyErr)
		}
		if err := res.Errors[name]; err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			code = 1
		}
	}
	if ctx.Err() != nil {
		return 130
	}
	if runErr != nil {
		fmt.Fprintln(stderr, "accuracy:", runErr)
		code = 1
	}
	return code
}

// loadConfig 严格解码 --config 指定的 YAML 并校验（错误带文件名）。
func loadConfig(path string) (accuracy.Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return accuracy.Config{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return accuracy.Config{}, fmt.Errorf("%s: %w", path, err)
	}
	var c accuracy.Config
	// 与矩阵、档位、providers.yaml 同一个严格解码器："path:行:列: 字段路径: 原因"。
	if err := yamlstrict.Unmarshal(path, data, &c); err != nil {
		return c, err
	}
	if err := c.Validate(simpleevals.Registry()); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// checkFlags 在运行之前拒绝越界的参数，错误写明参数名与取值。
func checkFlags(c cliConfig) error {
	switch {
	case c.threads < 1 || c.threads > accuracy.MaxNumThreads:
		return fmt.Errorf("--num-threads %d: must be in [1, %d]", c.threads, accuracy.MaxNumThreads)
	case c.maxTokens < 1 || c.maxTokens > accuracy.MaxMaxTokens:
		return fmt.Errorf("--max-tokens %d: must be in [1, %d]", c.maxTokens, accuracy.MaxMaxTokens)
	case c.temperature < 0 || c.temperature > 2 || c.temperature != c.temperature:
		return fmt.Errorf("--temperature %v: must be in [0, 2]", c.temperature)
	case c.retries < 0 || c.retries > accuracy.MaxRetries:
		return fmt.Errorf("--retries %d: must be in [0, %d]", c.retries, accuracy.MaxRetries)
	case c.examples < 0 || c.examples > accuracy.MaxExamples:
		return fmt.Errorf("--examples %d: must be in [0, %d]", c.examples, accuracy.MaxExamples)
	case c.nRepeats < 0 || c.nRepeats > accuracy.MaxNRepeats:
		return fmt.Errorf("--n-repeats %d: must be in [0, %d]", c.nRepeats, accuracy.MaxNRepeats)
	case c.timeout <= 0:
		return fmt.Errorf("--timeout %v: must be > 0", c.timeout)
	case c.maxErrorRate < 0 || c.maxErrorRate > 1 || c.maxErrorRate != c.maxErrorRate:
		return fmt.Errorf("--max-error-rate %v: must be in [0, 1]", c.maxErrorRate)
	case c.datasetPath != "" && c.datasetURL != "":
		return fmt.Errorf("--dataset-path and --dataset-url: give one (there is no fallback between sources)")
	}
	if c.datasetPath != "" {
		if st, err := os.Stat(c.datasetPath); err != nil || !st.IsDir() {
			return fmt.Errorf("--dataset-path %q: not a directory", c.datasetPath)
		}
	}
	return nil
}

// stageConfig 把命令行参数（与 --config 中的门禁设置）翻译成 accuracy.Config：
// 与 CI 驱动走同一个 RunStage。--config 没有列出的数据集只记录分数（report_only），
// 失败请求比例仍按 --max-error-rate 判定。
func stageConfig(c cliConfig, file *accuracy.Config, emulated bool) accuracy.Config {
	rate := c.maxErrorRate
	// --retries 是明确的次数（默认值已写在旗标上），0 就是不重试；库里 Retries 0 取默认，负数才是不重试。
	retries := c.retries
	if retries == 0 {
		retries = -1
	}
	cfg := accuracy.Config{Debug: c.debug, MaxTokens: c.maxTokens, Temperature: c.temperature, NumThreads: c.threads,
		RequestTimeout: c.timeout, Retries: retries, Timeout: c.totalTimeout, DatasetPath: c.datasetPath, DatasetURL: c.datasetURL,
		CacheDir: c.cacheDir, MaxErrorRate: &rate}
	if emulated && c.datasetPath == "" && c.datasetURL == "" {
		cfg.Dataset = accuracy.BuiltinSample
	}
	for _, name := range c.datasets {
		d := accuracy.DatasetConfig{Name: name, Examples: c.examples, NRepeats: c.nRepeats, ReportOnly: true}
		if file != nil {
			for _, fd := range file.Datasets {
				if fd.Name == name {
					d.Threshold, d.Metric, d.ReportOnly = fd.Threshold, fd.Metric, fd.ReportOnly
					d.MaxErrorRate = fd.MaxErrorRate
					if d.MaxErrorRate == nil && file.MaxErrorRate != nil {
						d.MaxErrorRate = file.MaxErrorRate
					}
				}
			}
		}
		if cfg.Dataset == accuracy.BuiltinSample && d.ReportOnly {
			// 内置样例上分数本来就不设门禁；report_only 与之等价，不必写。
			d.ReportOnly = false
		}
		cfg.Datasets = append(cfg.Datasets, d)
	}
	return cfg
}

// interpreter 决定 HumanEval 的执行命令：能用 unshare -rn（无特权用户命名空间 +
// 独立网络命名空间）时真正断网，否则退回到仅靠 harness 屏蔽 socket 的 python3。
func interpreter(ctx context.Context, py, mode string, stderr io.Writer) []string {
	if mode == "off" {
		return []string{py}
	}
	netns := []string{"unshare", "-rn", py}
	probe := exec.CommandContext(ctx, netns[0], append(netns[1:], "-c", "pass")...)
	if err := probe.Run(); err != nil {
		if mode == "on" {
			fmt.Fprintf(stderr, "humaneval: --humaneval-netns=on but 'unshare -rn' failed (%v); running without a network namespace\n", err)
		}
		return []string{py}
	}
	return netns
}

// Command accuracy 是 simple-evals 的 Go 版命令行，参数与参考命令一致：
//
//	go run ./examples/accuracy --dataset gpqa [mmlu …] --served-model-name NAME \
//	    --url http://127.0.0.1:8000/v1 --max-tokens 128 --temperature 0.6 --num-threads 32 [--debug]
//	    [--examples N] [--n-repeats N] [--dataset-path DIR] [--out DIR] [--config pr.yaml]
//
// 不给 --url 时，在进程内启动模拟器（deploy.NewEmulator）并使用内置的合成样例数据，
// 便于在没有 GPU 的机器上端到端演示。进度写到 stderr；按 Ctrl-C 会停止派发新样本，
// 已完成样本的结果照常写出（JSON/HTML/JSONL），退出码 130。
// 结果文件：{out}/{dataset}_{model}_{时间戳}.json（与 simple-evals 的 JSON 逐字节同格式）、
// .html（逐样本审阅）与 .jsonl（逐样本记录，可离线重评分）。
// 给出 --config 时按其中的阈值判定通过/失败，未达阈值退出码为 1。
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/deploy"
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
	datasets    []string
	model       string
	served      string
	url         string
	apiKey      string
	maxTokens   int
	temperature float64
	threads     int
	debug       bool
	examples    int
	nRepeats    int
	datasetPath string
	datasetURL  string
	cacheDir    string
	out         string
	timeout     time.Duration
	retries     int
	python      string
	sandbox     string
	config      string
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
	ds := fs.String("dataset", "gpqa", "dataset(s): "+strings.Join(accuracy.Datasets(), "|")+"; several may follow --dataset or be comma-separated")
	fs.StringVar(&c.model, "model", "", "model label (informational, like simple-evals --model)")
	fs.StringVar(&c.served, "served-model-name", "", "served model name sent in requests (default: the emulator's model)")
	fs.StringVar(&c.url, "url", "", "OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 (empty: in-process emulator + built-in synthetic data)")
	fs.StringVar(&c.apiKey, "api-key", os.Getenv("OPENAI_API_KEY"), "API key (default $OPENAI_API_KEY); never printed")
	fs.IntVar(&c.maxTokens, "max-tokens", 128, "max_tokens per request (spec: PR 128, daily 16384)")
	fs.Float64Var(&c.temperature, "temperature", 0.6, "sampling temperature")
	fs.IntVar(&c.threads, "num-threads", 32, "concurrent examples")
	fs.BoolVar(&c.debug, "debug", false, "debug sizes: gpqa 5x1, mmlu 1, mgsm 10/lang, drop 10, humaneval 10")
	fs.IntVar(&c.examples, "examples", 0, "number of examples (overrides default, as simple-evals --examples)")
	fs.IntVar(&c.nRepeats, "n-repeats", 0, "gpqa repeats (default: 1 in debug, 10 full)")
	fs.StringVar(&c.datasetPath, "dataset-path", "", "local directory with the reference file names (gpqa_diamond.csv, mmlu.csv, mgsm_*.tsv, drop_v0_*.jsonl.gz, HumanEval.jsonl.gz)")
	fs.StringVar(&c.datasetURL, "dataset-url", "", "download base URL, e.g. "+accuracy.DefaultBaseURL)
	fs.StringVar(&c.cacheDir, "cache-dir", "", "download cache directory (with --dataset-url)")
	fs.StringVar(&c.out, "out", "results", "output directory")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "per-request timeout")
	fs.IntVar(&c.retries, "retries", 3, "retries per request (HTTP 400 is never retried and counts as an empty answer)")
	fs.StringVar(&c.python, "python", "", "python3 interpreter for humaneval (looked up on PATH); empty: the first of python3, /usr/bin/python3, /usr/local/bin/python3 that can import numpy/pandas/scipy like upstream")
	fs.StringVar(&c.sandbox, "humaneval-netns", "auto", "run humaneval code in a new network namespace via 'unshare -rn': auto (if it works here), on, off")
	fs.StringVar(&c.config, "config", "", "optional configs/tests/accuracy/{pr,daily}.yaml: its thresholds gate the exit code")
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
		return c, fmt.Errorf("--dataset: at least one of %v", accuracy.Datasets())
	}
	return c, nil
}

// source 按参数选择数据来源：本地目录 → URL（带缓存）→ 内置样例（仅模拟器模式）。
func source(c cliConfig, emulated bool) (accuracy.Source, error) {
	var ss accuracy.Sources
	if c.datasetPath != "" {
		st, err := os.Stat(c.datasetPath)
		if err != nil || !st.IsDir() {
			return nil, fmt.Errorf("--dataset-path %q: not a directory", c.datasetPath)
		}
		ss = append(ss, accuracy.FSSource{FS: os.DirFS(c.datasetPath), Label: c.datasetPath})
	}
	if c.datasetURL != "" {
		h, err := accuracy.NewHTTPSource(c.datasetURL, c.cacheDir, accuracy.DefaultURLs(), &http.Client{Timeout: 10 * time.Minute})
		if err != nil {
			return nil, err
		}
		ss = append(ss, h)
	}
	if len(ss) == 0 && emulated {
		return accuracy.SampleData(), nil
	}
	return ss, nil
}

// loadConfig 严格解码 --config 指定的 YAML。
func loadConfig(path string) (accuracy.Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return accuracy.Config{}, err
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	var c accuracy.Config
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c.WithDefaults(), nil
}

// run 执行评测并返回退出码：0 成功，1 门禁失败或出错，2 参数错误，130 被中断。
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parse(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "accuracy:", err)
		return 2
	}
	var thresholds map[string]accuracy.DatasetConfig
	if c.config != "" {
		cfg, err := loadConfig(c.config)
		if err != nil {
			fmt.Fprintln(stderr, "accuracy: --config:", err)
			return 2
		}
		thresholds = map[string]accuracy.DatasetConfig{}
		for _, d := range cfg.Datasets {
			thresholds[d.Name] = d
		}
	}
	base, model := c.url, c.served
	if base == "" {
		em, err := deploy.NewEmulator(deploy.EmulatorConfig{Model: c.served})
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
		fmt.Fprintf(stderr, "no --url: evaluating the in-process emulator at %s on built-in synthetic data\n", base)
	}
	if model == "" {
		fmt.Fprintln(stderr, "accuracy: --served-model-name is required with --url")
		return 2
	}
	src, err := source(c, c.url == "")
	if err != nil {
		fmt.Fprintln(stderr, "accuracy:", err)
		return 2
	}
	sampler, err := accuracy.NewChatSampler(accuracy.ChatConfig{BaseURL: base, Model: model, APIKey: c.apiKey,
		MaxTokens: c.maxTokens, Temperature: c.temperature, Timeout: c.timeout, Retries: c.retries})
	if err != nil {
		fmt.Fprintln(stderr, "accuracy:", err)
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
	code := 0
	for _, name := range c.datasets {
		opts := accuracy.EvalOptions{Debug: c.debug, Examples: c.examples, NRepeats: c.nRepeats}
		var pyErr error
		if name == "humaneval" {
			var cands []string
			if c.python != "" {
				cands = []string{c.python}
			}
			rt, err := accuracy.FindPython(ctx, cands...)
			if pyErr = err; err == nil {
				opts.Interpreter = interpreter(ctx, rt.Interpreter[0], c.sandbox, stderr)
				fmt.Fprintf(stderr, "humaneval: python %s (%s)\n", rt.Version, rt.Executable)
				if len(rt.Missing) > 0 {
					fmt.Fprintf(stderr, "humaneval: warning: cannot import %v, which upstream preloads; completions importing them fail here and pass upstream\n", rt.Missing)
				}
			}
		}
		e, err := accuracy.NewEval(name, src, opts)
		if errors.Is(err, accuracy.ErrNoPython) {
			fmt.Fprintf(stderr, "%s: skipped: no usable python3 (humaneval executes generated code with python3): %v\n", name, pyErr)
			continue
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			code = max(code, 1)
			continue
		}
		start := time.Now()
		res, runErr := accuracy.Run(ctx, sampler, e, accuracy.Options{Threads: c.threads, Model: label, Progress: func(done, total int) {
			fmt.Fprintf(stderr, "\r%s: %d/%d examples (%s)", name, done, total, time.Since(start).Round(time.Second))
		}})
		fmt.Fprintln(stderr)
		if runErr != nil && res.Examples == 0 {
			fmt.Fprintf(stderr, "%s: %v\n", name, runErr)
			code = max(code, 1)
			if ctx.Err() != nil {
				return 130
			}
			continue
		}
		stem := filepath.Join(c.out, accuracy.FileStem(name, label, res.Started))
		if err := writeAll(stem, res); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			code = max(code, 1)
		}
		// HumanEval 的判定取决于解释器（版本决定递归深度，预加载模块决定 import 能否通过），
		// 把实际使用的解释器写在结果旁边，便于复现。
		if h, ok := e.(*accuracy.HumanEval); ok {
			if rt, ok := h.Runtime(); ok {
				js, _ := json.MarshalIndent(rt, "", "  ")
				if err := os.WriteFile(stem+".python.json", append(js, '\n'), 0o644); err != nil {
					fmt.Fprintf(stderr, "%s: %v\n", name, err)
					code = max(code, 1)
				}
			}
		}
		verdict := ""
		if d, ok := thresholds[name]; ok {
			v := accuracy.Gate(d, res)
			verdict = map[bool]string{true: " PASS", false: " FAIL"}[v.Pass] + " (" + v.Reason + ")"
			if !v.Pass {
				code = max(code, 1)
			}
		}
		fmt.Fprintf(stdout, "%s: score=%.4f examples=%d/%d errors=%d -> %s.json%s\n", name, res.Score, res.Examples, res.Planned, res.Errors, stem, verdict)
		if runErr != nil {
			fmt.Fprintf(stderr, "%s: %v (partial results written)\n", name, runErr)
			if ctx.Err() != nil {
				return 130
			}
			code = max(code, 1)
		}
	}
	return code
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

// writeAll 写出 .json、.html 与 .jsonl 三个结果文件。
func writeAll(stem string, res accuracy.EvalResult) error {
	for ext, write := range map[string]func(io.Writer) error{
		".json":  func(w io.Writer) error { return accuracy.WriteJSON(w, res) },
		".html":  func(w io.Writer) error { return accuracy.WriteHTML(w, res) },
		".jsonl": func(w io.Writer) error { return accuracy.WriteJSONL(w, res.Singles) },
	} {
		f, err := os.Create(stem + ext)
		if err != nil {
			return err
		}
		werr := write(f)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("%s%s: %w", stem, ext, werr)
		}
	}
	return nil
}

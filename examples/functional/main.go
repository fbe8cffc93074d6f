// Command functional 对任意 OpenAI 兼容服务运行功能用例目录并打印结果表。
//
//	go run ./examples/functional                       # 不给 -base-url：启动内置模拟器并测试它
//	go run ./examples/functional -base-url http://127.0.0.1:9000/v1 -model qwen3-32b \
//	    -features guided_decoding,function_call,reasoning -suites chat_core,streaming -out artifacts/functional
//
// 退出码：0 全部通过、跳过或 unsupported；1 有失败（或被取消）的用例；2 参数或运行错误。
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/functional"
)

// main 解析参数、运行并设置退出码。
func main() {
	code, err := run(context.Background(), os.Args[1:], os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "functional:", err)
	}
	os.Exit(code)
}

// splitList 把逗号分隔的参数拆成去空白的非空项。
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// run 是可测试的主体：解析 args、准备目标、执行并把表格写到 stdout。
func run(ctx context.Context, args []string, stdout io.Writer) (int, error) {
	fs := flag.NewFlagSet("functional", flag.ContinueOnError)
	fs.SetOutput(stdout)
	baseURL := fs.String("base-url", "", "server base URL ending in /v1 (empty: run against the built-in emulator)")
	model := fs.String("model", "", "served model name (required with -base-url)")
	apiKey := fs.String("api-key", "", "API key (never printed); empty: none")
	suites := fs.String("suites", "", "comma-separated suites, case IDs or globs (default: all)")
	features := fs.String("features", "", "comma-separated features: "+joinFeatures()+" (default: all for the emulator, none otherwise)")
	reasoningKeys := fs.String("reasoning-keys", "", "comma-separated reasoning field names tried before the config's keys")
	configDir := fs.String("config", "", "directory with the suites' YAML (e.g. configs/tests/functional); empty: built-in defaults")
	caps := fs.String("capabilities", "", "comma-separated name=supported|unsupported|probe overriding the vLLM defaults (e.g. top_k=probe,penalties=unsupported)")
	out := fs.String("out", "", "directory for report.json and junit.xml")
	timeout := fs.Duration("timeout", 120*time.Second, "per-request timeout including the whole body or stream (default: request.timeout of -config, else 120s)")
	maxBytes := fs.Int64("max-response-bytes", functional.DefaultMaxResponseBytes, "cap on a response body and on one SSE event; a larger answer fails its case as too_large (default: request.max_response_bytes of -config, else 64 MiB)")
	retries := fs.Int("retries", 2, "retries on transport errors, 5xx and 429 (0: none)")
	parallel := fs.Int("parallel", 8, "cases run in parallel, >= 1")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *timeout <= 0 {
		return 2, fmt.Errorf("-timeout %v: must be > 0", *timeout)
	}
	if *maxBytes <= 0 {
		return 2, fmt.Errorf("-max-response-bytes %d: must be > 0", *maxBytes)
	}
	// 0 在库里表示"取默认值 8"；命令行上明确写出的 0 不悄悄改成 8，负数也不留给库去报一个不点名参数的错。
	if *parallel < 1 {
		return 2, fmt.Errorf("-parallel %d: must be >= 1", *parallel)
	}
	if *retries < 0 {
		return 2, fmt.Errorf("-retries %d: must be >= 0 (0: no retries)", *retries)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()

	cfg := functional.DefaultConfig()
	if *configDir != "" {
		var err error
		if cfg, err = functional.LoadConfigDir(*configDir, nil); err != nil {
			return 2, fmt.Errorf("-config: %w", err)
		}
		// 没有在命令行给出的界限取配置目录的 request.yaml。
		if !set["timeout"] {
			*timeout = cfg.Request.Timeout
		}
		if !set["max-response-bytes"] {
			*maxBytes = cfg.Request.MaxResponseBytes
		}
	}
	capabilities, err := functional.ParseCapabilities(*caps)
	if err != nil {
		return 2, fmt.Errorf("-capabilities: %w", err)
	}
	target := functional.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{*baseURL}, Model: *model, APIKey: *apiKey}, ReasoningKeys: splitList(*reasoningKeys), Capabilities: capabilities}
	for _, f := range splitList(*features) {
		target.Features = append(target.Features, functional.Feature(f))
	}
	if *baseURL == "" {
		em, err := emulator.New(emulator.Config{Model: "cibench-emulator", Reasoning: true, EnableEmbeddings: true, EnableRerank: true, APIKey: "sk-emulator"})
		if err != nil {
			return 2, err
		}
		dep, err := em.Deploy(ctx)
		if err != nil {
			return 2, err
		}
		defer func() { _ = dep.Teardown(context.Background()) }()
		ep := dep.Endpoint()
		target.BaseURLs, target.Model, target.APIKey = ep.BaseURLs, ep.Model, ep.APIKey
		if *features == "" {
			target.Features = functional.DefaultFeatures().All()
		}
		fmt.Fprintf(stdout, "no -base-url: testing the built-in emulator at %s\n", ep.BaseURL())
	}
	cat, err := functional.NewCatalog(cfg, nil)
	if err != nil {
		return 2, err
	}
	cases, err := cat.Select(splitList(*suites)...)
	if err != nil {
		return 2, err
	}
	if *retries == 0 {
		*retries = -1
	}
	r, err := functional.NewRunner(target, functional.Options{RequestTimeout: *timeout, MaxResponseBytes: *maxBytes, Retries: *retries, Parallelism: *parallel, Config: &cfg})
	if err != nil {
		return 2, err
	}
	rep, runErr := r.Run(ctx, cases)
	rep.Selection = splitList(*suites)
	if err := functional.WriteTable(stdout, rep); err != nil {
		return 2, err
	}
	fmt.Fprintf(stdout, "%d cases in %v: %d passed, %d failed, %d skipped, %d unsupported, %d cancelled\n", len(rep.Results), rep.Duration.Round(time.Millisecond),
		rep.Count(functional.StatusPass), rep.Count(functional.StatusFail), rep.Count(functional.StatusSkip),
		rep.Count(functional.StatusUnsupported), rep.Count(functional.StatusCancelled))
	if *out != "" {
		if err := writeArtifacts(*out, rep); err != nil {
			return 2, err
		}
	}
	if runErr != nil {
		return 2, runErr
	}
	if rep.Count(functional.StatusFail) > 0 {
		return 1, nil
	}
	return 0, nil
}

// writeArtifacts 把 JSON 与 JUnit 报告写入 dir。
func writeArtifacts(dir string, rep functional.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, write := range map[string]func(io.Writer, functional.Report) error{
		"report.json": functional.WriteJSON, "junit.xml": functional.WriteJUnit,
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		werr := write(f, rep)
		if err := errors.Join(werr, f.Close()); err != nil {
			return err
		}
	}
	return nil
}

// joinFeatures 列出已知能力名，用于帮助文本。
func joinFeatures() string {
	var s []string
	for _, f := range functional.DefaultFeatures().All() {
		s = append(s, string(f))
	}
	return strings.Join(s, ",")
}

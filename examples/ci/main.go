// Command ci 是 cibench 的参考 CI 驱动：一条命令从 configs/ 走到结论。
//
//	go run ./examples/ci                      # 默认矩阵（PR，内置模拟器），约 8 秒
//	go run ./examples/ci -run-type daily      # 每日档位；配置了 PROM_PUSHGATEWAY_URL 时推送指标
//	go run ./examples/ci -scenario k8s_hybrid_qwen3-32b_tp2_w4a8 -run-type daily
//	go run ./examples/ci -base-url http://127.0.0.1:8000/v1 -model qwen3-32b   # 测一个已在运行的服务
//
// 对每个计划中的场景依次 部署 → 功能 → 性能 → 精度 → 归档日志与清理（失败继续），
// 然后计算门禁，把产物写进 artifacts/<run_type>/<run_id>/（CSV/JSON/JUnit/HTML/日志/命令与配置快照）。
// 退出码：0 全部门禁通过；1 有门禁失败；2 参数或配置错误；130 被 Ctrl-C/SIGTERM 中断
// （已测得的部分仍写出，门禁失败优先）。第二次 Ctrl-C 立即退出。
//
// 按阶段拆分的 CI（.github/workflows）：每个 job 用同一 -run-id 运行 -stages functional|perf|accuracy，
// 最后一个 job 合并产物后运行 -summarize 得到门禁与报告（每日运行再加 -push）。
//
// 环境变量：场景 api_key_env（或 -api-key-env）指定的密钥；PROM_PUSHGATEWAY_URL（每日推送）
// 及其凭据 PROM_PUSHGATEWAY_USERNAME/PROM_PUSHGATEWAY_PASSWORD 或 PROM_PUSHGATEWAY_TOKEN；
// PROMETHEUS_URL（从 Prometheus 读基线）；CIBENCH_METRIC_PREFIX（指标前缀）；
// GITHUB_SHA / GITHUB_REF_NAME（提交与分支标签）。
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/vllm-cibench/cibench/deploy/kube"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/metrics"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
)

// main 解析参数、安装信号处理并把退出码交给操作系统。
func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// run 是可测试的 main：返回退出码而不是直接退出。
func run(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("ci", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		configDir = fs.String("config", "configs", "configuration directory (scenarios/, tests/, matrix.yaml, providers.yaml)")
		runType   = fs.String("run-type", "pr", "run type: pr (PR profiles, debug accuracy, no push) or daily (daily profiles, full accuracy, push)")
		scenarios = fs.String("scenario", "", "comma-separated scenarios to run (default: the matrix's default scenarios for the run type)")
		artifacts = fs.String("artifacts", "artifacts", "artifacts root; a run writes <artifacts>/<run_type>/<run_id>/")
		baseURL   = fs.String("base-url", "", "run the stages against this already running server (…/v1) instead of deploying")
		model     = fs.String("model", "", "served model name of -base-url (default: first id of GET /v1/models)")
		keyEnv    = fs.String("api-key-env", "", "name of the environment variable holding the API key (overrides the scenario's api_key_env)")
		runID     = fs.String("run-id", "", "run id (default: UTC start time plus a random suffix)")
		jobTmo    = fs.Duration("job-timeout", 0, "job timeout (default from matrix.yaml: pr 60m, daily 6h)")
		retention = fs.Duration("retention", 0, "delete runs of this run type older than this (default pr 336h, daily 720h; negative disables)")
		pushURL   = fs.String("push-url", getenv("PROM_PUSHGATEWAY_URL"), "Pushgateway URL for daily runs (default $PROM_PUSHGATEWAY_URL)")
		prefix    = fs.String("metric-prefix", getenv("CIBENCH_METRIC_PREFIX"), "metric name prefix (default $CIBENCH_METRIC_PREFIX, empty = none)")
		commit    = fs.String("commit", getenv("GITHUB_SHA"), "commit label (default $GITHUB_SHA)")
		branch    = fs.String("branch", getenv("GITHUB_REF_NAME"), "branch label (default $GITHUB_REF_NAME)")
		stages    = fs.String("stages", "", "comma-separated stages to run: functional,perf,accuracy (default all; a subset run is finished by -summarize)")
		stageTmo  = fs.Duration("stage-timeout", 0, "override the timeout of the selected stages (default from matrix.yaml: functional 30m, perf 60m, accuracy 90m)")
		summarize = fs.Bool("summarize", false, "do not deploy or run stages: evaluate gates over the merged artifacts of -run-id, push (daily) and write the final report")
		baseArt   = fs.String("baseline-artifacts", "", "artifacts root holding completed daily runs used as perf baselines (default -artifacts)")
		baseProm  = fs.String("baseline-prometheus", getenv("PROMETHEUS_URL"), "read perf baselines from this Prometheus instead (default $PROMETHEUS_URL)")
		push      = fs.Bool("push", false, "daily only: require pushing metrics (fail when no Pushgateway URL is configured)")
		plan      = fs.Bool("plan", false, "print the plan (scenarios, stages, profiles, timeouts) and exit without running")
		verbose   = fs.Bool("v", false, "debug logging")
	)
	if err := fs.Parse(args); err != nil {
		return gate.ExitError
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ci: unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		return gate.ExitError
	}
	// 命令行参数之间的约束在这里用参数的名字报告（库的错误说的是 Options 的字段）。
	if *model != "" && *baseURL == "" {
		fmt.Fprintln(stderr, "ci: -model needs -base-url (it names the served model of that server)")
		return gate.ExitError
	}
	rt, err := matrix.ParseRunType(*runType)
	if err != nil {
		fmt.Fprintln(stderr, "ci:", err)
		return gate.ExitError
	}

	red := report.NewSecrets()
	logw := red.Writer(stderr)
	defer logw.Close()
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: level}))

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		// 第一次信号：以"被信号中断"为原因取消运行，让驱动清理并写出部分结果
		// （阶段记为 interrupted，退出码 130）；之后恢复默认行为，第二次 Ctrl-C 立即结束进程。
		select {
		case sig := <-sigs:
			cancel(fmt.Errorf("interrupted by signal %v", sig))
			signal.Stop(sigs)
		case <-done:
		}
	}()

	opts := pipeline.Options{
		Selection: pipeline.Selection{
			Config:       os.DirFS(*configDir),
			ConfigRoot:   filepath.ToSlash(filepath.Clean(*configDir)),
			RunType:      rt,
			Scenarios:    splitList(*scenarios),
			RunID:        *runID,
			BaseURL:      *baseURL,
			Model:        *model,
			APIKeyEnv:    *keyEnv,
			JobTimeout:   *jobTmo,
			Summarize:    *summarize,
			StageTimeout: *stageTmo,
		},
		Outputs: pipeline.Outputs{
			Artifacts:          *artifacts,
			Args:               append([]string{"go", "run", "./examples/ci"}, args...),
			Commit:             *commit,
			Branch:             *branch,
			Retention:          *retention,
			PushURL:            *pushURL,
			RequirePush:        *push,
			BaselineArtifacts:  *baseArt,
			BaselinePrometheus: *baseProm,
			PushOptions:        metrics.Options{Prefix: *prefix},
			Out:                stdout,
		},
		Environment: pipeline.Environment{Getenv: getenv, Logger: logger, Secrets: red},
	}
	// 参考驱动登记全部部署方式：pipeline 的内置方式（external、local、emulator）加上 Kubernetes 模块的
	// k8s-hybrid 与 k8s-pd——一行。pipeline 本身不链接 Kubernetes；不用 k8s 的团队程序不写这一行。
	opts.Modes = pipeline.DefaultModes()
	if err := opts.Modes.Register(kube.Modes()...); err != nil {
		printErr(stderr, red, err)
		return gate.ExitError
	}
	// Pushgateway 凭据：PROM_PUSHGATEWAY_USERNAME/PASSWORD 或 PROM_PUSHGATEWAY_TOKEN。
	opts.PushAuth = metrics.PushConfigFromEnv(getenv, metrics.PushConfig{URL: *pushURL})
	for _, st := range splitList(*stages) {
		opts.Stages = append(opts.Stages, report.Stage(st))
	}
	if *plan {
		if err := pipeline.PrintPlan(stdout, opts); err != nil {
			printErr(stderr, red, err)
			return gate.ExitError
		}
		return gate.ExitOK
	}
	out, err := pipeline.Run(ctx, opts)
	if err != nil {
		printErr(stderr, red, err)
		if errors.Is(err, pipeline.ErrConfig) {
			return gate.ExitError
		}
	}
	return out.ExitCode
}

// printErr 把错误脱敏后写到 stderr，保证只有一个 "ci: " 前缀：驱动自己的错误自带前缀，
// 库的错误（例如 "pipeline: invalid configuration: …"）由这里补上。
func printErr(w io.Writer, red *report.Secrets, err error) {
	msg := red.Redact(err.Error())
	if !strings.HasPrefix(msg, "ci: ") {
		msg = "ci: " + msg
	}
	fmt.Fprintln(w, msg)
}

// splitList 把 "a, b,,c" 拆成 [a b c]。
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

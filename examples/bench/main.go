// Command bench 是 acs-bench 兼容的压测入口：子命令 prof 与 generate dataset，
// 选项沿用 acs-bench 的短名与长名（acs-bench 选项（docs/requirements.md 附录 A.1–A.5）），产物按附录 A.6 命名写到
// -s/--benchmark-save-path。不给 -p/--provider 时，它在进程内启动 emulator.Server
// 并压测它（便于本地试用与性能自检）。不带子命令等同于 prof。
//
//	go run ./examples/bench prof -p providers.yaml -c 1,2,4 -il 128 -ol 128 -n 16,32,64 -ub True -gr 2 -gi 5000 -s out
//	go run ./examples/bench generate dataset -o ds -il 128 -n 64 -t tokenizer.json
//	go run ./examples/bench prof -dt custom -i ds -il 128 -ol 32 -c 4
//	go run ./examples/bench --perf-selftest
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/internal/procgroup"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/tokenizer"
	"github.com/vllm-cibench/cibench/metrics"
)

// main 解析参数并运行；错误打印到 stderr 并退出：被 Ctrl-C/SIGTERM 中断时退出码 130（与
// examples/ci 及 report.ExitInterrupted 的约定相同，CI 据此区分“被取消”与“失败”），其它错误 1。
func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(exitCode(err))
	}
}

// exitInterrupted 是运行被 Ctrl-C/SIGTERM 中断时的退出码（128+SIGINT，项目的统一约定）。
const exitInterrupted = 130

// errInterrupted 标记“运行被信号中断”：dispatch 在收到 SIGINT/SIGTERM 后把命令的错误包上它。
var errInterrupted = errors.New("interrupted")

// exitCode 把 run 的错误映射成退出码：被中断是 130，其它错误是 1。
func exitCode(err error) int {
	if errors.Is(err, errInterrupted) {
		return exitInterrupted
	}
	return 1
}

// gcSettings 描述当前的 GC 目标与软内存上限，供自测输出。
func gcSettings() string {
	pct := debug.SetGCPercent(-1)
	debug.SetGCPercent(pct)
	lim := debug.SetMemoryLimit(-1)
	if lim == math.MaxInt64 {
		return fmt.Sprintf("GOGC=%d, no memory limit", pct)
	}
	return fmt.Sprintf("GOGC=%d, memory limit %d MiB", pct, lim>>20)
}

// run 是可测试的主流程：按子命令分派；--help 打印帮助后正常返回。
func run(args []string, stderr io.Writer) error {
	err := dispatch(args, stderr)
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}

// dispatch 在 SIGINT（Ctrl-C）与 SIGTERM（CI 取消、kubectl delete）时取消 ctx——两者同样让运行
// 写出已完成的部分并标为不完整，而不是让进程直接死掉（--shards 的子进程也不会成为孤儿）；收到过
// 信号时命令的错误带上 errInterrupted（退出码 130）。
func dispatch(args []string, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), procgroup.ShutdownSignals...)
	defer stop()
	err := dispatchCommand(ctx, args, stderr)
	if ctx.Err() != nil && !errors.Is(err, errHelp) {
		if err == nil {
			return errInterrupted
		}
		return fmt.Errorf("%w: %w", errInterrupted, err)
	}
	return err
}

// dispatchCommand 识别子命令：prof、merge、generate dataset；第一个参数是选项（或没有参数）时
// 等同于 prof，保持以前不带子命令的用法。
func dispatchCommand(ctx context.Context, args []string, stderr io.Writer) error {
	switch {
	case len(args) > 0 && args[0] == "prof":
		return runProf(ctx, args[1:], stderr)
	case len(args) > 0 && args[0] == "merge":
		return runMerge(args[1:], stderr)
	case len(args) > 1 && args[0] == "generate" && args[1] == "dataset":
		return runGen(ctx, args[2:], stderr)
	case len(args) > 0 && args[0] == "generate":
		return fmt.Errorf("generate: unknown target %q (want: generate dataset)", strings.Join(args[1:], " "))
	case len(args) > 0 && args[0] == "help":
		return runProf(ctx, []string{"--help"}, stderr)
	case len(args) > 0 && !strings.HasPrefix(args[0], "-"):
		return fmt.Errorf("unknown command %q (want prof, merge or generate dataset; see --help)", args[0])
	}
	return runProf(ctx, args, stderr)
}

// runProf 运行压测（prof 子命令）。
func runProf(ctx context.Context, args []string, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if o.selftest {
		return selftest(ctx, o, stderr)
	}
	if handled, err := runSharded(ctx, o, args, stderr); handled {
		return err
	}
	tgt, teardown, err := target(ctx, o)
	if err != nil {
		return err
	}
	defer teardown()
	if o.tokenizer != "" {
		tok, err := loadTokenizer(o.tokenizer)
		if err != nil {
			return err
		}
		tgt.Tokenizer = tok
	}
	if err := os.MkdirAll(o.savePath, 0o755); err != nil {
		return err
	}
	pd := o.p.WithDefaults()
	var ropts []metrics.RecordOption
	if o.chunkTimes {
		ropts = append(ropts, metrics.WithChunkTimes())
	}
	names := metrics.ArtifactNames{Provider: tgt.Provider, DatasetType: pd.DatasetType, ControlMethod: pd.ControlMethod, Time: time.Now()}
	art, err := metrics.NewArtifactSink(names, func(name string) (io.WriteCloser, error) { return os.Create(filepath.Join(o.savePath, name)) }, ropts...)
	if err != nil {
		return err
	}
	prog := &progressLine{w: stderr, quiet: o.quiet}
	obs := loadgen.Tee(art.Observer(), prog.observer())
	wsink := newWorkloadSink(names.SummaryFile(), pd.MultiTurn.On() || pd.DatasetType == loadgen.DatasetMooncakeTrace || pd.DatasetType == loadgen.DatasetAzureTrace,
		func(name string) (io.WriteCloser, error) { return os.Create(filepath.Join(o.savePath, name)) })
	var sums []loadgen.Summary
	var sweepFiles []string
	var runErr error
	if pd.ControlMethod == loadgen.ControlSweep {
		sums, sweepFiles, runErr = runSweep(ctx, tgt, o, obs, stderr)
	} else {
		if ownLengths(pd.DatasetType) || pd.MultiTurn.On() {
			obs = loadgen.Tee(obs, wsink.Observer()) // 真实负载：另写 workload_/turns_/sessions_ 文件
		}
		sums, runErr = loadgen.Run(ctx, tgt, o.p, obs)
	}
	prog.endLine()
	if err := art.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if err := wsink.Close(); err != nil && runErr == nil {
		runErr = err
	}
	sweepFiles = append(sweepFiles, wsink.files...)
	for _, s := range sums {
		printWorkload(stderr, s)
	}
	for _, s := range sums {
		// 客户端自身的读取滞后（内核接收时间戳可用时）附在行尾，与 TTFT 并列，便于判断
		// 压测机是否已经忙到影响测量。
		lag := ""
		if s.ClientLag.Valid() {
			lag = fmt.Sprintf(", client read lag p50 %.4fs (not in TTFT)", s.ClientLag.P50.Seconds())
		}
		fmt.Fprintf(stderr, "c=%d in=%d out=%d round=%d: %d req, fail %.4f%s, QPS %.2f, TTFT p99 %.4fs, TPOT avg %.4fs, E2E p99 %.4fs, out tok/s %.1f%s%s\n",
			s.Concurrency, s.InputLength, s.OutputLength, s.Round, s.NumPrompts, s.FailRate, failureClasses(s), s.QPS,
			s.TTFT.P99.Seconds(), s.TPOT.Avg.Seconds(), s.E2E.P99.Seconds(), s.OutputTokenThroughput, lag, incomplete(s))
	}
	for _, f := range append(art.Files(), sweepFiles...) {
		fmt.Fprintln(stderr, "wrote", filepath.Join(o.savePath, f))
	}
	if runErr != nil {
		return runErr
	}
	return noSuccess(sums, stderr)
}

// errNoSuccess 表示至少有一组没有任何成功的请求：全部失败的压测不是一次通过的运行。
var errNoSuccess = errors.New("a group had no successful request")

// noSuccess 在 stderr 上点名每个没有成功请求的组（连同失败类别），有则返回 errNoSuccess。
func noSuccess(sums []loadgen.Summary, stderr io.Writer) error {
	bad := 0
	for _, s := range sums {
		if s.Succeeded == 0 && s.NumPrompts > 0 {
			bad++
			fmt.Fprintf(stderr, "bench: c=%d in=%d out=%d round=%d: no successful request (%d of %d failed%s)\n",
				s.Concurrency, s.InputLength, s.OutputLength, s.Round, s.Failed, s.NumPrompts, failureClasses(s))
		}
	}
	if bad > 0 {
		return fmt.Errorf("%w (%d of %d groups)", errNoSuccess, bad, len(sums))
	}
	return nil
}

// failureClasses 把失败类别计数写成 " [timeout=3 too_large=1]"（按类别名排序），没有失败时为空。
func failureClasses(s loadgen.Summary) string {
	if len(s.FailureClasses) == 0 {
		return ""
	}
	names := make([]string, 0, len(s.FailureClasses))
	for k := range s.FailureClasses {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s=%d", k, s.FailureClasses[k])
	}
	return " [" + strings.Join(parts, " ") + "]"
}

// incomplete 标出不完整的组：分片合并缺了分片时点名分片与原因（被杀、连不上、被取消……），
// 否则是被中断的组（只汇总了中断前完成的请求）。
func incomplete(s loadgen.Summary) string {
	switch {
	case len(s.MissingShards) > 0:
		parts := make([]string, len(s.MissingShards))
		for i, l := range s.MissingShards {
			parts[i] = fmt.Sprintf("shard %d %s", l.Shard, l.Reason)
		}
		return " (INCOMPLETE: missing " + strings.Join(parts, ", ") + ")"
	case s.Incomplete:
		return " (INCOMPLETE: interrupted)"
	}
	return ""
}

// loadTokenizer 读取 --tokenizer：tokenizer.json 文件，或包含它的模型目录。
func loadTokenizer(path string) (*tokenizer.BPE, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--tokenizer: %w", err)
	}
	defer f.Close()
	tok, err := tokenizer.Load(f)
	if err != nil {
		return nil, fmt.Errorf("--tokenizer %s: %w", path, err)
	}
	return tok, nil
}

// target 解析 provider，或在没有 provider 时启动进程内模拟器，返回运行用的 Target。
func target(ctx context.Context, o *options) (loadgen.Target, func(), error) {
	p, teardown, err := resolveProvider(ctx, o)
	if err != nil {
		return loadgen.Target{}, nil, err
	}
	return p.Target(), teardown, nil
}

// resolveProvider 返回本次运行解析好的 provider：-p/--provider 文件里选中的一项，或者（没有 -p 时）
// 进程内模拟器，id 与 name 都是 "emulator"。分片的父进程把它原样（含全部 base_url 与 API key）
// 写进 0600 的临时 provider 文件交给子进程，子进程因此与单进程用同一个解析结果（issue 22）。
func resolveProvider(ctx context.Context, o *options) (loadgen.Provider, func(), error) {
	if o.provider == "" {
		em, err := emulator.New(emulator.Config{TTFT: o.emuTTFT, ITL: o.emuITL, TokensPerChunk: o.emuTokensPerChunk, MaxNumSeqs: o.emuMaxNumSeqs, Seed: o.p.Seed})
		if err != nil {
			return loadgen.Provider{}, nil, err
		}
		dep, err := em.Deploy(ctx)
		if err != nil {
			return loadgen.Provider{}, nil, err
		}
		ep := dep.Endpoint()
		key := ep.APIKey
		if key == "" {
			key = "EMPTY"
		}
		return loadgen.Provider{ID: "emulator", Name: "emulator", APIKey: key, BaseURLs: ep.BaseURLs, ModelName: ep.Model, ModelCategory: ep.Model},
			func() { _ = dep.Teardown(context.Background()) }, nil
	}
	f, err := os.Open(o.provider)
	if err != nil {
		return loadgen.Provider{}, nil, fmt.Errorf("-p/--provider: %w", err)
	}
	defer f.Close()
	ps, err := loadgen.ReadProviders(f, o.provider)
	if err != nil {
		return loadgen.Provider{}, nil, err
	}
	p, err := loadgen.FindProvider(ps, o.providerID)
	if err != nil {
		return loadgen.Provider{}, nil, fmt.Errorf("%s: %w", o.provider, err)
	}
	return p, func() {}, nil
}

// progressLine 是产物写入器旁边的第二个观察者：一条 stderr 进度行（库本身从不写 stderr）。
type progressLine struct {
	w      io.Writer
	quiet  bool
	inLine bool
}

// observer 返回进度行的钩子：OnProgress 刷新进度行，OnGroupEnd 在汇总行之前换行。
func (s *progressLine) observer() *loadgen.Observer {
	return &loadgen.Observer{OnProgress: s.progress, OnGroupEnd: func(loadgen.Summary) error { s.endLine(); return nil }}
}

// progress 用回车覆盖同一行。
func (s *progressLine) progress(p loadgen.Progress) {
	if s.quiet {
		return
	}
	fmt.Fprintf(s.w, "\r[group %d c=%d in=%d out=%d round %d] %d/%d done, active %d, %.1f req/s, %d errors   ",
		p.Group.Index+1, p.Group.Concurrency, p.Group.InputLength, p.Group.OutputLength, p.Group.Round,
		p.Done, p.Total, p.Active, p.Rate, p.Failed)
	s.inLine = true
}

// endLine 在进度行之后换行。
func (s *progressLine) endLine() {
	if s.inLine {
		fmt.Fprintln(s.w)
		s.inLine = false
	}
}

// errSelftest 表示性能自检未达标。
var errSelftest = errors.New("performance self-test: target missed")

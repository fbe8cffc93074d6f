// Command bench 是 acs-bench 兼容的压测入口：参数沿用 acs-bench 的长选项名，
// 产物按规格附录 A.6 命名写到 --benchmark-save-path。不给 --provider 时，
// 它在进程内启动 deploy.Emulator 并压测它（便于本地试用与性能自检）。
//
//	go run ./examples/bench --concurrency 1,2,4 --input-length 128 --output-length 128
//	go run ./examples/bench --provider configs/providers.yaml --provider-id ascend-vllm \
//	    --concurrency 1 --concurrency 8 --input-length 2048 --output-length 1024 --use-climb --growth-rate 2
//	go run ./examples/bench --perf-selftest
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/metrics"
)

// intList 是既接受逗号分隔、又接受重复给出的整数列表参数。
type intList []int

// String 实现 flag.Value。
func (l *intList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

// Set 追加一个或多个逗号分隔的值。
func (l *intList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return fmt.Errorf("not an integer: %q", p)
		}
		*l = append(*l, n)
	}
	return nil
}

// strList 是可重复给出的字符串参数（--goodput、--config-option）。
type strList []string

// String 实现 flag.Value。
func (l *strList) String() string { return strings.Join(*l, ",") }

// Set 追加一个值。
func (l *strList) Set(v string) error { *l = append(*l, v); return nil }

// options 是全部命令行参数。
type options struct {
	provider, providerID, savePath, perfProfile string
	selftest                                    bool
	selftestRequests                            int
	selftestOnly                                string
	cpuProfile                                  string
	chunkTimes, quiet                           bool
	emuTTFT, emuITL                             time.Duration
	emuTokensPerChunk                           int
	requestRate                                 string
	timeoutSec, growthIntervalMs                float64
	configOpts                                  strList
	useClimb                                    bool
	temperature, topP                           float64
	topK                                        int
	ignoreEOS, continuousUsage                  bool
	p                                           loadgen.Profile
}

// main 解析参数并运行；错误打印到 stderr 并以 1 退出。
func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
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

// parseFlags 定义并解析参数，返回填好的 options。
func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	p := &o.p
	fs.StringVar(&o.provider, "provider", "", "providers.yaml (acs-bench format); empty = benchmark the in-process emulator")
	fs.StringVar(&o.providerID, "provider-id", "", "provider id in providers.yaml (default: first)")
	fs.StringVar(&p.Backend, "backend", loadgen.BackendChat, "openai-chat or openai")
	fs.Var((*intList)(&p.Concurrency), "concurrency", "concurrency groups (comma list or repeated)")
	fs.Var((*intList)(&p.InputLength), "input-length", "input lengths in tokens (comma list or repeated)")
	fs.Var((*intList)(&p.OutputLength), "output-length", "output lengths in tokens (comma list or repeated)")
	fs.Var((*intList)(&p.NumRequests), "num-requests", "requests per group: one value, or one per concurrency (default concurrency×16)")
	fs.IntVar(&p.Warmup, "warmup", 0, "warm-up requests per group (not counted)")
	fs.IntVar(&p.Epochs, "epochs", 1, "rounds per group")
	fs.BoolVar(&o.useClimb, "use-climb", false, "climb mode")
	fs.IntVar(&p.GrowthRate, "growth-rate", 0, "climb: concurrency added per step")
	fs.Float64Var(&o.growthIntervalMs, "growth-interval", 1000, "climb: step interval in ms")
	fs.Var((*intList)(&p.InitConcurrency), "init-concurrency", "climb: initial concurrency (comma list or repeated)")
	fs.StringVar(&p.ClimbMode, "climb-mode", loadgen.ClimbStatic, "climb: static or linear")
	fs.StringVar(&o.requestRate, "request-rate", "inf", "open-loop arrival rate in req/s (inf = closed loop)")
	fs.Float64Var(&p.Burstiness, "burstiness", 1, "gamma shape of arrivals (1 = Poisson)")
	fs.Float64Var(&o.temperature, "temperature", loadgen.DefaultTemperature, "sampling temperature")
	fs.IntVar(&o.topK, "top-k", loadgen.DefaultTopK, "top-k (-1 = not sent)")
	fs.Float64Var(&o.topP, "top-p", loadgen.DefaultTopP, "top-p")
	fs.Float64Var(&o.timeoutSec, "timeout", 1000, "request timeout in seconds")
	fs.BoolVar(&o.ignoreEOS, "ignore-eos", true, "send ignore_eos")
	fs.BoolVar(&o.continuousUsage, "continuous-usage-stats", true, "ask for usage on every chunk")
	fs.Var((*strList)(&p.Goodput), "goodput", "SLO name:ms, e.g. ttft:50,e2e:1000 (comma list or repeated)")
	fs.Int64Var(&p.Seed, "seed", 0, "random seed")
	fs.Int64Var(&p.Seed, "random-seed", 0, "alias of --seed")
	fs.IntVar(&p.PrefixLength, "prefix-length", 0, "shared prefix tokens (random dataset)")
	fs.Float64Var(&p.RangeRatioAbove, "range-ratio-above", 0, "input length jitter above [0,1]")
	fs.Float64Var(&p.RangeRatioBelow, "range-ratio-below", 0, "input length jitter below [0,1)")
	fs.StringVar(&p.DatasetType, "dataset-type", "", "random (default) or custom (needs --input-path)")
	fs.StringVar(&p.InputPath, "input-path", "", "JSONL prompts for the custom dataset")
	fs.StringVar(&p.Tokenizer, "tokenizer", "", "HuggingFace tokenizer.json (or its directory), used to size prompts when the server has no /tokenize")
	fs.StringVar(&p.ModalType, "modal-type", loadgen.ModalText, "text or image-text")
	fs.StringVar(&p.Timestamps, "timestamps", loadgen.TimestampsKernel, "arrival times: kernel (socket receive timestamps; the client's own read lag is reported apart) or read (when the client read the data)")
	fs.Var(&o.configOpts, "config-option", "KEY:VALUE, e.g. image_width:512 (repeated or comma list)")
	fs.StringVar(&o.savePath, "benchmark-save-path", "./benchmark_output", "artifact directory")
	fs.StringVar(&o.perfProfile, "perf-profile", "", "YAML profile (configs/tests/perf/profiles/pr.yaml); flags given explicitly override it")
	fs.BoolVar(&o.chunkTimes, "chunk-times", false, "write every chunk's arrival time into the per-request CSV")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress line")
	fs.BoolVar(&o.selftest, "perf-selftest", false, "run the performance self-test against the in-process emulator and exit")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) of the whole run to this file")
	fs.StringVar(&o.selftestOnly, "selftest-only", "", "comma list of self-test parts: throughput,client,streams,fidelity,memory (default all)")
	fs.IntVar(&o.selftestRequests, "selftest-requests", 1_000_000, "requests in the self-test's memory run")
	fs.DurationVar(&o.emuTTFT, "emu-ttft", 0, "emulator TTFT when no provider is given")
	fs.DurationVar(&o.emuITL, "emu-itl", 0, "emulator inter-token latency when no provider is given")
	fs.IntVar(&o.emuTokensPerChunk, "emu-tokens-per-chunk", 1, "emulator tokens per SSE chunk")
	// acs-bench 的其余参数：接受以便原命令行可直接使用；不支持的取值报错，其余不影响本实现。
	cb := fs.String("concurrency-backend", loadgen.ConcurrencyBackend, "threading-pool only (goroutines)")
	rm := fs.String("request-mode", "normal", "normal only (pd_dynamic is not implemented)")
	fs.Int("num-process", 1, "accepted for acs-bench compatibility; ignored (one process)")
	fs.Int("prefill-concurrency", 0, "accepted for acs-bench compatibility; ignored")
	fs.Int("decoder-concurrency", 0, "accepted for acs-bench compatibility; ignored")
	fs.Int("chunk-size", 1024, "accepted for acs-bench compatibility; ignored (SSE lines are unbounded)")
	fs.Bool("use-spec-decode", false, "accepted; the accept rate is always read from the server's counters when present")
	fs.Int("num-spec-tokens", -1, "accepted for acs-bench compatibility; ignored")
	fs.Bool("use-mtp-accept-rate", true, "accepted for acs-bench compatibility; ignored")
	fs.Int("num-scheduler-steps", 1, "accepted for acs-bench compatibility; ignored")
	fs.Float64("bucket-interval", 0, "accepted for acs-bench compatibility; ignored (see the progress line)")
	fs.String("revision", "master", "accepted for acs-bench compatibility; ignored")
	fs.Bool("trust-remote-code", false, "accepted for acs-bench compatibility; ignored")
	fs.Bool("profile", false, "service profiler: not implemented (false only)")
	fs.String("profile-level", "Level0", "accepted for acs-bench compatibility; ignored")
	fs.Bool("trace", false, "accepted for acs-bench compatibility; ignored")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *cb != loadgen.ConcurrencyBackend {
		return nil, fmt.Errorf("--concurrency-backend %q: only %s is implemented", *cb, loadgen.ConcurrencyBackend)
	}
	if *rm != "normal" {
		return nil, fmt.Errorf("--request-mode %q: only normal is implemented", *rm)
	}
	if f := fs.Lookup("profile"); f.Value.String() == "true" {
		return nil, fmt.Errorf("--profile: the service profiler is not implemented")
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.perfProfile != "" {
		if err := mergeProfile(o, set); err != nil {
			return nil, err
		}
	}
	return o, o.finish(set)
}

// mergeProfile 读取 YAML 档位，命令行上显式给出的参数优先。
func mergeProfile(o *options, set map[string]bool) error {
	f, err := os.Open(o.perfProfile)
	if err != nil {
		return err
	}
	defer f.Close()
	var fp loadgen.Profile
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(&fp); err != nil {
		return fmt.Errorf("%s: %w", o.perfProfile, err)
	}
	cli := o.p
	o.p = fp
	// 显式命令行参数覆盖档位中的值。
	over := map[string]func(){
		"backend": func() { o.p.Backend = cli.Backend }, "concurrency": func() { o.p.Concurrency = cli.Concurrency },
		"input-length": func() { o.p.InputLength = cli.InputLength }, "output-length": func() { o.p.OutputLength = cli.OutputLength },
		"num-requests": func() { o.p.NumRequests = cli.NumRequests }, "warmup": func() { o.p.Warmup = cli.Warmup },
		"epochs": func() { o.p.Epochs = cli.Epochs }, "growth-rate": func() { o.p.GrowthRate = cli.GrowthRate },
		"init-concurrency": func() { o.p.InitConcurrency = cli.InitConcurrency }, "climb-mode": func() { o.p.ClimbMode = cli.ClimbMode },
		"burstiness": func() { o.p.Burstiness = cli.Burstiness }, "goodput": func() { o.p.Goodput = cli.Goodput },
		"seed": func() { o.p.Seed = cli.Seed }, "random-seed": func() { o.p.Seed = cli.Seed },
		"prefix-length": func() { o.p.PrefixLength = cli.PrefixLength }, "dataset-type": func() { o.p.DatasetType = cli.DatasetType },
		"input-path": func() { o.p.InputPath = cli.InputPath }, "tokenizer": func() { o.p.Tokenizer = cli.Tokenizer },
		"modal-type": func() { o.p.ModalType = cli.ModalType }, "timestamps": func() { o.p.Timestamps = cli.Timestamps },
		"range-ratio-above": func() { o.p.RangeRatioAbove = cli.RangeRatioAbove }, "range-ratio-below": func() { o.p.RangeRatioBelow = cli.RangeRatioBelow },
	}
	for name, fn := range over {
		if set[name] {
			fn()
		}
	}
	return nil
}

// finish 把只在命令行上存在的参数（单位换算、布尔开关）写进 Profile。
func (o *options) finish(set map[string]bool) error {
	p := &o.p
	fromFile := o.perfProfile != ""
	apply := func(name string, fn func()) {
		if !fromFile || set[name] {
			fn()
		}
	}
	apply("use-climb", func() {
		if o.useClimb {
			p.ControlMethod = loadgen.ControlClimb
		} else if set["use-climb"] {
			p.ControlMethod = loadgen.ControlNormal
		}
	})
	apply("growth-interval", func() { p.GrowthInterval = time.Duration(o.growthIntervalMs * float64(time.Millisecond)) })
	apply("timeout", func() { p.Timeout = time.Duration(o.timeoutSec * float64(time.Second)) })
	apply("temperature", func() { p.Temperature = &o.temperature })
	apply("top-k", func() { p.TopK = &o.topK })
	apply("top-p", func() { p.TopP = &o.topP })
	apply("ignore-eos", func() { p.IgnoreEOS = &o.ignoreEOS })
	apply("continuous-usage-stats", func() { p.ContinuousUsageStats = &o.continuousUsage })
	if set["request-rate"] || !fromFile {
		if strings.EqualFold(o.requestRate, "inf") {
			p.RequestRate = 0
		} else {
			r, err := strconv.ParseFloat(o.requestRate, 64)
			if err != nil || r <= 0 {
				return fmt.Errorf("--request-rate: %q is not a positive number or inf", o.requestRate)
			}
			p.RequestRate = r
		}
	}
	for _, item := range o.configOpts {
		for _, kv := range strings.Split(item, ",") {
			k, v, ok := strings.Cut(kv, ":")
			n, err := strconv.Atoi(v)
			if !ok || err != nil {
				return fmt.Errorf("--config-option: %q is not KEY:INT", kv)
			}
			switch k {
			case "image_width":
				p.ImageWidth = n
			case "image_height":
				p.ImageHeight = n
			default:
				return fmt.Errorf("--config-option: unknown key %q (image_width, image_height)", k)
			}
		}
	}
	if p.InputPath != "" {
		f, err := os.Open(p.InputPath)
		if err != nil {
			return err
		}
		defer f.Close()
		prompts, err := loadgen.ReadPrompts(f)
		if err != nil {
			return fmt.Errorf("%s: %w", p.InputPath, err)
		}
		p.Prompts = prompts
		if p.DatasetType == "" {
			p.DatasetType = loadgen.DatasetCustom
		}
	}
	if len(p.InputLength) == 0 && p.DatasetType != loadgen.DatasetCustom {
		p.InputLength = []int{128}
	}
	if len(p.OutputLength) == 0 {
		p.OutputLength = []int{128}
	}
	return nil
}

// run 是可测试的主流程。
func run(args []string, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
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
	tgt, teardown, err := target(ctx, o)
	if err != nil {
		return err
	}
	defer teardown()
	if o.p.Tokenizer != "" {
		tok, err := loadTokenizer(o.p.Tokenizer)
		if err != nil {
			return err
		}
		tgt.Tokenizer = tok
	}
	if err := os.MkdirAll(o.savePath, 0o755); err != nil {
		return err
	}
	pd := o.p.Defaults()
	var ropts []metrics.RecordOption
	if o.chunkTimes {
		ropts = append(ropts, metrics.WithChunkTimes())
	}
	art, err := metrics.NewArtifactSink(metrics.ArtifactNames{
		Provider: tgt.Provider, DatasetType: pd.DatasetType, ControlMethod: pd.ControlMethod, Time: time.Now(),
	}, func(name string) (io.WriteCloser, error) { return os.Create(filepath.Join(o.savePath, name)) }, ropts...)
	if err != nil {
		return err
	}
	sink := &progressSink{ArtifactSink: art, w: stderr, quiet: o.quiet}
	sums, runErr := loadgen.Run(ctx, tgt, o.p, sink)
	sink.endLine()
	if err := art.Close(); err != nil && runErr == nil {
		runErr = err
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
	for _, f := range art.Files() {
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

// incomplete 标出被中断的组（只汇总了中断前完成的请求）。
func incomplete(s loadgen.Summary) string {
	if s.Incomplete {
		return " (INCOMPLETE: interrupted)"
	}
	return ""
}

// loadTokenizer 读取 --tokenizer：tokenizer.json 文件，或包含它的模型目录。
func loadTokenizer(path string) (*loadgen.HFTokenizer, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--tokenizer: %w", err)
	}
	defer f.Close()
	tok, err := loadgen.LoadHFTokenizer(f)
	if err != nil {
		return nil, fmt.Errorf("--tokenizer %s: %w", path, err)
	}
	return tok, nil
}

// target 解析 provider，或在没有 provider 时启动进程内模拟器。
func target(ctx context.Context, o *options) (loadgen.Target, func(), error) {
	if o.provider == "" {
		em, err := deploy.NewEmulator(deploy.EmulatorConfig{TTFT: o.emuTTFT, ITL: o.emuITL, TokensPerChunk: o.emuTokensPerChunk, Seed: o.p.Seed})
		if err != nil {
			return loadgen.Target{}, nil, err
		}
		dep, err := em.Deploy(ctx)
		if err != nil {
			return loadgen.Target{}, nil, err
		}
		ep := dep.Endpoint()
		return loadgen.Target{BaseURLs: ep.BaseURLs, Model: ep.Model, APIKey: ep.APIKey, Provider: "emulator"},
			func() { _ = dep.Teardown(context.Background()) }, nil
	}
	f, err := os.Open(o.provider)
	if err != nil {
		return loadgen.Target{}, nil, err
	}
	defer f.Close()
	ps, err := loadgen.ParseProviders(f)
	if err != nil {
		return loadgen.Target{}, nil, fmt.Errorf("%s: %w", o.provider, err)
	}
	p, err := loadgen.FindProvider(ps, o.providerID)
	if err != nil {
		return loadgen.Target{}, nil, fmt.Errorf("%s: %w", o.provider, err)
	}
	return p.Target(), func() {}, nil
}

// progressSink 在产物接收器之上加一条 stderr 进度行（库本身从不写 stderr）。
type progressSink struct {
	*metrics.ArtifactSink
	w      io.Writer
	quiet  bool
	inLine bool
}

var _ loadgen.ProgressSink = (*progressSink)(nil)

// Progress 用回车覆盖同一行。
func (s *progressSink) Progress(p loadgen.Progress) {
	if s.quiet {
		return
	}
	fmt.Fprintf(s.w, "\r[group %d c=%d in=%d out=%d round %d] %d/%d done, active %d, %.1f req/s, %d errors   ",
		p.Group.Index+1, p.Group.Concurrency, p.Group.InputLength, p.Group.OutputLength, p.Group.Round,
		p.Done, p.Total, p.Active, p.Rate, p.Failed)
	s.inLine = true
}

// EndGroup 结束进度行后写汇总。
func (s *progressSink) EndGroup(sum loadgen.Summary) error {
	s.endLine()
	return s.ArtifactSink.EndGroup(sum)
}

// endLine 在进度行之后换行。
func (s *progressSink) endLine() {
	if s.inLine {
		fmt.Fprintln(s.w)
		s.inLine = false
	}
}

// errSelftest 表示性能自检未达标。
var errSelftest = errors.New("performance self-test: target missed")

package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/runtype"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/metrics"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/accuracyreport"
	"github.com/vllm-cibench/cibench/report/functionalreport"
	"github.com/vllm-cibench/cibench/report/perfreport"
)

// Options 是一次运行的全部输入，分成读起来各自独立的五部分（嵌入的结构体，字段可以直接
// 用 o.RunType、o.Cases 访问）：跑什么（Selection）、结果去哪（Outputs）、团队扩展（Extensions）、
// 进程环境（Environment）与观察者（Hooks）。零值的部分取默认值。
type Options struct {
	// Selection 是跑什么：配置树、运行类型、场景与阶段、改指的服务、时限、门禁阈值。
	Selection
	// Outputs 是结果去哪：产物目录与保留期、基线来源、Pushgateway、给人看的摘要、写进结果的元数据。
	Outputs
	// Extensions 是团队加进参考流水线的东西（用例、能力、评测、部署方式、导出器、门禁、
	// collector、阶段），与内置的走同一条路径。
	Extensions
	// Environment 是流水线与进程环境的接口：环境变量、日志、脱敏器、时钟、下载用的 HTTP 客户端。
	Environment
	// Hooks 是运行过程的观察者（httptrace 式的一组可选回调）。
	Hooks Hooks
}

// Selection 是 Options 中“跑什么”的部分。
type Selection struct {
	// Config 是配置树的根（通常 os.DirFS("configs")），ConfigRoot 是它在错误与
	// 报告中的显示名。
	Config     fs.FS
	ConfigRoot string
	// RunType 是 pr 或 daily。
	RunType matrix.RunType
	// Scenarios 非空时只运行这些场景（-scenario a,b）。
	Scenarios []string
	// Stages 非空时只运行这些阶段（functional、perf、accuracy 与团队阶段；部署与清理总会进行），
	// 供按阶段拆分的 CI job 使用；这样的运行不标记为完成，由 Summarize 汇总。
	Stages []report.Stage
	// Summarize 为 true 时不部署也不运行阶段：重新打开同一 run_id 的产物目录
	// （各阶段 job 的产物已合并进来），计算门禁、推送（每日）并写出最终报告。
	Summarize bool
	// RunID 为空时按开始时间与随机后缀生成。
	RunID string
	// BaseURL 非空时不部署，而是把每个计划中的场景指向这个已在运行的服务；
	// Model 是其 served-model-name（为空时从 /v1/models 取第一个）。
	BaseURL, Model string
	// APIKeyEnv 覆盖场景的 api_key_env（环境变量名）。
	APIKeyEnv string
	// JobTimeout 覆盖矩阵中的作业超时（0 表示取矩阵值）。
	JobTimeout time.Duration
	// StageTimeout 非 0 时覆盖所选阶段的超时。
	StageTimeout time.Duration
	// Thresholds 是性能门禁阈值；零值取 gate.DefaultThresholds。
	Thresholds gate.Thresholds
}

// Outputs 是 Options 中“结果去哪”的部分。
type Outputs struct {
	// Artifacts 是产物根目录；运行写在 Artifacts/<run_type>/<run_id>/ 下。
	Artifacts string
	// Retention 覆盖产物保留期（0 表示 PR 14 天、每日 30 天；负数表示不清理）。
	Retention time.Duration
	// BaselineArtifacts 是读取每日基线的产物根目录；空表示 Artifacts。
	BaselineArtifacts string
	// BaselinePrometheus 非空时从该 Prometheus 读取每日基线（优先于产物目录）。
	BaselinePrometheus string
	// PushURL 是 Pushgateway 地址；每日运行（非按阶段拆分的运行）且非空时推送。
	PushURL string
	// RequirePush 为 true 时每日运行必须推送：没有 PushURL 记为失败。
	RequirePush bool
	// PushAuth 携带 Pushgateway 的凭据与重试/超时等设置（basic auth 或 bearer token，
	// 通常由 metrics.PushConfigFromEnv 从环境变量读出）；其中的 URL 与 Options 会被
	// PushURL、PushOptions 覆盖。凭据会登记到 Secrets，不会出现在日志与产物中。
	PushAuth metrics.PushConfig
	// PushOptions 是指标转换选项（前缀等）。
	PushOptions metrics.Options
	// Out 接收给人看的最终摘要；nil 时丢弃。
	Out io.Writer
	// Args 是命令行快照，写入产物的 command.json。
	Args []string
	// Commit 与 Branch 写入报告与指标标签。
	Commit, Branch string
}

// Extensions 是 Options 中团队加进参考流水线的部分（见 docs/packages.md 的“扩展点”与
// examples/team）。它们的结果与内置的一样进入 summary.json、JUnit、HTML 与门禁。
type Extensions struct {
	// Features 是能力登记表：场景 YAML 的 features、用例的 Requires 只接受其中的名字。
	// 团队在 functional.DefaultFeatures() 上登记厂商能力后传进来；nil 取内置的一组。
	Features *functional.Features
	// Cases 是加进每个场景用例目录的团队功能用例：矩阵的 functional.suites/cases 可以
	// 选中它们（选择为空或 all 时总会运行），结果写进 functional/junit.xml 与功能门禁。
	// 用例的 YAML 参数写在功能配置的 params.<用例 ID> 下，用 T.Params 读取。
	Cases []functional.Case
	// Evals 是精度评测登记表：精度配置 datasets[].name 只接受其中的名字。团队在
	// simpleevals.Registry()（内置的五个）或 accuracy.NewRegistry() 上登记自己的评测后传进来；
	// nil 取 simpleevals.Registry()。
	Evals *accuracy.Registry
	// Modes 是部署方式登记表：场景 YAML 的 mode 只接受其中的名字，方式自己的配置块由登记项
	// 解码、校验（deploy.Mode）。团队在 DefaultModes()（external、local、emulator）上登记自己的
	// Slurm、docker-compose、SGLang 启动器（或 Kubernetes 模块的 kube.Modes()）后传进来；nil 取 DefaultModes()。
	Modes *deploy.Modes
	// PerfExporters 为每个性能档位创建额外的观察者，与内置的 CSV 并列收到全部事件。
	PerfExporters []PerfExporter
	// PerfShapers 在每个性能档位运行前改写它的 loadgen.Profile：团队的到达过程（Profile.Pacer）、
	// 请求来源（Profile.Source：embeddings 端点、自己的请求体）等 YAML 给不出的 Go 接缝。
	PerfShapers []PerfShaper
	// Gates 是团队的门禁，在内置门禁之后计算，与它们一起写出并决定退出码。
	Gates []GateFunc
	// Collectors 为每个场景返回要与内置指标一起推送到 Pushgateway 的 Prometheus collector
	// （仅每日运行推送，与内置指标同一个分组、同一次 PUT）。它们与内置 collector 注册进同一个
	// pedantic 注册表：与内置指标重名或自相矛盾是该场景的 push 阶段错误，不会推送半组指标。
	// 场景的阶段结果是分节：用 functionalreport.Report、perfreport.Rows、accuracyreport.Results
	// 或 Scenario.Decode（团队自己的分节）读出。
	Collectors func(sc report.Scenario) ([]prometheus.Collector, error)
	// TeamStages 是团队加进每个场景的阶段，在内置的精度阶段之后按顺序运行（与内置阶段一样受
	// -stages 选择、on_failure 与超时约束，状态写进 deployment.json 与 summary.json 的 stages）。
	// 阶段用 StageRun.Report 记下自己的分节（report.Run.RecordSection），它的 Renderer 把分节
	// 渲染进 JUnit、HTML 与门禁输入——与内置阶段同一条路径，report 不需要任何修改。
	TeamStages []TeamStage
}

// Environment 是 Options 中流水线与进程环境的接口。
type Environment struct {
	// Getenv 读取环境变量（密钥）；nil 时视为全部未设置。
	Getenv func(string) string
	// Logger 接收进度日志；nil 时丢弃。调用方应让它写进 Secrets.Writer，
	// 驱动会把运行时读到的密钥登记到 Secrets 中。
	Logger *slog.Logger
	// Secrets 是整个运行共用的脱敏器（日志与产物遮住同一组密钥）；nil 时新建一个。
	Secrets *report.Secrets
	// Now 是时钟；nil 时取 time.Now。
	Now func() time.Time
	// AccuracyCacheDir 是精度数据（simple-evals 上游文件）的下载缓存目录；空时取用户
	// 缓存目录下的 cibench/simple-evals。配置中的 cache_dir 优先。
	AccuracyCacheDir string
	// AccuracyDownloadClient 用于精度阶段的数据下载（accuracy.StageOptions.DownloadClient）；
	// nil 取 http.DefaultClient（时限来自配置）。
	AccuracyDownloadClient *http.Client
}

// StageEvent 描述一个场景的一个阶段，交给 Hooks 的回调。
type StageEvent struct {
	// Scenario 是场景名，Stage 是阶段名（内置阶段或团队阶段）。
	Scenario string
	Stage    report.Stage
	// Endpoint 是部署得到的服务（APIKey 可能非空：不要记录它，需要时用 Endpoint.Redacted）。
	Endpoint deploy.Endpoint
	// Status 与 Err 只在 StageDone 中有意义：阶段的结论（ok、failed、interrupted）与失败原因。
	Status report.StageStatus
	Err    error
	// Duration 只在 StageDone 中有意义：阶段的耗时。
	Duration time.Duration
}

// Hooks 是一次运行的观察者：一组可选回调（nil 表示不关心），与 net/http/httptrace.ClientTrace
// 同一个形状。回调在运行场景的 goroutine 中同步调用，应当很快返回；它们看不到也改不了结论。
// 用途：进度界面、把阶段边界打进团队自己的追踪系统、在阶段之间采集服务器状态。
type Hooks struct {
	// StageStart 在每个被选中、启用的阶段开始前调用（跳过的阶段不调用）。ctx 是该阶段的上下文。
	StageStart func(ctx context.Context, ev StageEvent)
	// StageDone 在该阶段结束后调用，ev 带结论与耗时。
	StageDone func(ctx context.Context, ev StageEvent)
}

// Outcome 是一次运行的结论。
type Outcome struct {
	// Dir 是本次运行的产物目录。
	Dir string
	// ExitCode 是进程应使用的退出码（gate.Exit*）。
	ExitCode int
	// Result 是最终写入 summary.json 的结果。
	Result report.Result
	// Interrupted 为 true 表示运行被取消或作业超时，结果不完整。
	Interrupted bool
}

// ErrConfig 包装所有在开始运行之前就能发现的错误（参数、配置、选择的场景）。
var ErrConfig = errors.New("pipeline: invalid configuration")

// teardownTimeout 是清理与日志归档的时限：即使运行被取消也要给清理留出时间。
const teardownTimeout = 5 * time.Minute

// Run 执行一次完整的 CI 运行。配置错误返回包装 ErrConfig 的错误且不创建产物；
// 之后发生的一切（部署失败、阶段失败、超时、取消）都记录在产物中，由
// Outcome.ExitCode 表达，Run 只在产物无法写出时返回错误。
func Run(ctx context.Context, o Options) (Outcome, error) {
	d, err := newDriver(o)
	if err != nil {
		return Outcome{ExitCode: gate.ExitError}, err
	}
	return d.execute(ctx)
}

// driver 持有一次运行的状态。
type driver struct {
	o     Options
	m     *matrix.Matrix
	plans []matrix.ScenarioPlan
	log   *slog.Logger
	now   func() time.Time
	red   *report.Secrets
	run   *report.Run
	keys  map[string]string // 场景名 → API Key（只在内存中）
	runID string
	// parent 是调用方的 ctx：它被取消（Ctrl-C、SIGTERM）即为中断；作业超时只取消
	// 驱动自己派生的 ctx，是失败而不是中断。
	parent context.Context
	tmo    matrix.Timeouts
	abort  bool
	// renderers 是内置阶段（功能、性能、精度）与团队阶段的报告渲染器，按页面顺序。
	renderers []report.Renderer
}

// newDriver 校验参数、加载矩阵并生成计划；此时还不写任何产物。
func newDriver(o Options) (*driver, error) {
	if o.Config == nil {
		return nil, fmt.Errorf("%w: no config directory", ErrConfig)
	}
	if o.RunType == "" {
		o.RunType = runtype.PR
	}
	if _, err := matrix.ParseRunType(string(o.RunType)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if o.Artifacts == "" {
		o.Artifacts = "artifacts"
	}
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Model != "" && o.BaseURL == "" {
		return nil, fmt.Errorf("%w: Selection.Model %q is set but Selection.BaseURL is empty (Model names the served model of the already running server at BaseURL)", ErrConfig, o.Model)
	}
	if err := checkTeamStages(o.TeamStages); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	for _, st := range o.Stages {
		switch {
		case st == report.StageFunctional, st == report.StagePerf, st == report.StageAccuracy:
		case teamStage(o.TeamStages, st) != nil:
		default:
			return nil, fmt.Errorf("%w: unknown stage %q (want functional, perf, accuracy or a team stage)", ErrConfig, st)
		}
	}
	if o.RequirePush && o.RunType != runtype.Daily {
		return nil, fmt.Errorf("%w: Outputs.RequirePush needs run type daily: metrics are pushed only by daily runs (docs/requirements.md §7)", ErrConfig)
	}
	if o.Features == nil {
		o.Features = functional.DefaultFeatures()
	}
	if o.Evals == nil {
		o.Evals = simpleevals.Registry()
	}
	// 矩阵用同一张登记表与同一组团队用例校验：YAML 接受团队登记的名字、能选中团队的套件，
	// 仍拒绝没人登记的名字。
	if o.Modes == nil {
		o.Modes = DefaultModes()
	}
	opts := []matrix.Option{matrix.WithFeatures(o.Features), matrix.WithEvals(o.Evals), matrix.WithModes(o.Modes), matrix.WithCases(o.Cases...)}
	if o.ConfigRoot != "" {
		opts = append(opts, matrix.WithRoot(o.ConfigRoot))
	}
	m, err := matrix.Load(o.Config, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w:\n%w", ErrConfig, err)
	}
	plans, err := m.Plan(o.RunType, o.Scenarios...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if len(plans) == 0 {
		return nil, fmt.Errorf("%w: matrix plans no scenario for run type %s", ErrConfig, o.RunType)
	}
	red := o.Secrets
	if red == nil {
		red = report.NewSecrets()
	}
	d := &driver{o: o, m: m, plans: plans, log: log, now: o.Now, red: red, keys: map[string]string{},
		renderers: []report.Renderer{functionalreport.Renderer(), perfreport.Renderer(), accuracyreport.Renderer()}}
	for _, ts := range o.TeamStages {
		d.renderers = append(d.renderers, ts.Renderer)
	}
	// Pushgateway 凭据在任何请求之前登记：basic auth 实际发送的是 base64("user:pass")，
	// 服务端回显的也是它，只登记口令原文挡不住（AddBasicAuth 两者都登记）。
	d.red.AddBasicAuth(o.PushAuth.Username, o.PushAuth.Password)
	d.red.Add(o.PushAuth.BearerToken)
	d.realAccuracyData()
	if err := d.checkAccuracyTargets(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	for _, p := range plans {
		env := p.Scenario.APIKeyEnv
		if o.APIKeyEnv != "" {
			env = o.APIKeyEnv
		}
		if env == "" {
			continue
		}
		key := o.Getenv(env)
		if key == "" {
			log.Warn("API key environment variable is empty", "scenario", p.Scenario.Name, "env", env)
			continue
		}
		d.keys[p.Scenario.Name] = key
		d.red.Add(key)
	}
	d.tmo = m.Timeouts(o.RunType)
	if o.JobTimeout > 0 {
		d.tmo.Job = o.JobTimeout
	}
	d.runID = o.RunID
	if d.runID == "" {
		d.runID = newRunID(d.now())
	}
	return d, nil
}

// newRunID 生成按时间排序、带随机后缀的运行 ID（同一秒内的两次运行不冲突）。
func newRunID(t time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// run 执行全部场景并写出报告。
func (d *driver) execute(parent context.Context) (Outcome, error) {
	d.parent = parent
	started := d.now()
	rt := d.o.RunType
	if d.o.Retention >= 0 {
		ret := d.o.Retention
		if ret == 0 {
			ret = report.DefaultRetention(rt)
		}
		if pruned, err := report.Prune(d.o.Artifacts, rt, ret, started); err != nil {
			d.log.Warn("pruning old artifacts failed", "err", err)
		} else if len(pruned) > 0 {
			d.log.Info("pruned old runs", "run_type", rt, "runs", pruned)
		}
	}
	// 基线在本次运行开始前读取：本次运行自身（尚未完成）永远不会成为基线。
	baselines := d.baselines()
	run, err := report.NewRun(d.o.Artifacts, rt, report.RunID(d.runID), started, report.WithCommit(d.o.Commit, d.o.Branch), report.WithSecrets(d.red),
		report.WithRenderers(d.renderers...))
	if err != nil {
		return Outcome{ExitCode: gate.ExitError}, fmt.Errorf("pipeline: %w", err)
	}
	d.run = run
	// 驱动日志同时写进产物（经 report 的脱敏写入器），CI 系统的控制台日志过期后仍可查。
	console := d.log
	closeLog := func() {}
	if lw, err := run.Create("driver.log"); err == nil {
		closed := false
		closeLog = func() {
			// 在写清单之前关闭，使 driver.log 出现在 manifest.json 中；之后只写控制台。
			if !closed {
				closed = true
				d.log = console
				_ = lw.Close()
			}
		}
		defer closeLog()
		d.log = slog.New(slog.NewMultiHandler(d.log.Handler(), slog.NewTextHandler(lw, &slog.HandlerOptions{Level: slog.LevelDebug})))
	} else {
		d.log.Warn("cannot create driver.log", "err", err)
	}
	d.log.Info("run started", "run_type", rt, "run_id", d.runID, "dir", run.Dir(), "scenarios", len(d.plans), "job_timeout", d.tmo.Job)
	d.logEstimates()
	if err := run.SnapshotCommand("", report.Command{Args: d.o.Args, Time: started.UTC()}); err != nil {
		d.log.Warn("command snapshot failed", "err", err)
	}
	if err := run.SnapshotConfig(d.o.Config); err != nil {
		d.log.Warn("config snapshot failed", "err", err)
	}

	ctx, cancel := context.WithTimeoutCause(parent, d.tmo.Job, fmt.Errorf("job timeout %v exceeded", d.tmo.Job))
	defer cancel()
	if d.o.Summarize {
		if len(run.Result().Scenarios) == 0 {
			return Outcome{Dir: run.Dir(), ExitCode: gate.ExitError}, fmt.Errorf("%w: -summarize: %s holds no scenario results", ErrConfig, run.Dir())
		}
	} else {
		for i := range d.plans {
			if ctx.Err() != nil || d.abort {
				d.skipScenario(&d.plans[i], ctx)
				continue
			}
			d.runScenario(ctx, &d.plans[i])
		}
	}
	interrupted := ctx.Err() != nil
	if interrupted {
		d.log.Warn("run interrupted", "cause", context.Cause(ctx))
	}

	// 门禁、推送与报告在一个不受取消影响的 ctx 中完成：已测得的内容必须写出。
	fin, finCancel := context.WithTimeout(context.WithoutCancel(parent), teardownTimeout)
	defer finCancel()
	// 门禁阈值：Options.Thresholds 优先，否则取 matrix.yaml 的 defaults.gates（零值字段即需求默认值）。
	th := d.o.Thresholds
	if th == (gate.Thresholds{}) {
		th = d.m.Defaults.Gates
	}
	if err := run.SetThresholds(th); err != nil {
		d.log.Warn("cannot record the gate settings", "err", err)
	}
	gates, err := d.evaluate(fin, run, th, baselines)
	if err != nil {
		d.log.Warn("gate evaluation incomplete", "err", err)
	}
	gates = append(gates, d.extraGates(fin, run.Result())...)
	partialStages := len(d.o.Stages) > 0 && !d.o.Summarize
	if d.o.RunType == runtype.Daily && !interrupted && !partialStages {
		d.push(fin)
		// 推送错误记成了阶段错误，重新计算门禁让它们出现在结论中。
		if gates, err = d.evaluate(fin, run, th, baselines); err != nil {
			d.log.Warn("gate evaluation incomplete", "err", err)
		}
		gates = append(gates, d.extraGates(fin, run.Result())...)
	}
	if d.o.RunType == runtype.Daily && !interrupted && !partialStages {
		d.trend(run)
	}
	out := Outcome{Dir: run.Dir(), Interrupted: interrupted}
	d.log.Info("gates evaluated", "gates", len(gates), "exit_code", gate.ExitCode(gates))
	closeLog()
	if interrupted || partialStages {
		// 被中断（或只执行了部分阶段）的运行用 FinishIncomplete：产物与 Finish 相同，
		// 但 summary.json 保持 complete=false，这样它永远不会被当作每日基线。
		out.ExitCode, err = run.FinishIncomplete(fin, gates, d.now(), interrupted)
	} else {
		out.ExitCode, err = run.Finish(fin, gates, d.now())
	}
	out.Result = run.Result()
	d.summarize(out, gates)
	if err != nil {
		return out, fmt.Errorf("pipeline: write report: %w", err)
	}
	return out, nil
}

// evaluate 用各阶段的渲染器把结果变成门禁输入，交给 gate.Evaluate。某个阶段的分节读不出来
// 时其余阶段照常判定，错误一并返回（记日志）。
func (d *driver) evaluate(ctx context.Context, run *report.Run, th gate.Thresholds, baselines gate.Source) ([]gate.Gate, error) {
	in, inErr := run.Result().GateInputs(d.renderers...)
	gates, err := gate.Evaluate(ctx, in, th, baselines)
	return gates, errors.Join(inErr, err)
}

// baselines 返回门禁的每日基线来源：功能基线（pass → skip 漂移）总是读基线产物目录下
// 已完成的每日运行；性能基线配置了 Prometheus 时从它读取，否则同样来自产物目录。
// 读取失败不会中止运行，门禁会报告无基线。
func (d *driver) baselines() gate.Source {
	root := d.o.BaselineArtifacts
	if root == "" {
		root = d.o.Artifacts
	}
	arts, err := report.ArtifactBaselines(os.DirFS(root), d.renderers...)
	if err != nil {
		d.log.Warn("reading daily baselines failed; perf and functional gates will report no baseline", "dir", root, "err", err)
		arts = gate.Baselines{}
	} else {
		d.log.Info("functional baselines from artifacts", "dir", root, "scenarios", len(arts.Functional))
	}
	if d.o.BaselinePrometheus != "" {
		pb, err := metrics.NewPromBaseline(metrics.PromBaselineConfig{URL: d.o.BaselinePrometheus, Prefix: d.o.PushOptions.Prefix})
		if err == nil {
			d.log.Info("perf baselines from Prometheus", "url", d.red.Redact(d.o.BaselinePrometheus))
			return gate.WithFunctional(pb, arts.Functional)
		}
		d.log.Warn("prometheus baseline config invalid; falling back to artifacts", "err", d.red.Redact(err.Error()))
	}
	d.log.Info("perf baselines from artifacts", "dir", root, "combinations", len(arts.Perf))
	return arts
}

// interrupted 报告运行是否被调用方中断（信号或取消），区别于作业超时。
func (d *driver) interrupted() bool { return d.parent != nil && d.parent.Err() != nil }

// trend 对最近的每日结果做变点检测，把结论写进本次每日报告；失败只记日志（趋势是
// 信息，不是门禁）。
func (d *driver) trend(run *report.Run) {
	root := d.o.BaselineArtifacts
	if root == "" {
		root = d.o.Artifacts
	}
	tr, err := report.DailyTrend(os.DirFS(root), run.Result(), gate.TrendOptions{}, d.renderers...)
	if err != nil {
		d.log.Warn("daily trend failed", "dir", root, "err", err)
		return
	}
	for _, c := range tr.NewChangePoints() {
		d.log.Warn("new change point", "series", c.Series, "first_run", c.RunID, "before", c.Before, "after", c.After, "delta_pct", c.DeltaPct, "p", c.PValue)
	}
	if err := run.SetTrend(tr); err != nil {
		d.log.Warn("recording daily trend failed", "err", err)
	}
}

// skipScenario 把因中断、作业超时或 abort 而未运行的场景登记进报告，使人能看到它被跳过的原因。
// 中断记为 interrupted（不是失败）；作业超时与 abort 是失败。
func (d *driver) skipScenario(p *matrix.ScenarioPlan, ctx context.Context) {
	sc := p.Scenario
	d.addScenario(p)
	why := "not run: the run was aborted after an earlier failure (on_failure: abort)"
	if ctx.Err() != nil {
		why = fmt.Sprintf("not run: %v", context.Cause(ctx))
	}
	if d.interrupted() {
		d.recordInterrupted(sc.Name, report.StageDeploy, errors.New(why))
		d.recordStage(sc.Name, report.StageResult{Stage: report.StageDeploy, Status: report.StageInterrupted, Reason: why})
		return
	}
	d.recordError(sc.Name, report.StageDeploy, errors.New(why))
	d.recordStage(sc.Name, report.StageResult{Stage: report.StageDeploy, Status: report.StageFailed, Reason: why})
}

// recordInterrupted 记录被中断的阶段（写入前由 report 脱敏）；它不是失败。
func (d *driver) recordInterrupted(scenario string, stage report.Stage, err error) {
	d.log.Warn("stage interrupted", "scenario", scenario, "stage", stage, "err", d.red.Redact(err.Error()))
	if rerr := d.run.RecordInterrupted(scenario, stage, err); rerr != nil {
		d.log.Warn("record interruption failed", "scenario", scenario, "err", rerr)
	}
}

// recordStage 把阶段状态写进报告（summary.json 与 <scenario>/stage-<stage>.json）。
func (d *driver) recordStage(scenario string, st report.StageResult) {
	if err := d.run.RecordStage(scenario, st); err != nil {
		d.log.Warn("record stage status failed", "scenario", scenario, "stage", st.Stage, "err", err)
	}
}

// addScenario 在报告中登记场景的身份信息。
func (d *driver) addScenario(p *matrix.ScenarioPlan) {
	sc := p.Scenario
	backend := ""
	if len(p.Perf.Profiles) > 0 {
		backend = string(p.Perf.Profiles[0].Profile.WithDefaults().Backend)
	}
	hw := sc.Hardware
	if hw == "" && sc.Emulated {
		hw = "emulator (CPU)"
	}
	if err := d.run.AddScenario(report.ScenarioInfo{Name: sc.Name, Model: sc.ServedModelName, Quant: string(sc.Quant), Deploy: string(sc.Mode),
		Backend: backend, Hardware: hw}); err != nil {
		d.log.Warn("add scenario to report failed", "scenario", sc.Name, "err", err)
	}
}

// recordError 记录阶段错误（写入前由 report 脱敏）。
func (d *driver) recordError(scenario string, stage report.Stage, err error) {
	d.log.Error("stage failed", "scenario", scenario, "stage", stage, "err", d.red.Redact(err.Error()))
	if rerr := d.run.RecordError(scenario, stage, err); rerr != nil {
		d.log.Warn("record error failed", "scenario", scenario, "err", rerr)
	}
}

// summarize 向 Out 打印给人看的结论：每个场景的阶段结果、失败的门禁与报告位置。
func (d *driver) summarize(out Outcome, gates []gate.Gate) {
	w := d.o.Out
	res := out.Result
	fmt.Fprintf(w, "cibench %s run %s: %d scenario(s)\n", res.RunType, res.RunID, len(res.Scenarios))
	type scenarioCapacity struct {
		name string
		res  []loadgen.SweepResult
	}
	var caps []scenarioCapacity
	for _, sc := range res.Scenarios {
		perf, capacity, rep, acc, err := stageResults(sc)
		if err != nil {
			fmt.Fprintf(w, "  %-40s cannot read results: %v\n", sc.Name, err)
		}
		fn := "-"
		if rep != nil {
			fn = fmt.Sprintf("%d pass / %d fail / %d skip / %d unsupported / %d cancelled", rep.Count(functional.StatusPass), rep.Count(functional.StatusFail),
				rep.Count(functional.StatusSkip), rep.Count(functional.StatusUnsupported), rep.Count(functional.StatusCancelled))
			// 重试后才通过的用例在终端摘要里也点名：不稳定的服务是一项发现。
			var retried []string
			for _, r := range rep.Results {
				if r.PassedAfterRetry() {
					retried = append(retried, r.CaseID)
				}
			}
			if len(retried) > 0 {
				fn += fmt.Sprintf(" (%d passed after retry: %s)", len(retried), strings.Join(retried, ", "))
			}
		}
		fmt.Fprintf(w, "  %-40s functional: %s; perf rows: %d; accuracy: %d; stage errors: %d\n", sc.Name, fn, len(perf), len(acc), len(sc.Errors))
		caps = append(caps, scenarioCapacity{sc.Name, capacity})
	}
	counts := map[gate.Verdict]int{}
	var failed []gate.Gate
	for _, g := range gates {
		counts[g.Verdict]++
		if g.Verdict == gate.VerdictFail {
			failed = append(failed, g)
		}
	}
	verdicts := make([]string, 0, len(counts))
	for v, n := range counts {
		verdicts = append(verdicts, fmt.Sprintf("%s=%d", v, n))
	}
	sort.Strings(verdicts)
	fmt.Fprintf(w, "gates: %s\n", strings.Join(verdicts, " "))
	for _, g := range failed {
		// 一行一个失败门禁，从左往右读（report.Headline）；方法、区间与注意事项在 JUnit 与 HTML 的详情里。
		fmt.Fprintf(w, "  FAIL %s\n", d.red.Redact(report.Headline(g)))
	}
	for _, sc := range caps {
		for _, c := range sc.res {
			fmt.Fprintf(w, "  capacity %s in%d/out%d: %.2f req/s within %s (knee %.2f req/s, %d steps, %s)\n",
				sc.name, c.InputLength, c.OutputLength, c.MaxSustainableRate, c.SLO, c.KneeRate, len(c.Steps), c.Stop)
		}
	}
	for _, c := range res.Trend.NewChangePoints() {
		fmt.Fprintf(w, "  NEW change point %s at %s: %.4g → %.4g (%+.1f%%, p=%.3f)\n", c.Series, c.RunID, c.Before, c.After, c.DeltaPct, c.PValue)
	}
	if out.Interrupted {
		fmt.Fprintf(w, "run INTERRUPTED: partial results kept\n")
	}
	fmt.Fprintf(w, "report: %s/report.html (exit code %d)\n", out.Dir, out.ExitCode)
}

// DefaultModes 返回登记了本模块内置部署方式的新登记表：external、local（deploy.DefaultModes）与
// emulator（emulator.Mode）。每次调用都是独立的值，团队在上面登记自己的方式
// （reg.Register(deploy.Mode{Name: "slurm", …})）后交给 Extensions.Modes；只加载配置的程序交给
// matrix.WithModes。
//
// Kubernetes 的 k8s-hybrid 与 k8s-pd 在自己的模块 github.com/vllm-cibench/cibench/deploy/kube 里，
// 要用时加一行 reg.Register(kube.Modes()...)（参考驱动 examples/ci 就是这样做的）：pipeline 本身不链接
// 任何 k8s.io 包，导入它的团队不会因此改变自己的 client-go 版本。v0.1.0 之前 DefaultModes 也登记了
// 这两种方式（见 CHANGELOG.md）。
func DefaultModes() *deploy.Modes {
	r := deploy.DefaultModes()
	if err := r.Register(emulator.Mode()); err != nil {
		panic(err) // 内置登记项的名字是常量，出错是本模块的缺陷
	}
	return r
}

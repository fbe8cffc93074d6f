package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
)

// PerfRun 描述一次性能档位运行，交给 PerfExporter 创建该档位的观察者。
type PerfRun struct {
	// Scenario 与 Profile 是场景名与档位名。
	Scenario, Profile string
	// Model 是被测服务的模型名（部署得到的端点的 Model，即 served-model-name）：团队的
	// loadgen.Source 把它写进自己的请求体。
	Model string
	// Create 在该档位的产物目录（<scenario>/perf/<profile>/）中创建文件：经 report 脱敏、
	// 原子落盘、进入 manifest.json 与 HTML 报告的场景文件列表，和内置 CSV 一样。
	Create func(name string) (io.WriteCloser, error)
}

// PerfExporter 为一次性能档位运行创建一个额外的观察者（导出器）：驱动用 loadgen.Tee 把它
// 与内置的 CSV、样本采集并列挂上，它收到 loadgen.Observer 的每一种事件（逐请求记录、组开始/
// 结束、进度、时间线、扫描结论；perf.shards 的分片运行经 shard.RunLocal 实时收到各分片的逐请求
// 记录、每组一次组开始、合并后的汇总行与时间线，没有进度）。
// 钩子的并发约定见 loadgen.Observer。返回的 close 在档位结束后调用（可以为 nil），用于刷出
// 文件；返回错误（构造或关闭）记为该场景的 perf 阶段错误。
type PerfExporter func(run PerfRun) (obs *loadgen.Observer, close func() error, err error)

// PerfShaper 在一个性能档位运行之前改写它的 Profile（p 是 YAML 档位连同矩阵覆盖项解码出的副本）：
// 设置 YAML 表达不了的 Go 接缝——loadgen.Profile.Pacer（团队自己的到达过程）、loadgen.Profile.Source
// （embeddings、rerank 端点或团队自己的请求体）——或按场景调整别的字段。run 说明是哪个场景的哪个
// 档位（run.Create 也可用）。改写后的 Profile 照常经 Validate 校验；返回错误记为该场景的 perf 阶段
// 错误，该档位不运行。多个 PerfShaper 按顺序调用。
type PerfShaper func(run PerfRun, p *loadgen.Profile) error

// GateRun 是交给团队门禁的输入：完整的运行结果与运行目录中的产物。
type GateRun struct {
	// Result 是将写进 summary.json 的结果（功能报告、性能行、精度结果、阶段错误）。
	Result report.Result
	// Files 是运行目录（只读）：导出器写出的文件在 <scenario>/perf/<档位>/ 下。门禁读文件
	// 而不是与导出器共享内存，按阶段拆分的 CI（-stages 各跑一个 job、-summarize 汇总）
	// 里也能工作：汇总 job 没有运行导出器，但合并进来的产物里有它们的输出。
	Files fs.FS
}

// GateFunc 是团队的门禁：在内置门禁之后、写出报告之前调用，返回要加进结论的门禁。
// 它们与内置门禁一样写进 summary.json、JUnit 的 gates testsuite 与 HTML，任何一项
// fail 让退出码为 ExitGateFailed。返回错误只记日志，已返回的门禁照常计入。
type GateFunc func(ctx context.Context, run GateRun) ([]gate.Gate, error)

// exporters 为一个档位创建团队的导出器，返回它们合成的一个观察者（没有导出器时为 nil，
// loadgen.Tee 跳过它）与档位结束后调用的关闭函数（返回关闭错误，已加上档位名）。
// 某个导出器构造失败时返回错误，其余导出器照常挂上。
func (d *driver) exporters(scenario, profile, model string, create func(string) (io.WriteCloser, error)) (*loadgen.Observer, func(profile string) []error, error) {
	var obs []*loadgen.Observer
	var closers []func() error
	var errs []error
	for i, mk := range d.o.PerfExporters {
		o, closeFn, err := mk(PerfRun{Scenario: scenario, Profile: profile, Model: model, Create: create})
		if err != nil {
			errs = append(errs, fmt.Errorf("perf exporter %d: %w", i, err))
			continue
		}
		obs = append(obs, o)
		if closeFn != nil {
			closers = append(closers, closeFn)
		}
	}
	closeAll := func(profile string) []error {
		var errs []error
		for _, c := range closers {
			if err := c(); err != nil {
				errs = append(errs, fmt.Errorf("profile %s: close exporter: %w", profile, err))
			}
		}
		return errs
	}
	if len(obs) == 0 {
		return nil, closeAll, errors.Join(errs...)
	}
	return loadgen.Tee(obs...), closeAll, errors.Join(errs...)
}

// extraGates 运行团队的门禁并返回它们的结论；门禁缺名字时补上 "team/gate<i>"，
// 以免一条匿名的门禁在报告里无从查找。
func (d *driver) extraGates(ctx context.Context, res report.Result) []gate.Gate {
	var out []gate.Gate
	for i, g := range d.o.Gates {
		gs, err := g(ctx, GateRun{Result: res, Files: os.DirFS(d.run.Dir())})
		if err != nil {
			d.log.Warn("team gate failed to evaluate", "gate", i, "err", d.red.Redact(err.Error()))
		}
		for _, x := range gs {
			if x.Name == "" {
				x.Name = fmt.Sprintf("team/gate%d", i)
			}
			out = append(out, x)
		}
	}
	return out
}

// TeamStage 是团队加进参考流水线的一个阶段（见 Options.TeamStages）：它对每个部署好的场景
// 运行一次，用 StageRun.Report 记下结果分节，Renderer 把分节渲染进 JUnit、HTML 与门禁。
type TeamStage struct {
	// Name 是阶段名（deployment.json、stage-<name>.json、阶段错误、stage 门禁与 -stages 用它），
	// 必须是安全的单段名字，不能与内置阶段重名。
	Name report.Stage
	// Timeout 是阶段时限；0 取 DefaultTeamStageTimeout。-stage-timeout（Options.StageTimeout）优先。
	Timeout time.Duration
	// Run 执行阶段。返回错误记为阶段失败（on_failure 据此决定是否继续）。
	Run func(ctx context.Context, run StageRun) error
	// Renderer 是阶段结果的报告渲染器；零值表示分节只进 summary.json 与各自的文件。
	Renderer report.Renderer
}

// DefaultTeamStageTimeout 是团队阶段未设时限时的时限。
const DefaultTeamStageTimeout = 10 * time.Minute

// StageRun 是交给 TeamStage.Run 的输入。
type StageRun struct {
	// Scenario 是场景名，Endpoint 是部署好的服务地址（已带 API Key）。
	Scenario string
	Endpoint deploy.Endpoint
	// Report 是本次运行的产物：RecordSection / UpdateSection 记结果分节，Create 写附加文件
	// （都经脱敏、原子落盘、进入 manifest.json 与 HTML 的文件列表）。
	Report *report.Run
}

// checkTeamStages 校验团队阶段：名字是安全的单段名字、不与内置阶段或彼此重名，Run 不为空。
func checkTeamStages(ts []TeamStage) error {
	seen := map[report.Stage]bool{report.StageDeploy: true, report.StageFunctional: true, report.StagePerf: true,
		report.StageAccuracy: true, report.StageLogs: true, "push": true}
	for i, s := range ts {
		if !stageName.MatchString(string(s.Name)) {
			return fmt.Errorf("team stage %d: name %q (want [A-Za-z0-9_][A-Za-z0-9._-]*)", i, s.Name)
		}
		if seen[s.Name] {
			return fmt.Errorf("team stage %d: name %q is already taken", i, s.Name)
		}
		if s.Run == nil {
			return fmt.Errorf("team stage %s: no Run function", s.Name)
		}
		if s.Timeout < 0 {
			return fmt.Errorf("team stage %s: negative timeout %v", s.Name, s.Timeout)
		}
		seen[s.Name] = true
	}
	return nil
}

// stageName 是允许的团队阶段名（与 report 的目录名规则一致）。
var stageName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._\-]{0,63}$`)

// teamStage 返回名为 name 的团队阶段；没有时为 nil。
func teamStage(ts []TeamStage, name report.Stage) *TeamStage {
	for i := range ts {
		if ts[i].Name == name {
			return &ts[i]
		}
	}
	return nil
}

// shape 依次调用团队的 PerfShapers，返回改写后的档位（没有 PerfShaper 时原样返回）。
func (d *driver) shape(scenario, profile, model, dir string, p loadgen.Profile) (loadgen.Profile, error) {
	run := PerfRun{Scenario: scenario, Profile: profile, Model: model, Create: func(name string) (io.WriteCloser, error) { return d.run.Create(path.Join(dir, name)) }}
	for _, f := range d.o.PerfShapers {
		if err := f(run, &p); err != nil {
			return p, fmt.Errorf("profile %s: perf shaper: %w", profile, err)
		}
	}
	return p, nil
}

package matrix

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/field"

	"gopkg.in/yaml.v3"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/runtype"
)

// RunType 是运行类型：PR 流水线或每日任务。它是 runtype.Type 的别名，
// metrics 与 report 用的是同一个类型。
type RunType = runtype.Type

// 运行类型取值（runtype.PR 与 runtype.Daily 的别名）。取值只在 runtype 定义一次，这两个名字
// 为兼容保留。
const (
	// RunPR 用 PR 档性能配置与 debug 精度，不推送指标。
	//
	// Deprecated: 用 runtype.PR（同一个值；运行类型只在 runtype 定义）。
	RunPR = runtype.PR
	// RunDaily 用每日档性能配置与全量精度，并推送指标。
	//
	// Deprecated: 用 runtype.Daily。
	RunDaily = runtype.Daily
)

// ParseRunType 把命令行取值转换为 RunType，非法取值返回点名该值、包装
// runtype.ErrInvalid 的错误。
func ParseRunType(s string) (RunType, error) {
	rt := RunType(s)
	if err := rt.Check(); err != nil {
		return "", fmt.Errorf("matrix: run type %q: %w", s, err)
	}
	return rt, nil
}

// OnFailure 是“失败继续”的边界（需求 §11（docs/requirements.md）：可配置，默认继续）。
type OnFailure string

// 失败策略取值。
const (
	// OnFailureContinue：阶段失败后继续本场景的后续阶段与其余场景（默认）。
	OnFailureContinue OnFailure = "continue"
	// OnFailureNextScenario：阶段失败后跳过本场景剩余阶段，继续下一个场景。
	OnFailureNextScenario OnFailure = "next_scenario"
	// OnFailureAbort：阶段失败后不再运行任何阶段（已部署的仍会清理）。
	OnFailureAbort OnFailure = "abort"
)

// checkEnum 只接受三种失败策略。
func (o OnFailure) checkEnum() error {
	switch o {
	case OnFailureContinue, OnFailureNextScenario, OnFailureAbort:
		return nil
	}
	return errors.New("invalid on_failure (want continue, next_scenario or abort)")
}

// Timeouts 是一种运行类型的作业与各阶段超时（需求 §8（docs/requirements.md））。
type Timeouts struct {
	Job        time.Duration `yaml:"job"`
	Functional time.Duration `yaml:"functional"`
	Perf       time.Duration `yaml:"perf"`
	Accuracy   time.Duration `yaml:"accuracy"`
}

// DefaultTimeouts 返回需求 §8（docs/requirements.md）的默认超时：作业 PR 60 分钟、每日 6 小时；
// 阶段 functional 30、perf 60、accuracy 90 分钟。
func DefaultTimeouts(rt RunType) Timeouts {
	t := Timeouts{Job: 60 * time.Minute, Functional: 30 * time.Minute, Perf: 60 * time.Minute, Accuracy: 90 * time.Minute}
	if rt == runtype.Daily {
		t.Job = 6 * time.Hour
	}
	return t
}

// withDefaults 用 def 填补未设置（为 0）的超时。
func (t Timeouts) withDefaults(def Timeouts) Timeouts {
	if t.Job == 0 {
		t.Job = def.Job
	}
	if t.Functional == 0 {
		t.Functional = def.Functional
	}
	if t.Perf == 0 {
		t.Perf = def.Perf
	}
	if t.Accuracy == 0 {
		t.Accuracy = def.Accuracy
	}
	return t
}

// Defaults 是 matrix.yaml 顶层的全局设置。
type Defaults struct {
	// OnFailure 默认 continue。
	OnFailure OnFailure `yaml:"on_failure"`
	// Timeouts 按运行类型给出超时，未写的项取 DefaultTimeouts。
	Timeouts struct {
		PR    Timeouts `yaml:"pr"`
		Daily Timeouts `yaml:"daily"`
	} `yaml:"timeouts"`
	// Gates 是性能门禁的阈值与统计选项（mode、on_insufficient、confidence……），
	// 零值字段取 gate.DefaultThresholds 与需求行为。
	Gates gate.Thresholds `yaml:"gates"`
}

// FunctionalRun 是矩阵中某场景某运行类型的功能阶段设置。
type FunctionalRun struct {
	// Enabled 缺省为 true。
	Enabled *bool `yaml:"enabled"`
	// Suites 是要运行的套件；空表示全部。
	Suites []string `yaml:"suites"`
	// Cases 是要运行的用例 ID；空表示所选套件的全部用例。
	Cases []string `yaml:"cases"`
	// Timeout 覆盖本阶段的超时。
	Timeout time.Duration `yaml:"timeout"`
}

// PerfRun 是性能阶段设置。
type PerfRun struct {
	// Enabled 缺省为 true。
	Enabled *bool `yaml:"enabled"`
	// Profiles 是 tests/perf/profiles/ 下的档位名（文件名去掉 .yaml）；
	// 空表示与运行类型同名的档位（pr 或 daily）。
	Profiles []string `yaml:"profiles"`
	// Override 按字段覆盖所选档位（loadgen.Profile 的 YAML 键），例如在模拟器上
	// 缩小输出长度，让默认运行在两分钟内完成，而档位文件本身保持需求默认值。
	Override Block `yaml:"override"`
	// Shards 大于 1 时每个档位拆成这么多片并发运行、再无损合并（loadgen/shard 的 shard.RunLocal / MergeGroups，
	// 见 docs/loadgen.md "Sharding"）；每组并发必须至少为分片数。0 或 1 表示不分片。
	Shards int `yaml:"shards"`
	// Timeout 覆盖本阶段的超时。
	Timeout time.Duration `yaml:"timeout"`
}

// AccuracyRun 是精度阶段设置。
type AccuracyRun struct {
	// Enabled 缺省为 true。
	Enabled *bool `yaml:"enabled"`
	// Configs 是 tests/accuracy/ 下的配置名；空表示与运行类型同名的配置。
	Configs []string `yaml:"configs"`
	// Override 按字段覆盖所选配置（accuracy.Config 的 YAML 键）。
	Override Block `yaml:"override"`
	// Timeout 覆盖本阶段的超时。
	Timeout time.Duration `yaml:"timeout"`
}

// RunConfig 是某场景在一种运行类型下的各阶段设置。
type RunConfig struct {
	Functional FunctionalRun `yaml:"functional"`
	Perf       PerfRun       `yaml:"perf"`
	Accuracy   AccuracyRun   `yaml:"accuracy"`
}

// Entry 是 matrix.yaml 中一个场景的条目：场景 → {pr, daily} → 各阶段。
type Entry struct {
	// Scenario 是场景名（scenarios: 下的键）。
	Scenario string `yaml:"-"`
	// Default 为 false 时，只有显式选择（-scenario）才运行该场景；缺省为 true。
	// 需要集群或 GPU 的场景用它避免在没有资源的机器上默认运行。
	Default *bool `yaml:"default"`
	// PR 与 Daily 为 nil 表示该运行类型不运行此场景。
	PR    *RunConfig `yaml:"pr"`
	Daily *RunConfig `yaml:"daily"`
}

// run 返回该条目在运行类型 rt 下的设置。
func (e *Entry) run(rt RunType) *RunConfig {
	if rt == runtype.Daily {
		return e.Daily
	}
	return e.PR
}

// entryList 是保持 matrix.yaml 中书写顺序的场景条目列表。
type entryList []Entry

// decodeNode 按书写顺序解码 "场景名: 条目" 映射，使计划的执行顺序可预期。
func (l *entryList) decodeNode(d *decoder, n *yaml.Node, p string) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, p, scalarValue(n), "want a mapping of scenario name to entry, got %s", describe(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			d.Errorf(k, p, scalarValue(k), "scenario names must be strings")
			continue
		}
		fp := joinPath(p, k.Value)
		if seen[k.Value] {
			d.Errorf(k, fp, "", "duplicate scenario")
			continue
		}
		seen[k.Value] = true
		d.Pos[fp] = k
		e := Entry{Scenario: k.Value}
		d.Decode(v, fp, reflectValue(&e))
		*l = append(*l, e)
	}
}

// matrixFile 是 matrix.yaml 的结构。
type matrixFile struct {
	Defaults  Defaults  `yaml:"defaults"`
	Scenarios entryList `yaml:"scenarios"`
}

// Matrix 是加载并校验过的整个配置树。
type Matrix struct {
	// Defaults 是全局设置（默认值已填好）。
	Defaults Defaults
	// Entries 按 matrix.yaml 中的书写顺序排列。
	Entries []Entry
	// Scenarios 以场景名为键。
	Scenarios map[string]*Scenario
	// Functional 是 functional.DefaultConfig 依文件名顺序叠加 tests/functional/*.yaml 的结果。
	Functional functional.Config
	// Profiles 是 tests/perf/profiles/*.yaml（按文件原样解码，未填默认值），以档位名为键。
	Profiles map[string]loadgen.Profile
	// Accuracy 是 tests/accuracy/*.yaml（未填默认值），以配置名为键。
	Accuracy map[string]accuracy.Config
	// Providers 是 providers.yaml（acs-bench 格式）；文件缺失时为空。
	Providers []loadgen.Provider

	// catalog 是按 Functional 构建的用例目录，用于校验矩阵中的用例子集。
	catalog *functional.Catalog
}

// Option 调整 Load 的行为。
type Option func(*loadOptions)

// loadOptions 汇总 Load 的可选项。
type loadOptions struct {
	root  string
	feats *functional.Features
	evals *accuracy.Registry
	modes *deploy.Modes
	cases []functional.Case
}

// WithFeatures 设置场景 features 列表与套件参数 requires 可以使用的能力登记表
// （默认 functional.DefaultFeatures()）。团队登记了厂商能力时把同一张表交给这里、
// functional.NewCatalog 与 functional.Options.Features：YAML 接受登记过的名字，
// 仍拒绝没人登记的（拼写错误照样在加载时报出文件:行:列）。
func WithFeatures(f *functional.Features) Option {
	return func(o *loadOptions) { o.feats = f }
}

// WithEvals 设置精度配置 datasets[].name 可以使用的评测登记表。没有默认的评测：不给出时
// 登记表是空的，任何 datasets[].name 都是错误（错误写明该传 simpleevals.Registry()）——本包
// 不链接 simple-evals。内置的 gpqa、mmlu……在 simpleevals.Registry() 里；团队登记了自己的评测时
// 把同一张表交给这里与 accuracy.StageOptions.Evals（pipeline 总是这样做）。
func WithEvals(r *accuracy.Registry) Option {
	return func(o *loadOptions) { o.evals = r }
}

// WithModes 设置场景 mode 可以使用的部署方式登记表（默认 deploy.DefaultModes()：external 与
// local）。进程内模拟器与 Kubernetes 方式在 deploy/emulator 与 deploy/kube 里，本包不链接它们：
// 加载含 emulator 或 k8s-* 场景的配置树时把 pipeline.DefaultModes()（全部内置方式）或自己
// 组装的登记表交给这里。每种方式的配置块由它的登记项解码、校验（deploy.Mode.Prepare），错误
// 与其他配置错误一样带文件:行:列；结果在 Scenario.Deploy。
func WithModes(r *deploy.Modes) Option {
	return func(o *loadOptions) { o.modes = r }
}

// WithCases 把调用方自己的功能用例加进校验用的用例目录，使矩阵的 functional.suites /
// functional.cases 可以选中它们（否则选中团队套件的模式会被当作拼写错误拒绝）。
// 用例的 Requires 按 WithFeatures 的登记表校验。
func WithCases(cases ...functional.Case) Option {
	return func(o *loadOptions) { o.cases = append(o.cases, cases...) }
}

// WithRoot 设置错误信息中文件路径的前缀（通常是配置目录，如 "configs"），
// 让 "configs/scenarios/x.yaml:3:7" 这样的位置可以直接在仓库里打开。
func WithRoot(dir string) Option {
	return func(o *loadOptions) { o.root = dir }
}

// 配置树中的固定路径。
const (
	matrixPath      = "matrix.yaml"
	scenarioDir     = "scenarios"
	functionalDir   = "tests/functional"
	profileDir      = "tests/perf/profiles"
	accuracyDir     = "tests/accuracy"
	providersPath   = "providers.yaml"
	yamlExt         = ".yaml"
	scenarioKeyPath = "scenarios"
)

// Load 读取 fsys（配置目录的根）中的整个配置树并严格校验：未知字段、类型
// 不符、非法枚举值、缺失的引用（矩阵指向不存在的场景/档位/配置）都是错误。
// 返回的错误合并了所有发现的问题，每条都是带文件、行列、字段路径的 *field.Error（errors.Is(err, ErrConfig) 成立）。
func Load(fsys fs.FS, opts ...Option) (*Matrix, error) {
	var o loadOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.feats == nil {
		o.feats = functional.DefaultFeatures()
	}
	if o.evals == nil {
		o.evals = accuracy.NewRegistry()
	}
	if o.modes == nil {
		o.modes = deploy.DefaultModes()
	}
	l := &loader{fsys: fsys, root: o.root, feats: o.feats, evals: o.evals, modes: o.modes, cases: o.cases}
	m := l.load()
	if len(l.errs) > 0 {
		sort.SliceStable(l.errs, func(i, j int) bool {
			a, b := l.errs[i], l.errs[j]
			if a.File != b.File {
				return a.File < b.File
			}
			if a.Line != b.Line {
				return a.Line < b.Line
			}
			return a.Col < b.Col
		})
		return nil, joinErrors(l.errs)
	}
	return m, nil
}

// loader 在一次 Load 中累计错误。
type loader struct {
	fsys fs.FS
	root string
	// feats、evals 与 cases 来自 WithFeatures、WithEvals 与 WithCases（已填好默认值）。
	feats *functional.Features
	evals *accuracy.Registry
	modes *deploy.Modes
	cases []functional.Case
	errs  []*field.Error
	// profiles 是每个合法档位文件的字段位置，override 叠加后的错误据此定位。
	profiles map[string]located
}

// display 返回文件在错误信息中的显示路径。
func (l *loader) display(name string) string {
	if l.root == "" {
		return name
	}
	return path.Join(l.root, name)
}

// parse 读取并解析一个文件，返回其解码器与根节点；读取失败记为错误。
func (l *loader) parse(name string, required bool) (*decoder, *yaml.Node, bool) {
	d := newDecoder(l.display(name), l.feats)
	data, err := fs.ReadFile(l.fsys, name)
	if err != nil {
		if required || !errors.Is(err, fs.ErrNotExist) {
			l.errs = append(l.errs, &field.Error{File: d.File, Reason: "cannot read: " + describeReadErr(err)})
		}
		return d, nil, false
	}
	root := d.ParseDocument(data)
	if root != nil {
		d.Pos[""] = root
	}
	return d, root, true
}

// describeReadErr 把文件读取错误转成不带内部路径重复的描述。
func describeReadErr(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "file does not exist"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// glob 列出目录 dir 下的 *.yaml 文件（按名字排序），目录不存在时返回空。
func (l *loader) glob(dir string) []string {
	names, err := fs.Glob(l.fsys, dir+"/*"+yamlExt)
	if err != nil {
		l.errs = append(l.errs, &field.Error{File: l.display(dir), Reason: err.Error()})
		return nil
	}
	sort.Strings(names)
	return names
}

// blocks 把目录下每个 YAML 文件作为一个 Block 读入，以文件名为键。
func (l *loader) blocks(dir string) map[string]Block {
	out := map[string]Block{}
	for _, name := range l.glob(dir) {
		d, root, _ := l.parse(name, true)
		var b Block
		if root != nil {
			b.decodeNode(d, root, "")
		} else if len(d.Errs) == 0 {
			d.Errorf(nil, "", "", "file is empty")
		}
		l.errs = append(l.errs, d.Errs...)
		out[strings.TrimSuffix(path.Base(name), yamlExt)] = b
	}
	return out
}

// load 依次读取场景、测试配置与矩阵，最后检查矩阵中的引用。
func (l *loader) load() *Matrix {
	m := &Matrix{Scenarios: map[string]*Scenario{}}
	names := l.glob(scenarioDir)
	if len(names) == 0 {
		l.errs = append(l.errs, &field.Error{File: l.display(scenarioDir), Reason: "no scenario files (*.yaml) found"})
	}
	for _, name := range names {
		d, root, _ := l.parse(name, true)
		s := &Scenario{File: d.File}
		unknownMode := checkModeFirst(d, root, l.modes)
		blocks := splitBlocks(root, l.modes.Blocks())
		if root != nil {
			d.Decode(root, "", reflectValue(s))
		} else if len(d.Errs) == 0 {
			d.Errorf(nil, "", "", "file is empty")
		}
		if len(d.Errs) == 0 || unknownMode && len(d.Errs) == 1 {
			decoded := len(d.Errs)
			validateScenario(d, l.modes, s, strings.TrimSuffix(path.Base(name), yamlExt))
			if decoded == 0 {
				prepareDeploy(d, l.modes, l.fsys, s, blocks)
			}
		}
		l.errs = append(l.errs, d.Errs...)
		m.Scenarios[strings.TrimSuffix(path.Base(name), yamlExt)] = s
	}
	l.loadFunctional(m)
	m.Profiles = map[string]loadgen.Profile{}
	l.profiles = map[string]located{}
	for name, b := range l.blocks(profileDir) {
		var p loadgen.Profile
		// 空文件已报告为 "file is empty"，不再对零值重复报校验错误。
		if !b.IsZero() {
			if at, ok := l.decodeLocated(b, &p); ok {
				if err := p.WithDefaults().Validate(); err != nil {
					l.profileErr(err, "", at)
				} else {
					// 只有自身合法的档位才参与 override 叠加后的校验，同一个错误不报两次。
					l.profiles[name] = at
				}
			}
		}
		m.Profiles[name] = p
	}
	m.Accuracy = map[string]accuracy.Config{}
	for name, b := range l.blocks(accuracyDir) {
		var c accuracy.Config
		if !b.IsZero() {
			if d, ok := l.decodeBlockAt(b, &c); ok {
				l.accuracyErr(d, b.path, c.Validate(l.evals))
			}
		}
		m.Accuracy[name] = c
	}
	if data, err := fs.ReadFile(l.fsys, providersPath); err == nil {
		ps, err := loadgen.ReadProviders(bytes.NewReader(data), l.display(providersPath))
		if err != nil {
			// 解码与语义错误都是带文件:行:列与字段路径的 *field.Error，原样收下；其余（读取失败）记在文件上。
			if fes := field.All(err); len(fes) > 0 {
				l.errs = append(l.errs, fes...)
			} else {
				l.errs = append(l.errs, &field.Error{File: l.display(providersPath), Reason: err.Error()})
			}
		}
		m.Providers = ps
	} else if !errors.Is(err, fs.ErrNotExist) {
		l.errs = append(l.errs, &field.Error{File: l.display(providersPath), Reason: "cannot read: " + describeReadErr(err)})
	}

	d, root, _ := l.parse(matrixPath, true)
	var mf matrixFile
	if root != nil {
		d.Decode(root, "", reflectValue(&mf))
	} else if len(d.Errs) == 0 && len(l.errs) == 0 {
		d.Errorf(nil, "", "", "file is empty")
	}
	if len(d.Errs) == 0 {
		l.checkMatrix(d, m, &mf)
	}
	l.errs = append(l.errs, d.Errs...)
	m.Defaults = mf.Defaults
	m.Entries = mf.Scenarios
	return m
}

// checkMatrix 填默认值并检查矩阵引用的场景、档位、精度配置都存在。
func (l *loader) checkMatrix(d *decoder, m *Matrix, mf *matrixFile) {
	if mf.Defaults.OnFailure == "" {
		mf.Defaults.OnFailure = OnFailureContinue
	}
	mf.Defaults.Timeouts.PR = mf.Defaults.Timeouts.PR.withDefaults(DefaultTimeouts(runtype.PR))
	mf.Defaults.Timeouts.Daily = mf.Defaults.Timeouts.Daily.withDefaults(DefaultTimeouts(runtype.Daily))
	if err := mf.Defaults.Gates.Validate(); err != nil {
		for _, fe := range field.All(err) {
			d.ErrAt(joinPath("defaults.gates", fe.Field), fe.Value, "%s", fe.Reason)
		}
	}
	if len(mf.Scenarios) == 0 {
		d.ErrAt(scenarioKeyPath, "", "matrix must list at least one scenario")
	}
	for _, e := range mf.Scenarios {
		ep := joinPath(scenarioKeyPath, e.Scenario)
		if _, ok := m.Scenarios[e.Scenario]; !ok {
			d.ErrAt(ep, e.Scenario, "unknown scenario (no %s)", l.display(path.Join(scenarioDir, e.Scenario+yamlExt)))
		}
		if e.PR == nil && e.Daily == nil {
			d.ErrAt(ep, "", "entry has neither pr nor daily; the scenario would never run")
		}
		for _, rt := range []RunType{runtype.PR, runtype.Daily} {
			rc := e.run(rt)
			if rc == nil {
				continue
			}
			rp := joinPath(ep, string(rt))
			if l.checkNames(d, joinPath(rp, "perf.profiles"), rc.Perf.Profiles, enabled(rc.Perf.Enabled), rt, keys(m.Profiles), profileDir) {
				for _, p := range pickNames(rc.Perf.Profiles, rt) {
					base, valid := l.profiles[p]
					prof := m.Profiles[p]
					if ov := rc.Perf.Override; valid && !ov.IsZero() {
						if at, ok := l.decodeLocated(ov, &prof); ok {
							l.profileErr(prof.WithDefaults().Validate(), fmt.Sprintf("profile %q with override (%s): ", p, at.pos()), at, base)
						}
					}
				}
			}
			if l.checkNames(d, joinPath(rp, "accuracy.configs"), rc.Accuracy.Configs, enabled(rc.Accuracy.Enabled), rt, keys(m.Accuracy), accuracyDir) {
				for _, c := range pickNames(rc.Accuracy.Configs, rt) {
					cfg := m.Accuracy[c]
					if ov := rc.Accuracy.Override; !ov.IsZero() {
						if od, ok := l.decodeBlockAt(ov, &cfg); ok {
							if err := cfg.Validate(l.evals); err != nil {
								l.accuracyOverrideErr(d, od, ov.path, c, err)
							}
						}
					}
				}
			}
			checkUnique(d, joinPath(rp, "functional.suites"), rc.Functional.Suites)
			checkUnique(d, joinPath(rp, "functional.cases"), rc.Functional.Cases)
			l.checkCases(d, m, joinPath(rp, "functional.suites"), rc.Functional.Suites)
			l.checkCases(d, m, joinPath(rp, "functional.cases"), rc.Functional.Cases)
		}
	}
}

// checkNames 检查引用的名字在 have 中存在；列表为空且阶段开启时，
// 隐含引用与运行类型同名的文件，它也必须存在。全部存在时返回 true。
func (l *loader) checkNames(d *decoder, p string, names []string, on bool, rt RunType, have map[string]bool, dir string) bool {
	if !on {
		return false
	}
	if len(names) == 0 {
		if !have[string(rt)] {
			// 每个阶段默认开启：团队的最小配置树不用某个阶段时要明说（enabled: false），错误写明这条出路。
			stage := p[:strings.LastIndex(p, ".")]
			d.ErrAt(p, "", "no %s listed and the default %q does not exist (%s); stages are enabled by default: add the file, or set %s: {enabled: false}",
				p[strings.LastIndex(p, ".")+1:], rt, l.display(path.Join(dir, string(rt)+yamlExt)), stage[strings.LastIndex(stage, ".")+1:])
			return false
		}
		return true
	}
	checkUnique(d, p, names)
	ok := true
	for i, n := range names {
		if !have[n] {
			d.ErrAt(fmt.Sprintf("%s[%d]", p, i), n, "unknown name: no %s", l.display(path.Join(dir, n+yamlExt)))
			ok = false
		}
	}
	return ok
}

// checkCases 检查功能子集中的每一项（套件名、用例 ID 或通配）都能选中用例，
// 防止拼写错误让子集悄悄变空。
func (l *loader) checkCases(d *decoder, m *Matrix, p string, patterns []string) {
	if m.catalog == nil {
		return
	}
	for i, pat := range patterns {
		if pat == "" {
			continue
		}
		if _, err := m.catalog.Select(pat); err != nil {
			d.ErrAt(fmt.Sprintf("%s[%d]", p, i), pat, "selects no functional case (suites: %s)", strings.Join(m.catalog.Suites(), ", "))
		}
	}
}

// loadFunctional 从默认参数出发按文件名顺序叠加 tests/functional/*.yaml，
// 再用 functional 包自己的校验检查结果，并构建用例目录。
func (l *loader) loadFunctional(m *Matrix) {
	m.Functional = functional.DefaultConfig()
	blocks := l.blocks(functionalDir)
	names := make([]string, 0, len(blocks))
	for n := range blocks {
		names = append(names, n)
	}
	sort.Strings(names)
	ok := true
	decs := make([]*decoder, 0, len(names))
	for _, n := range names {
		d, dok := l.decodeBlockAt(blocks[n], &m.Functional)
		ok = dok && ok
		decs = append(decs, d)
	}
	if !ok {
		return
	}
	if err := m.Functional.Validate(l.feats); err != nil {
		l.functionalErr(decs, err)
		return
	}
	// 目录不带参数：声明了 Case.Params 的用例由下面的 checkCaseParams 按 YAML 节点校验（错误定位到
	// 键与字段的行列）；否则 Catalog.Add 会以块的开头为位置再报一次同一个错误。
	noParams := m.Functional
	noParams.Params = nil
	cat, err := functional.NewCatalog(noParams, l.feats)
	if err != nil {
		l.errs = append(l.errs, &field.Error{File: l.display(functionalDir), Reason: err.Error()})
		return
	}
	for _, c := range l.cases {
		if err := cat.Add(c); err != nil {
			l.errs = append(l.errs, &field.Error{File: l.display(functionalDir), Reason: "matrix.WithCases: " + err.Error()})
		}
	}
	m.catalog = cat
	l.checkCaseParams(decs, cat, m.Functional.Params)
}

// checkCaseParams 在加载时校验团队用例的参数（功能配置的 params.<用例 ID>）：键必须是目录里的
// 用例 ID（拼错的 ID 否则永远没人读）；声明了 Case.Params 的用例，它的块按与整个配置树相同的
// 严格规则解码进参数结构体的副本，错误带文件:行:列。键所在的文件取最后一个写了它的文件
// （多个功能配置文件按文件名顺序叠加，后写的覆盖先写的）。
func (l *loader) checkCaseParams(decs []*decoder, cat *functional.Catalog, params map[string]functional.CaseParams) {
	ids := make([]string, 0, len(params))
	for id := range params {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		p := joinPath("params", id)
		var d *decoder
		var k, n *yaml.Node
		for _, dd := range decs {
			if kk, nn := mappingEntry(dd.Pos["params"], id); nn != nil {
				d, k, n = dd, kk, nn
			}
		}
		if d == nil {
			continue
		}
		before := len(d.Errs)
		c, ok := cat.Case(id)
		switch {
		case !ok:
			// 定位到写错的 ID 本身（键所在的行），不是块里的第一个键。
			d.Errorf(k, p, id, "no functional case has this ID (params are keyed by case ID, e.g. acme/lora_swap)")
		case c.Params != nil:
			pv := reflect.ValueOf(c.Params)
			if pv.Kind() != reflect.Pointer || pv.IsNil() {
				d.Errorf(n, p, "", "case %s: Case.Params must be a non-nil pointer to a struct", id)
				break
			}
			v := reflect.New(pv.Elem().Type())
			v.Elem().Set(pv.Elem())
			d.Decode(n, p, v.Elem())
		}
		// 这些都是用例参数的错误：errors.Is(err, functional.ErrParams) 对加载错误同样成立。
		for _, e := range d.Errs[before:] {
			e.Cause = functional.ErrParams
		}
		l.errs = append(l.errs, d.Errs[before:]...)
	}
}

// mappingEntry 返回映射节点 m 中键 key 的键节点与值节点；m 为 nil、不是映射或没有该键时都为 nil。
func mappingEntry(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// functionalErr 把套件参数的校验错误记在取值所在文件的那一行（后叠加的文件优先，与取值的
// 来源一致）；取值来自默认值时只记目录。
func (l *loader) functionalErr(decs []*decoder, err error) {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var fe *field.Error
		located := false
		if errors.As(e, &fe) {
			for i := len(decs) - 1; i >= 0 && !located; i-- {
				if _, ok := decs[i].Pos[fe.Field]; ok {
					n := len(decs[i].Errs)
					decs[i].ErrAt(fe.Field, fe.Value, "%s", fe.Reason)
					l.errs = append(l.errs, decs[i].Errs[n:]...)
					located = true
				}
			}
		}
		if !located {
			l.errs = append(l.errs, &field.Error{File: l.display(functionalDir), Reason: e.Error()})
		}
	}
}

// decodeBlockAt 与 decodeBlock 相同，但返回解码器，使之后的语义校验能按字段路径定位行列。
func (l *loader) decodeBlockAt(b Block, out any) (*decoder, bool) {
	d := newDecoder(b.file, l.feats)
	if b.node == nil {
		return d, true
	}
	d.Decode(b.node, b.path, reflectValue(out))
	l.errs = append(l.errs, d.Errs...)
	return d, len(d.Errs) == 0
}

// accuracyErr 把精度配置的校验错误记在它指向的字段所在的行（*field.Error 的 Field
// 是相对配置根的路径），而不是文件开头。
func (l *loader) accuracyErr(d *decoder, base string, err error) {
	if err == nil {
		return
	}
	var ce *field.Error
	if errors.As(err, &ce) {
		n := len(d.Errs)
		d.ErrAt(joinPath(base, ce.Field), ce.Value, "%s", ce.Reason)
		l.errs = append(l.errs, d.Errs[n:]...)
		return
	}
	d.ErrAt(base, "", "%v", err)
	l.errs = append(l.errs, d.Errs[len(d.Errs)-1])
}

// accuracyOverrideErr 定位叠加 override 之后的校验错误：字段（或它所在的列表项）写在
// override 里时指向 override 中的那一行，否则指向 override 本身并说明是与哪份配置叠加后出的错。
func (l *loader) accuracyOverrideErr(md, od *decoder, base, cfgName string, err error) {
	var ce *field.Error
	if errors.As(err, &ce) {
		for p := joinPath(base, ce.Field); len(p) > len(base); {
			if _, ok := od.Pos[p]; ok {
				l.accuracyErr(od, base, err)
				return
			}
			i := strings.LastIndexAny(p, ".[")
			if i < 0 {
				break
			}
			p = p[:i]
		}
		md.ErrAt(base, ce.Value, "accuracy config %q with override: %s: %s", cfgName, ce.Field, ce.Reason)
		return
	}
	md.ErrAt(base, "", "accuracy config %q with override: %v", cfgName, err)
}

// keys 返回映射的键集合。
func keys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// pickNames 返回引用的名字；为空时是与运行类型同名的那一个。
func pickNames(names []string, rt RunType) []string {
	if len(names) == 0 {
		return []string{string(rt)}
	}
	return names
}

// checkUnique 拒绝列表中的重复项（重复运行同一档位多半是笔误）。
func checkUnique(d *decoder, p string, names []string) {
	seen := map[string]bool{}
	for i, n := range names {
		if n == "" {
			d.ErrAt(fmt.Sprintf("%s[%d]", p, i), "", "empty name")
		}
		if seen[n] {
			d.ErrAt(fmt.Sprintf("%s[%d]", p, i), n, "duplicate name")
		}
		seen[n] = true
	}
}

// enabled 把缺省为 true 的开关解引用。
func enabled(b *bool) bool { return b == nil || *b }

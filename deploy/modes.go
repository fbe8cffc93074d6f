package deploy

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/internal/regname"
)

// ErrUnknownMode 表示场景的 mode 没有在所用的 *Modes 中登记（多半是拼写错误，或团队忘了
// 登记自己的部署方式）。
var ErrUnknownMode = errors.New("deploy: unknown mode")

// ErrDuplicateMode 表示同一个部署方式名被登记了两次。
var ErrDuplicateMode = errors.New("deploy: duplicate mode")

// ErrModeName 表示部署方式名或配置块名的写法不合法。
var ErrModeName = errors.New("deploy: invalid mode name")

// Block 是场景 YAML 中一种部署方式自己的配置块（键由 Mode.Block 给出，例如 emulator:、
// local:、k8s:、团队的 slurm:）。matrix.Block 实现它：Decode 用与整个配置树相同的严格规则
// （未知字段、重复键、类型不符都报错），错误是带“文件:行:列 字段路径”的 *field.Error；
// Errorf 为块内某个字段路径（如 "nodes[0].gpus"）造一条同样定位的错误，供语义校验使用。
// 块缺省时 IsZero 为 true，Decode 不修改 out，Errorf 定位到场景文件本身。
type Block interface {
	// IsZero 报告场景 YAML 中是否没有这一块。
	IsZero() bool
	// Decode 把这一块严格地解码进 out（非 nil 指针）。
	Decode(out any) error
	// Errorf 返回定位到块内字段路径 path（相对于块，空表示块本身）的错误，value 是被拒绝的原值。
	Errorf(path, value, format string, args ...any) error
}

// Scenario 是部署方式从场景文件中读到的公共字段（各方式自己的块之外的那些），由 matrix 在
// 加载时填好默认值后交给 Mode.Prepare。
type Scenario struct {
	// Name 是场景名（文件名）。
	Name string
	// ServedModelName 是服务对外的模型名；Model 是模型的内部名称或路径。
	ServedModelName, Model string
	// BaseURL 是场景的 base_url（external、local 等方式使用；可为空）。
	BaseURL string
	// HealthPath、HealthTimeout、HealthInterval 是场景的就绪检查参数（已填默认值）。
	HealthPath     string
	HealthTimeout  time.Duration
	HealthInterval time.Duration
	// Config 是配置树的根（清单等相对路径相对于它）；Load 没有给出时为 nil，此时不检查文件。
	Config fs.FS
}

// Inherited 是一个部署方式配置块里与场景公共字段重叠的几个字段，交给 Scenario.Inherit 按共同的
// 规则处理。不相关的字段留零值（nil 指针表示块里没有这个字段）。
type Inherited struct {
	// ModelField 是块里模型名字段的路径（如 "served_model_name"、"model"），错误定位到它。
	ModelField string
	// Model 指向块里的模型名：空时取场景的 served_model_name；写了不同的值是错误——两个名字
	// 不一致时请求会打到不存在的模型上（404）。nil 表示块里没有模型名。
	Model *string
	// APIKey 是块里写的密钥（字段路径 api_key）：非空是错误，密钥只经 api_key_env 指向的环境变量提供。
	APIKey string
	// HealthPath 与 StartupTimeout 非 nil 时，空值取场景的 health.path 与 health.timeout。
	HealthPath     *string
	StartupTimeout *time.Duration
}

// Inherit 是各部署方式配置块共同的规则（内置的 local、emulator、k8s-* 与团队的方式都可以用），
// 规则见 Inherited 的各字段。错误经 b.Errorf 定位到块内的字段。
func (sc Scenario) Inherit(b Block, f Inherited) error {
	if f.Model != nil {
		switch {
		case *f.Model == "":
			*f.Model = sc.ServedModelName
		case *f.Model != sc.ServedModelName:
			return b.Errorf(f.ModelField, *f.Model, "must equal served_model_name %q (or be omitted)", sc.ServedModelName)
		}
	}
	if f.APIKey != "" {
		return b.Errorf("api_key", "", "API keys must not be written in YAML; set api_key_env to the name of an environment variable instead")
	}
	if f.HealthPath != nil && *f.HealthPath == "" {
		*f.HealthPath = sc.HealthPath
	}
	if f.StartupTimeout != nil && *f.StartupTimeout == 0 {
		*f.StartupTimeout = sc.HealthTimeout
	}
	return nil
}

// Runtime 是运行时才知道、加载配置时还不知道的东西，由流水线在部署前交给 Plan.Deployer。
type Runtime struct {
	// APIKey 是从 api_key_env 指向的环境变量读到的密钥（可为空）；部署器只能把它交给服务，
	// 不得写进日志或产物。
	APIKey string
	// LogDir 是这个场景的日志归档目录（部署失败时也应把能拿到的日志写在这里）。
	LogDir string
	// Logger 接收部署进度；nil 时丢弃。
	Logger *slog.Logger
}

// Plan 是一种部署方式对一个场景解码、校验之后的结果。它在加载配置时产生（因此错误能在
// 任何东西运行之前带着文件与行号报告），在运行时才构造真正的部署器。
type Plan interface {
	// Deployer 用运行时信息构造部署器；它不启动任何东西（启动是 Deployer.Deploy 的事）。
	Deployer(rt Runtime) (Deployer, error)
}

// PlanFunc 让普通函数满足 Plan。
type PlanFunc func(rt Runtime) (Deployer, error)

// Deployer 调用 f(rt)。
func (f PlanFunc) Deployer(rt Runtime) (Deployer, error) { return f(rt) }

// Mode 是一种部署方式的登记项：场景 YAML 的 mode: 取 Name，方式自己的参数写在键为 Block 的
// 配置块里，Prepare 解码并校验它。内置的 emulator、external、local、k8s-hybrid、k8s-pd 都是
// 普通的登记项（见 DefaultModes、emulator.Mode、kube.Modes），团队的 Slurm、docker-compose、
// SGLang 启动器与它们走同一条路。
type Mode struct {
	// Name 是 mode: 的取值，规则见 Modes.Register。
	Name string
	// Block 是该方式配置块在场景 YAML 中的键；空表示与 Name 相同。几种方式可以共用一个块
	// （k8s-hybrid 与 k8s-pd 都读 k8s:）。块名不得与场景的公共字段（name、mode、model……）相同。
	Block string
	// Prepare 在加载配置时调用：b 是场景里的配置块（可能缺省，见 Block.IsZero），sc 是场景的
	// 公共字段。它校验一切能在运行前发现的错误（用 b.Errorf 定位到行），返回运行时构造部署器的 Plan。
	// 必须给出。
	Prepare func(b Block, sc Scenario) (Plan, error)
	// Emulated 为 true 表示这种方式拉起的是进程内模拟器而不是真实服务（只有这时精度阶段才接受
	// 合成的 builtin-sample 数据）。团队的方式通常为 false。
	Emulated bool
}

// BlockName 返回该方式配置块在场景 YAML 中的键（Block，空时为 Name）。
func (m Mode) BlockName() string {
	if m.Block != "" {
		return m.Block
	}
	return m.Name
}

// Modes 是部署方式登记表：场景 YAML 的 mode 只接受登记过的名字。它是普通的值，由调用方
// 构造并传给 matrix.WithModes 与流水线（pipeline.Extensions.Modes）；本包没有全局登记表，
// 也没有 init() 登记。非并发安全：登记完成后再交给使用者，之后只读。
type Modes struct {
	order []string
	set   map[string]Mode
}

// NewModes 返回一张空登记表，并依次登记 modes（规则见 Register）。
func NewModes(modes ...Mode) (*Modes, error) {
	r := &Modes{set: map[string]Mode{}}
	if err := r.Register(modes...); err != nil {
		return nil, err
	}
	return r, nil
}

// DefaultModes 返回登记了本包两种内置方式（external 与 local）的新登记表；每次调用都是独立的值。
// 进程内模拟器（emulator.Mode）与 Kubernetes（kube.Modes）在各自的包里，需要时由调用方登记——
// 这样只部署外部服务的程序不必链接模拟器或 client-go。
func DefaultModes() *Modes {
	r, err := NewModes(ExternalMode(), LocalMode())
	if err != nil {
		panic(err) // 内置登记项的名字是常量，出错是本包的缺陷
	}
	return r
}

// reservedBlocks 是场景文件的公共字段：部署方式的配置块不能与它们重名。
var reservedBlocks = []string{"name", "description", "mode", "model", "served_model_name", "quant", "features",
	"capabilities", "base_url", "api_key_env", "health", "reasoning", "pd"}

// Register 登记部署方式。名字与块名必须以小写字母开头，只含小写字母、数字、'_'、'-' 与 '.'，
// 不超过 64 个字符；块名不得是场景的公共字段。写法不合法返回包装 ErrModeName 的错误，已登记返回
// 包装 ErrDuplicateMode 的错误，Prepare 为 nil 返回包装 ErrModeName 的错误；出错时之前的登记项
// 已登记、之后的没有。
func (r *Modes) Register(modes ...Mode) error {
	if r.set == nil {
		r.set = map[string]Mode{}
	}
	for _, m := range modes {
		if err := regname.Check(m.Name); err != nil {
			return fmt.Errorf("%w: %v", ErrModeName, err)
		}
		if err := regname.Check(m.BlockName()); err != nil {
			return fmt.Errorf("%w: mode %q: block: %v", ErrModeName, m.Name, err)
		}
		if slices.Contains(reservedBlocks, m.BlockName()) {
			return fmt.Errorf("%w: mode %q: block %q is a common scenario field", ErrModeName, m.Name, m.BlockName())
		}
		if m.Prepare == nil {
			return fmt.Errorf("%w: mode %q: Prepare is nil", ErrModeName, m.Name)
		}
		if _, dup := r.set[m.Name]; dup {
			return fmt.Errorf("%w: %q is already registered", ErrDuplicateMode, m.Name)
		}
		r.set[m.Name] = m
		r.order = append(r.order, m.Name)
	}
	return nil
}

// Lookup 返回名为 name 的登记项。nil 登记表什么也不认识。
func (r *Modes) Lookup(name string) (Mode, bool) {
	if r == nil {
		return Mode{}, false
	}
	m, ok := r.set[name]
	return m, ok
}

// Names 返回已登记的方式名（新切片），顺序即登记顺序，也是错误信息中的顺序。
func (r *Modes) Names() []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.order)
}

// Blocks 返回全部登记项的配置块键（去重，按登记顺序）：matrix 用它决定场景文件里哪些顶层键
// 属于部署方式。
func (r *Modes) Blocks() []string {
	var out []string
	for _, n := range r.Names() {
		if b := r.set[n].BlockName(); !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// Check 在 name 未登记时返回包装 ErrUnknownMode、列出全部已登记取值的错误。
func (r *Modes) Check(name string) error {
	if _, ok := r.Lookup(name); ok {
		return nil
	}
	return fmt.Errorf("%w %q (registered: %s)", ErrUnknownMode, name, strings.Join(r.Names(), ", "))
}

// ExternalMode 返回内置的 external 方式：针对一个已在运行的服务（场景的 base_url）只做健康等待。
// 它没有自己的配置块。
func ExternalMode() Mode {
	return Mode{Name: "external", Block: "external", Prepare: func(b Block, sc Scenario) (Plan, error) {
		if sc.BaseURL == "" {
			return nil, b.Errorf("", "", "base_url is required for mode external")
		}
		cfg := ExternalConfig{BaseURL: sc.BaseURL, Model: sc.ServedModelName, HealthPath: sc.HealthPath, StartupTimeout: sc.HealthTimeout}
		if !b.IsZero() {
			// 可选的 external: 块只有 metrics（base_url 是网关或代理时，后面的实例）。
			var blk struct {
				Metrics []MetricsInstance `yaml:"metrics"`
			}
			if err := b.Decode(&blk); err != nil {
				return nil, err
			}
			for i, m := range blk.Metrics {
				if err := (endpoint.Endpoint{BaseURLs: []string{"http://h"}, Model: "m", Metrics: []MetricsInstance{m}}).Validate(); err != nil {
					_, why, _ := strings.Cut(err.Error(), "invalid endpoint: ")
					field, value := fmt.Sprintf("metrics[%d].url", i), m.URL
					if strings.Contains(err.Error(), ".role") {
						field, value = fmt.Sprintf("metrics[%d].role", i), m.Role
					}
					return nil, b.Errorf(field, redactURL(value), "%s", why)
				}
			}
			cfg.Metrics = blk.Metrics
		}
		if _, err := NewExternal(cfg); err != nil {
			return nil, b.Errorf("", sc.BaseURL, "%v", err)
		}
		return &ExternalPlan{Config: cfg}, nil
	}}
}

// LocalMode 返回内置的 local 方式：在本机以独立进程组启动命令（如 vllm serve）。配置块 local:
// 是 LocalConfig；served_model_name、health_path、startup_timeout 缺省取场景的对应值，
// 写了与场景不同的模型名是错误（请求会打到不存在的模型上）。
func LocalMode() Mode {
	return Mode{Name: "local", Prepare: func(b Block, sc Scenario) (Plan, error) {
		if b.IsZero() {
			return nil, b.Errorf("", "", "local block (command to start the server) is required for mode local")
		}
		if sc.BaseURL == "" {
			return nil, b.Errorf("", "", "base_url is required for mode local (where the started server listens)")
		}
		var cfg LocalConfig
		if err := b.Decode(&cfg); err != nil {
			return nil, err
		}
		if err := sc.Inherit(b, Inherited{ModelField: "served_model_name", Model: &cfg.Model, APIKey: cfg.APIKey, HealthPath: &cfg.HealthPath, StartupTimeout: &cfg.StartupTimeout}); err != nil {
			return nil, err
		}
		if _, err := NewLocal(cfg); err != nil {
			return nil, b.Errorf("", "", "%v", err)
		}
		return &LocalPlan{Config: cfg}, nil
	}}
}

// ExternalPlan 是 external 方式对一个场景校验后的结果（不含密钥）。
type ExternalPlan struct {
	// Config 是由场景的 base_url、served_model_name 与 health 得到的配置。
	Config ExternalConfig
}

// Deployer 填上运行时的密钥后构造 External。
func (p *ExternalPlan) Deployer(rt Runtime) (Deployer, error) {
	c := p.Config
	c.APIKey = rt.APIKey
	return NewExternal(c)
}

// LocalPlan 是 local 方式对一个场景校验后的结果（不含密钥）。
type LocalPlan struct {
	// Config 是场景的 local: 块（模型名、健康路径与启动超时已缺省为场景的值）。
	Config LocalConfig
}

// Deployer 填上运行时的密钥后构造 Local（此时不启动进程）。
func (p *LocalPlan) Deployer(rt Runtime) (Deployer, error) {
	c := p.Config
	c.APIKey = rt.APIKey
	return NewLocal(c)
}

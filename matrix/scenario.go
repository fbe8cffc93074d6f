package matrix

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/vllm-cibench/cibench/field"
	"io/fs"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/internal/regname"
)

// Quant 是模型的量化类型，作为指标标签 quant 使用。它是开放的：任何以小写字母开头、只含
// [a-z0-9_.-] 的名字都可以（w8a8、w4a8、w4a16、fp8、int4-awq……），与能力名同一条规则——
// 它进入指标标签与报告，大小写或空白之差不该造出两条序列。下面是常见取值。
type Quant string

// 常见的量化类型取值；缺省为 QuantNone。
const (
	QuantW8A8 Quant = "w8a8"
	QuantW4A8 Quant = "w4a8"
	QuantNone Quant = "none"
)

// checkEnum 按登记名规则检查量化类型的写法。
func (q Quant) checkEnum() error {
	if err := regname.Check(string(q)); err != nil {
		return fmt.Errorf("invalid quant: %v", err)
	}
	return nil
}

// Feature 是场景声明的服务能力，决定哪些功能套件有意义、哪些期望应当成立。
// 它是 functional.Feature 的别名：矩阵校验与功能测试用同一个枚举，拼写错误在
// 加载时即被点名（见 functional.Feature.Check）。
type Feature = functional.Feature

// 已知能力取值（functional 包同名常量的别名）。
const (
	FeatureGuidedDecoding    = functional.FeatureGuidedDecoding
	FeatureStructuredOutputs = functional.FeatureStructuredOutputs
	FeatureFunctionCall      = functional.FeatureFunctionCall
	FeatureReasoning         = functional.FeatureReasoning
	FeatureMultimodal        = functional.FeatureMultimodal
	FeatureSpecDecode        = functional.FeatureSpecDecode
	FeaturePrefixCaching     = functional.FeaturePrefixCaching
	FeatureEmbeddings        = functional.FeatureEmbeddings
	FeatureRerank            = functional.FeatureRerank
)

// Health 描述部署就绪的判断方式：轮询 GET path 直到 200 或超时。
type Health struct {
	// Path 默认 "/health"（相对于服务根，而非 /v1）。
	Path string `yaml:"path"`
	// Timeout 默认 20 分钟（需求 §2（docs/requirements.md）：最大启动等待 20 分钟）。
	Timeout time.Duration `yaml:"timeout"`
	// Interval 是两次轮询的间隔，默认 2 秒。
	Interval time.Duration `yaml:"interval"`
}

// 健康检查默认值。
const (
	DefaultHealthPath     = "/health"
	DefaultHealthTimeout  = 20 * time.Minute
	DefaultHealthInterval = 2 * time.Second
)

// Reasoning 描述推理模型的断言方式（需求 §4（docs/requirements.md））。
type Reasoning struct {
	// ExpectReasoning 为 true 时功能用例要求响应带推理轨迹。
	ExpectReasoning bool `yaml:"expect_reasoning"`
	// AllowEmpty 为 true 时推理字段存在但为空也算通过。
	AllowEmpty bool `yaml:"allow_empty"`
	// Keys 是推理轨迹可能所在的字段名，按顺序查找；
	// 默认 ["reasoning_content", "reasoning"]。
	Keys []string `yaml:"reasoning_keys"`
}

// DefaultReasoningKeys 返回未配置时查找推理轨迹的字段名（每次一个新切片，调用方可以随意修改）。
func DefaultReasoningKeys() []string { return []string{"reasoning_content", "reasoning"} }

// PD 记录 PD 分离部署各角色的参数（需求 §2（docs/requirements.md）的 gen_pd_deploy 参数）。
// 部署 YAML 由用户提供，这里的参数用于报告与标签，便于对比不同配比。
type PD struct {
	// Prefill 与 Decode 是各自的实例数，例如 2P1D 为 2 与 1。
	Prefill int `yaml:"prefill"`
	Decode  int `yaml:"decode"`
	// SchedulerParams、PrefillParams、DecodeParams、CommonParams 是各角色的启动参数原文。
	SchedulerParams string `yaml:"scheduler_params"`
	PrefillParams   string `yaml:"prefill_params"`
	DecodeParams    string `yaml:"decode_params"`
	CommonParams    string `yaml:"common_params"`
}

// Mode 是场景部署方式（Scenario.Mode）的旧类型名，为兼容保留。
//
// Deprecated: 部署方式是登记表 deploy.Modes 里的名字，Scenario.Mode 是 string。v0.1.0 起 Mode 是
// string 的别名（以前是独立的字符串类型），引用它与下面常量的代码照常编译；请直接用字符串或
// deploy.ExternalMode().Name、emulator.ModeName、kube.ModeHybrid、kube.ModePD。
type Mode = string

// 内置部署方式的旧常量名，为兼容保留。
//
// Deprecated: 用登记项自己的名字：deploy.ExternalMode().Name、deploy.LocalMode().Name、
// emulator.ModeName、kube.ModeHybrid、kube.ModePD（后两者在模块 github.com/vllm-cibench/cibench/deploy/kube）。
const (
	// ModeEmulator 是进程内模拟器方式的名字。
	//
	// Deprecated: 用 emulator.ModeName。
	ModeEmulator Mode = "emulator"
	// ModeExternal 是已在运行的服务方式的名字。
	//
	// Deprecated: 用 deploy.ExternalMode().Name。
	ModeExternal Mode = "external"
	// ModeLocal 是本机进程组方式的名字。
	//
	// Deprecated: 用 deploy.LocalMode().Name。
	ModeLocal Mode = "local"
	// ModeK8sHybrid 是 Kubernetes 混合部署方式的名字。
	//
	// Deprecated: 用 kube.ModeHybrid（模块 github.com/vllm-cibench/cibench/deploy/kube）。
	ModeK8sHybrid Mode = "k8s-hybrid"
	// ModeK8sPD 是 Kubernetes PD 分离部署方式的名字。
	//
	// Deprecated: 用 kube.ModePD（模块 github.com/vllm-cibench/cibench/deploy/kube）。
	ModeK8sPD Mode = "k8s-pd"
)

// Scenario 是 configs/scenarios/<name>.yaml 中的一个被测场景。
//
// 密钥从不写在 YAML 里：APIKeyEnv 只给出环境变量的名字，由驱动程序在
// 运行时读取。
type Scenario struct {
	// Name 是场景名，等于文件名（不含 .yaml）；文件中可省略或必须一致。
	Name string `yaml:"name"`
	// Description 是给人看的一句话说明。
	Description string `yaml:"description"`
	// Hardware 是被测服务所在硬件的说明（自由文本，如 "Ascend 910B x8"、"H100 80GB x2"），
	// 写进报告，比较两次运行时标注两侧；可省略。
	Hardware string `yaml:"hardware"`
	// Mode 是部署方式：WithModes 登记表中的名字（内置的 emulator、external、local、k8s-hybrid、
	// k8s-pd，或团队登记的 slurm 之类）。该方式自己的参数写在场景文件中以它的块名为键的配置块里
	// （见 deploy.Mode.Block），由登记项解码、校验，结果在 Deploy 中。
	Mode string `yaml:"mode"`
	// Model 是模型的内部名称或路径（model_raw），如 /mnt/model/qwen3-32b。
	Model string `yaml:"model"`
	// ServedModelName 是服务对外的模型名，也是指标与展示的主标识。
	ServedModelName string `yaml:"served_model_name"`
	// Quant 是量化类型。
	Quant Quant `yaml:"quant"`
	// Features 是服务具备的能力。
	Features []Feature `yaml:"features"`
	// Capabilities 声明可选请求参数的支持情况：键是 functional.Capability（top_k、
	// penalties、logprobs、ignore_eos……），值是 supported、unsupported 或 probe。
	// 未列出的取 functional.DefaultCapabilities（vLLM 的行为）。功能用例据此区分
	// “服务端不支持”（skip / unsupported）与“支持的参数被拒绝”（失败）。
	Capabilities map[string]string `yaml:"capabilities"`
	// BaseURL 是 external/local 方式下服务的地址，以 /v1 结尾。
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv 是保存 API Key 的环境变量名（不是密钥本身）。
	APIKeyEnv string `yaml:"api_key_env"`
	// Health 是就绪检查参数。
	Health Health `yaml:"health"`
	// Reasoning 是推理轨迹的断言参数。
	Reasoning Reasoning `yaml:"reasoning"`
	// PD 是 PD 分离各角色的参数（实例配比与启动参数原文，用于报告与标签）。它描述拓扑，
	// 与部署方式无关：k8s-pd、团队自己的 PD 启动器都可以写。
	PD *PD `yaml:"pd"`

	// Deploy 是部署方式的登记项对本场景配置块校验后的结果（deploy.Mode.Prepare 的返回值），
	// 运行时用 Deploy.Deployer(deploy.Runtime{…}) 构造部署器。内置方式的具体类型见各自的包
	// （例如 *emulator.Plan）。
	Deploy deploy.Plan `yaml:"-" json:"-"`
	// Emulated 为 true 表示部署方式拉起的是进程内模拟器（deploy.Mode.Emulated）。
	Emulated bool `yaml:"-" json:"emulated,omitempty"`

	// File 是场景文件的显示路径，用于后续错误与报告。
	File string `yaml:"-"`
}

// HasFeature 报告场景是否声明了能力 f。
func (s *Scenario) HasFeature(f Feature) bool {
	for _, x := range s.Features {
		if x == f {
			return true
		}
	}
	return false
}

// FunctionalTarget 返回功能阶段的被测服务：部署得到的 ep 原样嵌入，加上场景的能力
// （matrix.Feature 就是 functional.Feature，原样传过去：不认识的取值由 functional.NewRunner
// 点名报错，而不是在这里被悄悄丢掉、让对应用例无声地跳过）、推理字段键名与能力声明
// （决定“拒绝”的结论是 skip / unsupported 还是失败；Load 时已校验）。返回值不与场景
// 共享切片或 map。
func (s *Scenario) FunctionalTarget(ep endpoint.Endpoint) functional.Target {
	t := functional.Target{Endpoint: ep, Features: slices.Clone(s.Features), ReasoningKeys: slices.Clone(s.Reasoning.Keys),
		Capabilities: make(map[functional.Capability]functional.Support, len(s.Capabilities))}
	for k, v := range s.Capabilities {
		t.Capabilities[functional.Capability(k)] = functional.Support(v)
	}
	return t
}

// envNameRe 是合法环境变量名的形状。
var envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validateScenario 补默认值并校验场景的公共字段；部署方式自己的配置块由 prepareDeploy 交给
// 登记项校验。
func validateScenario(d *decoder, modes *deploy.Modes, s *Scenario, name string) {
	if s.Name == "" {
		s.Name = name
	} else if s.Name != name {
		d.ErrAt("name", s.Name, "name must match the file name %q", name)
	}
	if s.Mode == "" {
		d.ErrAt("mode", "", "mode is required (one of %s)", strings.Join(modes.Names(), ", "))
	}
	if s.ServedModelName == "" {
		d.ErrAt("served_model_name", "", "served_model_name is required")
	}
	if s.Model == "" {
		s.Model = s.ServedModelName
	}
	if s.Quant == "" {
		s.Quant = QuantNone
	}
	seen := map[Feature]bool{}
	for i, f := range s.Features {
		if seen[f] {
			d.ErrAt(fmt.Sprintf("features[%d]", i), string(f), "duplicate feature")
		}
		seen[f] = true
	}
	capNames := make([]string, 0, len(s.Capabilities))
	for k := range s.Capabilities {
		capNames = append(capNames, k)
	}
	sort.Strings(capNames)
	for _, k := range capNames {
		switch v := s.Capabilities[k]; {
		case !functional.Capability(k).Known():
			known := make([]string, 0, len(functional.AllCapabilities()))
			for _, c := range functional.AllCapabilities() {
				known = append(known, string(c))
			}
			d.ErrAt("capabilities."+k, k, "unknown capability (want one of %s)", strings.Join(known, ", "))
		case !functional.Support(v).Valid():
			d.ErrAt("capabilities."+k, v, "want supported, unsupported or probe")
		}
	}
	if s.APIKeyEnv != "" && !envNameRe.MatchString(s.APIKeyEnv) {
		d.ErrAt("api_key_env", s.APIKeyEnv, "api_key_env must be the NAME of an environment variable (letters, digits, _), never the key itself")
	}
	if s.BaseURL != "" {
		validateBaseURL(d, "base_url", s.BaseURL)
	}
	if s.Health.Path == "" {
		s.Health.Path = DefaultHealthPath
	} else if !strings.HasPrefix(s.Health.Path, "/") {
		d.ErrAt("health.path", s.Health.Path, "health.path must start with /")
	}
	if s.Health.Timeout == 0 {
		s.Health.Timeout = DefaultHealthTimeout
	}
	if s.Health.Interval == 0 {
		s.Health.Interval = DefaultHealthInterval
	}
	if len(s.Reasoning.Keys) == 0 {
		s.Reasoning.Keys = DefaultReasoningKeys()
	}
	for i, k := range s.Reasoning.Keys {
		if k == "" {
			d.ErrAt(fmt.Sprintf("reasoning.reasoning_keys[%d]", i), "", "reasoning key must not be empty")
		}
	}
	if s.Reasoning.ExpectReasoning && !s.HasFeature(FeatureReasoning) {
		d.ErrAt("reasoning.expect_reasoning", "true", "expect_reasoning needs the %q feature", FeatureReasoning)
	}

	if s.PD != nil {
		if s.PD.Prefill < 1 {
			d.ErrAt("pd.prefill", fmt.Sprint(s.PD.Prefill), "pd.prefill must be at least 1")
		}
		if s.PD.Decode < 1 {
			d.ErrAt("pd.decode", fmt.Sprint(s.PD.Decode), "pd.decode must be at least 1")
		}
	}
}

// validateBaseURL 要求 http(s) 地址、以 /v1 结尾且不含用户信息（密钥不进 YAML）。
func validateBaseURL(d *decoder, path, raw string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		d.ErrAt(path, raw, "base_url must be an http(s) URL such as http://127.0.0.1:9000/v1")
		return
	}
	if u.User != nil {
		d.ErrAt(path, "", "base_url must not contain credentials; put the key in the environment variable named by api_key_env")
		return
	}
	if !strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") {
		d.ErrAt(path, raw, "base_url must end with /v1")
	}
}

// modeHint 给未登记方式的错误补一句去处：内置的模拟器与 Kubernetes 方式在各自的包里，
// 只加载配置的程序要自己登记它们；Kubernetes 方式还在自己的模块里（流水线不链接 Kubernetes）。
func modeHint(name string, err error) string {
	switch name {
	case "emulator":
		return err.Error() + "; emulator is registered by emulator.Mode() (pipeline.DefaultModes() has it): pass matrix.WithModes"
	case "k8s-hybrid", "k8s-pd":
		return err.Error() + "; " + name + " lives in the module github.com/vllm-cibench/cibench/deploy/kube: " +
			"register it with modes.Register(kube.Modes()...) and pass the registry (pipeline.Extensions.Modes or matrix.WithModes); " +
			"the reference driver examples/ci does"
	}
	return err.Error()
}

// checkModeFirst 在严格解码之前看一眼场景的 mode：未登记时在取值处报错（列出已登记的方式与
// 去处），并把与它同名的顶层键（多半是这个未登记方式的配置块）从根映射中拿掉——否则用户先看到
// 的是一句 “unknown field slurm”，而不是真正的原因。返回 mode 是否未登记。
func checkModeFirst(d *decoder, root *yaml.Node, modes *deploy.Modes) bool {
	if root == nil || root.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "mode" || v.Kind != yaml.ScalarNode || v.Value == "" {
			continue
		}
		err := modes.Check(v.Value)
		if err == nil {
			return false
		}
		d.Errorf(v, "mode", v.Value, "%s", modeHint(v.Value, err))
		// errors.Is(err, deploy.ErrUnknownMode) 对加载错误同样成立（与 functional.ErrUnknownFeature 一样挂在 Cause 上）。
		d.Errs[len(d.Errs)-1].Cause = err
		block := v.Value
		if strings.HasPrefix(block, "k8s-") {
			block = "k8s" // 两种 Kubernetes 方式共用的块名：没登记时它也不该再报一句 unknown field
		}
		for j := 0; j+1 < len(root.Content); j += 2 {
			if root.Content[j].Value == block && root.Content[j].Value != "mode" {
				root.Content = append(root.Content[:j:j], root.Content[j+2:]...)
				break
			}
		}
		return true
	}
	return false
}

// splitBlocks 从场景文件的根映射中取出登记过的部署方式配置块（按块名），返回它们的键与值节点；
// 根节点里只留下场景的公共字段，交给严格解码（于是既不是公共字段、也不是登记块的键仍然是
// “unknown field” 错误）。
func splitBlocks(root *yaml.Node, blocks []string) map[string][2]*yaml.Node {
	out := map[string][2]*yaml.Node{}
	if root == nil || root.Kind != yaml.MappingNode {
		return out
	}
	kept := root.Content[:0:0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind == yaml.ScalarNode && slices.Contains(blocks, k.Value) {
			if _, dup := out[k.Value]; !dup { // 重复键留给严格解码报告
				out[k.Value] = [2]*yaml.Node{k, v}
				continue
			}
		}
		kept = append(kept, k, v)
	}
	root.Content = kept
	return out
}

// prepareDeploy 把场景的部署方式配置块交给登记项：不属于本方式的块是错误（多半是复制粘贴错了
// 场景），本方式的块（可能缺省）由 Prepare 解码、校验；它返回的 *field.Error 原样并入加载错误，
// 其他错误定位到 mode 字段。
func prepareDeploy(d *decoder, modes *deploy.Modes, fsys fs.FS, s *Scenario, blocks map[string][2]*yaml.Node) {
	m, ok := modes.Lookup(s.Mode)
	names := make([]string, 0, len(blocks))
	for k := range blocks {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !ok || k != m.BlockName() {
			d.Errorf(blocks[k][0], k, "", "%s block is not allowed with mode %q", k, s.Mode)
		}
	}
	if !ok {
		return
	}
	b := Block{file: d.File, path: m.BlockName()}
	if kv, ok := blocks[m.BlockName()]; ok && !isNull(kv[1]) {
		b.node = kv[1]
	} else {
		b.at = d.Pos["mode"]
	}
	sc := deploy.Scenario{Name: s.Name, ServedModelName: s.ServedModelName, Model: s.Model, BaseURL: s.BaseURL,
		HealthPath: s.Health.Path, HealthTimeout: s.Health.Timeout, HealthInterval: s.Health.Interval, Config: fsys}
	plan, err := m.Prepare(b, sc)
	switch fes := field.All(err); {
	case err == nil && plan == nil:
		d.ErrAt("mode", s.Mode, "mode %q returned no plan", s.Mode)
	case err == nil:
		s.Deploy, s.Emulated = plan, m.Emulated
	case len(fes) > 0:
		for _, fe := range fes {
			c := *fe
			c.Err = nil
			d.Errs = append(d.Errs, &c)
		}
	default:
		d.ErrAt("mode", s.Mode, "%v", err)
	}
}

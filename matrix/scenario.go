package matrix

import (
	"fmt"
	"io/fs"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/deploy/kube/spec"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/functional"
)

// Mode 是场景的部署方式。
type Mode string

// 部署方式取值。
const (
	// ModeEmulator 使用进程内的 vLLM 兼容模拟器，是默认场景，无需 GPU。
	ModeEmulator Mode = "emulator"
	// ModeExternal 针对一个已在运行的服务（base_url），只做健康等待。
	ModeExternal Mode = "external"
	// ModeLocal 在本机以独立进程组启动命令（如 vllm serve）。
	ModeLocal Mode = "local"
	// ModeK8sHybrid 在 Kubernetes 上部署混合（非 PD 分离）实例。
	ModeK8sHybrid Mode = "k8s-hybrid"
	// ModeK8sPD 在 Kubernetes 上部署 PD 分离（prefill/decode）实例。
	ModeK8sPD Mode = "k8s-pd"
)

// checkEnum 拒绝规格第 3 节以外的部署方式。
func (m Mode) checkEnum() error {
	switch m {
	case ModeEmulator, ModeExternal, ModeLocal, ModeK8sHybrid, ModeK8sPD:
		return nil
	}
	return fmt.Errorf("invalid mode (want one of emulator, external, local, k8s-hybrid, k8s-pd)")
}

// Quant 是模型的量化类型，作为指标标签 quant 使用。
type Quant string

// 量化类型取值。
const (
	QuantW8A8 Quant = "w8a8"
	QuantW4A8 Quant = "w4a8"
	QuantNone Quant = "none"
)

// checkEnum 拒绝规格第 9 节以外的量化类型。
func (q Quant) checkEnum() error {
	switch q {
	case QuantW8A8, QuantW4A8, QuantNone:
		return nil
	}
	return fmt.Errorf("invalid quant (want one of w8a8, w4a8, none)")
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
	// Timeout 默认 20 分钟（规格第 2 节：最大启动等待 20 分钟）。
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

// Reasoning 描述推理模型的断言方式（规格第 4 节）。
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

// PD 记录 PD 分离部署各角色的参数（规格第 2 节的 gen_pd_deploy 参数）。
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

// Scenario 是 configs/scenarios/<name>.yaml 中的一个被测场景。
//
// 密钥从不写在 YAML 里：APIKeyEnv 只给出环境变量的名字，由驱动程序在
// 运行时读取。
type Scenario struct {
	// Name 是场景名，等于文件名（不含 .yaml）；文件中可省略或必须一致。
	Name string `yaml:"name"`
	// Description 是给人看的一句话说明。
	Description string `yaml:"description"`
	// Mode 是部署方式。
	Mode Mode `yaml:"mode"`
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
	// PD 是 PD 分离各角色的参数，仅 k8s-pd 使用。
	PD *PD `yaml:"pd"`
	// Emulator 是模拟器选项（时延、能力开关、故障注入），仅 emulator 方式使用；
	// Model 缺省为 ServedModelName。
	Emulator *emulator.Config `yaml:"emulator"`
	// Local 是本地启动配置（命令、参数、环境、端口），仅 local 方式使用；
	// served_model_name、health_path、startup_timeout 缺省取场景的对应值。
	Local *deploy.LocalConfig `yaml:"local"`
	// K8s 是 Kubernetes 部署配置（清单、命名空间、角色、Service/NodePort），
	// 仅 k8s-* 方式使用。清单路径相对于配置目录（如 k8s/qwen3-32b-hybrid.yaml）。
	K8s *spec.Config `yaml:"k8s"`

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

// validateScenario 补默认值并做跨字段校验：各部署方式需要的字段必须给出，
// 不属于该方式的配置块不得出现（多半是复制粘贴错了场景）。
func validateScenario(d *decoder, fsys fs.FS, s *Scenario, name string) {
	if s.Name == "" {
		s.Name = name
	} else if s.Name != name {
		d.ErrAt("name", s.Name, "name must match the file name %q", name)
	}
	if s.Mode == "" {
		d.ErrAt("mode", "", "mode is required (emulator, external, local, k8s-hybrid or k8s-pd)")
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

	// only 列出当前方式允许出现的配置块。
	only := func(field string, present bool, allowed ...Mode) {
		if !present {
			return
		}
		for _, m := range allowed {
			if s.Mode == m {
				return
			}
		}
		d.ErrAt(field, "", "%s block is not allowed with mode %q", field, s.Mode)
	}
	only("emulator", s.Emulator != nil, ModeEmulator)
	only("local", s.Local != nil, ModeLocal)
	only("k8s", s.K8s != nil, ModeK8sHybrid, ModeK8sPD)
	only("pd", s.PD != nil, ModeK8sPD)

	switch s.Mode {
	case ModeExternal:
		if s.BaseURL == "" {
			d.ErrAt("base_url", "", "base_url is required for mode external")
		}
	case ModeLocal:
		if s.BaseURL == "" {
			d.ErrAt("base_url", "", "base_url is required for mode local (where the started server listens)")
		}
		if s.Local == nil {
			d.ErrAt("local", "", "local block (command to start the server) is required for mode local")
		}
	case ModeK8sHybrid, ModeK8sPD:
		if s.K8s == nil {
			d.ErrAt("k8s", "", "k8s block (manifests, service) is required for mode %s", s.Mode)
		}
		if s.Mode == ModeK8sPD && s.PD == nil {
			d.ErrAt("pd", "", "pd block (prefill/decode roles) is required for mode k8s-pd")
		}
	case ModeEmulator:
		if s.BaseURL != "" {
			d.ErrAt("base_url", s.BaseURL, "base_url is not used with mode emulator (it listens on 127.0.0.1:0)")
		}
	}
	validateEmulator(d, s)
	validateLocal(d, s)
	validateKube(d, fsys, s)
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

// sameModel 让部署块里的模型名缺省取场景的 served_model_name，写了不同的值
// 则报错：两个名字不一致时请求会打到不存在的模型上（404）。
func sameModel(d *decoder, path string, got *string, want string) {
	switch {
	case *got == "":
		*got = want
	case *got != want:
		d.ErrAt(path, *got, "must equal served_model_name %q (or be omitted)", want)
	}
}

// noLiteralKey 拒绝写在 YAML 里的密钥：密钥只能经 api_key_env 指向的环境变量提供。
func noLiteralKey(d *decoder, path, key string) {
	if key != "" {
		d.ErrAt(path, "", "API keys must not be written in YAML; set api_key_env to the name of an environment variable instead")
	}
}

// validateEmulator 补全模拟器的模型名，并用 deploy 包自己的校验检查取值。
func validateEmulator(d *decoder, s *Scenario) {
	if s.Emulator == nil {
		if s.Mode != ModeEmulator {
			return
		}
		s.Emulator = &emulator.Config{}
	}
	sameModel(d, "emulator.model", &s.Emulator.Model, s.ServedModelName)
	if s.Emulator.Addr != "" {
		d.ErrAt("emulator.addr", s.Emulator.Addr, "the emulator scenario always listens on 127.0.0.1:0; addr is not configurable here")
	}
	if _, err := emulator.New(*s.Emulator); err != nil {
		d.ErrAt("emulator", "", "%v", err)
	}
}

// validateLocal 补全本地启动配置的模型名、健康路径与启动超时，并做 deploy 包的校验。
func validateLocal(d *decoder, s *Scenario) {
	l := s.Local
	if l == nil {
		return
	}
	sameModel(d, "local.served_model_name", &l.Model, s.ServedModelName)
	noLiteralKey(d, "local.api_key", l.APIKey)
	if l.HealthPath == "" {
		l.HealthPath = s.Health.Path
	}
	if l.StartupTimeout == 0 {
		l.StartupTimeout = s.Health.Timeout
	}
	if _, err := deploy.NewLocal(*l); err != nil {
		d.ErrAt("local", "", "%v", err)
	}
}

// validateKube 补全 Kubernetes 配置，并检查引用的清单文件在配置目录中存在
// （清单由用户提供，路径写错是最常见的错误，越早发现越好）。
func validateKube(d *decoder, fsys fs.FS, s *Scenario) {
	k := s.K8s
	if k == nil {
		return
	}
	sameModel(d, "k8s.served_model_name", &k.Model, s.ServedModelName)
	noLiteralKey(d, "k8s.api_key", k.APIKey)
	if k.HealthPath == "" {
		k.HealthPath = s.Health.Path
	}
	if k.StartupTimeout == 0 {
		k.StartupTimeout = s.Health.Timeout
	}
	if len(k.Manifests) == 0 && len(k.Roles) == 0 {
		d.ErrAt("k8s", "", "k8s needs manifests (hybrid) or roles (PD)")
	}
	if s.Mode == ModeK8sPD && len(k.Roles) == 0 {
		d.ErrAt("k8s.roles", "", "mode k8s-pd needs k8s.roles (scheduler/prefill/decode)")
	}
	check := func(path, name string) {
		if fsys == nil {
			return
		}
		if _, err := fs.Stat(fsys, name); err != nil {
			d.ErrAt(path, name, "manifest not found in the config directory")
		}
	}
	for i, m := range k.Manifests {
		check(fmt.Sprintf("k8s.manifests[%d]", i), m)
	}
	for i, r := range k.Roles {
		for j, m := range r.Manifests {
			check(fmt.Sprintf("k8s.roles[%d].manifests[%d]", i, j), m)
		}
	}
}

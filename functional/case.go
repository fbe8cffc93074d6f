package functional

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/vllm-cibench/cibench/endpoint"
)

// Target 是被测服务：嵌入的 endpoint.Endpoint（地址、模型、密钥、HTTP 客户端，约定见
// endpoint 包文档）加上场景对能力的声明。部署得到的端点原样放进来：
// Target{Endpoint: ep, Features: …}；本包因此不依赖 deploy。
//
// 本包对嵌入字段的用法：用例只打主地址（BaseURLs[0]），检查的是一个服务的协议行为；
// APIKey 不会出现在结果中；HTTPClient 为 nil 时用一个新的 http.Client，其 Transport
// 会被包装以实现超时、重试与请求记录，Timeout 字段被忽略（由 Options.RequestTimeout 代替）。
type Target struct {
	endpoint.Endpoint
	// Features 是场景开启的可选能力。
	Features []Feature
	// ReasoningKeys 是场景给出的推理字段备选键名，优先于 ReasoningConfig.Keys。
	ReasoningKeys []string
	// Capabilities 是场景对可选参数的声明（supported / unsupported / probe）；
	// 缺少的键取 DefaultCapabilities（vLLM 的行为）。
	Capabilities map[Capability]Support
}

// Has 报告场景是否开启了能力 f。
func (t Target) Has(f Feature) bool { return slices.Contains(t.Features, f) }

// Support 返回场景对能力 c 的声明；未声明时取 DefaultCapabilities 中的值。
func (t Target) Support(c Capability) Support {
	if s, ok := t.Capabilities[c]; ok {
		return s
	}
	return DefaultCapabilities()[c]
}

// Validate 在任何请求之前检查 Target：端点（endpoint.Endpoint.Validate，错误包装
// endpoint.ErrInvalid）、能力名是否在 feats 中登记（nil 取 DefaultFeatures）与能力声明。
// 它遮蔽嵌入的 Endpoint.Validate，所以对 Target 的校验总是完整的检查；NewRunner 用
// Options.Features 调用它。
func (t Target) Validate(feats *Features) error {
	if err := t.Endpoint.Validate(); err != nil {
		return fmt.Errorf("functional: target: %w", err)
	}
	feats = feats.orDefault()
	for i, f := range t.Features {
		if err := feats.Check(f); err != nil {
			return fmt.Errorf("functional: target: features[%d]: %w", i, err)
		}
	}
	for c, s := range t.Capabilities {
		if err := checkCapability(c, s); err != nil {
			return fmt.Errorf("functional: target: %w", err)
		}
	}
	return nil
}

// Case 是一个功能用例。Run 在独立的 goroutine 中执行，通过 T 发请求、报告失败
// 或跳过；Run 正常返回且未调用 Fail/Skip 即为通过。
type Case struct {
	// ID 是全局唯一的标识，形如 "<suite>/<name>"。
	ID string
	// Suite 是所属套件名。
	Suite string
	// Description 是一句话说明断言了什么，出现在 JUnit 与文档中。
	Description string
	// Requires 是运行该用例所需的可选能力；任一缺失则跳过。
	Requires []Feature
	// Isolated 表示用例的含义需要一个固定的批：它比较同一服务对同样请求的两次回答
	// （贪心或带 seed 的可复现性、流式与非流式一致），而真实服务在别的请求同批时 logits
	// 会变（vLLM 默认不保证批不变）。Runner 先并发跑完其它用例，再把这些用例逐个单独运行，
	// 期间没有别的用例的请求在服务端。服务声明了 batch_invariant: supported 时不需要这样：
	// 它们与其它用例一起并发（比较照样逐字节严格）。
	Isolated bool
	// Params 非 nil 时是用例参数结构体的指针，值是默认参数：功能配置（tests/functional/*.yaml）
	// 的 params.<ID>: 块会以与整个配置树相同的严格规则解码进它的副本。matrix 加载配置时就这样
	// 校验（未知字段、类型不符带文件:行:列，在任何东西运行之前报告），用例运行时用 T.Params
	// 读取。nil 表示用例没有声明参数：它仍可用 T.Params 读 params.<ID>，但错误要到运行时才发现。
	Params any
	// Run 执行用例。ctx 在超时或运行被取消时结束。
	Run func(ctx context.Context, t *T)
}

// ErrDuplicateCase 表示目录中已有同 ID 的用例。
var ErrDuplicateCase = errors.New("functional: duplicate case id")

// Catalog 是一组有序的用例。非并发安全：构建完成后再交给 Runner。
type Catalog struct {
	cases []Case
	ids   map[string]bool
	// feats 是 Add 校验 Requires 所用的能力登记表。
	feats *Features
	// params 是 NewCatalog 的配置里的用例参数：Add 据此在加入时校验声明了 Case.Params 的用例。
	params map[string]CaseParams
}

// NewCatalog 按 cfg 生成需求 §4（docs/requirements.md）的全部用例。cfg 先经过 Validate(feats)；feats 是
// 用例 Requires 可以引用的能力登记表（nil 取 DefaultFeatures）。团队要加依赖厂商能力的
// 用例时，先在 feats 中登记该能力，再把同一张表交给 NewCatalog 与 Options.Features。
func NewCatalog(cfg Config, feats *Features) (*Catalog, error) {
	feats = feats.orDefault()
	if err := cfg.Validate(feats); err != nil {
		return nil, err
	}
	c := &Catalog{ids: map[string]bool{}, feats: feats, params: cfg.Params}
	for _, build := range []func(Config) []Case{
		chatCoreCases, completionsCases, streamingCases, paramsCases, guidedCases,
		functionCallCases, reasoningCases, errorsCases, multimodalCases, embeddingsCases, rerankCases,
	} {
		for _, cs := range build(cfg) {
			if err := c.Add(cs); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// DefaultCatalog 返回按 DefaultConfig 生成的新目录；每次调用都是独立的值，
// 调用方可以放心 Add 而不影响他人。
func DefaultCatalog() *Catalog {
	c, err := NewCatalog(DefaultConfig(), nil)
	if err != nil {
		// DefaultConfig 由单元测试保证合法；此处返回空目录而不是 panic。
		return &Catalog{ids: map[string]bool{}, feats: DefaultFeatures()}
	}
	return c
}

// Add 追加一个用例。ID、Suite、Run 必填，ID 不得重复；ID 不以 "<suite>/" 开头时
// 自动补上，以保证报告中按套件分组的一致性。Requires 中的每个能力必须已在目录的
// 登记表中（错误包装 ErrUnknownFeature）：拼错的能力名会让用例永远被跳过，所以在
// 构建目录时就拒绝。零值 Catalog 使用 DefaultFeatures。
func (c *Catalog) Add(cs Case) error {
	if c.ids == nil {
		c.ids = map[string]bool{}
	}
	if cs.Suite == "" || cs.ID == "" || cs.Run == nil {
		return fmt.Errorf("functional: add case %q: ID, Suite and Run are required", cs.ID)
	}
	if !strings.HasPrefix(cs.ID, cs.Suite+"/") {
		cs.ID = cs.Suite + "/" + cs.ID
	}
	if c.feats == nil {
		c.feats = DefaultFeatures()
	}
	for i, f := range cs.Requires {
		if err := c.feats.Check(f); err != nil {
			return fmt.Errorf("functional: add case %q: requires[%d]: %w", cs.ID, i, err)
		}
	}
	if c.ids[cs.ID] {
		return fmt.Errorf("%w: %s", ErrDuplicateCase, cs.ID)
	}
	// 参数块在加入时就严格校验（拼错的字段带文件:行:列，包装 ErrParams），不等到用例运行。
	if err := checkCaseParams(c.params, cs); err != nil {
		return fmt.Errorf("functional: add case %q: %w", cs.ID, err)
	}
	c.ids[cs.ID] = true
	c.cases = append(c.cases, cs)
	return nil
}

// Case 返回 ID 为 id 的用例。
func (c *Catalog) Case(id string) (Case, bool) {
	for _, cs := range c.cases {
		if cs.ID == id {
			return cs, true
		}
	}
	return Case{}, false
}

// Cases 返回用例的副本，顺序即添加顺序。
func (c *Catalog) Cases() []Case { return slices.Clone(c.cases) }

// Len 返回用例数。
func (c *Catalog) Len() int { return len(c.cases) }

// Suites 返回出现过的套件名，按首次出现的顺序。
func (c *Catalog) Suites() []string {
	var out []string
	for _, cs := range c.cases {
		if !slices.Contains(out, cs.Suite) {
			out = append(out, cs.Suite)
		}
	}
	return out
}

// Matches 报告 ID 为 id、套件为 suite 的用例是否被 patterns 选中，规则与 Select 相同：
// patterns 为空或含 "all" 时选中全部。
func Matches(patterns []string, id, suite string) bool {
	if len(patterns) == 0 || slices.Contains(patterns, "all") {
		return true
	}
	for _, p := range patterns {
		if m, err := path.Match(p, id); p == suite || p == id || (err == nil && m) {
			return true
		}
	}
	return false
}

// Select 返回匹配任一 pattern 的用例：pattern 可以是套件名、完整用例 ID，
// 或 path.Match 风格的通配（如 "params_boundary/top_*"）。patterns 为空或含
// "all" 时返回全部。不匹配任何用例的 pattern 是错误，防止矩阵里的拼写错误
// 让子集悄悄变空。
func (c *Catalog) Select(patterns ...string) ([]Case, error) {
	if len(patterns) == 0 || slices.Contains(patterns, "all") {
		return c.Cases(), nil
	}
	var out []Case
	used := make([]bool, len(patterns))
	for _, cs := range c.cases {
		hit := false
		for i, p := range patterns {
			m, err := path.Match(p, cs.ID)
			if p == cs.Suite || p == cs.ID || (err == nil && m) {
				used[i], hit = true, true
			}
		}
		if hit {
			out = append(out, cs)
		}
	}
	for i, u := range used {
		if !u {
			return nil, fmt.Errorf("functional: select: pattern %q matches no case", patterns[i])
		}
	}
	return out, nil
}

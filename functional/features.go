package functional

import (
	"errors"
	"fmt"
	"github.com/vllm-cibench/cibench/internal/regname"
	"slices"
	"strings"
)

// Feature 是场景可以开启的可选能力，也是场景文件 features 列表的取值（matrix.Feature
// 是它的别名：全项目只有这一个能力类型）。核心的 chat/completions/流式能力总是被测试；
// 带 Requires 的用例只有在 Target.Features 中出现对应能力时才运行，否则跳过并写明原因。
// 哪些名字合法由调用方传入的 *Features 登记表决定（DefaultFeatures 是内置的一组），
// 团队可以登记自己的厂商能力（如 "acme_lora"），让依赖它的用例与场景声明成为可能。
type Feature string

// 内置能力，名称与 configs/scenarios/*.yaml 的 features 列表一致。
// spec_decode 与 prefix_caching 目前没有功能用例要求它们，但仍是合法的声明。
const (
	FeatureGuidedDecoding    Feature = "guided_decoding"
	FeatureStructuredOutputs Feature = "structured_outputs"
	FeatureFunctionCall      Feature = "function_call"
	FeatureReasoning         Feature = "reasoning"
	FeatureMultimodal        Feature = "multimodal"
	FeatureSpecDecode        Feature = "spec_decode"
	FeaturePrefixCaching     Feature = "prefix_caching"
	FeatureEmbeddings        Feature = "embeddings"
	FeatureRerank            Feature = "rerank"
)

// ErrUnknownFeature 表示能力名没有在所用的 *Features 中登记（多半是拼写错误，
// 或团队忘了登记自己的厂商能力）。
var ErrUnknownFeature = errors.New("unknown feature")

// ErrDuplicateFeature 表示同一个能力名被登记了两次：两处登记通常意味着两个团队
// 用同一个名字指不同的东西，静默合并会让一方的用例在另一方的场景里运行。
var ErrDuplicateFeature = errors.New("functional: duplicate feature")

// ErrFeatureName 表示能力名的写法不合法（空、大写、空白或其他字符）。
var ErrFeatureName = errors.New("functional: invalid feature name")

// Features 是一张能力名登记表：场景 YAML 的 features 列表、用例的 Requires 与
// Target.Features 只接受登记过的名字。它是普通的值，由调用方构造并传给
// NewCatalog、Options.Features 与 matrix.WithFeatures，本包没有全局登记表
// （也没有 init() 登记）。非并发安全：登记完成后再交给使用者，之后只读。
type Features struct {
	names []Feature
	set   map[Feature]bool
}

// NewFeatures 返回一张空登记表，并依次登记 names（规则见 Register）。
func NewFeatures(names ...Feature) (*Features, error) {
	r := &Features{set: map[Feature]bool{}}
	if err := r.Register(names...); err != nil {
		return nil, err
	}
	return r, nil
}

// DefaultFeatures 返回登记了全部内置能力的新登记表；每次调用都是独立的值，
// 调用方在上面登记厂商能力不影响别人。
func DefaultFeatures() *Features {
	r := &Features{set: map[Feature]bool{}}
	for _, f := range []Feature{FeatureGuidedDecoding, FeatureStructuredOutputs, FeatureFunctionCall, FeatureReasoning,
		FeatureMultimodal, FeatureSpecDecode, FeaturePrefixCaching, FeatureEmbeddings, FeatureRerank} {
		r.names = append(r.names, f)
		r.set[f] = true
	}
	return r
}

// Register 登记能力名。名字必须以小写字母开头，只含小写字母、数字、'_'、'-' 与 '.'
// （如 "acme_lora"、"acme.lora"），不超过 64 个字符——它会成为 YAML 取值与报告中的
// 键，大小写或空白之差不该造出两个能力。写法不合法返回包装 ErrFeatureName 的错误，
// 已登记返回包装 ErrDuplicateFeature 的错误；出错时之前的名字已登记、之后的没有。
func (r *Features) Register(names ...Feature) error {
	if r.set == nil {
		r.set = map[Feature]bool{}
	}
	for _, f := range names {
		if err := checkFeatureName(f); err != nil {
			return err
		}
		if r.set[f] {
			return fmt.Errorf("%w: %q is already registered", ErrDuplicateFeature, f)
		}
		r.set[f] = true
		r.names = append(r.names, f)
	}
	return nil
}

// checkFeatureName 校验能力名的写法（与评测名、部署方式名同一条规则，见 internal/regname），
// 错误写明取值与规则。
func checkFeatureName(f Feature) error {
	if err := regname.Check(string(f)); err != nil {
		return fmt.Errorf("%w: %v", ErrFeatureName, err)
	}
	return nil
}

// Known 报告 f 是否已登记。nil 登记表什么也不认识。
func (r *Features) Known(f Feature) bool { return r != nil && r.set[f] }

// All 返回已登记的能力名（新切片），顺序即登记顺序，也是错误信息中的顺序。
func (r *Features) All() []Feature {
	if r == nil {
		return nil
	}
	return slices.Clone(r.names)
}

// Check 在 f 未登记时返回包装 ErrUnknownFeature、列出全部已登记取值的错误；
// matrix 加载场景文件、Catalog.Add、Config.Validate 与 NewRunner 都用它，
// 同一拼写错误在各处读起来一样。
func (r *Features) Check(f Feature) error {
	if r.Known(f) {
		return nil
	}
	names := make([]string, 0, len(r.All()))
	for _, k := range r.All() {
		names = append(names, string(k))
	}
	return fmt.Errorf("%w %q (want one of %s)", ErrUnknownFeature, f, strings.Join(names, ", "))
}

// orDefault 返回 r，nil 时返回内置登记表：Options 与 NewCatalog 的 nil 即“只有内置能力”。
func (r *Features) orDefault() *Features {
	if r == nil {
		return DefaultFeatures()
	}
	return r
}

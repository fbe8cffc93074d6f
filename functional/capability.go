package functional

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Capability 是一个可选的请求参数（或辅助端点）。与 Feature 不同，它不决定用例
// 是否存在，而决定服务端拒绝该参数时的结论：场景必须明确声明每个能力是否支持，
// 否则一次“拒绝”无法区分“服务端本就不支持”和“新版本把支持的参数弄坏了”。
type Capability string

// 已知能力。名称即 Target.Capabilities 与场景 YAML capabilities: 中的键。
const (
	// CapTopP 是 (0, 1] 内的 top_p。
	CapTopP Capability = "top_p"
	// CapTopPZero 是 top_p=0（vLLM 要求 top_p > 0，以 400 拒绝）。
	CapTopPZero Capability = "top_p_zero"
	// CapTopK 是 top_k（vLLM 扩展参数）。
	CapTopK Capability = "top_k"
	// CapPenalties 是 presence_penalty 与 frequency_penalty。
	CapPenalties Capability = "penalties"
	// CapLogprobs 是 chat 的 logprobs/top_logprobs 与 completions 的 logprobs。
	CapLogprobs Capability = "logprobs"
	// CapIgnoreEOS 是 ignore_eos（vLLM 扩展参数），精确长度类用例依赖它。
	CapIgnoreEOS Capability = "ignore_eos"
	// CapLogitBias 是 logit_bias。
	CapLogitBias Capability = "logit_bias"
	// CapTokenize 是 vLLM 的 /tokenize 端点（logit_bias 取 token id、上下文边界用例）。
	CapTokenize Capability = "tokenize"
	// CapStreamUsage 是 stream_options.include_usage。
	CapStreamUsage Capability = "stream_usage"
	// CapContinuousUsage 是 stream_options.continuous_usage_stats（vLLM 扩展）。
	CapContinuousUsage Capability = "continuous_usage_stats"
	// CapEmbeddingDimensions 是 embeddings 的 dimensions 参数（vLLM 只对 Matryoshka 模型支持）。
	CapEmbeddingDimensions Capability = "embedding_dimensions"
	// CapEmbeddingBase64 是 embeddings 的 encoding_format=base64。
	CapEmbeddingBase64 Capability = "embedding_base64"
	// CapBatchInvariant 不是请求参数，而是服务端的承诺：输出与同批的其它请求无关（vLLM 的
	// VLLM_BATCH_INVARIANT=1，只在部分 GPU/NPU 上可用）。声明 supported 时，流式与非流式的
	// 比较要求逐字节相同；否则（默认 unsupported，vLLM 的默认配置）允许需求所说的"小幅差异"，
	// 定义见 docs/functional.md 的 "Determinism"。probe 与 unsupported 同义。
	CapBatchInvariant Capability = "batch_invariant"
)

// AllCapabilities 返回全部已知能力（每次返回新切片）。
func AllCapabilities() []Capability {
	return []Capability{CapTopP, CapTopPZero, CapTopK, CapPenalties, CapLogprobs, CapIgnoreEOS, CapLogitBias,
		CapTokenize, CapStreamUsage, CapContinuousUsage, CapEmbeddingDimensions, CapEmbeddingBase64, CapBatchInvariant}
}

// Known 报告 c 是否为本包认识的能力名。
func (c Capability) Known() bool { return slices.Contains(AllCapabilities(), c) }

// Support 是场景对一个能力的声明。
type Support string

// 声明取值。
const (
	// SupportSupported：服务端必须接受；任何拒绝都是失败，报告引用服务端的回答。
	SupportSupported Support = "supported"
	// SupportUnsupported：服务端不具备；依赖它的用例不发请求，直接 skip。
	SupportUnsupported Support = "unsupported"
	// SupportProbe：不确定；用例照常发请求，服务端以参数拒绝（400/404/405/422/501）
	// 回答时记为 unsupported（不是 pass），其他任何故障仍是失败。
	SupportProbe Support = "probe"
)

// Valid 报告 s 是否为三种声明之一。
func (s Support) Valid() bool {
	return s == SupportSupported || s == SupportUnsupported || s == SupportProbe
}

// DefaultCapabilities 返回 vLLM（以及忠实模拟它的内置模拟器）的声明：全部支持，
// 除了 top_p=0（vLLM 以 400 拒绝，probe 使报告写 unsupported 而 5xx 仍是失败）与
// embeddings 的 dimensions（只有 Matryoshka 模型支持，probe）。每次返回新映射。
func DefaultCapabilities() map[Capability]Support {
	out := map[Capability]Support{}
	for _, c := range AllCapabilities() {
		out[c] = SupportSupported
	}
	out[CapTopPZero] = SupportProbe
	out[CapEmbeddingDimensions] = SupportProbe
	out[CapBatchInvariant] = SupportUnsupported
	return out
}

// ParseCapabilities 解析 "name=decl,name=decl" 形式的声明（命令行 -capabilities），
// 返回叠加在 DefaultCapabilities 上的映射；未知名字或声明是错误，写明取值。
func ParseCapabilities(s string) (map[Capability]Support, error) {
	out := DefaultCapabilities()
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, decl, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%w: capability %q: want name=supported|unsupported|probe", ErrConfig, part)
		}
		if err := checkCapability(Capability(strings.TrimSpace(name)), Support(strings.TrimSpace(decl))); err != nil {
			return nil, err
		}
		out[Capability(strings.TrimSpace(name))] = Support(strings.TrimSpace(decl))
	}
	return out, nil
}

// checkCapability 校验一项声明，错误写明名字与取值。
func checkCapability(c Capability, s Support) error {
	if !c.Known() {
		names := make([]string, 0, len(AllCapabilities()))
		for _, k := range AllCapabilities() {
			names = append(names, string(k))
		}
		return fmt.Errorf("%w: unknown capability %q (known: %s)", ErrConfig, c, strings.Join(names, ", "))
	}
	if !s.Valid() {
		return fmt.Errorf("%w: capability %s=%q: want supported, unsupported or probe", ErrConfig, c, s)
	}
	return nil
}

// FormatCapabilities 把声明写成稳定排序的 "name=decl,…"，用于日志与报告。
func FormatCapabilities(m map[Capability]Support) string {
	keys := slices.Collect(maps.Keys(m))
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = string(k) + "=" + string(m[k])
	}
	return strings.Join(parts, ",")
}

// probeRejection 报告一个 HTTP 状态是否是“参数/端点不被支持”的拒绝。401/403（鉴权）、
// 408/429（限流、超时）与 5xx（除 501）是故障，从不被当作“不支持”。
func probeRejection(status int) bool {
	switch status {
	case 400, 404, 405, 422, 501:
		return true
	}
	return false
}

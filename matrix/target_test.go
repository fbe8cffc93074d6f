package matrix_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/matrix"
)

// TestFunctionalTarget 检查场景到功能阶段被测服务的转换（原在 examples/ci 的驱动里）：端点
// 原样嵌入（含密钥与客户端），能力原样交给功能测试——spec_decode 与 prefix_caching 不被
// 悄悄丢掉；推理键名与能力声明照抄且不与场景共享；不认识的能力（只可能来自代码构造的
// 场景，Load 时已拒绝）让 NewRunner 报错并点出该值，而不是让对应用例悄悄跳过。
func TestFunctionalTarget(t *testing.T) {
	ep := endpoint.Endpoint{BaseURLs: []string{"http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"}, Model: "m", APIKey: "sk-x"}
	sc := &matrix.Scenario{Name: "s",
		Features:     []matrix.Feature{matrix.FeatureReasoning, matrix.FeatureSpecDecode, matrix.FeaturePrefixCaching},
		Capabilities: map[string]string{"top_k": "unsupported", "logprobs": "probe"},
		Reasoning:    matrix.Reasoning{Keys: []string{"reasoning", "reasoning_content"}}}
	got := sc.FunctionalTarget(ep)
	if !slices.Equal(got.BaseURLs, ep.BaseURLs) || got.Model != "m" || got.APIKey != "sk-x" {
		t.Errorf("endpoint = %v key %q, want %v", got.Endpoint, got.APIKey, ep)
	}
	if !slices.Equal(got.Features, sc.Features) || !slices.Equal(got.ReasoningKeys, sc.Reasoning.Keys) {
		t.Errorf("features = %v keys = %v", got.Features, got.ReasoningKeys)
	}
	want := map[functional.Capability]functional.Support{"top_k": functional.SupportUnsupported, "logprobs": functional.SupportProbe}
	if !maps.Equal(got.Capabilities, want) || got.Support("top_k") != functional.SupportUnsupported {
		t.Errorf("capabilities = %v, want %v", got.Capabilities, want)
	}
	got.Features[0], got.ReasoningKeys[0] = "changed", "changed"
	if sc.Features[0] != matrix.FeatureReasoning || sc.Reasoning.Keys[0] != "reasoning" {
		t.Error("target shares slices with the scenario")
	}
	if empty := (&matrix.Scenario{}).FunctionalTarget(ep); empty.Capabilities == nil || len(empty.Features) != 0 {
		t.Errorf("empty scenario: %+v", empty)
	}
	sc.Features = append(sc.Features, "bogus")
	_, err := functional.NewRunner(sc.FunctionalTarget(ep), functional.DefaultOptions())
	if !errors.Is(err, functional.ErrUnknownFeature) || !strings.Contains(err.Error(), `"bogus"`) {
		t.Fatalf("unknown feature: err = %v, want ErrUnknownFeature naming \"bogus\"", err)
	}
}

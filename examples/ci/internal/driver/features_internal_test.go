package driver

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/matrix"
)

// TestFunctionalTargetFeatures 检查场景的能力声明原样交给功能测试：spec_decode 与
// prefix_caching 不再被悄悄丢掉；不认识的取值（只可能来自代码构造的场景，矩阵加载时
// 已拒绝）让 NewRunner 报错并点出该值，而不是让对应用例悄悄跳过。
func TestFunctionalTargetFeatures(t *testing.T) {
	ep := deploy.Endpoint{BaseURLs: []string{"http://127.0.0.1:1/v1"}, Model: "m"}
	sc := &matrix.Scenario{Name: "s", Features: []matrix.Feature{matrix.FeatureReasoning, matrix.FeatureSpecDecode, matrix.FeaturePrefixCaching}}
	got := functionalTarget(sc, ep)
	if !slices.Equal(got.Features, sc.Features) {
		t.Errorf("features = %v, want %v", got.Features, sc.Features)
	}
	sc.Features = append(sc.Features, "bogus")
	_, err := functional.NewRunner(functionalTarget(sc, ep), functional.DefaultOptions())
	if !errors.Is(err, functional.ErrUnknownFeature) || !strings.Contains(err.Error(), `"bogus"`) {
		t.Fatalf("unknown feature: err = %v, want ErrUnknownFeature naming \"bogus\"", err)
	}
}

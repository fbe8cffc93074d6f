package functional_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/functional"
)

// TestFeaturesRegister 检查登记时的校验：空名、写法不合法、重复都被拒绝并能用
// errors.Is 区分；DefaultFeatures 每次是新值，在一张表上登记不影响另一张。
func TestFeaturesRegister(t *testing.T) {
	r := functional.DefaultFeatures()
	if err := r.Register("acme_lora", "acme.kv-offload"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name functional.Feature
		want error
	}{
		{"", functional.ErrFeatureName},
		{"Acme", functional.ErrFeatureName},
		{"acme lora", functional.ErrFeatureName},
		{"9lives", functional.ErrFeatureName},
		{functional.Feature(strings.Repeat("a", 65)), functional.ErrFeatureName},
		{"acme_lora", functional.ErrDuplicateFeature},
		{functional.FeatureReasoning, functional.ErrDuplicateFeature},
	} {
		if err := r.Register(tc.name); !errors.Is(err, tc.want) {
			t.Errorf("Register(%q) = %v, want %v", tc.name, err, tc.want)
		}
	}
	if !r.Known("acme_lora") || !r.Known("acme.kv-offload") || r.Known("acme") {
		t.Fatalf("Known after Register: %v", r.All())
	}
	if got := len(r.All()); got != len(functional.DefaultFeatures().All())+2 {
		t.Fatalf("All() has %d names, want built-ins + 2: %v", got, r.All())
	}
	if functional.DefaultFeatures().Known("acme_lora") {
		t.Fatal("Register on one DefaultFeatures value leaked into a fresh one")
	}
	err := functional.DefaultFeatures().Check("acme_lora")
	if !errors.Is(err, functional.ErrUnknownFeature) || !strings.Contains(err.Error(), `"acme_lora"`) || !strings.Contains(err.Error(), "rerank") {
		t.Fatalf("Check of an unregistered name = %v, want ErrUnknownFeature naming it and the known ones", err)
	}
	if _, err := functional.NewFeatures("ok", "Bad"); !errors.Is(err, functional.ErrFeatureName) {
		t.Fatalf("NewFeatures with a bad name = %v", err)
	}
	var nilReg *functional.Features
	if nilReg.Known(functional.FeatureReasoning) || nilReg.All() != nil {
		t.Fatal("a nil registry must know nothing")
	}
}

// TestVendorFeatureCase 是“需要厂商能力的用例”这条用户故事：以前 Catalog.Add 拒绝
// 一切不在内置枚举中的能力、Target.Validate 也拒绝它，这样的用例无从写起。现在在
// 登记表中登记后，用例加入目录、场景开启该能力时执行、未开启时跳过并写明原因；
// 没有登记的表（内置表）仍然拒绝它。
func TestVendorFeatureCase(t *testing.T) {
	const vendor functional.Feature = "acme_lora"
	feats := functional.DefaultFeatures()
	if err := feats.Register(vendor); err != nil {
		t.Fatal(err)
	}
	ran := 0
	vc := functional.Case{ID: "adapter", Suite: "acme", Requires: []functional.Feature{vendor}, Run: func(ctx context.Context, tt *functional.T) {
		ran++
		if !tt.Has(vendor) {
			tt.Fatalf("case ran without its feature")
		}
	}}
	if err := functional.DefaultCatalog().Add(vc); !errors.Is(err, functional.ErrUnknownFeature) {
		t.Fatalf("the built-in registry accepted an unregistered vendor feature: %v", err)
	}
	cat, err := functional.NewCatalog(functional.DefaultConfig(), feats)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.Add(vc); err != nil {
		t.Fatalf("Add with the vendor feature registered: %v", err)
	}
	sel, err := cat.Select("acme")
	if err != nil || len(sel) != 1 || sel[0].ID != "acme/adapter" {
		t.Fatalf("Select(acme) = %v, %v", sel, err)
	}
	_, target := startEmulator(t, fullEmulator())
	target.Features = append(target.Features, vendor)
	if _, err := functional.NewRunner(target, functional.Options{}); !errors.Is(err, functional.ErrUnknownFeature) {
		t.Fatalf("NewRunner without the registry accepted the vendor feature: %v", err)
	}
	r, err := functional.NewRunner(target, functional.Options{Features: feats})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Run(context.Background(), sel)
	if err != nil || len(rep.Results) != 1 || rep.Results[0].Status != functional.StatusPass || ran != 1 {
		t.Fatalf("vendor case with the feature on: %+v err=%v ran=%d", rep.Results, err, ran)
	}
	target.Features = target.Features[:len(target.Features)-1]
	r, err = functional.NewRunner(target, functional.Options{Features: feats})
	if err != nil {
		t.Fatal(err)
	}
	rep, _ = r.Run(context.Background(), sel)
	if len(rep.Results) != 1 || rep.Results[0].Status != functional.StatusSkip || !strings.Contains(rep.Results[0].Reason, string(vendor)) || ran != 1 {
		t.Fatalf("vendor case with the feature off: %+v ran=%d", rep.Results, ran)
	}
}

// TestConfigRequiresRegistry 证明套件参数里 invalid_request 的 requires 按传入的登记表校验：
// 内置表拒绝厂商能力（字段路径与取值写在错误里），登记过它的表接受。
func TestConfigRequiresRegistry(t *testing.T) {
	doc := "errors: {invalid: [{name: lora_bad, endpoint: chat, status: 400, params: {top_k: -5}, requires: [acme_lora]}]}\n"
	c := functional.DefaultConfig()
	err := c.Decode("inv.yaml", strings.NewReader(doc), nil)
	var fe *field.Error
	if !errors.As(err, &fe) || fe.Field != "errors.invalid[0].requires[0]" || !strings.Contains(err.Error(), "acme_lora") {
		t.Fatalf("unregistered requires: %v", err)
	}
	feats := functional.DefaultFeatures()
	if err := feats.Register("acme_lora"); err != nil {
		t.Fatal(err)
	}
	c = functional.DefaultConfig()
	if err := c.Decode("inv.yaml", strings.NewReader(doc), feats); err != nil {
		t.Fatalf("registered requires: %v", err)
	}
}

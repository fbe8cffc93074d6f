package loadgen_test

import (
	"errors"
	"github.com/vllm-cibench/cibench/field"
	"os"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/vllm-cibench/cibench/loadgen"
)

// decodeProfile 严格解码一个档位文件（与 matrix / examples 的用法一致）。
func decodeProfile(t *testing.T, path string) loadgen.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var p loadgen.Profile
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p
}

// TestShippedProfilesMatchSpecDefaults 验证仓库中的 pr/daily 档位可严格解码且取值符合需求 §5（docs/requirements.md）。
func TestShippedProfilesMatchSpecDefaults(t *testing.T) {
	pr := decodeProfile(t, "../configs/tests/perf/profiles/pr.yaml").WithDefaults()
	daily := decodeProfile(t, "../configs/tests/perf/profiles/daily.yaml").WithDefaults()
	for name, p := range map[string]loadgen.Profile{"pr": pr, "daily": daily} {
		if err := p.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Backend != loadgen.BackendChat || p.ControlMethod != loadgen.ControlClimb || !*p.IgnoreEOS || !*p.Stream {
			t.Errorf("%s: backend %s control %s", name, p.Backend, p.ControlMethod)
		}
	}
	check := func(name string, got, want any) {
		t.Helper()
		if g, w := strings.TrimSpace(strings.ReplaceAll(yamlOf(got), "\n", " ")), strings.TrimSpace(strings.ReplaceAll(yamlOf(want), "\n", " ")); g != w {
			t.Errorf("%s = %s, want %s", name, g, w)
		}
	}
	check("pr.concurrency", pr.Concurrency, []int{1, 2, 4})
	check("pr.input_length", pr.InputLength, []int{128, 2048})
	check("pr.output_length", pr.OutputLength, []int{128, 1024})
	check("pr.warmup/epochs/x", []int{pr.Warmup, pr.Epochs, pr.RequestsPerConcurrency}, []int{1, 1, 16})
	check("daily.concurrency", daily.Concurrency, []int{1, 2, 4, 8, 16})
	check("daily.input_length", daily.InputLength, []int{128, 512, 2048, 4096})
	check("daily.output_length", daily.OutputLength, []int{128, 1024, 4096})
	// 每日档的轮数有意与需求（3）不同：3 轮在真实速度下连"每组每个 worker 一个请求"的下限都放不进
	// 6 小时的作业（docs/ci.md "时间预算"，TestEstimateSpecProfilesAtRealisticSpeed）。
	check("daily.warmup/epochs/x", []int{daily.Warmup, daily.Epochs, daily.RequestsPerConcurrency}, []int{2, 1, 32})
	check("budgets", []string{pr.MaxDuration.String(), daily.MaxDuration.String()}, []string{"35m0s", "2h20m0s"})
	check("daily.climb", []int{daily.GrowthRate, int(daily.GrowthInterval / time.Millisecond), daily.InitConcurrency[0]}, []int{2, 5000, 1})
}

// yamlOf 把值编码成 YAML 文本，便于比较切片。
func yamlOf(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}

// TestProfileValidateNamesField 验证每个非法参数的错误都点名对应的 YAML 键。
func TestProfileValidateNamesField(t *testing.T) {
	base := loadgen.Profile{InputLength: []int{16}, OutputLength: []int{16}}
	neg := -0.5
	cases := map[string]func(p *loadgen.Profile){
		"backend":                  func(p *loadgen.Profile) { p.Backend = "x" },
		"input_length":             func(p *loadgen.Profile) { p.InputLength = []int{0} },
		"output_length":            func(p *loadgen.Profile) { p.OutputLength = nil },
		"concurrency":              func(p *loadgen.Profile) { p.Concurrency = []int{0} },
		"num_requests":             func(p *loadgen.Profile) { p.Concurrency, p.NumRequests = []int{1, 2}, []int{1, 2, 3} },
		"init_concurrency":         func(p *loadgen.Profile) { p.InitConcurrency = []int{0} },
		"control_method":           func(p *loadgen.Profile) { p.ControlMethod = "ramp" },
		"climb_mode":               func(p *loadgen.Profile) { p.ClimbMode = "expo" },
		"growth_rate":              func(p *loadgen.Profile) { p.GrowthRate = -1 },
		"request_rate":             func(p *loadgen.Profile) { p.RequestRate = -1 },
		"burstiness":               func(p *loadgen.Profile) { p.Burstiness = -1 },
		"temperature":              func(p *loadgen.Profile) { p.Temperature = &neg },
		"top_p":                    func(p *loadgen.Profile) { z := 0.0; p.TopP = &z },
		"top_k":                    func(p *loadgen.Profile) { k := -2; p.TopK = &k },
		"prefix_length":            func(p *loadgen.Profile) { p.PrefixLength = 16 },
		"range_ratio_below":        func(p *loadgen.Profile) { p.RangeRatioBelow = 1 },
		"range_ratio_above":        func(p *loadgen.Profile) { p.RangeRatioAbove = 2 },
		"output_range_ratio_above": func(p *loadgen.Profile) { p.OutputRangeRatioAbove = 2 },
		"dataset_type":             func(p *loadgen.Profile) { p.DatasetType = "custom" },
		"modal_type":               func(p *loadgen.Profile) { p.ModalType = "audio" },
		"image_width":              func(p *loadgen.Profile) { p.ModalType, p.ImageWidth = loadgen.ModalImageText, 99999 },
		"goodput":                  func(p *loadgen.Profile) { p.Goodput = []string{"ttft=50"} },
		"warmup":                   func(p *loadgen.Profile) { p.Warmup = -1 },
		"timestamps":               func(p *loadgen.Profile) { p.Timestamps = "hardware" },
	}
	for name, mut := range cases {
		p := base
		mut(&p)
		err := p.WithDefaults().Validate()
		var fe *field.Error
		if !errors.Is(err, loadgen.ErrInvalidProfile) || !errors.As(err, &fe) || !strings.Contains(err.Error(), fe.Field+": ") {
			t.Fatalf("%s: got %v", name, err)
		}
		if got, _ := field.Index(fe.Field); got != name {
			t.Errorf("%s: error names field %q (%v)", name, fe.Field, err)
		}
	}
	if err := base.WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestParseGoodput 验证 goodput SLO 的解析与判定边界。
func TestParseGoodput(t *testing.T) {
	s, err := loadgen.ParseGoodput([]string{"ttft:50,e2e:1000", "tpot:12.5"})
	if err != nil {
		t.Fatal(err)
	}
	if s.TTFT != 50*time.Millisecond || s.E2E != time.Second || s.TPOT != 12500*time.Microsecond {
		t.Fatalf("%+v", s)
	}
	if !s.Met(50*time.Millisecond, -1, time.Second) || s.Met(51*time.Millisecond, 0, 0) || s.Met(0, 13*time.Millisecond, 0) {
		t.Fatal("Met boundaries wrong")
	}
	for _, bad := range []string{"ttft", "ttft:0", "ttft:x", "itl:5"} {
		if _, err := loadgen.ParseGoodput([]string{bad}); !errors.Is(err, loadgen.ErrInvalidProfile) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if e, _ := loadgen.ParseGoodput(nil); !e.Empty() {
		t.Fatal("empty goodput not empty")
	}
}

// TestParseProviders 验证 providers.yaml 的解析、多地址、默认项、密钥不外泄与坏输入。
func TestParseProviders(t *testing.T) {
	f, err := os.Open("../configs/providers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ps, err := loadgen.ParseProviders(f)
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadgen.FindProvider(ps, "ascend-vllm-dp")
	if err != nil {
		t.Fatal(err)
	}
	tg := p.Target()
	if len(tg.BaseURLs) != 2 || tg.APIKey != "" || tg.Model != "Qwen3-32b" || tg.Provider != "ascend-vllm-dp" {
		t.Fatalf("%+v", tg)
	}
	if first, _ := loadgen.FindProvider(ps, ""); first.ID != "ascend-vllm" {
		t.Fatalf("default provider %s", first.ID)
	}
	if _, err := loadgen.FindProvider(ps, "nope"); !errors.Is(err, loadgen.ErrProviderNotFound) {
		t.Fatal(err)
	}
	secret := loadgen.Provider{ID: "x", APIKey: "sk-secret", BaseURLs: []string{"http://h/v1"}}
	if strings.Contains(secret.String(), "sk-secret") {
		t.Fatal("api key printed")
	}
	for _, bad := range []string{
		"providers: []",
		"providers:\n  - {id: a, base_url: 'http://x/v1'}",
		"providers:\n  - {id: a, model_name: m}",
		"providers:\n  - {base_url: 'http://x/v1', model_name: m}",
		"providers:\n  - {id: a, base_url: 'http://x/v1', model_name: m, typo: 1}",
	} {
		if _, err := loadgen.ParseProviders(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

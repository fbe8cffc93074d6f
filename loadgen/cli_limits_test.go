package loadgen_test

import (
	"errors"
	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/loadgen/dataset"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
)

// TestValidateUpperLimits 验证每个数值字段的上限与 NaN/Inf：荒谬的取值在运行前报错，
// 错误是 *field.Error，带字段（列表字段带下标）与取值。
func TestValidateUpperLimits(t *testing.T) {
	base := loadgen.Profile{InputLength: []int{16}, OutputLength: []int{16}}
	nan := math.NaN()
	cases := []struct {
		field string
		index int
		mut   func(p *loadgen.Profile)
	}{
		{"requests_per_concurrency", -1, func(p *loadgen.Profile) { p.RequestsPerConcurrency = 999999999999 }},
		{"requests_per_concurrency", -1, func(p *loadgen.Profile) { p.Concurrency, p.RequestsPerConcurrency = []int{20000}, 1000 }},
		{"concurrency", 1, func(p *loadgen.Profile) { p.Concurrency = []int{1, loadgen.MaxConcurrency + 1} }},
		{"num_requests", 0, func(p *loadgen.Profile) { p.NumRequests = []int{loadgen.MaxRequests + 1} }},
		{"input_length", 0, func(p *loadgen.Profile) { p.InputLength = []int{loadgen.MaxTokens + 1} }},
		{"output_length", 1, func(p *loadgen.Profile) { p.OutputLength = []int{1, loadgen.MaxTokens + 1} }},
		{"epochs", -1, func(p *loadgen.Profile) { p.Epochs = loadgen.MaxEpochs + 1 }},
		{"warmup", -1, func(p *loadgen.Profile) { p.Warmup = loadgen.MaxRequests + 1 }},
		{"request_rate", -1, func(p *loadgen.Profile) { p.RequestRate = nan }},
		{"request_rate", -1, func(p *loadgen.Profile) { p.RequestRate = math.Inf(1) }},
		{"burstiness", -1, func(p *loadgen.Profile) { p.Burstiness = nan }},
		{"temperature", -1, func(p *loadgen.Profile) { p.Temperature = &nan }},
		{"top_p", -1, func(p *loadgen.Profile) { p.TopP = &nan }},
		{"timeout", -1, func(p *loadgen.Profile) { p.Timeout = 48 * time.Hour }},
		{"growth_interval", -1, func(p *loadgen.Profile) { p.GrowthInterval = 48 * time.Hour }},
		{"growth_rate", -1, func(p *loadgen.Profile) { p.GrowthRate = loadgen.MaxConcurrency + 1 }},
		{"init_concurrency", 0, func(p *loadgen.Profile) { p.InitConcurrency = []int{loadgen.MaxConcurrency + 1} }},
		{"output_range_ratio_below", -1, func(p *loadgen.Profile) { p.OutputRangeRatioBelow = nan }},
		{"input_length", 0, func(p *loadgen.Profile) {
			p.DatasetType, p.Prompts = loadgen.DatasetCustom, []dataset.Prompt{{Text: "x", InputLength: 32}}
		}},
	}
	for _, c := range cases {
		p := base
		c.mut(&p)
		err := p.WithDefaults().Validate()
		var pe *field.Error
		ok := errors.As(err, &pe)
		if !ok || !errors.Is(err, loadgen.ErrInvalidProfile) {
			t.Fatalf("%s: got %v", c.field, err)
		}
		if name, i := field.Index(pe.Field); name != c.field || i != c.index {
			t.Errorf("%s: got %#v (%v)", c.field, pe, err)
		}
	}
	ok := base
	ok.Concurrency, ok.NumRequests = []int{loadgen.MaxConcurrency}, []int{loadgen.MaxRequests}
	if err := ok.WithDefaults().Validate(); err != nil {
		t.Fatalf("limits themselves rejected: %v", err)
	}
}

// TestReadProvidersNamesFileAndLine 验证 providers.yaml 的每种错误都带文件名与行号，
// base_url 必须是 http(s) URL。
func TestReadProvidersNamesFileAndLine(t *testing.T) {
	cases := map[string]string{
		"providers:\n  - id: a\n    base_url: [\n":                                           "my/providers.yaml:3:1: invalid YAML: did not find expected node content",
		"providers:\n  - id: a\n    base_url: x\n    model_name: m\n    typo: 1\n":           `my/providers.yaml:5:5: providers[0].typo: unknown field "typo"`,
		"providers:\n  - id: a\n    model_name: m\n":                                         "my/providers.yaml:2:5: providers[0].base_url: is empty (provider a)",
		"providers:\n  - id: a\n    model_name: m\n    base_url: 'localhost:8000/v1'\n":      `my/providers.yaml:4:15: providers[0].base_url[0]: want an http(s)://host[:port]/v1 URL (provider a) (got "localhost:8000/v1")`,
		"providers:\n  - id: a\n    base_url: 'http://h/v1'\n  - id: b\n    model_name: m\n": "my/providers.yaml:2:5: providers[0].model_name: is empty (provider a)",
		"":              "my/providers.yaml: file is empty",
		"providers: []": "loadgen: invalid providers: my/providers.yaml: providers: no providers",
	}
	for body, want := range cases {
		_, err := loadgen.ReadProviders(strings.NewReader(body), "my/providers.yaml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", body, err, want)
		}
	}
	if _, err := loadgen.ReadProviders(strings.NewReader(strings.Repeat("#", 2<<20)), "big.yaml"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized file: %v", err)
	}
}

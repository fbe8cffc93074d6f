package emulator_test

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/runtype"
)

// TestScenarioYAMLCarriesPerfModel 验证性能模型的字段能写在场景 YAML 的 emulator: 下
// （emulator.Mode 的登记项把它解码成 emulator.Config），取值原样到达配置，错误的取值在加载时报告并点名字段。
func TestScenarioYAMLCarriesPerfModel(t *testing.T) {
	modes, err := deploy.NewModes(emulator.Mode())
	if err != nil {
		t.Fatal(err)
	}
	load := func(emu string) (*matrix.Matrix, error) {
		return matrix.Load(fstest.MapFS{
			"scenarios/emulator.yaml": {Data: []byte("mode: emulator\nserved_model_name: m\nemulator:\n" + emu)},
			"matrix.yaml":             {Data: []byte("scenarios:\n  emulator: {pr: {perf: {enabled: false}, accuracy: {enabled: false}}}\n")},
		}, matrix.WithModes(modes))
	}
	m, err := load("  enable_prefix_caching: true\n  block_size: 32\n  num_kv_blocks: 2048\n  max_num_seqs: 8\n" +
		"  batch_factor: 2.5\n  enable_prompt_tokens_details: true\n  pd_role: decode\n  kv_transfer_per_token: 20us\n")
	if err != nil {
		t.Fatal(err)
	}
	plans, err := m.Plan(runtype.PR)
	if err != nil || len(plans) != 1 {
		t.Fatalf("plans %v %v", plans, err)
	}
	c := plans[0].Scenario.Deploy.(*emulator.Plan).Config
	if !c.EnablePrefixCaching || c.BlockSize != 32 || c.NumKVBlocks != 2048 || c.BatchFactor != 2.5 ||
		!c.EnablePromptTokensDetails || c.PDRole != "decode" || c.KVTransferPerToken != 20*time.Microsecond {
		t.Fatalf("emulator config from YAML: %+v", c)
	}
	_, err = load("  num_kv_blocks: 10\n")
	if err == nil || !strings.Contains(err.Error(), "NumKVBlocks=10") || !strings.Contains(err.Error(), "scenarios/emulator.yaml") {
		t.Fatalf("bad capacity must be reported with file and field: %v", err)
	}
}

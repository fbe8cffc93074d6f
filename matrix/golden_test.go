package matrix_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/runtype"
)

// update 重新生成 testdata/golden 下的期望文件：go test ./matrix -run Golden -update
var update = flag.Bool("update", false, "rewrite golden files")

// TestGoldenConfigs 加载仓库自带的 configs/ 示例树，把 pr 与 daily 的默认计划
// 以及显式选择全部场景的计划序列化后与 golden 文件逐字节比较：示例配置的任何
// 语义变化（默认值、覆盖项、引用）都会在评审中以 diff 的形式出现。
func TestGoldenConfigs(t *testing.T) {
	m, err := load(os.DirFS("../configs"), matrix.WithRoot("configs"))
	if err != nil {
		t.Fatalf("the shipped configs/ must load:\n%v", err)
	}
	type planDump struct {
		RunType   matrix.RunType
		Selection string
		Plans     []matrix.ScenarioPlan
		// Deploy 是每个场景的部署方式校验后的配置（Scenario.Deploy 不进 JSON：团队的 Plan 未必可序列化）。
		Deploy map[string]any
	}
	var dumps []planDump
	for _, rt := range []matrix.RunType{runtype.PR, runtype.Daily} {
		def, err := m.Plan(rt)
		if err != nil {
			t.Fatal(err)
		}
		if len(def) != 1 || def[0].Scenario.Name != "emulator" {
			t.Fatalf("default %s plan must be only the emulator, got %d scenarios", rt, len(def))
		}
		var all []string
		for _, e := range m.Entries {
			if (rt == runtype.PR && e.PR != nil) || (rt == runtype.Daily && e.Daily != nil) {
				all = append(all, e.Scenario)
			}
		}
		sel, err := m.Plan(rt, all...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range sel {
			// 套件参数对每个计划都相同且由 functional 包负责，golden 只记录选择本身。
			sel[i].Functional.Config = functional.Config{}
		}
		dep := map[string]any{}
		for _, p := range sel {
			dep[p.Scenario.Name] = p.Scenario.Deploy
		}
		dumps = append(dumps, planDump{RunType: rt, Selection: "all", Plans: sel, Deploy: dep})
	}
	got, err := json.MarshalIndent(dumps, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "golden", "configs.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("plan of configs/ differs from %s; run `go test ./matrix -run Golden -update` and review the diff", golden)
	}
}

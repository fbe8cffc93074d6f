package kube_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/deploy/kube"
	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/runtype"
)

// update 重新生成 testdata/golden/shipped_plans.json：go test -run ShippedScenarios -update
var update = flag.Bool("update", false, "rewrite golden files")

// modes 返回参考驱动用的登记表：根模块的内置方式加上本模块的 kube.Modes()（一行登记）。
func modes(t *testing.T) *deploy.Modes {
	t.Helper()
	r := deploy.DefaultModes()
	if err := r.Register(emulator.Mode()); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(kube.Modes()...); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestShippedScenarios 用真实的 kube.Modes() 加载仓库自带的 configs/，把两个 k8s 场景校验后的
// Plan（清单、角色、服务、超时……）与 golden 文件逐字节比较。根模块的 matrix golden 只能用替身
// 记录 k8s: 块的原文（根模块不导入本模块），k8s 配置的语义变化在这里以 diff 的形式出现。
func TestShippedScenarios(t *testing.T) {
	m, err := matrix.Load(os.DirFS("../../configs"), matrix.WithRoot("configs"), matrix.WithModes(modes(t)), matrix.WithEvals(simpleevals.Registry()))
	if err != nil {
		t.Fatalf("the shipped configs/ must load with kube.Modes():\n%v", err)
	}
	plans := map[string]any{}
	for name, sc := range m.Scenarios {
		if sc.Mode != kube.ModeHybrid && sc.Mode != kube.ModePD {
			continue
		}
		p, ok := sc.Deploy.(*kube.Plan)
		if !ok {
			t.Fatalf("%s: Deploy is %T, want *kube.Plan", name, sc.Deploy)
		}
		plans[name] = p
	}
	names := make([]string, 0, len(plans))
	for n := range plans {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) != 2 || !strings.HasPrefix(names[0], "k8s_hybrid_") || !strings.HasPrefix(names[1], "k8s_pd_") {
		t.Fatalf("shipped k8s scenarios = %v, want one hybrid and one PD", names)
	}
	// 两种运行类型都能为它们排出计划（矩阵引用、档位都在）。
	for _, rt := range []matrix.RunType{runtype.PR, runtype.Daily} {
		if _, err := m.Plan(rt, names...); err != nil && !strings.Contains(err.Error(), "has no "+string(rt)+" entry") {
			t.Errorf("%s plan of %v: %v", rt, names, err)
		}
	}
	got, err := json.MarshalIndent(plans, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "golden", "shipped_plans.json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("k8s plans of configs/ differ from %s; run `go test -run ShippedScenarios -update` and review the diff\n%s", golden, got)
	}
}

// tree 是一个最小配置树：一个 k8s-pd 场景（两份清单）与它需要的档位、矩阵；files 覆盖其中的文件。
func tree(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{
		"scenarios/pd.yaml": {Data: []byte(`mode: k8s-pd
served_model_name: r1
quant: w4a8
pd: {prefill: 2, decode: 1}
k8s:
  namespace: default
  service_name: r1
  roles:
    - {name: prefill, manifests: [k8s/prefill.yaml]}
    - {name: decode, manifests: [k8s/decode.yaml]}
`)},
		"k8s/prefill.yaml":            {Data: []byte("kind: Deployment\n")},
		"k8s/decode.yaml":             {Data: []byte("kind: Deployment\n")},
		"tests/perf/profiles/pr.yaml": {Data: []byte("concurrency: [1]\ninput_length: [16]\noutput_length: [8]\n")},
		"tests/accuracy/pr.yaml":      {Data: []byte("debug: true\ndatasets: [{name: gpqa, threshold: 0.2}]\n")},
		"matrix.yaml":                 {Data: []byte("scenarios:\n  pd: {pr: {}}\n")},
	}
	for k, v := range files {
		fsys[k] = &fstest.MapFile{Data: []byte(v)}
	}
	return fsys
}

// TestScenarioPlans 检查 k8s 块经 kube.Modes() 解码后的 Plan（缺省值来自场景），以及块里的
// 错误在任何东西运行之前带 文件:行:列 报出；没有登记 kube.Modes() 时，错误说明去哪里找它们。
func TestScenarioPlans(t *testing.T) {
	m, err := matrix.Load(tree(nil), matrix.WithRoot("configs"), matrix.WithModes(modes(t)), matrix.WithEvals(simpleevals.Registry()))
	if err != nil {
		t.Fatal(err)
	}
	if kc := m.Scenarios["pd"].Deploy.(*kube.Plan).Config; kc.Model != "r1" || kc.HealthPath != "/health" || kc.StartupTimeout != 20*time.Minute || len(kc.Roles) != 2 {
		t.Fatalf("k8s config = %+v", kc)
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"pd without roles", map[string]string{"scenarios/pd.yaml": "mode: k8s-pd\nserved_model_name: r1\nk8s: {manifests: [k8s/decode.yaml]}\npd: {prefill: 0, decode: 1}\n"},
			[]string{`pd.yaml:4:15: pd.prefill: pd.prefill must be at least 1 (got "0")`, `pd.yaml:3:6: k8s.roles: mode k8s-pd needs k8s.roles`}},
		{"missing manifest", map[string]string{"scenarios/pd.yaml": "mode: k8s-pd\nserved_model_name: r1\npd: {prefill: 1, decode: 1}\nk8s:\n  roles:\n    - {name: p, manifests: [k8s/prefill.yaml, k8s/nope.yaml]}\n"},
			[]string{`pd.yaml:6:47: k8s.roles[0].manifests[1]: manifest not found in the config directory (got "k8s/nope.yaml")`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := matrix.Load(tree(tc.files), matrix.WithRoot("configs"), matrix.WithModes(modes(t)), matrix.WithEvals(simpleevals.Registry()))
			var fe *field.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *field.Error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%v\nwant substring:\n%s", err, w)
				}
			}
		})
	}
	// 不登记 kube.Modes() 的程序（pipeline.DefaultModes() 就不登记）：mode 被点名拒绝，并说明一行登记。
	_, err = matrix.Load(tree(nil), matrix.WithRoot("configs"), matrix.WithEvals(simpleevals.Registry()))
	for _, w := range []string{`configs/scenarios/pd.yaml:1:7: mode: deploy: unknown mode "k8s-pd"`, "github.com/vllm-cibench/cibench/deploy/kube", "modes.Register(kube.Modes()...)"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("without kube.Modes(): error %v, want substring %q", err, w)
		}
	}
	if !errors.Is(err, deploy.ErrUnknownMode) {
		t.Errorf("error %v does not wrap deploy.ErrUnknownMode", err)
	}
}

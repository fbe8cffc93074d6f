package matrix_test

import (
	"fmt"
	"testing/fstest"

	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/runtype"
)

// Example 加载一个最小配置树并列出 PR 运行的计划；真实使用时传入
// os.DirFS("configs")。部署方式与评测是调用方给的登记表：pipeline.DefaultModes() 含本模块的
// 内置方式（external、local、emulator；Kubernetes 方式在 deploy/kube 模块里，由 kube.Modes() 登记），
// simpleevals.Registry() 含内置评测。
func Example() {
	fsys := fstest.MapFS{
		"scenarios/emulator.yaml":     {Data: []byte("mode: emulator\nserved_model_name: cibench-emulator\n")},
		"tests/perf/profiles/pr.yaml": {Data: []byte("concurrency: [1, 2]\ninput_length: [128]\noutput_length: [128]\n")},
		"tests/accuracy/pr.yaml":      {Data: []byte("debug: true\ndatasets: [{name: gpqa, threshold: 0.2}]\n")},
		"matrix.yaml":                 {Data: []byte("scenarios:\n  emulator:\n    pr: {functional: {suites: [chat_core]}}\n")},
	}
	m, err := matrix.Load(fsys, matrix.WithModes(pipeline.DefaultModes()), matrix.WithEvals(simpleevals.Registry()))
	if err != nil {
		fmt.Println(err)
		return
	}
	plans, _ := m.Plan(runtype.PR)
	for _, p := range plans {
		fmt.Println(p.Scenario.Name, p.Scenario.Mode, p.Functional.Select, p.Perf.Profiles[0].Name, p.Perf.Profiles[0].Profile.Concurrency, p.Perf.Timeout)
	}
	// Output:
	// emulator emulator [chat_core] pr [1 2] 1h0m0s
}

// ExampleLoad 展示错误如何指明文件、行列、字段路径与取值。
func ExampleLoad() {
	fsys := fstest.MapFS{
		"scenarios/emulator.yaml": {Data: []byte("mode: emulatr\nserved_model_name: e\nquant: INT4\n")},
		"matrix.yaml":             {Data: []byte("scenarios:\n  emulator: {pr: {perf: {enabled: false}, accuracy: {enabled: false}}}\n")},
	}
	_, err := matrix.Load(fsys, matrix.WithRoot("configs"), matrix.WithModes(pipeline.DefaultModes()))
	fmt.Println(err)
	// Output:
	// matrix: invalid config: configs/scenarios/emulator.yaml:1:7: mode: deploy: unknown mode "emulatr" (registered: external, local, emulator) (got "emulatr")
	// matrix: invalid config: configs/scenarios/emulator.yaml:3:8: quant: invalid quant: "INT4": want a lower-case letter followed by [a-z0-9_.-] (got "INT4")
}

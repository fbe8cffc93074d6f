package matrix_test

import (
	"errors"
	"testing"
	"testing/fstest"

	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/runtype"
)

// FuzzLoad 把任意字节分别作为场景文件、矩阵文件和阶段配置交给加载器：
// 不得 panic 或卡死，失败时每一条错误都必须是指明文件的 *field.Error。
func FuzzLoad(f *testing.F) {
	for _, v := range validTree() {
		f.Add(v.Data)
	}
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("scenarios:\n  emulator: {pr: {perf: {profiles: [pr, pr]}}}\n"))
	f.Add([]byte("mode: k8s-pd\nserved_model_name: x\npd: {prefill: -1}\nk8s: {a: 1}\n"))
	f.Add([]byte("- 1\n- [2, {3: 4}]\n"))
	f.Add([]byte("health: {timeout: 1h, interval: -1s}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"scenarios/emulator.yaml", "matrix.yaml", "tests/perf/profiles/pr.yaml"} {
			tree := validTree()
			tree[name] = &fstest.MapFile{Data: data}
			m, err := load(tree)
			if err == nil {
				if m == nil {
					t.Fatal("nil matrix without error")
				}
				if _, err := m.Plan(runtype.PR); err != nil {
					t.Fatalf("loaded tree cannot be planned: %v", err)
				}
				continue
			}
			for _, e := range flatten(err) {
				var me *field.Error
				if !errors.As(e, &me) || me.File == "" {
					t.Fatalf("error without file: %v", e)
				}
			}
		}
	})
}

// flatten 展开 errors.Join 合并的错误。
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

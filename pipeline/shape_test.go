package pipeline_test

import (
	"reflect"
	"testing"

	"github.com/vllm-cibench/cibench/pipeline"
)

// TestOptionsGroupsShareNoFieldName 守住 Options 的形状：五个嵌入的分组（Selection、Outputs、
// Extensions、Environment 与 Hooks）的字段都被提升到 Options 上（o.RunType、o.Modes……），两个分组一旦有
// 同名字段，提升就失效，写 o.X 的调用方不再编译。新增字段时名字必须在全部分组中唯一，这个测试让
// 这种破坏在 CI 里而不是在用户那里出现；Options 本身也不再有隐藏的测试字段（只有这五组）。
func TestOptionsGroupsShareNoFieldName(t *testing.T) {
	ot := reflect.TypeFor[pipeline.Options]()
	seen := map[string]string{}
	groups := 0
	for i := range ot.NumField() {
		g := ot.Field(i)
		if !g.IsExported() {
			t.Errorf("Options has an unexported field %s", g.Name)
			continue
		}
		if g.Type.Kind() != reflect.Struct {
			t.Errorf("Options.%s is not a group struct", g.Name)
			continue
		}
		groups++
		for j := range g.Type.NumField() {
			f := g.Type.Field(j)
			if prev, ok := seen[f.Name]; ok {
				t.Errorf("field %s is in both %s and %s: promotion to Options.%s breaks", f.Name, prev, g.Name, f.Name)
			}
			seen[f.Name] = g.Name
		}
	}
	if groups != 5 || len(seen) < 30 {
		t.Fatalf("found %d groups and %d fields; the reflection walk is broken", groups, len(seen))
	}
}

package yamlstrict

import (
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// CaptureBlocks 返回一个 Custom 钩子：目标值的类型是 t 时，把节点原样保存为 YAML 文本与它在
// 文件中的位置，而不解码它（延迟到知道目标结构体时再严格解码，例如功能用例的参数块）。t 必须是
// 有 string 字段 YAML、File 与 int 字段 Line、Column 的结构体（functional.CaseParams）；这样公开
// 类型里不出现 yaml 库的类型。空节点（null）留下零值；不是映射的节点记一条错误。以 t 为值的
// 映射（map[string]t，如 Config.Params）按键合并（Decoder.MergeMap）。
func CaptureBlocks(t reflect.Type) func(d *Decoder, n *yaml.Node, path string, v reflect.Value) bool {
	idx := map[string]int{}
	for _, name := range []string{"YAML", "File", "Line", "Column"} {
		f, ok := t.FieldByName(name)
		if !ok {
			panic("yamlstrict: CaptureBlocks: " + t.String() + " has no field " + name)
		}
		idx[name] = f.Index[0]
	}
	yamlF, fileF, lineF, colF := idx["YAML"], idx["File"], idx["Line"], idx["Column"]
	return func(d *Decoder, n *yaml.Node, path string, v reflect.Value) bool {
		if v.Kind() == reflect.Map && v.Type().Elem() == t && v.Type().Key().Kind() == reflect.String {
			// 每个块属于一个用例，彼此独立：几个文件叠加时按键合并，整体替换会让前一个文件里
			// 别的用例的参数悄悄消失。值逐个经 d.Decode 回到本钩子。
			d.MergeMap(n, path, v)
			return true
		}
		if v.Type() != t {
			return false
		}
		if IsNull(n) {
			return true
		}
		if n.Kind != yaml.MappingNode {
			d.Errorf(n, path, ScalarValue(n), "must be a mapping of parameter names to values, got %s", Describe(n))
			return true
		}
		b, err := yaml.Marshal(n)
		if err != nil {
			d.Errorf(n, path, "", "cannot keep the block: %v", err)
			return true
		}
		v.Field(yamlF).SetString(strings.TrimSuffix(string(b), "\n"))
		v.Field(fileF).SetString(d.File)
		v.Field(lineF).SetInt(int64(n.Line))
		v.Field(colF).SetInt(int64(n.Column))
		return true
	}
}

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
// 映射（map[string]t，如 Config.Params）按键合并，见 mergeBlocks。
func CaptureBlocks(t reflect.Type) func(d *Decoder, n *yaml.Node, path string, v reflect.Value) bool {
	for _, f := range []string{"YAML", "File", "Line", "Column"} {
		if _, ok := t.FieldByName(f); !ok {
			panic("yamlstrict: CaptureBlocks: " + t.String() + " has no field " + f)
		}
	}
	var capture func(d *Decoder, n *yaml.Node, path string, v reflect.Value) bool
	capture = func(d *Decoder, n *yaml.Node, path string, v reflect.Value) bool {
		if v.Kind() == reflect.Map && v.Type().Elem() == t && v.Type().Key().Kind() == reflect.String {
			mergeBlocks(d, n, path, v, capture)
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
		v.FieldByName("YAML").SetString(strings.TrimSuffix(string(b), "\n"))
		v.FieldByName("File").SetString(d.File)
		v.FieldByName("Line").SetInt(int64(n.Line))
		v.FieldByName("Column").SetInt(int64(n.Column))
		return true
	}
	return capture
}

// mergeBlocks 解码“名字 → 块”的映射（如 params:）。与 decodeMap 不同，它按键合并进已有的映射而不是
// 整体替换：几个配置文件按文件名顺序叠加时，后面的文件覆盖同一个键的块，其余键的块都保留——
// 每个块属于一个用例，彼此独立，整体替换会让前一个文件里别的用例的参数悄悄消失。
func mergeBlocks(d *Decoder, n *yaml.Node, path string, v reflect.Value, capture func(*Decoder, *yaml.Node, string, reflect.Value) bool) {
	if IsNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, path, ScalarValue(n), "want a mapping, got %s", Describe(n))
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.Errorf(k, path, "", "mapping keys must be scalars, got %s", Describe(k))
			continue
		}
		fp := JoinPath(path, k.Value)
		if seen[k.Value] {
			d.Errorf(k, fp, "", "duplicate key")
			continue
		}
		seen[k.Value] = true
		if _, ok := d.Pos[fp]; !ok {
			d.Pos[fp] = val
		}
		elem := reflect.New(v.Type().Elem()).Elem()
		capture(d, val, fp, elem)
		v.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), elem)
	}
}

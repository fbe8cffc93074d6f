package matrix

import (
	"errors"
	"reflect"

	"gopkg.in/yaml.v3"
)

// Block 是配置树中一段由别的包解释的 YAML（例如某个阶段自己的配置结构），
// 它记住自己来自哪个文件、哪个字段路径，因此 Decode 报出的错误依然能精确
// 指向 "文件:行:列 字段路径"。
//
// 零值表示配置中没有这一段。
type Block struct {
	file string
	path string
	node *yaml.Node
}

// decodeNode 保存节点而不解释它；null 视为缺省。
func (b *Block) decodeNode(d *decoder, n *yaml.Node, path string) {
	if isNull(n) {
		*b = Block{}
		return
	}
	*b = Block{file: d.File, path: path, node: n}
}

// IsZero 报告配置中是否没有这一段。
func (b Block) IsZero() bool { return b.node == nil }

// File 返回这一段所在文件的显示路径。
func (b Block) File() string { return b.file }

// Line 返回这一段在文件中的起始行（从 1 开始；零值 Block 为 0）。
func (b Block) Line() int {
	if b.node == nil {
		return 0
	}
	return b.node.Line
}

// Decode 用与 Load 相同的严格规则（未知字段、类型不符、重复键都报错）把这一段
// 解码进 out（必须是非 nil 指针）。零值 Block 不修改 out 并返回 nil，
// 这样调用方预先填好的默认值得以保留。返回的错误可用 errors.As 取出 *field.Error。
func (b Block) Decode(out any) error {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return errors.New("matrix: Block.Decode: out must be a non-nil pointer")
	}
	if b.node == nil {
		return nil
	}
	d := newDecoder(b.file, nil)
	d.Decode(b.node, b.path, v.Elem())
	return joinErrors(d.Errs)
}

package matrix

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/field"

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
	// at 是块缺省时错误定位到的节点（例如场景的 mode 字段）；可为 nil。
	at *yaml.Node
}

var _ deploy.Block = Block{}

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

// Errorf 返回定位到块内字段路径 rel（相对于块，如 "roles[0].manifests[1]"；空表示块本身）的
// *field.Error（包装 ErrConfig）：找得到的最深一级节点给出行列，字段路径是块路径加 rel。
// 块缺省时定位到块应在的地方（例如场景的 mode 字段），没有可定位的节点时只给出文件。
// 它让由别的包解释的块（部署方式、团队用例参数）的语义错误与解码错误一样指向 "文件:行:列"。
func (b Block) Errorf(rel, value, format string, args ...any) error {
	full := b.path
	if rel != "" {
		if full == "" || strings.HasPrefix(rel, "[") {
			full += rel
		} else {
			full += "." + rel
		}
	}
	e := &field.Error{File: b.file, Field: full, Value: value, Reason: fmt.Sprintf(format, args...), Err: ErrConfig}
	n := b.at
	if b.node != nil {
		n = nodeAt(b.node, rel)
	}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	return e
}

// nodeAt 沿相对路径 rel（"a.b[2].c"）从 n 向下找节点，返回能找到的最深一级。
func nodeAt(n *yaml.Node, rel string) *yaml.Node {
	for _, seg := range pathSegments(rel) {
		next := child(n, seg)
		if next == nil {
			return n
		}
		n = next
	}
	return n
}

// pathSegments 把 "a.b[2].c" 拆成 ["a" "b" "[2]" "c"]。
func pathSegments(rel string) []string {
	var out []string
	for _, part := range strings.Split(rel, ".") {
		for part != "" {
			i := strings.IndexByte(part, '[')
			switch {
			case i < 0:
				out = append(out, part)
				part = ""
			case i > 0:
				out = append(out, part[:i])
				part = part[i:]
			default:
				j := strings.IndexByte(part, ']')
				if j < 0 {
					return out
				}
				out = append(out, part[:j+1])
				part = part[j+1:]
			}
		}
	}
	return out
}

// child 返回映射节点的键 seg 的值，或序列节点的第 i 项（seg 为 "[i]"）；找不到返回 nil。
func child(n *yaml.Node, seg string) *yaml.Node {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if strings.HasPrefix(seg, "[") {
		i, err := strconv.Atoi(strings.Trim(seg, "[]"))
		if err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
			return nil
		}
		return n.Content[i]
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == seg {
			return n.Content[i+1]
		}
	}
	return nil
}

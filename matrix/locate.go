package matrix

import (
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/vllm-cibench/cibench/field"
)

// located 是一个已解码的片段：解码器记录了其中每个字段路径的节点，base 是
// 片段在文件中的字段路径前缀（档位文件为 ""，override 为 "scenarios.x.pr.perf.override"）。
type located struct {
	d    *decoder
	base string
}

// decodeLocated 严格解码 b 进 out，返回记录了字段位置的解码器；解码错误计入 loader。
func (l *loader) decodeLocated(b Block, out any) (located, bool) {
	d := newDecoder(b.file, l.feats)
	if b.node != nil {
		d.Decode(b.node, b.path, reflectValue(out))
	}
	l.errs = append(l.errs, d.Errs...)
	return located{d: d, base: b.path}, len(d.Errs) == 0
}

// profileErr 把 loadgen.Profile.Validate 的错误（*field.Error：YAML 键，列表字段带下标
// "concurrency[2]"，取值）记在出错字段所在的文件:行:列，而不是文件开头或 override: 那一行。
// where 按优先顺序给出可能写了该字段的片段（先 override，后档位文件）；字段是列表时指向
// 出错的那一项。context 在字段不在 where[0] 中时加在原因前面，说明是哪两份配置叠加后出的错。
// 字段哪里都没写（取了默认值）时记在 where[0] 的片段本身。
func (l *loader) profileErr(err error, context string, where ...located) {
	if err == nil {
		return
	}
	var fe *field.Error
	if !errors.As(err, &fe) {
		w := where[0]
		l.errs = append(l.errs, w.at(w.base, "", strings.TrimSpace(context+err.Error())))
		return
	}
	name, idx := field.Index(fe.Field)
	for i, w := range where {
		p := joinPath(w.base, name)
		n, ok := w.d.Pos[p]
		if !ok {
			continue
		}
		if n.Kind == yaml.SequenceNode && idx >= 0 && idx < len(n.Content) {
			p, n = fmt.Sprintf("%s[%d]", p, idx), n.Content[idx]
		}
		msg := fe.Reason
		if i > 0 {
			msg = context + fe.Reason
		}
		e := w.at(p, fe.Value, msg)
		e.Line, e.Col = n.Line, n.Column
		l.errs = append(l.errs, e)
		return
	}
	w := where[0]
	l.errs = append(l.errs, w.at(w.base, fe.Value, fmt.Sprintf("%s%s: %s", context, name, fe.Reason)))
}

// at 在片段内字段路径 p（找不到则逐级向上）处构造一条错误。
func (w located) at(p, value, msg string) *field.Error {
	n := len(w.d.Errs)
	w.d.ErrAt(p, value, "%s", msg)
	e := w.d.Errs[n]
	w.d.Errs = w.d.Errs[:n]
	return e
}

// pos 返回片段根节点的 "文件:行:列"，用于在另一个文件的错误里指明叠加的来源。
func (w located) pos() string {
	if n, ok := w.d.Pos[w.base]; ok {
		return fmt.Sprintf("%s:%d:%d", w.d.File, n.Line, n.Column)
	}
	return w.d.File
}

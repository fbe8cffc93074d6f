package matrix

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/vllm-cibench/cibench/internal/yamlstrict"
	"github.com/vllm-cibench/cibench/loadgen"
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

// profileErr 把 loadgen.Profile.Validate 的错误（*loadgen.ProfileError：YAML 键、列表下标、
// 取值）记在出错字段所在的文件:行:列，而不是文件开头或 override: 那一行。where 按优先
// 顺序给出可能写了该字段的片段（先 override，后档位文件）；字段是列表时指向出错的那一项。
// context 在字段不在 where[0] 中时加在原因前面，说明是哪两份配置叠加后出的错。字段哪里
// 都没写（取了默认值）时记在 where[0] 的片段本身。
func (l *loader) profileErr(err error, context string, where ...located) {
	if err == nil {
		return
	}
	var pe *loadgen.ProfileError
	if !errors.As(err, &pe) {
		w := where[0]
		l.errs = append(l.errs, w.at(w.base, "", strings.TrimSpace(context+err.Error())))
		return
	}
	value := fmt.Sprint(pe.Value)
	for i, w := range where {
		for _, f := range strings.Split(pe.Field, "/") {
			p := joinPath(w.base, f)
			n, ok := w.d.Pos[p]
			if !ok {
				continue
			}
			if n.Kind == yaml.SequenceNode && pe.Index >= 0 && pe.Index < len(n.Content) {
				p, n = fmt.Sprintf("%s[%d]", p, pe.Index), n.Content[pe.Index]
			}
			msg := pe.Reason
			if i > 0 {
				msg = context + pe.Reason
			}
			e := w.at(p, value, msg)
			e.Line, e.Column = n.Line, n.Column
			l.errs = append(l.errs, e)
			return
		}
	}
	w := where[0]
	l.errs = append(l.errs, w.at(w.base, value, fmt.Sprintf("%s%s: %s", context, pe.Field, pe.Reason)))
}

// at 在片段内字段路径 p（找不到则逐级向上）处构造一条错误。
func (w located) at(p, value, msg string) *yamlstrict.Error {
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

// strictErrors 取出 err（可能经 %w 包装、errors.Join 合并）中的全部 *yamlstrict.Error，
// 使别的包用共用解码器读到的错误以同样的文件:行:列出现在矩阵的错误列表里。
func strictErrors(err error) []*yamlstrict.Error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*yamlstrict.Error
		for _, e := range j.Unwrap() {
			out = append(out, strictErrors(e)...)
		}
		return out
	}
	var se *yamlstrict.Error
	if errors.As(err, &se) {
		return []*yamlstrict.Error{se}
	}
	if u := errors.Unwrap(err); u != nil {
		return strictErrors(u)
	}
	return nil
}

// fileLineRe 匹配别的包报告的 "文件:行: 原因"（只有行号的旧式位置）。
var fileLineRe = regexp.MustCompile(`^:(\d+): `)

// fileError 把别的包对文件 file 的错误（"pkg: file[:行]: 原因"）转换成一条 Error，
// 去掉与 Error 自身重复的包名和文件名。
func fileError(file string, err error) *yamlstrict.Error {
	msg := err.Error()
	if i := strings.Index(msg, ": "); i > 0 && !strings.ContainsAny(msg[:i], " /:") {
		msg = msg[i+2:]
	}
	e := &yamlstrict.Error{File: file, Msg: msg}
	if rest, ok := strings.CutPrefix(msg, file); ok {
		e.Msg = strings.TrimPrefix(rest, ": ")
		if m := fileLineRe.FindStringSubmatch(rest); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Column, e.Msg = 1, rest[len(m[0]):]
		}
	}
	return e
}

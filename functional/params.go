package functional

import (
	"errors"
	"reflect"
	"strings"

	"github.com/vllm-cibench/cibench/internal/yamlstrict"
)

// ErrParams 表示用例参数（功能配置的 params.<ID>）无法解码进用例给的结构体。
var ErrParams = errors.New("functional: invalid case params")

// Params 把功能配置中 params.<本用例 ID>: 块严格地解码进 out（非 nil 指针，通常预先填好默认值）：
// 未知字段、类型不符、重复键都是错误（*field.Error，字段路径 params.<ID>.…，带行列；包装 ErrParams）。
// 配置里没有这一块时 out 不变、返回 nil。声明了 Case.Params 的用例，这些错误在 matrix 加载配置
// 时已经带着文件名报告过，运行时不会再遇到。
func (t *T) Params(out any) error {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return errors.New("functional: T.Params: out must be a non-nil pointer")
	}
	if t.cfg == nil {
		return nil
	}
	p, ok := t.cfg.Params[t.id]
	if !ok || strings.TrimSpace(p.YAML) == "" {
		return nil
	}
	d := yamlstrict.NewDecoder(p.File)
	if root := d.ParseDocument([]byte(p.YAML)); root != nil {
		d.Decode(root, "params."+t.id, v.Elem())
	}
	errs := make([]error, 0, len(d.Errs))
	for _, e := range d.Errs {
		c := *e
		c.Err = ErrParams
		// 块是重新写出的文本，其中的行号不是配置文件的：定位到块在文件中的开头。
		c.Line, c.Col = p.Line, p.Column
		errs = append(errs, &c)
	}
	return errors.Join(errs...)
}

// captureParams 是解码功能配置时的 yamlstrict 钩子：CaseParams 类型的值原样保存块的 YAML 文本
// 与位置（见 CaseParams），不在加载时解码——那时还不知道用例的参数结构体（matrix 加载时对声明了
// Case.Params 的用例另行严格校验）。matrix 的加载器用同一个 yamlstrict.CaptureBlocks 建自己的钩子。
var captureParams = yamlstrict.CaptureBlocks(reflect.TypeOf(CaseParams{}))

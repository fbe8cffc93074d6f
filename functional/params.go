package functional

import (
	"errors"
	"reflect"

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
	n, ok := t.cfg.Params[t.id]
	if !ok {
		return nil
	}
	d := yamlstrict.NewDecoder("")
	d.Decode(&n, "params."+t.id, v.Elem())
	errs := make([]error, 0, len(d.Errs))
	for _, e := range d.Errs {
		c := *e
		c.Err = ErrParams
		errs = append(errs, &c)
	}
	return errors.Join(errs...)
}

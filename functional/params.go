package functional

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/vllm-cibench/cibench/internal/yamlstrict"
)

// ErrParams 表示用例参数（功能配置的 params.<ID>）无法解码进用例给的结构体。
var ErrParams = errors.New("functional: invalid case params")

// Params 把功能配置中 params.<本用例 ID>: 块严格地解码进 out（非 nil 指针）：未知字段、类型不符、
// 重复键都是错误（*field.Error，字段路径 params.<ID>.…，带行列；包装 ErrParams）。
//
// 默认值只写一处：用例声明了 Case.Params 且 *out 是零值、类型与之相同时，*out 先被设为 Case.Params
// 的副本，再叠加 YAML；已经填了值的 out 保留调用方的值（只叠加 YAML）。配置里没有这一块时只做前一步。
// 声明了 Case.Params 的用例，块里的错误在任何用例运行之前就已报告（matrix 加载配置、Catalog.Add、
// Runner.Run 都严格校验），运行时不会再遇到。
func (t *T) Params(out any) error {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return errors.New("functional: T.Params: out must be a non-nil pointer")
	}
	if dv := reflect.ValueOf(t.params); dv.Kind() == reflect.Pointer && !dv.IsNil() && dv.Type() == v.Type() && v.Elem().IsZero() {
		v.Elem().Set(dv.Elem())
	}
	if t.cfg == nil {
		return nil
	}
	p, ok := t.cfg.Params[t.id]
	if !ok {
		return nil
	}
	return decodeParams(p, t.id, v.Elem())
}

// decodeParams 把参数块 p 严格解码进 out（可寻址的值），错误包装 ErrParams、定位到块在文件中的开头。
func decodeParams(p CaseParams, id string, out reflect.Value) error {
	if strings.TrimSpace(p.YAML) == "" {
		return nil
	}
	d := yamlstrict.NewDecoder(p.File)
	if root := d.ParseDocument([]byte(p.YAML)); root != nil {
		d.Decode(root, "params."+id, out)
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

// checkCaseParams 在任何用例运行之前校验声明了 Case.Params 的用例 cs 的参数块（params 里没有它时
// 什么也不做）：块严格解码进 Case.Params 的副本（调用方的默认值不被改动）。Case.Params 不是指向
// 结构体的非 nil 指针也是错误。错误包装 ErrParams。
func checkCaseParams(params map[string]CaseParams, cs Case) error {
	if cs.Params == nil {
		return nil
	}
	pv := reflect.ValueOf(cs.Params)
	if pv.Kind() != reflect.Pointer || pv.IsNil() || pv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("%w: case %s: Case.Params must be a non-nil pointer to a struct (got %T)", ErrParams, cs.ID, cs.Params)
	}
	p, ok := params[cs.ID]
	if !ok {
		return nil
	}
	v := reflect.New(pv.Elem().Type())
	v.Elem().Set(pv.Elem())
	return decodeParams(p, cs.ID, v.Elem())
}

// captureParams 是解码功能配置时的 yamlstrict 钩子：CaseParams 类型的值原样保存块的 YAML 文本
// 与位置（见 CaseParams），不在加载时解码——那时还不知道用例的参数结构体（matrix 加载时对声明了
// Case.Params 的用例另行严格校验）。matrix 的加载器用同一个 yamlstrict.CaptureBlocks 建自己的钩子。
var captureParams = yamlstrict.CaptureBlocks(reflect.TypeOf(CaseParams{}))

// Package runtype 是 cibench 各包共用的运行类型词汇：PR 流水线（pr）或每日任务（daily）。
//
// 它刻意不依赖任何其他包，matrix、metrics、report 与用户自己的驱动都能引用同一个
// 类型而不引入额外依赖；取值只在这里定义。这三个包里的 RunType 是这里的类型别名，
// RunPR/RunDaily（matrix）与 RunTypePR/RunTypeDaily（report、metrics）是为兼容保留的
// 常量别名，已标为 Deprecated：新代码写 runtype.PR、runtype.Daily。取值同时是产物目录名与
// 指标标签 run_type 的值。
package runtype

import (
	"errors"
	"fmt"
)

// Type 是运行类型。
type Type string

// 运行类型取值。
const (
	// PR 用 PR 档性能配置与 debug 精度，不推送指标。
	PR Type = "pr"
	// Daily 用每日档性能配置与全量精度，推送指标，并作为之后运行的基线。
	Daily Type = "daily"
)

// ErrInvalid 表示运行类型既不是 pr 也不是 daily。
var ErrInvalid = errors.New("invalid run type (want pr or daily)")

// Valid 报告 t 是否为已知取值；空串无效。
func (t Type) Valid() bool { return t == PR || t == Daily }

// Check 在 t 不是 pr 或 daily 时返回包装 ErrInvalid 的错误。
func (t Type) Check() error {
	if t.Valid() {
		return nil
	}
	return ErrInvalid
}

// Parse 把命令行或配置中的取值转换为 Type；非法取值的错误点出该值并包装 ErrInvalid。
func Parse(s string) (Type, error) {
	t := Type(s)
	if err := t.Check(); err != nil {
		return "", fmt.Errorf("runtype: %q: %w", s, err)
	}
	return t, nil
}

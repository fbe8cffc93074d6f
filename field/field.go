package field

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Error 是一个配置字段的错误。零值字段表示"不知道"：没有文件（配置来自代码）时 File 为空，
// 无法定位到行时 Line 为 0，标量以外的取值 Value 为空。
type Error struct {
	// File 是出错文件的显示路径（通常就是用户写的路径）。
	File string
	// Line 与 Col 从 1 开始；0 表示无法定位到行。
	Line, Col int
	// Field 是字段路径，如 "health.timeout"、"concurrency[2]" 或
	// "scenarios.emulator.pr.perf.profiles[0]"（YAML 键；Go 输入校验时为 Go 字段名）。
	Field string
	// Value 是出错的取值（文本）；产生错误的包保证它不含密钥。
	Value string
	// Reason 说明为什么不对（"must be >= 1"）。
	Reason string
	// Err 是产生错误的包的哨兵错误（可为 nil）：Unwrap 返回它，文本以它开头。
	Err error
	// Cause 是被定位到这个字段的原始错误（可为 nil），例如登记表的 functional.ErrUnknownFeature：
	// 错误在别的包里产生、被加载器改挂上自己的哨兵之后，errors.Is 仍能认出它。它不进入文本
	// （Reason 已经写着它的说明）。
	Cause error
}

// Error 按 "哨兵: 文件:行:列: 字段: 原因 (got "值")" 输出：位置在前面时编辑器可以直接跳转，
// 字段与取值总在文本里。缺失的部分连同它的分隔符一起省略。
func (e *Error) Error() string {
	var b strings.Builder
	if e.Err != nil {
		b.WriteString(e.Err.Error())
		b.WriteString(": ")
	}
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	if e.Value != "" {
		fmt.Fprintf(&b, " (got %q)", e.Value)
	}
	return b.String()
}

// Unwrap 返回产生错误的包的哨兵与原始错误（非 nil 的那些），使 errors.Is(err, pkg.ErrX) 对两者都成立。
func (e *Error) Unwrap() []error {
	var out []error
	for _, x := range []error{e.Err, e.Cause} {
		if x != nil {
			out = append(out, x)
		}
	}
	return out
}

// New 构造一个没有位置的字段错误：value 用 fmt.Sprint 转成文本（nil 为空）。
func New(sentinel error, field string, value any, reason string) *Error {
	v := ""
	if value != nil {
		v = fmt.Sprint(value)
	}
	return &Error{Field: field, Value: v, Reason: reason, Err: sentinel}
}

// All 取出 err（可能经 %w 包装、errors.Join 合并，任意嵌套）中的全部 *Error，按出现顺序。
// 汇总多个加载器错误的调用方（matrix 把各阶段配置的错误并进自己的列表）用它逐条处理。
func All(err error) []*Error {
	if err == nil {
		return nil
	}
	if fe, ok := err.(*Error); ok {
		return []*Error{fe}
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*Error
		for _, e := range j.Unwrap() {
			out = append(out, All(e)...)
		}
		return out
	}
	return All(errors.Unwrap(err))
}

// Index 把 "name[i]" 形式的字段路径拆成 name 与 i；路径不以 "[数字]" 结尾时返回 (path, -1)。
// 列表字段的校验错误（loadgen 的 concurrency[2]）据此定位到命令行参数或 YAML 列表的某一项。
func Index(path string) (name string, i int) {
	if !strings.HasSuffix(path, "]") {
		return path, -1
	}
	open := strings.LastIndexByte(path, '[')
	if open < 0 {
		return path, -1
	}
	n, err := strconv.Atoi(path[open+1 : len(path)-1])
	if err != nil || n < 0 {
		return path, -1
	}
	return path[:open], n
}

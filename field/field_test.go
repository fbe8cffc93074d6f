package field_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/vllm-cibench/cibench/field"
)

// errPkg 是测试用的包级哨兵。
var errPkg = errors.New("pkg: invalid config")

// TestErrorFormatting 固定 Error 在有无哨兵、文件、行号、字段路径与取值时的文本格式
// （原 yamlstrict.Error 的格式，不带哨兵时逐字相同）。
func TestErrorFormatting(t *testing.T) {
	for _, tc := range []struct {
		e    field.Error
		want string
	}{
		{field.Error{File: "f.yaml", Reason: "boom"}, "f.yaml: boom"},
		{field.Error{File: "f.yaml", Line: 2, Col: 3, Field: "a.b", Value: "v", Reason: "bad"}, `f.yaml:2:3: a.b: bad (got "v")`},
		{field.Error{Field: "rate", Value: "-1", Reason: "must be > 0", Err: errPkg}, `pkg: invalid config: rate: must be > 0 (got "-1")`},
		{field.Error{File: "c.yaml", Line: 7, Col: 1, Field: "x[2]", Reason: "too big", Err: errPkg}, `pkg: invalid config: c.yaml:7:1: x[2]: too big`},
		{field.Error{Reason: "only a reason"}, "only a reason"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.e, got, tc.want)
		}
	}
}

// TestNewAndUnwrap 确认 New 把取值转成文本，errors.Is 经 Unwrap 认出包的哨兵，
// errors.As 穿过 %w 包装取出字段与取值。
func TestNewAndUnwrap(t *testing.T) {
	e := field.New(errPkg, "concurrency[1]", 0, "must be >= 1")
	if e.Value != "0" || e.Field != "concurrency[1]" || e.Reason != "must be >= 1" {
		t.Fatalf("New = %+v", e)
	}
	if field.New(nil, "f", nil, "r").Value != "" {
		t.Error("nil value must stay empty")
	}
	wrapped := fmt.Errorf("load: %w", e)
	if !errors.Is(wrapped, errPkg) {
		t.Error("errors.Is(sentinel) = false")
	}
	var fe *field.Error
	if !errors.As(wrapped, &fe) || fe.Value != "0" {
		t.Fatalf("errors.As = %+v", fe)
	}
	if (&field.Error{}).Unwrap() != nil {
		t.Error("no sentinel must unwrap to nil")
	}
}

// TestAll 取出 errors.Join 与 %w 任意嵌套中的全部字段错误，保持顺序，忽略其他错误。
func TestAll(t *testing.T) {
	a := &field.Error{Field: "a", Reason: "x"}
	b := &field.Error{Field: "b", Reason: "y"}
	c := &field.Error{Field: "c", Reason: "z"}
	err := errors.Join(fmt.Errorf("wrap: %w", a), errors.New("plain"), errors.Join(b, fmt.Errorf("w2: %w", fmt.Errorf("w3: %w", c))))
	got := field.All(err)
	if len(got) != 3 || got[0] != a || got[1] != b || got[2] != c {
		t.Fatalf("All = %v", got)
	}
	if field.All(nil) != nil || field.All(errors.New("plain")) != nil {
		t.Error("no field errors must give nil")
	}
}

// ExampleError 展示调用方如何不认识具体的包就取出字段、取值与位置。
func ExampleError() {
	err := fmt.Errorf("load configs: %w", &field.Error{File: "configs/perf/pr.yaml", Line: 4, Col: 14, Field: "concurrency[1]", Value: "0",
		Reason: "must be >= 1", Err: errors.New("loadgen: invalid profile")})
	var fe *field.Error
	if errors.As(err, &fe) {
		fmt.Println(fe.File, fe.Line, fe.Field, fe.Value)
	}
	fmt.Println(err)
	// Output:
	// configs/perf/pr.yaml 4 concurrency[1] 0
	// load configs: loadgen: invalid profile: configs/perf/pr.yaml:4:14: concurrency[1]: must be >= 1 (got "0")
}

// TestIndex 拆开列表元素的字段路径，其余路径原样返回、下标 -1。
func TestIndex(t *testing.T) {
	for _, tc := range []struct {
		path, name string
		i          int
	}{
		{"concurrency[2]", "concurrency", 2},
		{"a.b[0]", "a.b", 0},
		{"a[1].b[10]", "a[1].b", 10},
		{"rate", "rate", -1},
		{"x[]", "x[]", -1},
		{"x[-1]", "x[-1]", -1},
		{"x]", "x]", -1},
	} {
		if n, i := field.Index(tc.path); n != tc.name || i != tc.i {
			t.Errorf("Index(%q) = %q, %d; want %q, %d", tc.path, n, i, tc.name, tc.i)
		}
	}
}

// TestCauseIsMatchedButNotPrinted 确认 Cause 让 errors.Is 认出原始错误，而文本只由 Err、位置与
// Reason 组成；All 把带 Cause 的 *Error 当作一条错误，不拆开它。
func TestCauseIsMatchedButNotPrinted(t *testing.T) {
	sentinel, cause := errors.New("pkg: invalid"), errors.New("unknown feature")
	e := &field.Error{File: "f.yaml", Line: 2, Col: 3, Field: "features[0]", Value: "x", Reason: "unknown feature \"x\"", Err: sentinel, Cause: cause}
	if !errors.Is(e, sentinel) || !errors.Is(e, cause) {
		t.Fatal("errors.Is must match both")
	}
	if got := e.Error(); got != `pkg: invalid: f.yaml:2:3: features[0]: unknown feature "x" (got "x")` {
		t.Fatalf("text = %s", got)
	}
	if all := field.All(fmt.Errorf("wrapped: %w", e)); len(all) != 1 || all[0] != e {
		t.Fatalf("All = %v", all)
	}
	if (&field.Error{}).Unwrap() != nil {
		t.Fatal("no sentinel, no cause: nothing to unwrap")
	}
}

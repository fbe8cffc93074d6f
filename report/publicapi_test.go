package report_test

import (
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// reportPath 是被检查的包。
const reportPath = "github.com/vllm-cibench/cibench/report"

// TestExportedAPIHasNoInternalTypes 用 go/types 读 report 的导出数据，遍历每个导出的
// 函数、类型（导出字段、导出方法、接口方法）、变量与常量的签名：任何一处提到
// internal/ 包的类型，模块外的团队就无法调用它（复制 examples/ci 驱动出模块时正是
// 卡在 WithRedactor(*redact.Redactor) 上），因此测试失败并列出每一处。
func TestExportedAPIHasNoInternalTypes(t *testing.T) {
	pkg := importReport(t)
	w := apiWalker{self: pkg, seen: map[types.Type]bool{}}
	for _, name := range pkg.Scope().Names() {
		obj := pkg.Scope().Lookup(name)
		if !obj.Exported() {
			continue
		}
		w.walk(obj.Type(), name)
	}
	if w.objects < 40 {
		t.Fatalf("walked only %d exported objects of report: the export data was not read", w.objects)
	}
	for _, bad := range w.bad {
		t.Errorf("exported API of report mentions an internal package: %s", bad)
	}
}

// importReport 用 go list -export 找到 report 及其依赖的导出数据，再用 gc 导入器读入
// report（不解析源码，得到的就是编译器看到的导出 API）。没有 go 命令时跳过。
func importReport(t *testing.T) *types.Package {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found:", err)
	}
	out, err := exec.Command(gocmd, "list", "-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}", reportPath).Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if p, f, ok := strings.Cut(line, "="); ok && f != "" {
			exports[p] = f
		}
	}
	lookup := func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, os.ErrNotExist
		}
		return os.Open(f)
	}
	pkg, err := importer.ForCompiler(token.NewFileSet(), "gc", lookup).Import(reportPath)
	if err != nil {
		t.Fatalf("import report: %v", err)
	}
	return pkg
}

// apiWalker 递归遍历类型，记录所有来自 internal/ 包的具名类型出现的位置。
// 本包自己的具名类型会展开（导出字段、嵌入字段、导出方法）；其他公开包的类型不展开，
// 它们的 API 由各自负责。
type apiWalker struct {
	self    *types.Package
	seen    map[types.Type]bool
	bad     []string
	objects int
}

// isInternal 判断 path 是否是某个 internal 目录之下的包（模块内或标准库）。
func isInternal(path string) bool {
	return strings.HasPrefix(path, "internal/") || strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal")
}

// walk 检查类型 t，where 说明它出现在导出 API 的哪个位置（写进失败信息）。
func (w *apiWalker) walk(t types.Type, where string) {
	if t == nil {
		return
	}
	switch t := t.(type) {
	case *types.Alias:
		w.walkNamedObj(t.Obj(), where)
		w.walk(types.Unalias(t), where)
	case *types.Named:
		if w.walkNamedObj(t.Obj(), where) {
			return
		}
		for i := range t.TypeArgs().Len() {
			w.walk(t.TypeArgs().At(i), where+"[type arg]")
		}
		if t.Obj().Pkg() != w.self || w.seen[t] {
			return
		}
		// 本包的具名类型只展开一次，位置从类型名重新算起，失败信息更好读。
		w.seen[t] = true
		w.objects++
		name := t.Obj().Name()
		for i := range t.NumMethods() {
			m := t.Method(i)
			if m.Exported() {
				w.walk(m.Type(), name+"."+m.Name())
			}
		}
		w.walk(t.Underlying(), name)
	case *types.Pointer:
		w.walk(t.Elem(), where)
	case *types.Slice:
		w.walk(t.Elem(), where)
	case *types.Array:
		w.walk(t.Elem(), where)
	case *types.Chan:
		w.walk(t.Elem(), where)
	case *types.Map:
		w.walk(t.Key(), where)
		w.walk(t.Elem(), where)
	case *types.Signature:
		w.objects++
		for i := range t.Params().Len() {
			w.walk(t.Params().At(i).Type(), where+" param "+t.Params().At(i).Name())
		}
		for i := range t.Results().Len() {
			w.walk(t.Results().At(i).Type(), where+" result")
		}
	case *types.Struct:
		for i := range t.NumFields() {
			f := t.Field(i)
			if f.Exported() || f.Embedded() {
				w.walk(f.Type(), where+"."+f.Name())
			}
		}
	case *types.Interface:
		for i := range t.NumMethods() {
			if m := t.Method(i); m.Exported() {
				w.walk(m.Type(), where+"."+m.Name())
			}
		}
		for i := range t.NumEmbeddeds() {
			w.walk(t.EmbeddedType(i), where+"[embedded]")
		}
	case *types.TypeParam:
		w.walk(t.Constraint(), where+"[constraint]")
	case *types.Union:
		for i := range t.Len() {
			w.walk(t.Term(i).Type(), where+"[union]")
		}
	case *types.Basic, *types.Tuple:
	}
}

// walkNamedObj 在具名类型来自 internal/ 包时记下它并返回 true。
func (w *apiWalker) walkNamedObj(obj *types.TypeName, where string) bool {
	if obj.Pkg() != nil && isInternal(obj.Pkg().Path()) {
		w.bad = append(w.bad, where+" → "+obj.Pkg().Path()+"."+obj.Name())
		return true
	}
	return false
}

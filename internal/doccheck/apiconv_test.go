package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// sourceFiles 解析本模块的非测试源文件（跳过隐藏目录与 testdata；public 为 true 时还跳过
// internal/ 与 examples/），以相对模块根的路径为键，连同给出行号的 FileSet。TestAPIConventions 与
// TestFunctionLength 共用。
func sourceFiles(t *testing.T, public bool) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string]*ast.File{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (strings.HasPrefix(base, ".") || base == "testdata" || (public && (base == "internal" || base == "examples"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		out[rel] = f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 50 {
		t.Fatalf("only %d source files found: the walker is broken", len(out))
	}
	return fset, out
}

// deprecated 报告文档注释是否含 "Deprecated:" 段落（弃用的标识符按承诺保留，不受约定约束）。
func deprecated(groups ...*ast.CommentGroup) bool {
	for _, g := range groups {
		if g != nil && strings.Contains(g.Text(), "Deprecated:") {
			return true
		}
	}
	return false
}

// TestAPIConventions 核对 docs/packages.md“API 的写法”一节的约定，让新代码不再引入第四种选项
// 写法、第二个默认值方法名或可变的导出变量：
//   - 名字以 Options 结尾的导出类型是结构体（一次调用的配置，零值即默认）；
//   - 名字以 Option 结尾的导出类型是 func(*X)（构造函数的可选依赖），返回它的导出函数以 With 开头；
//   - 填默认值的导出方法叫 WithDefaults（不叫 Defaults、SetDefaults、Default）；
//   - 包级导出变量只有哨兵错误（Err 开头）。
func TestAPIConventions(t *testing.T) {
	optionTypes := map[string]bool{}
	_, files := sourceFiles(t, true)
	for rel, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, sp := range gd.Specs {
				switch s := sp.(type) {
				case *ast.TypeSpec:
					name := s.Name.Name
					if !ast.IsExported(name) || deprecated(gd.Doc, s.Doc) {
						continue
					}
					if strings.HasSuffix(name, "Options") {
						if _, ok := s.Type.(*ast.StructType); !ok {
							t.Errorf("%s: type %s: an *Options type is a struct whose zero value means the defaults", rel, name)
						}
					} else if strings.HasSuffix(name, "Option") {
						ft, ok := s.Type.(*ast.FuncType)
						if !ok || ft.Params.NumFields() != 1 || ft.Results.NumFields() != 0 {
							t.Errorf("%s: type %s: an *Option type is func(*X) (a constructor's optional dependency)", rel, name)
							continue
						}
						if _, ptr := ft.Params.List[0].Type.(*ast.StarExpr); !ptr {
							t.Errorf("%s: type %s: an *Option type takes a pointer to what it configures", rel, name)
						}
						optionTypes[name] = true
					}
				case *ast.ValueSpec:
					if gd.Tok != token.VAR {
						continue
					}
					for _, n := range s.Names {
						if ast.IsExported(n.Name) && !strings.HasPrefix(n.Name, "Err") && !deprecated(gd.Doc, s.Doc) {
							t.Errorf("%s: var %s: exported package variables are sentinel errors (Err…) only; return a copy from a function or use a const", rel, n.Name)
						}
					}
				}
			}
		}
	}
	if len(optionTypes) == 0 {
		t.Fatal("no *Option types found: the check is broken")
	}
	for rel, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !ast.IsExported(fd.Name.Name) || deprecated(fd.Doc) {
				continue
			}
			name := fd.Name.Name
			switch name {
			case "Defaults", "SetDefaults", "Default", "ApplyDefaults", "FillDefaults":
				if fd.Recv != nil {
					t.Errorf("%s: method %s: a method that fills defaults is called WithDefaults and returns a copy", rel, name)
				}
			}
			if fd.Recv == nil && fd.Type.Results.NumFields() == 1 {
				if id, ok := fd.Type.Results.List[0].Type.(*ast.Ident); ok && optionTypes[id.Name] && !strings.HasPrefix(name, "With") {
					t.Errorf("%s: func %s returns %s: option constructors are named With…", rel, name, id.Name)
				}
			}
		}
	}
}

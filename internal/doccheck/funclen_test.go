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

// maxFuncLines 是一个函数（含签名与右花括号）的行数上限。issue #30 时有八个函数超过它，
// 都按主题拆开了；一个读者要能在一屏半里读完一个函数。
const maxFuncLines = 150

// TestFunctionLength 核对本模块全部非测试源文件（含 internal/ 与 examples/）里没有超过
// maxFuncLines 行的函数。
func TestFunctionLength(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if n > maxFuncLines {
				rel, _ := filepath.Rel(root, p)
				t.Errorf("%s:%d: func %s has %d lines (limit %d): split it by topic", rel, fset.Position(fd.Pos()).Line, fd.Name.Name, n, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d source files parsed: the walker is broken", files)
	}
}

package doccheck

import (
	"go/ast"
	"testing"
)

// maxFuncLines 是一个函数（含签名与右花括号）的行数上限。issue #30 时有八个函数超过它，
// 都按主题拆开了；一个读者要能在一屏半里读完一个函数。
const maxFuncLines = 150

// TestFunctionLength 核对本模块全部非测试源文件（含 internal/ 与 examples/）里没有超过
// maxFuncLines 行的函数。
func TestFunctionLength(t *testing.T) {
	fset, files := sourceFiles(t, false)
	if len(files) < 100 {
		t.Fatalf("only %d source files parsed: the walker is broken", len(files))
	}
	for rel, f := range files {
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start := fset.Position(fd.Pos()).Line
			if n := fset.Position(fd.End()).Line - start + 1; n > maxFuncLines {
				t.Errorf("%s:%d: func %s has %d lines (limit %d): split it by topic", rel, start, fd.Name.Name, n, maxFuncLines)
			}
		}
	}
}

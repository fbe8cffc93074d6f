package doccheck

import (
	"encoding/json"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// root 是模块根目录（本包在 internal/doccheck 下）。
const root = "../.."

// stdImports 是文档片段常用的标准库包：包名 → 导入路径。
var stdImports = map[string]string{
	"context": "context", "os": "os", "fmt": "fmt", "time": "time", "http": "net/http", "io": "io",
	"testing": "testing", "errors": "errors", "slog": "log/slog", "json": "encoding/json", "strings": "strings",
	"fs": "io/fs", "filepath": "path/filepath", "signal": "os/signal", "strconv": "strconv", "bytes": "bytes",
	"prometheus": "github.com/prometheus/client_golang/prometheus", "log": "log", "reflect": "reflect", "sync": "sync",
	"openai": "github.com/openai/openai-go/v3", "option": "github.com/openai/openai-go/v3/option",
}

// snippet 是文档中的一段 Go 代码。
type snippet struct {
	file string
	line int
	code string
}

// snippets 取出 README.md 与 docs/*.md 中全部 ```go 代码段。
func snippets(t *testing.T) []snippet {
	files := []string{filepath.Join(root, "README.md")}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, docs...)
	re := regexp.MustCompile("(?s)```go\n(.*?)```")
	var out []snippet
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
			rel, _ := filepath.Rel(root, f)
			out = append(out, snippet{file: rel, line: strings.Count(s[:m[0]], "\n") + 1, code: s[m[2]:m[3]]})
		}
	}
	return out
}

// listed 是 go list -json 的一部分输出。
type listed struct {
	ImportPath string
	Name       string
	Export     string
}

// exports 用 go list -export 取得本模块全部包（及其依赖）的导出数据文件与包名。
func exports(t *testing.T) (map[string]string, map[string]string) {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go command not found: %v", err)
	}
	args := append([]string{"list", "-export", "-deps", "-json=ImportPath,Name,Export"}, workspacePatterns(t)...)
	for _, p := range stdImports {
		args = append(args, p)
	}
	cmd := exec.Command(gocmd, args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	files, names := map[string]string{}, map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		files[p.ImportPath] = p.Export
		if strings.HasPrefix(p.ImportPath, "github.com/vllm-cibench/cibench/") && !strings.Contains(p.ImportPath, "/internal/") &&
			!strings.Contains(p.ImportPath, "/examples/") && p.Name != "main" {
			names[p.Name] = p.ImportPath
		}
	}
	for n, p := range stdImports {
		names[n] = p
	}
	return files, names
}

// removed 是已经不存在、不能再出现在文档里的包名（它们不是自由变量）。
var removed = map[string]string{"driver": "examples/ci/driver moved to pipeline"}

// ignorable 报告类型检查错误是否属于片段的写法而不是 API 的错误（见包文档）。
func ignorable(msg string) bool {
	if name, ok := strings.CutPrefix(msg, "undefined: "); ok && removed[name] != "" {
		return false
	}
	if strings.Contains(msg, "declared and not used") || strings.Contains(msg, "imported and not used") {
		return true
	}
	if name, ok := strings.CutPrefix(msg, "undefined: "); ok && name != "" && name[0] >= 'a' && name[0] <= 'z' && !strings.Contains(name, ".") {
		return true
	}
	return false
}

// TestDocSnippetsCompile 对每段文档代码做类型检查（规则见包文档）。
func TestDocSnippetsCompile(t *testing.T) {
	files, names := exports(t)
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := files[path]
		if !ok || f == "" {
			return nil, os.ErrNotExist
		}
		return os.Open(f)
	})
	list := snippets(t)
	if len(list) == 0 {
		t.Fatal("no ```go snippets found: the extractor is broken")
	}
	for _, sn := range list {
		t.Run(sn.file+":"+strconv.Itoa(sn.line), func(t *testing.T) {
			var errs []string
			for _, src := range sources(sn.code, names) {
				fset := token.NewFileSet()
				f, err := parser.ParseFile(fset, "snippet.go", src, parser.SkipObjectResolution)
				if err != nil {
					errs = []string{err.Error()}
					continue
				}
				errs = nil
				conf := types.Config{Importer: imp, Error: func(err error) {
					if te, ok := err.(types.Error); ok && ignorable(te.Msg) {
						return
					}
					errs = append(errs, err.Error())
				}}
				_, _ = conf.Check("snippet", fset, []*ast.File{f}, nil)
				break
			}
			if len(errs) > 0 {
				t.Errorf("%s:%d: the snippet does not compile against the current API:\n%s\n---\n%s", sn.file, sn.line, strings.Join(errs, "\n"), sn.code)
			}
		})
	}
}

// sources 给片段补上 package 与 import，返回两种写法：片段本身是顶层声明时的文件，以及把片段
// 放进函数体的文件（片段是语句时）。第一种能解析就用第一种。
func sources(code string, names map[string]string) []string {
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`\b([a-z][a-z0-9]*)\.[A-Za-z_]`).FindAllStringSubmatch(code, -1) {
		if _, ok := names[m[1]]; ok {
			used[m[1]] = true
		}
	}
	var imps []string
	for n := range used {
		imps = append(imps, "\t"+n+" "+strconv.Quote(names[n]))
	}
	sort.Strings(imps)
	head := "package snippet\n\nimport (\n" + strings.Join(imps, "\n") + "\n)\n\n"
	if strings.HasPrefix(strings.TrimSpace(code), "package ") {
		return []string{code}
	}
	return []string{head + code, head + "func _() {\n" + code + "\n}\n"}
}

// workspacePatterns 返回工作区里本仓库每个模块（模块路径以 module 开头）的包模式 ./<目录>/...：
// 根模块的 ./... 不含嵌套模块（deploy/kube、loadgen/shard/kubejob、examples/ci……），文档里的
// 片段与包表同样要对它们成立。
func workspacePatterns(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Path}}\t{{.Dir}}")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	var pats []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, dir, _ := strings.Cut(l, "\t")
		if path != module && !strings.HasPrefix(path, module+"/") {
			continue
		}
		rel, err := filepath.Rel(abs, dir)
		if err != nil {
			t.Fatal(err)
		}
		pats = append(pats, "./"+filepath.ToSlash(rel)+"/...")
	}
	if len(pats) < 2 {
		t.Fatalf("go list -m found %v: the workspace (go.work) is not in effect", pats)
	}
	return pats
}

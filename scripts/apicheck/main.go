// Command apicheck 执行 cibench 的兼容性承诺（pipeline 包文档、CHANGELOG.md）：把发布点（api/BASE 记下的
// 提交，检出在 -base 目录）与当前工作树（-head）的每个公开包逐个比较（golang.org/x/exp/apidiff）。
//
// 规则：
//   - 任何不兼容的变化都失败：改签名（包括给函数加一个可变参数——调用照样编译，函数值就不行了）、
//     改类型、删除标识符、删除包、可比较的类型变得不可比较……这一条 -update 也改不了：
//     -update 只重写兼容变化的记录，遇到不兼容的变化照样失败，不会把它“洗”进 api/next.txt。
//   - 唯一的例外：删除一个在发布点上已经标注 Deprecated 的标识符（或 Deprecated 类型的字段与方法、
//     包文档标注 Deprecated 的整个包）。这就是承诺里“删除先经 Deprecated”的那条路。
//   - 兼容的变化（新增）与允许的删除必须与提交的 api/next.txt 逐字一致：每一处导出 API 的变化都在
//     评审里可见；发布时它们进入 CHANGELOG.md，api/BASE 改成发布的提交，next.txt 清空。
//
// 公开包：模块路径 github.com/vllm-cibench/cibench 下（含嵌套模块 deploy/kube 等），路径里没有
// internal、examples、scripts 段的非 main 包。一棵有 go.work 的树按工作区里本仓库的每个模块加载。
//
// 用法（scripts/apicheck.sh 负责检出发布点）：
//
//	apicheck -base /tmp/base -head . -next api/next.txt [-update]
//
// 退出码：0 通过；1 有不兼容的变化，或记录与实际不符；2 用法或加载错误。
package main

import (
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/exp/apidiff"
	"golang.org/x/tools/go/packages"
)

// module 是 cibench 的模块路径前缀：嵌套模块（deploy/kube……）的路径也以它开头。
const module = "github.com/vllm-cibench/cibench"

// main 把命令行交给 run，并以它的返回值退出。
func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run 是可测试的 main：解析参数、加载两棵树、比较、检查或重写 next.txt，返回退出码。
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("apicheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("base", "", "directory of the release point's tree (required)")
	head := fs.String("head", ".", "directory of the tree to check")
	next := fs.String("next", "api/next.txt", "file recording the allowed changes since the release point")
	update := fs.Bool("update", false, "rewrite -next with the allowed changes (never accepts an incompatible change)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *base == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "apicheck: usage: apicheck -base DIR [-head DIR] [-next FILE] [-update]")
		return 2
	}
	old, err := load(*base, true)
	if err != nil {
		fmt.Fprintf(stderr, "apicheck: base %s: %v\n", *base, err)
		return 2
	}
	cur, err := load(*head, false)
	if err != nil {
		fmt.Fprintf(stderr, "apicheck: head %s: %v\n", *head, err)
		return 2
	}
	rep := compare(old, cur)
	if len(rep.broken) > 0 {
		fmt.Fprintln(stderr, "apicheck: incompatible changes since the release point (the promise: v0 only adds; remove only what was Deprecated at the release point):")
		for _, l := range rep.broken {
			fmt.Fprintln(stderr, "- "+l)
		}
		fmt.Fprintln(stderr, "apicheck: restore the old form, or add the new form beside it and mark the old one Deprecated (it can go after the next release). -update does not accept these.")
		return 1
	}
	text := rep.text()
	if *update {
		if err := os.WriteFile(*next, []byte(text), 0o644); err != nil {
			fmt.Fprintln(stderr, "apicheck:", err)
			return 2
		}
		fmt.Fprintf(stderr, "apicheck: %s rewritten (%d compatible changes, %d removals of deprecated symbols); review its diff\n", *next, len(rep.added), len(rep.removed))
		return 0
	}
	want, err := os.ReadFile(*next)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(stderr, "apicheck:", err)
		return 2
	}
	if string(want) != text {
		fmt.Fprintf(stderr, "apicheck: the exported API changed compatibly but %s does not record it:\n", *next)
		fmt.Fprint(stderr, lineDiff(string(want), text))
		fmt.Fprintln(stderr, "apicheck: if the change is intended, run scripts/apicheck.sh -update and commit the file with it.")
		return 1
	}
	fmt.Fprintf(stdout, "apicheck: no incompatible change; %d compatible changes and %d removals of deprecated symbols recorded in %s\n", len(rep.added), len(rep.removed), *next)
	return 0
}

// pkg 是一个公开包：类型信息，以及（发布点一侧）每个导出对象的文档是否标注 Deprecated。
type pkg struct {
	types *types.Package
	// deprecated 是包文档标注了 Deprecated。
	deprecated bool
	// depr 记录文档标注了 Deprecated 的声明位置（对象的 Pos）。
	depr map[token.Pos]bool
}

// load 加载 dir 这棵树的全部公开包（withDocs 时也解析文档，用于判断 Deprecated）。
func load(dir string, withDocs bool) (map[string]*pkg, error) {
	pats, err := patterns(dir)
	if err != nil {
		return nil, err
	}
	mode := packages.NeedName | packages.NeedTypes | packages.NeedFiles
	if withDocs {
		mode |= packages.NeedSyntax | packages.NeedTypesInfo
	}
	cfg := &packages.Config{Mode: mode, Dir: dir, Env: goEnv(dir)}
	list, err := packages.Load(cfg, pats...)
	if err != nil {
		return nil, err
	}
	out := map[string]*pkg{}
	var errs []string
	for _, p := range list {
		if !public(p.PkgPath, p.Name) {
			continue
		}
		for _, e := range p.Errors {
			errs = append(errs, e.Error())
		}
		if p.Types == nil {
			continue
		}
		q := &pkg{types: p.Types, depr: map[token.Pos]bool{}}
		if withDocs {
			markDeprecated(q, p.Syntax)
		}
		out[p.PkgPath] = q
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no public packages of %s under %s", module, dir)
	}
	return out, nil
}

// patterns 返回 dir 的包模式：有 go.work 时是工作区里本仓库每个模块的 ./<目录>/...，否则 ./...。
func patterns(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, "go.work")); err != nil {
		return []string{"./..."}, nil
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Path}}\t{{.Dir}}")
	cmd.Dir = dir
	cmd.Env = goEnv(dir)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("go list -m: %v: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("go list -m: %v", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	var pats []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, mdir, _ := strings.Cut(l, "\t")
		if path != module && !strings.HasPrefix(path, module+"/") {
			continue
		}
		if real, err := filepath.EvalSymlinks(mdir); err == nil {
			mdir = real
		}
		rel, err := filepath.Rel(abs, mdir)
		if err != nil {
			return nil, err
		}
		if rel == "." {
			pats = append(pats, "./...")
		} else {
			pats = append(pats, "./"+filepath.ToSlash(rel)+"/...")
		}
	}
	return pats, nil
}

// goEnv 返回在 dir 这棵树里运行 go 命令的环境：树里有 go.work 就用它（不管调用者自己的 GOWORK），
// 没有就关掉工作区（发布点可能是单模块的树）。调用者的 GOFLAGS 原样保留：scripts/test.sh 在那里设
// -gcflags=all=-dwarf=false，加载包时的编译（导出数据）用同样的参数才取得到前面已编译的依赖——
// 以前这里清空 GOFLAGS，冷启动时这一步把整棵依赖树按另一组参数重编一遍（284 CPU 秒）。
func goEnv(dir string) []string {
	work := "off"
	if abs, err := filepath.Abs(filepath.Join(dir, "go.work")); err == nil {
		if _, err := os.Stat(abs); err == nil {
			work = abs
		}
	}
	return append(os.Environ(), "GOWORK="+work)
}

// public 报告 path 是否是兼容性承诺之内的包：本模块路径下、不在 internal/examples/scripts 里的非 main 包。
func public(path, name string) bool {
	if name == "main" || (path != module && !strings.HasPrefix(path, module+"/")) {
		return false
	}
	for _, seg := range strings.Split(strings.TrimPrefix(path, module), "/") {
		if seg == "internal" || seg == "examples" || seg == "scripts" || strings.HasSuffix(seg, "_test") {
			return false
		}
	}
	return true
}

// isDeprecated 报告文档里是否有以 "Deprecated: " 开头的段落（Go 的约定，go doc 与 gopls 都这样认）。
func isDeprecated(cg *ast.CommentGroup) bool {
	if cg == nil {
		return false
	}
	text := cg.Text()
	for _, para := range strings.Split(text, "\n\n") {
		if strings.HasPrefix(strings.TrimSpace(para), "Deprecated: ") {
			return true
		}
	}
	return false
}

// markDeprecated 遍历包的语法树，记下文档标注 Deprecated 的声明（函数、方法、类型、变量、常量、
// 结构体字段与接口方法）的位置，以及包文档是否标注 Deprecated。
func markDeprecated(q *pkg, files []*ast.File) {
	for _, f := range files {
		if isDeprecated(f.Doc) {
			q.deprecated = true
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if isDeprecated(d.Doc) {
					q.depr[d.Name.Pos()] = true
				}
			case *ast.GenDecl:
				group := isDeprecated(d.Doc)
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if group || isDeprecated(s.Doc) || isDeprecated(s.Comment) {
							q.depr[s.Name.Pos()] = true
						}
						markFields(q, s.Type)
					case *ast.ValueSpec:
						if group || isDeprecated(s.Doc) || isDeprecated(s.Comment) {
							for _, n := range s.Names {
								q.depr[n.Pos()] = true
							}
						}
					}
				}
			}
		}
	}
}

// markFields 记下结构体字段与接口方法中标注 Deprecated 的那些。
func markFields(q *pkg, t ast.Expr) {
	var list *ast.FieldList
	switch t := t.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list = t.Methods
	}
	if list == nil {
		return
	}
	for _, fld := range list.List {
		if isDeprecated(fld.Doc) || isDeprecated(fld.Comment) {
			for _, n := range fld.Names {
				q.depr[n.Pos()] = true
			}
		}
	}
}

// report 是一次比较的结果：不允许的变化、允许的删除与兼容的变化（每行形如 "./pkg.Name: 说明"）。
type report struct {
	broken, removed, added []string
}

// text 是写进 api/next.txt 的记录：允许的删除与兼容的变化，各自排好序。
func (r report) text() string {
	var b strings.Builder
	if len(r.removed) > 0 {
		b.WriteString("Removed after deprecation:\n")
		for _, l := range r.removed {
			b.WriteString("- " + l + "\n")
		}
	}
	if len(r.added) > 0 {
		b.WriteString("Compatible changes:\n")
		for _, l := range r.added {
			b.WriteString("- " + l + "\n")
		}
	}
	return b.String()
}

// compare 逐包比较发布点 old 与当前 cur，把每一处变化分进 report 的三类。
func compare(old, cur map[string]*pkg) report {
	var r report
	paths := map[string]bool{}
	for p := range old {
		paths[p] = true
	}
	for p := range cur {
		paths[p] = true
	}
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	for _, p := range keys {
		rel := "." + strings.TrimPrefix(p, module)
		o, c := old[p], cur[p]
		switch {
		case o == nil:
			r.added = append(r.added, rel+": package added")
		case c == nil:
			if o.deprecated {
				r.removed = append(r.removed, rel+": package removed (Deprecated at the release point)")
			} else {
				r.broken = append(r.broken, rel+": package removed")
			}
		default:
			for _, ch := range apidiff.Changes(o.types, c.types).Changes {
				line := rel + "." + ch.Message
				switch {
				case ch.Compatible:
					r.added = append(r.added, line)
				case strings.HasSuffix(ch.Message, ": removed") && removedDeprecated(o, strings.TrimSuffix(ch.Message, ": removed")):
					r.removed = append(r.removed, line+" (Deprecated at the release point)")
				default:
					r.broken = append(r.broken, line)
				}
			}
		}
	}
	sort.Strings(r.broken)
	sort.Strings(r.removed)
	sort.Strings(r.added)
	return r
}

// removedDeprecated 报告 apidiff 说删除了的名字 name（"F"、"T.F"、"T.M"、"(*T).M"）在发布点上是否已
// 标注 Deprecated：它自己的文档，或它所属类型的文档，或包文档。
func removedDeprecated(o *pkg, name string) bool {
	if o.deprecated {
		return true
	}
	name = strings.NewReplacer("(*", "", "(", "", ")", "").Replace(name)
	parts := strings.Split(name, ".")
	obj := o.types.Scope().Lookup(parts[0])
	if obj == nil {
		return false
	}
	if o.depr[obj.Pos()] {
		return true
	}
	for _, sel := range parts[1:] {
		next, _, _ := types.LookupFieldOrMethod(obj.Type(), true, o.types, sel)
		if next == nil {
			return false
		}
		obj = next
		if o.depr[obj.Pos()] {
			return true
		}
	}
	return false
}

// lineDiff 给出 want 与 got 按行的差异，够评审看清哪一行不同（顺序不同但行相同时为空）。
func lineDiff(want, got string) string {
	w, g := lines(want), lines(got)
	var b strings.Builder
	for _, l := range sortedKeys(w) {
		if !g[l] {
			fmt.Fprintf(&b, "  recorded, not found: %s\n", l)
		}
	}
	for _, l := range sortedKeys(g) {
		if !w[l] {
			fmt.Fprintf(&b, "  found, not recorded:  %s\n", l)
		}
	}
	return b.String()
}

// lines 把文本拆成非空行的集合。
func lines(s string) map[string]bool {
	m := map[string]bool{}
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			m[l] = true
		}
	}
	return m
}

// sortedKeys 返回集合的元素（已排序）。
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// baseFiles 是发布点的一棵小树：公开包 p（有一个 Deprecated 函数、一个带 Deprecated 字段的结构体）、
// 整包 Deprecated 的 dep、internal 包（不在承诺之内）与 main 包（同样不在）。
var baseFiles = map[string]string{
	"go.mod": "module github.com/vllm-cibench/cibench\n\ngo 1.26.0\n",
	"p/p.go": `// Package p 是测试用的公开包。
package p

// F 做一件事。
func F(a int) {}

// Old 是旧名字。
//
// Deprecated: use F.
func Old() {}

// T 是一个结构体。
type T struct {
	// X 即将删除。
	//
	// Deprecated: use Y.
	X int
	// Y 留着。
	Y int
}

// M 是 T 的方法。
//
// Deprecated: use N.
func (T) M() {}

// N 是 T 的方法。
func (*T) N() {}

// Run 运行。
func Run(a int) error { return nil }
`,
	"dep/dep.go":       "// Package dep 是旧包。\n//\n// Deprecated: use p.\npackage dep\n\n// D 是旧包的函数。\nfunc D() {}\n",
	"internal/q/q.go":  "package q\n\n// Q 不在承诺之内。\nfunc Q() {}\n",
	"cmd/tool/main.go": "package main\n\nfunc main() {}\n",
}

// writeTree 把 files 写进一个新的临时目录并返回它；edits 覆盖（空串表示删除）其中的文件。
func writeTree(t *testing.T, files map[string]string, edits map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	all := map[string]string{}
	for k, v := range files {
		all[k] = v
	}
	for k, v := range edits {
		all[k] = v
	}
	for name, data := range all {
		if data == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// check 对 base 与 head 运行 apicheck（next 为记录文件），返回退出码与标准输出、错误输出。
func check(t *testing.T, base, head, next string, update bool) (int, string) {
	t.Helper()
	args := []string{"-base", base, "-head", head, "-next", next}
	if update {
		args = append(args, "-update")
	}
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String() + errb.String()
}

// replace 返回 baseFiles 中 name 的内容把 old 换成 new 之后的文本（old 必须出现）。
func replace(t *testing.T, name, old, new string) string {
	t.Helper()
	s := baseFiles[name]
	if !strings.Contains(s, old) {
		t.Fatalf("%s has no %q", name, old)
	}
	return strings.Replace(s, old, new, 1)
}

// TestPlantedBreaksFailEvenAfterUpdate 是 issue 36 的验收测试：不兼容的变化（给 Run 加一个可变参数、
// 删除没有 Deprecated 的函数、字段、方法或包、改字段类型）无论是否 -update 都失败，且 -update 不改写
// 记录文件；删除发布点上已经 Deprecated 的函数、字段、方法与整包则通过（记进记录文件）。
func TestPlantedBreaksFailEvenAfterUpdate(t *testing.T) {
	base := writeTree(t, baseFiles, nil)
	for _, tc := range []struct {
		name  string
		edits map[string]string
		want  string
	}{
		{"variadic parameter", map[string]string{"p/p.go": replace(t, "p/p.go", "func Run(a int) error", "func Run(a int, opts ...string) error")}, "./p.Run: changed from func(int) error to func(int, ...string) error"},
		{"removed function", map[string]string{"p/p.go": replace(t, "p/p.go", "// F 做一件事。\nfunc F(a int) {}\n", "")}, "./p.F: removed"},
		{"removed field", map[string]string{"p/p.go": replace(t, "p/p.go", "\t// Y 留着。\n\tY int\n", "")}, "./p.T.Y: removed"},
		{"removed method", map[string]string{"p/p.go": replace(t, "p/p.go", "// N 是 T 的方法。\nfunc (*T) N() {}\n", "")}, "./p.(*T).N: removed"},
		{"changed field type", map[string]string{"p/p.go": replace(t, "p/p.go", "\tY int\n", "\tY string\n")}, "./p.T.Y: changed from int to string"},
		{"removed package", map[string]string{"p/p.go": ""}, "./p: package removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := writeTree(t, baseFiles, tc.edits)
			next := filepath.Join(t.TempDir(), "next.txt")
			if err := os.WriteFile(next, []byte("recorded\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, update := range []bool{false, true} {
				code, out := check(t, base, head, next, update)
				if code != 1 || !strings.Contains(out, "- "+tc.want+"\n") {
					t.Errorf("update=%v: exit %d, want 1 and %q in:\n%s", update, code, tc.want, out)
				}
			}
			if b, _ := os.ReadFile(next); string(b) != "recorded\n" {
				t.Errorf("-update rewrote the record despite the break: %q", b)
			}
		})
	}
}

// TestDeprecatedRemovalsAndAdditions 检查允许的变化：删除发布点上已 Deprecated 的函数、字段、方法与
// 整个包，以及新增；它们在 -update 之前使检查失败（记录与实际不符），之后通过。internal 与 main
// 包的变化不算。
func TestDeprecatedRemovalsAndAdditions(t *testing.T) {
	base := writeTree(t, baseFiles, nil)
	p := replace(t, "p/p.go", "// Old 是旧名字。\n//\n// Deprecated: use F.\nfunc Old() {}\n", "// G 是新函数。\nfunc G() {}\n")
	p = strings.Replace(p, "\t// X 即将删除。\n\t//\n\t// Deprecated: use Y.\n\tX int\n", "", 1)
	p = strings.Replace(p, "// M 是 T 的方法。\n//\n// Deprecated: use N.\nfunc (T) M() {}\n", "", 1)
	head := writeTree(t, baseFiles, map[string]string{
		"p/p.go":           p,
		"dep/dep.go":       "",
		"internal/q/q.go":  "package q\n\n// R 改了名。\nfunc R(int) {}\n",
		"cmd/tool/main.go": "package main\n\nfunc main() {}\n\n// Helper 是 main 包的。\nfunc Helper() {}\n",
	})
	next := filepath.Join(t.TempDir(), "next.txt")
	code, out := check(t, base, head, next, false)
	if code != 1 || !strings.Contains(out, "found, not recorded:  - ./p.G: added") {
		t.Fatalf("unrecorded addition: exit %d\n%s", code, out)
	}
	if code, out = check(t, base, head, next, true); code != 0 {
		t.Fatalf("-update: exit %d\n%s", code, out)
	}
	b, err := os.ReadFile(next)
	if err != nil {
		t.Fatal(err)
	}
	want := "Removed after deprecation:\n" +
		"- ./dep: package removed (Deprecated at the release point)\n" +
		"- ./p.Old: removed (Deprecated at the release point)\n" +
		"- ./p.T.M: removed (Deprecated at the release point)\n" +
		"- ./p.T.X: removed (Deprecated at the release point)\n" +
		"Compatible changes:\n" +
		"- ./p.G: added\n"
	if string(b) != want {
		t.Fatalf("record:\n%s\nwant:\n%s", b, want)
	}
	if code, out = check(t, base, head, next, false); code != 0 || !strings.Contains(out, "no incompatible change") {
		t.Fatalf("after -update: exit %d\n%s", code, out)
	}
	// 同一棵树与自己比较：没有变化，空记录通过。
	empty := filepath.Join(t.TempDir(), "empty.txt")
	if code, out = check(t, base, base, empty, false); code != 0 {
		t.Fatalf("unchanged tree: exit %d\n%s", code, out)
	}
}

// TestWorkspaceTree 检查有 go.work 的树：包从根模块搬进嵌套模块（同一导入路径）不算变化；
// 工作区里不属于本仓库的模块不加载。
func TestWorkspaceTree(t *testing.T) {
	base := writeTree(t, baseFiles, nil)
	head := writeTree(t, baseFiles, map[string]string{
		"p/go.mod":       "module github.com/vllm-cibench/cibench/p\n\ngo 1.26.0\n",
		"other/go.mod":   "module example.com/other\n\ngo 1.26.0\n",
		"other/other.go": "package other\n\n// O 不是本仓库的。\nfunc O() {}\n",
		"go.work":        "go 1.26.0\n\nuse (\n\t.\n\t./p\n\t./other\n)\n",
	})
	t.Setenv("GOWORK", "off") // 调用者的设置不影响：有 go.work 的树总按它的工作区加载
	next := filepath.Join(t.TempDir(), "next.txt")
	if code, out := check(t, base, head, next, false); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	pats, err := patterns(head)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(pats, " ") != "./... ./p/..." {
		t.Fatalf("patterns %v", pats)
	}
}

// TestUsageAndLoadErrors 检查用法错误与加载错误的退出码 2 及其说明。
func TestUsageAndLoadErrors(t *testing.T) {
	base := writeTree(t, baseFiles, nil)
	next := filepath.Join(t.TempDir(), "next.txt")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage: apicheck -base DIR"},
		{[]string{"-base", base, "extra"}, "usage"},
		{[]string{"-bogus"}, "flag provided but not defined"},
		{[]string{"-base", filepath.Join(base, "nope"), "-next", next}, "apicheck: base"},
		{[]string{"-base", base, "-head", writeTree(t, baseFiles, map[string]string{"p/p.go": "package p\n\nfunc F( {}\n"}), "-next", next}, "apicheck: head"},
		{[]string{"-base", base, "-head", base, "-next", t.TempDir()}, "apicheck:"},
		{[]string{"-base", writeTree(t, map[string]string{"go.mod": "module example.com/x\n\ngo 1.26.0\n", "x.go": "package x\n"}, nil), "-next", next}, "no public packages"},
	} {
		var out, errb bytes.Buffer
		if code := run(tc.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
	// 记录文件写不进去（-update 指向目录）同样是 2。
	var out, errb bytes.Buffer
	if code := run([]string{"-base", base, "-head", base, "-next", t.TempDir(), "-update"}, &out, &errb); code != 2 {
		t.Errorf("-update into a directory: exit %d %s", code, errb.String())
	}
}

// TestGoEnvKeepsGOFLAGS：加载包时 go 命令用调用者的 GOFLAGS（scripts/test.sh 设的
// -gcflags=all=-dwarf=false），工作区按树里有没有 go.work 设置。以前 GOFLAGS 被清空，
// 导出数据按另一组编译参数生成，整棵依赖树重编一遍。
func TestGoEnvKeepsGOFLAGS(t *testing.T) {
	t.Setenv("GOFLAGS", "-gcflags=all=-dwarf=false")
	dir := t.TempDir()
	last := func(env []string, key string) string {
		v := ""
		for _, kv := range env {
			if k, val, ok := strings.Cut(kv, "="); ok && k == key {
				v = val
			}
		}
		return v
	}
	env := goEnv(dir)
	if got := last(env, "GOFLAGS"); got != "-gcflags=all=-dwarf=false" {
		t.Errorf("GOFLAGS = %q, want the caller's -gcflags=all=-dwarf=false", got)
	}
	if got := last(env, "GOWORK"); got != "off" {
		t.Errorf("GOWORK = %q without a go.work, want off", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.work"), []byte("go 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := last(goEnv(dir), "GOWORK"), filepath.Join(dir, "go.work"); got != want {
		t.Errorf("GOWORK = %q, want %q", got, want)
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeModule 在临时目录里写一个小模块：p.go 调用只在 Unix 文件里定义的 F。
func writeModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":      "module example.com/m\n\ngo 1.26.0\n",
		"p/p.go":      "package p\n\nimport \"os\"\n\n// G 调用平台相关的 F。\nfunc G() int { return F() + os.Getpid() }\n",
		"p/p_unix.go": "//go:build unix\n\npackage p\n\n// F 只在 Unix 上定义。\nfunc F() int { return 1 }\n",
		// r 本身与平台无关，但它导入的 q 在 Windows 上缺 H：错误在依赖里，也要报出。
		"r/r.go":      "package r\n\nimport \"example.com/m/q\"\n\n// R 调用 q.G。\nfunc R() int { return q.G() }\n",
		"q/q.go":      "package q\n\n// G 调用平台相关的 H。\nfunc G() int { return H() }\n",
		"q/q_unix.go": "//go:build unix\n\npackage q\n\n// H 只在 Unix 上定义。\nfunc H() int { return 2 }\n",
	}
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestTypeErrorOnOneSystem：只在 Unix 上定义的函数在 darwin 上通过，在 windows 上报出包、文件与名字；
// 依赖（标准库）从源码检查，数目计入报告。
func TestTypeErrorOnOneSystem(t *testing.T) {
	dir := writeModule(t)
	var out, errb bytes.Buffer
	if code := run([]string{"-goos", "darwin", "-C", dir, "./p"}, &out, &errb); code != 0 {
		t.Fatalf("darwin: exit %d\n%s", code, errb.String())
	}
	if !strings.Contains(out.String(), "darwin/amd64: 1 packages and their") || strings.Contains(out.String(), "their 0 dependencies") {
		t.Errorf("darwin report: %q", out.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"-goos", "windows", "-C", dir, "./p"}, &out, &errb); code != 1 {
		t.Fatalf("windows: exit %d, want 1\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"windows/amd64", "example.com/m/p:", "p.go:6", "undefined: F"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("windows errors lack %q:\n%s", want, errb.String())
		}
	}
}

// TestDependencyCheckedFromSource：命令行上的包本身没有错，它的依赖在 windows 上缺一个函数——
// 依赖也从源码检查（不靠编译出的导出数据），错误指向依赖。
func TestDependencyCheckedFromSource(t *testing.T) {
	dir := writeModule(t)
	var out, errb bytes.Buffer
	if code := run([]string{"-goos", "darwin", "-C", dir, "./r"}, &out, &errb); code != 0 {
		t.Fatalf("darwin: exit %d\n%s", code, errb.String())
	}
	if code := run([]string{"-goos", "windows", "-C", dir, "./r"}, &out, &errb); code != 1 {
		t.Fatalf("windows: exit %d, want 1\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "example.com/m/q:") || !strings.Contains(errb.String(), "undefined: H") {
		t.Errorf("the dependency's error is not reported:\n%s", errb.String())
	}
}

// TestUsageAndLoadErrors：缺 -goos 或包模式、未知标志是用法错误（2）；不存在的包是类型检查失败（1），
// 不是通过。
func TestUsageAndLoadErrors(t *testing.T) {
	dir := writeModule(t)
	for _, args := range [][]string{{"./p"}, {"-goos", "linux"}, {"-bogus"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"-goos", "linux", "-C", dir, "./missing"}, &out, &errb); code == 0 {
		t.Errorf("a missing package passed: %s", out.String())
	}
	if code := run([]string{"-goos", "linux", "-C", filepath.Join(dir, "nowhere"), "./p"}, &out, &errb); code == 0 {
		t.Errorf("a missing directory passed: %s", out.String())
	}
}

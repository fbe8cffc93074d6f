package doccheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// module 是本模块的导入路径。
const module = "github.com/vllm-cibench/cibench"

// TestPackageTableImports 核对 docs/packages.md 包表的“导入（本模块）”一列与 go list 的事实
// 一致：一个包多导入或少导入了本模块的包，而表格没跟着改，CI 就变红（issue #30 之后
// deploy/kube 与 matrix 的行曾经还写着已经拆掉的依赖）。只核对第一列是单个包的行；
// 第一列写了多个包或一组包（internal/{…}）的行、独立模块的行不核对。
func TestPackageTableImports(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "packages.md"))
	if err != nil {
		t.Fatal(err)
	}
	all := moduleImports(t)
	single := regexp.MustCompile("^`([a-z][a-z0-9/]*)`$")
	tick := regexp.MustCompile("`([^`]+)`")
	rows := 0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, " | ")
		if len(cells) < 4 {
			continue
		}
		m := single.FindStringSubmatch(strings.TrimPrefix(cells[0], "| "))
		if m == nil {
			continue
		}
		pkg := m[1]
		if _, err := os.Stat(filepath.Join(root, pkg)); err != nil {
			continue // 其他表格里的行（如字段约定表）
		}
		rows++
		var doc []string
		for _, tm := range tick.FindAllStringSubmatch(cells[2], -1) {
			name := tm[1]
			if strings.HasSuffix(name, "/") || strings.ContainsAny(name, " {.") {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, name)); err == nil {
				doc = append(doc, name)
			}
		}
		slices.Sort(doc)
		doc = slices.Compact(doc)
		got := all[pkg]
		if !slices.Equal(doc, got) {
			t.Errorf("docs/packages.md: row %s lists imports %v, but go list says %v", pkg, doc, got)
		}
	}
	if rows < 20 {
		t.Fatalf("only %d package rows checked: the table parser is broken", rows)
	}
	// 每个公开包（internal/、examples/ 与 scripts/ 之外）都要有自己的一行：新包不能悄悄地不进表。
	for rel := range all {
		if strings.Contains("/"+rel+"/", "/internal/") || strings.HasPrefix(rel, "examples") || strings.HasPrefix(rel, "scripts/") {
			continue
		}
		if !strings.Contains(string(b), "\n| `"+rel+"` |") {
			t.Errorf("docs/packages.md: public package %s has no row in the package table", rel)
		}
	}
}

// moduleImports 用一次 go list 取得本模块每个包（相对模块根的路径）非测试代码导入的本模块包
// （相对路径，已排序）。
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-f", `{{.ImportPath}} {{join .Imports " "}}`}, workspacePatterns(t)...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	all := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(l)
		if len(fields) == 0 {
			continue
		}
		rel, ok := strings.CutPrefix(fields[0], module+"/")
		if !ok {
			continue
		}
		got := []string{}
		for _, imp := range fields[1:] {
			if r, ok := strings.CutPrefix(imp, module+"/"); ok {
				got = append(got, r)
			}
		}
		slices.Sort(got)
		all[rel] = got
	}
	return all
}

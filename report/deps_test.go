package report_test

import (
	"os/exec"
	"strings"
	"testing"
)

// stagePackage 报告 p 是否属于某个阶段包（functional、loadgen、accuracy 及其子包）或 openai-go。
func stagePackage(p string) string {
	for _, s := range []string{"functional", "loadgen", "accuracy"} {
		full := "github.com/vllm-cibench/cibench/" + s
		if p == full || strings.HasPrefix(p, full+"/") {
			return s
		}
	}
	if strings.HasPrefix(p, "github.com/openai/openai-go") {
		return "openai-go"
	}
	return ""
}

// listDeps 用 go 命令列出 pkg 链接的全部包。
func listDeps(t *testing.T, pkg string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the package's dependencies: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 20 {
		t.Fatalf("go list -deps %s printed %d packages; the toolchain call did not list the package", pkg, len(pkgs))
	}
	return pkgs
}

// TestReportLinksNoStage 是 issue 24 的"report 不是导入一切阶段的枢纽"：report 本身不链接任何
// 阶段包（functional、loadgen、accuracy）与 openai-go，也不链接自己的阶段子包；每个阶段子包只
// 链接它自己的阶段。新阶段因此不需要改 report，一个只想写报告的程序也不会带进全部阶段。
// 在拆分之前的代码上，report 链接 functional、loadgen、accuracy 与 openai-go（312 个包）。
func TestReportLinksNoStage(t *testing.T) {
	const mod = "github.com/vllm-cibench/cibench/report"
	for pkg, allowed := range map[string]map[string]bool{
		mod:                       {},
		mod + "/functionalreport": {"functional": true, "openai-go": true}, // functional 自己用 openai-go
		mod + "/perfreport":       {"loadgen": true},
		mod + "/accuracyreport":   {"accuracy": true},
	} {
		var linked []string
		pkgs := listDeps(t, pkg)
		for _, p := range pkgs {
			if s := stagePackage(p); s != "" && !allowed[s] {
				linked = append(linked, p)
			}
			if pkg == mod && strings.HasPrefix(p, mod+"/") {
				linked = append(linked, p)
			}
		}
		if len(linked) > 0 {
			t.Errorf("%s links %v (%d packages in all)", pkg, linked, len(pkgs))
		}
		t.Logf("%s links %d packages", pkg, len(pkgs))
	}
}

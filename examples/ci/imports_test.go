package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// modulePath 是 cibench 的模块路径；驱动不得直接导入它的 internal/ 包。
const modulePath = "github.com/vllm-cibench/cibench"

// TestDriverImportsOnlyPublicAPI 用 go list 列出参考驱动 examples/ci 与它的组合 API pipeline 的
// 直接导入：其中不得有任何 internal/ 包——团队用同样的公开积木必须能搭出同样的流水线，
// 把 main 复制出本模块也必须能编译。经由公开库包间接依赖的 internal 包不算（它们是库的实现细节）；
// 测试文件的导入也不算。
func TestDriverImportsOnlyPublicAPI(t *testing.T) {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found:", err)
	}
	out, err := exec.Command(gocmd, "list", "-f", `{{.ImportPath}}:{{join .Imports " "}}`, "./...", "../../pipeline").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		p, imps, _ := strings.Cut(line, ":")
		pkgs[p] = strings.Fields(imps)
	}
	for _, want := range []string{modulePath + "/examples/ci", modulePath + "/pipeline"} {
		if _, ok := pkgs[want]; !ok {
			t.Fatalf("go list did not list %s (got %v)", want, pkgs)
		}
	}
	for p, imps := range pkgs {
		// 驱动包必须真的导入了公开库，否则这个检查什么也没看。
		if !slices.Contains(imps, modulePath+"/report") {
			t.Errorf("%s does not import report (imports %v)", p, imps)
		}
		for _, imp := range imps {
			if strings.HasPrefix(imp, modulePath+"/") && strings.Contains(imp+"/", "/internal/") {
				t.Errorf("%s imports %s: the reference driver must use only the public API", p, imp)
			}
		}
	}
}

package pipeline_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// goRoot 在仓库根目录以 GOWORK=off 运行 go 子命令：看到的是根模块自己的 go.mod，与导入 cibench
// 的团队看到的一样（工作区 go.work 只在本仓库里起作用）。
func goRoot(t *testing.T, args ...string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the module graph: %v", err)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// isKube 报告导入路径或模块路径是否属于 Kubernetes（k8s.io/… 或 sigs.k8s.io/…）。
func isKube(p string) bool {
	return strings.HasPrefix(p, "k8s.io/") || strings.HasPrefix(p, "sigs.k8s.io/")
}

// TestPipelineLinksNoKubernetes 是 issue 36 的验收测试：稳定包 pipeline 曾因 DefaultModes 登记
// Kubernetes 方式而链接 692 个包，其中 268 个是 k8s.io 的。现在 Kubernetes 方式在自己的模块里，
// 要用时由程序登记（kube.Modes()）；pipeline 与根模块的任何包都不链接 Kubernetes。
func TestPipelineLinksNoKubernetes(t *testing.T) {
	pkgs := strings.Fields(goRoot(t, "list", "-deps", "./pipeline"))
	if len(pkgs) < 100 {
		t.Fatalf("go list -deps printed %d packages; the toolchain call did not list pipeline", len(pkgs))
	}
	for _, p := range pkgs {
		if isKube(p) || strings.HasPrefix(p, "github.com/vllm-cibench/cibench/deploy/kube") {
			t.Errorf("pipeline links %s", p)
		}
	}
	// 根模块的每个包（连同测试）都不导入 Kubernetes：否则 go.mod 会重新列出 k8s.io 模块。
	for _, p := range strings.Fields(goRoot(t, "list", "-deps", "-test", "./...")) {
		if isKube(p) {
			t.Errorf("a package or test of the root module links %s", p)
		}
	}
}

// TestRootModuleRequiresNoKubernetes 用 go mod graph（而不是推理）检查：根模块的模块图里没有任何
// k8s.io 模块，go 指令没有补丁版本下限。团队导入任何根模块的包都不会因此改变自己的 client-go 与 go 版本
// （examples/operator 在一个钉住 client-go v0.35.10、go 1.26.0 的模块里实际做一遍）。
func TestRootModuleRequiresNoKubernetes(t *testing.T) {
	graph := goRoot(t, "mod", "graph")
	if strings.Count(graph, "\n") < 10 {
		t.Fatalf("go mod graph printed too little:\n%s", graph)
	}
	for _, line := range strings.Split(graph, "\n") {
		for _, f := range strings.Fields(line) {
			if isKube(f) {
				t.Errorf("module graph edge %q names a Kubernetes module", line)
				break
			}
		}
	}
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(gomod), "\ngo 1.26.0\n") {
		t.Errorf("go.mod must declare the oldest supported release line with no patch floor (go 1.26.0):\n%s", gomod)
	}
	if strings.Contains(string(gomod), "\ntoolchain ") {
		t.Errorf("go.mod must not name a toolchain (it would make importers download it):\n%s", gomod)
	}
}

// TestEveryModuleDeclaresGo1260 检查仓库里每个 go.mod 与 go.work 的 go 指令都是仍受支持的最老发布线
// 1.26.0（没有补丁下限，也没有 toolchain 行）：嵌套模块（deploy/kube 等）同样被团队导入，它们的
// go 指令同样会传给导入者。
func TestEveryModuleDeclaresGo1260(t *testing.T) {
	// 工作区：go list -m 列出每个工作区模块的 go.mod。
	cmd := exec.Command("go", "list", "-m", "-f", "{{.GoMod}}")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	ours := append(strings.Fields(string(out)), "../go.work")
	if len(ours) < 8 {
		t.Fatalf("found only %v", ours)
	}
	for _, f := range ours {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains("\n"+string(b), "\ngo 1.26.0\n") || strings.Contains(string(b), "\ntoolchain ") {
			t.Errorf("%s: want \"go 1.26.0\" and no toolchain line", f)
		}
	}
}

// Package examples_test 检查 examples/ 下的程序作为整体必须满足的性质。examples/ 本身
// 没有 Go 源文件，这个只有测试的包让 `go test ./...`（scripts/test.sh）也跑到这些检查，
// 包括不在 ./... 之内的嵌套模块 examples/team。
package examples_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goTool 返回 go 命令的路径；找不到时跳过（这些测试检查的是构建图，需要工具链）。
func goTool(t *testing.T) string {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found:", err)
	}
	return gocmd
}

// goCmd 在 dir 中运行 go 子命令并返回合并输出；失败时 t.Fatal 并附上输出。
// GOWORK=off 与 -mod=readonly 保证团队模块按它自己的 go.mod/go.sum 构建（replace 指回本仓库），
// 与团队在自己的仓库里看到的一样；GOFLAGS 中父进程的 -race 等设置不传下去。
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(goTool(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// TestTeamModule 在独立模块 examples/team 里运行 vet 与测试：它只导入 cibench 的公开包
// （另一个模块导入 internal/ 包根本编译不过），它的测试逐个故事断言团队的用例、导出器、
// 评测、厂商能力与门禁出现在 summary.json、JUnit 与 HTML 中并像内置的一样设门禁。
// 嵌套模块不在 ./... 之内，没有这个测试 scripts/test.sh 就不会跑到它。
func TestTeamModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the team module's own tests (several pipeline runs)")
	}
	dir, err := filepath.Abs("team")
	if err != nil {
		t.Fatal(err)
	}
	goCmd(t, dir, "vet", "./...")
	// 与 scripts/test.sh 对本模块的要求一致，团队模块的测试也在竞态检测下运行：团队的导出器
	// 与评测在驱动的并发路径上被调用，数据竞争要在这里暴露，而不是在团队的流水线里。
	out := goCmd(t, dir, "test", "-race", "-count=1", "-v", "./...")
	// 每个故事的测试都必须真的运行并通过（不是被跳过，也不是没被发现）。
	for _, name := range []string{"TestTeamPipeline", "TestTeamFailuresTurnGatesRed/case", "TestTeamFailuresTurnGatesRed/eval",
		"TestTeamFailuresTurnGatesRed/exporter", "TestVendorFeatureOff", "TestUnregisteredNamesRejected", "TestTeamGateInSummarizeJob"} {
		if !strings.Contains(out, "--- PASS: "+name+" ") {
			t.Errorf("team module test %s did not pass:\n%s", name, out)
		}
	}
	// main.go 是一个团队约 20 行的程序：它得真的能构建出可执行文件。
	goCmd(t, dir, "build", "-o", filepath.Join(t.TempDir(), "team"), ".")
}

// TestProductionBinariesDoNotLinkTesting 确认 examples/ 下的每个程序（包括团队模块的 main）
// 都不把 testing 包链接进二进制：testing 会带进它的命令行标志与测试机制。以前
// deploy/emulator.Start 接收 testing.TB，所有链接模拟器的程序（emulator、ci、bench、
// functional、accuracy）都因此链接了 testing。
func TestProductionBinariesDoNotLinkTesting(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	mains := strings.Fields(goCmd(t, root, "list", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`, "./examples/..."))
	if !slices.Contains(mains, "github.com/vllm-cibench/cibench/examples/emulator") || len(mains) < 5 {
		t.Fatalf("go list found too few main packages under examples/: %v", mains)
	}
	check := func(dir string, pkgs ...string) {
		for _, p := range pkgs {
			deps := strings.Fields(goCmd(t, dir, "list", "-deps", p))
			if slices.Contains(deps, "testing") {
				t.Errorf("%s links the testing package into a production binary", p)
			}
			if !slices.Contains(deps, "net/http") {
				t.Errorf("%s: go list -deps returned no real dependency list: %v", p, deps)
			}
		}
	}
	check(root, mains...)
	check(filepath.Join(root, "examples", "team"), ".")
}

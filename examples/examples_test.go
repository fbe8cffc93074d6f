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
// 与团队在自己的仓库里看到的一样。
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(goTool(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", goflags("-mod=readonly"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// goflags 返回子进程的 GOFLAGS 设置：环境里已有的 GOFLAGS 之后加上 extra（同一标志后者优先）。
// 环境里的设置要传下去：scripts/test.sh 在 GOFLAGS 里设 -gcflags=all=-dwarf=false，这里的 go build、
// go test 用同样的参数才取得到前面已编译的依赖（否则团队模块的 -race 测试与 operator 的 client-go
// 要整棵重编）。
func goflags(extra string) string {
	return "GOFLAGS=" + strings.TrimSpace(os.Getenv("GOFLAGS")+" "+extra)
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
	// -vet=off：上面的 go vet 已跑过全部分析器（go test 自带的那组是它的子集），不必再算一遍依赖树的 vet 事实。
	out := goCmd(t, dir, "test", "-race", "-vet=off", "-count=1", "-v", "./...")
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

// TestTeamKeepsItsVersions 是 issue 36 的验收测试：一个平台团队的模块钉在集群的 client-go v0.35.10
// 与 go 1.26.0 上，导入 functional、loadgen、accuracy、metrics、report、gate 与 pipeline（不登记
// Kubernetes 方式）。以前 go mod tidy 之后它的 client-go 变成 v0.36.3、go 指令变成 1.26.8（cibench 的
// 根模块要求 k8s.io v0.36.3 与 go 1.26.8）。这里从只写了直接依赖的 go.mod 出发，在 examples/operator 的
// 副本上运行 go mod tidy（模块图由 go 命令自己算，不靠推理），断言两个版本都没变，提交的 go.mod 本身
// 也是整理过的，并用 GOTOOLCHAIN=local（不下载别的工具链）构建它。
func TestTeamKeepsItsVersions(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "examples", "operator")
	dir := t.TempDir()
	main, err := os.ReadFile(filepath.Join(src, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), main, 0o644); err != nil {
		t.Fatal(err)
	}
	gomod := "module example.com/operator\n\ngo 1.26.0\n\nrequire (\n\tgithub.com/vllm-cibench/cibench v0.1.0\n\tk8s.io/client-go v0.35.10\n)\n\nreplace github.com/vllm-cibench/cibench => " + root + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	tidy := exec.Command(goTool(t), "mod", "tidy")
	tidy.Dir = dir
	tidy.Env = append(os.Environ(), "GOWORK=off", goflags("-mod=mod"), "GOTOOLCHAIN=local")
	if out, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
	after, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\ngo 1.26.0\n", "\tk8s.io/client-go v0.35.10\n"} {
		if !strings.Contains(string(after), want) {
			t.Errorf("after go mod tidy the team's go.mod lost %q:\n%s", strings.TrimSpace(want), after)
		}
	}
	if strings.Contains(string(after), "\ntoolchain ") {
		t.Errorf("go mod tidy added a toolchain line:\n%s", after)
	}
	// 提交的模块本身是整理过的（与上面算出的结果一致），并且不下载别的工具链就能构建。
	committed, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Replace(string(after), "=> "+root, "=> ../..", 1); got != string(committed) {
		t.Errorf("examples/operator/go.mod is not what go mod tidy computes:\n--- committed\n%s\n--- tidy\n%s", committed, got)
	}
	build := exec.Command(goTool(t), "build", "-o", filepath.Join(t.TempDir(), "operator"), ".")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off", goflags("-mod=readonly"), "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("GOTOOLCHAIN=local go build: %v\n%s", err, out)
	}
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
	// 嵌套模块里的程序（登记 Kubernetes 方式的 ci 与 bench、团队模块）不在根模块的 ./examples/... 之内。
	for _, m := range []string{"ci", "bench", "team", "operator"} {
		check(filepath.Join(root, "examples", m), ".")
	}
}

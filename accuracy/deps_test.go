package accuracy_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreLinksNoDataset 是 issue 24 拆分 accuracy 的验收测试：一个只用核心运行器跑团队评测的
// 程序（导入 accuracy 与 endpoint）链接的包里没有 accuracy/simpleevals，也就没有五个数据集的
// 提示词、正则表、random.Random 复刻（internal/pyrandom）、HumanEval 执行器与内嵌的样例数据。
// 以前 accuracy 一个包里就有这些，DefaultRegistry 把它们全部连上。go list -deps 对这两个包的
// 并集就是这样一个 main 包链接的全部包（main 自己除外）。
func TestCoreLinksNoDataset(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the program's packages: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps",
		"github.com/vllm-cibench/cibench/accuracy",
		"github.com/vllm-cibench/cibench/endpoint").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 20 || !strings.Contains(string(out), "github.com/vllm-cibench/cibench/accuracy/external\n") {
		t.Fatalf("go list -deps printed %d packages without accuracy/external; the toolchain call did not list the program", len(pkgs))
	}
	var linked []string
	for _, p := range pkgs {
		if strings.HasPrefix(p, "github.com/vllm-cibench/cibench/accuracy/simpleevals") || p == "github.com/vllm-cibench/cibench/internal/pyrandom" {
			linked = append(linked, p)
		}
	}
	if len(linked) > 0 {
		t.Fatalf("a core-only accuracy program links %v (%d packages in all)", linked, len(pkgs))
	}
	t.Logf("a core-only accuracy program links %d packages", len(pkgs))
}

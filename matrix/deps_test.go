package matrix_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoKubernetesDependency 守住“依赖随用户需要”：只加载 YAML 的 matrix 不得把
// client-go/apimachinery 拖进构建（曾经为了一个配置结构体引入 278 个 k8s.io 包）。
// Kubernetes 场景的配置类型在 deploy/kube/spec，client-go 只在 deploy/kube。
func TestNoKubernetesDependency(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	var bad []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "k8s.io/") || strings.HasPrefix(line, "sigs.k8s.io/") {
			bad = append(bad, line)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("matrix depends on %d Kubernetes packages, e.g. %v", len(bad), bad[:min(3, len(bad))])
	}
}

// TestNoEmulatorOrEvalDependency 复现 issue #30：matrix 曾为校验场景而链接整个模拟器
// （嵌入 emulator.Config、调用 emulator.New），并回退到 simpleevals.Registry()，共 344 个包。
// 部署方式与评测现在是调用方给的登记表，matrix 不再链接它们。
func TestNoEmulatorOrEvalDependency(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	const mod = "github.com/vllm-cibench/cibench/"
	for _, line := range strings.Split(string(out), "\n") {
		switch line {
		case mod + "deploy/emulator", mod + "internal/emulator", mod + "accuracy/simpleevals", mod + "deploy/kube/spec":
			t.Errorf("matrix links %s", line)
		}
	}
}

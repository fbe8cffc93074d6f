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

package kube_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeployLinksNoLoadGenerator 复现 issue #30：deploy/kube 曾因分片 Job（shardjob.go）导入
// loadgen 与 loadgen/shard，只部署的团队也链接了负载生成。分片 Job 现在在 loadgen/shard/kubejob。
func TestDeployLinksNoLoadGenerator(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "github.com/vllm-cibench/cibench/loadgen") {
			t.Errorf("deploy/kube links %s", line)
		}
	}
}

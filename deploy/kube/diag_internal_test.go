package kube

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"
)

// TestContainerState 钉住容器状态的简短描述（等待原因、退出码、运行中、未知）。
func TestContainerState(t *testing.T) {
	term := corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}
	run := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	for _, c := range []struct {
		st   corev1.ContainerStatus
		want string
	}{
		{corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}, "waiting:CrashLoopBackOff"},
		{term, "terminated:OOMKilled exit=137"},
		{run, "running"},
		{corev1.ContainerStatus{}, "unknown"},
	} {
		if got := containerState(c.st); got != c.want {
			t.Errorf("containerState = %q, want %q", got, c.want)
		}
	}
}

// TestNestedInt 钉住就绪判断读整数字段的各种 JSON 数值类型与缺省值。
func TestNestedInt(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"a": int64(3), "b": 4, "c": float64(5), "d": "6"}}}
	for f, want := range map[string]int64{"a": 3, "b": 4, "c": 5, "d": -1, "missing": -1} {
		if got := nestedInt(u, -1, "status", f); got != want {
			t.Errorf("nestedInt(status.%s) = %d, want %d", f, got, want)
		}
	}
}

// TestWithLogger 钉住 WithLogger 选项确实设置了部署器的日志。
func TestWithLogger(t *testing.T) {
	l := slog.New(slog.DiscardHandler)
	d := &Deployer{}
	WithLogger(l)(d)
	if d.log != l {
		t.Error("WithLogger did not set the logger")
	}
}

// TestArchiveDescribesPodsWithoutSecrets：归档为每个 Pod 写出完整描述（YAML），清单里字面写出的
// 密钥类环境变量与配置的 API 密钥（也出现在启动参数里）被替换为 ***，其余值原样保留；
// ArchiveLogs 已经写过 LogDir 时 Teardown 不再归档一遍。
func TestArchiveDescribesPodsWithoutSecrets(t *testing.T) {
	const key = "sk-test-0123456789"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "vllm-0", Namespace: "ns", Labels: map[string]string{"app": "x"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{
			Name: "vllm", Image: "vllm/vllm-openai",
			Args: []string{"--api-key", key},
			Env:  []corev1.EnvVar{{Name: "VLLM_API_KEY", Value: key}, {Name: "HF_TOKEN", Value: "hf_abc"}, {Name: "VLLM_USE_V1", Value: "1"}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}},
	}
	x := &Deployment{cfg: Config{Namespace: "ns", PodSelector: "app=x", APIKey: key, LogDir: t.TempDir()}, cs: fake.NewClientset(pod), log: slog.New(slog.DiscardHandler)}
	if err := x.ArchiveLogs(context.Background(), x.cfg.LogDir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(x.cfg.LogDir, "pods", "vllm-0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	y := string(b)
	if strings.Contains(y, key) || strings.Contains(y, "hf_abc") || strings.Contains(y, "managedFields") {
		t.Fatalf("description leaks a secret or managedFields:\n%s", y)
	}
	for _, want := range []string{"- --api-key\n    - '***'", "name: VLLM_API_KEY\n      value: '***'", "name: HF_TOKEN\n      value: '***'",
		"name: VLLM_USE_V1\n      value: \"1\"", "reason: Unschedulable", "phase: Pending", "nodeName: n1"} {
		if !strings.Contains(y, want) {
			t.Errorf("description lacks %q:\n%s", want, y)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(x.cfg.LogDir, "pods", "vllm-0.vllm.log")); string(b) != "fake logs" {
		t.Errorf("log = %q", b)
	}
	// 已归档到 LogDir：Teardown 不再重写（删掉的文件不会再出现）。
	if err := os.Remove(filepath.Join(x.cfg.LogDir, "events.txt")); err != nil {
		t.Fatal(err)
	}
	if err := x.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(x.cfg.LogDir, "events.txt")); !os.IsNotExist(err) {
		t.Fatalf("teardown archived LogDir a second time: %v", err)
	}
}

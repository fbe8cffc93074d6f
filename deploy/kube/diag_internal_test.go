package kube

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// shardPod 构造一个属于 Job（UID uid）、完成序号为 idx、处于 phase 的分片 Pod。
func shardPod(job string, uid types.UID, idx string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: job + "-" + idx + "-" + string(phase), Namespace: "ns",
			Labels:          map[string]string{"app.kubernetes.io/instance": job},
			Annotations:     map[string]string{batchv1.JobCompletionIndexAnnotation: idx},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: job, UID: uid}},
			Finalizers:      []string{batchv1.JobTrackingFinalizer}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// TestAllIndexesTerminal 钉住等待的提前结束条件：每个序号都有一个已结束（Succeeded 或 Failed）
// 的 Pod 才算结束；还在运行的、序号越界或缺注解的 Pod 不算，列 Pod 失败时不提前结束。
// 集成测试只走到"全部成功"这一种情形，失败、越界与缺序号的分支在这里用 client-go 的
// 内存客户端覆盖（它只是一份对象表，判断逻辑与真实 API Server 上相同）。
func TestAllIndexesTerminal(t *testing.T) {
	j := ShardJob{Name: "b", Namespace: "ns", Shards: 3}
	cases := []struct {
		name string
		pods []*corev1.Pod
		want bool
	}{
		{"none", nil, false},
		{"one running", []*corev1.Pod{shardPod("b", "u", "0", corev1.PodSucceeded), shardPod("b", "u", "1", corev1.PodFailed), shardPod("b", "u", "2", corev1.PodRunning)}, false},
		{"all terminal", []*corev1.Pod{shardPod("b", "u", "0", corev1.PodSucceeded), shardPod("b", "u", "1", corev1.PodFailed), shardPod("b", "u", "2", corev1.PodSucceeded)}, true},
		{"duplicate index", []*corev1.Pod{shardPod("b", "u", "0", corev1.PodSucceeded), shardPod("b", "u", "0", corev1.PodFailed), shardPod("b", "u", "1", corev1.PodSucceeded)}, false},
		{"out of range and unannotated", []*corev1.Pod{shardPod("b", "u", "0", corev1.PodSucceeded), shardPod("b", "u", "1", corev1.PodSucceeded), shardPod("b", "u", "7", corev1.PodSucceeded), shardPod("b", "u", "x", corev1.PodSucceeded)}, false},
	}
	for _, c := range cases {
		cs := fake.NewClientset()
		for _, p := range c.pods {
			if _, err := cs.CoreV1().Pods("ns").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if got := j.allIndexesTerminal(context.Background(), cs); got != c.want {
			t.Errorf("%s: allIndexesTerminal = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPodStates 钉住删除超时时放进错误的 Pod 描述：只列属于该 Job（按属主 UID）的 Pod，
// 带阶段与终结器；没有时写 none。
func TestPodStates(t *testing.T) {
	j := ShardJob{Name: "b", Namespace: "ns", Shards: 2}
	cs := fake.NewClientset(shardPod("b", "u1", "0", corev1.PodRunning), shardPod("b", "other", "1", corev1.PodRunning))
	got := j.podStates(context.Background(), cs, "u1")
	if !strings.Contains(got, "b-0-Running Running") || !strings.Contains(got, batchv1.JobTrackingFinalizer) || strings.Contains(got, "b-1-") {
		t.Errorf("podStates = %q", got)
	}
	if got := j.podStates(context.Background(), cs, "nobody"); got != "none" {
		t.Errorf("podStates without pods = %q, want none", got)
	}
}

// TestPodReasonAndContainerState 钉住报告里 Pod 失败原因与容器状态的一行写法。
func TestPodReasonAndContainerState(t *testing.T) {
	p := &corev1.Pod{Status: corev1.PodStatus{Reason: "Evicted", ContainerStatuses: []corev1.ContainerStatus{
		{Name: "shard", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}},
		{Name: "side", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
	}}}
	if got, want := podReason(p), " (Evicted, shard exit 137 OOMKilled)"; got != want {
		t.Errorf("podReason = %q, want %q", got, want)
	}
	if got := podReason(&corev1.Pod{}); got != "" {
		t.Errorf("podReason of a pod without status = %q, want empty", got)
	}
	for _, c := range []struct {
		st   corev1.ContainerStatus
		want string
	}{
		{corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}, "waiting:CrashLoopBackOff"},
		{p.Status.ContainerStatuses[0], "terminated:OOMKilled exit=137"},
		{p.Status.ContainerStatuses[1], "running"},
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

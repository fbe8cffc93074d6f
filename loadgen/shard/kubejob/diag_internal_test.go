package kubejob

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
}

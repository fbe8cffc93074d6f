package kubejob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/vllm-cibench/cibench/deploy/kube"
	"github.com/vllm-cibench/cibench/loadgen"
)

// TestShardJobFilesManifestAndValidation 检查 Secret 与 ConfigMap 的挂载（只读，Secret 0400，路径固定）、
// Job 定义里没有密钥；键名不合法与内容过大在创建任何对象之前以 kube.ErrConfig 点名字段。
func TestShardJobFilesManifestAndValidation(t *testing.T) {
	const key = "sk-unit-secret"
	j, err := ShardJob{Image: "i", Shards: 2, Name: "b", Secret: map[string][]byte{"providers.yaml": []byte("api_key: " + key)},
		Data: map[string][]byte{"0000.jsonl": []byte("{}")}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	m := j.manifest(time.Now())
	b, _ := json.Marshal(m)
	if strings.Contains(string(b), key) {
		t.Fatal("the API key is in the Job manifest")
	}
	pod := m.Spec.Template.Spec
	if len(pod.Volumes) != 2 || pod.Volumes[0].Secret == nil || pod.Volumes[0].Secret.SecretName != "b-secret" || *pod.Volumes[0].Secret.DefaultMode != 0o400 ||
		pod.Volumes[1].ConfigMap == nil || pod.Volumes[1].ConfigMap.Name != "b-data" {
		t.Fatalf("volumes %+v", pod.Volumes)
	}
	vm := pod.Containers[0].VolumeMounts
	if len(vm) != 2 || vm[0].MountPath != SecretMountPath || !vm[0].ReadOnly || vm[1].MountPath != DataMountPath || !vm[1].ReadOnly {
		t.Fatalf("mounts %+v", vm)
	}
	if m := (ShardJob{Image: "i", Shards: 1, Name: "b"}).manifest(time.Now()); len(m.Spec.Template.Spec.Volumes) != 0 {
		t.Fatal("volumes without files")
	}
	for _, tc := range []struct {
		j    ShardJob
		want string
	}{
		{ShardJob{Image: "i", Shards: 1, Secret: map[string][]byte{"a/b": nil}}, `secret key="a/b"`},
		{ShardJob{Image: "i", Shards: 1, Data: map[string][]byte{"x": make([]byte, MaxShardFilesBytes+1)}}, "data="},
	} {
		if _, err := tc.j.withDefaults(); !errors.Is(err, kube.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want kube.ErrConfig with %q", err, tc.want)
		}
	}
}

// TestShardJobFilesLifecycle 在 client-go 的内存客户端上走一遍文件对象的生命周期：创建、属主设为 Job、
// 删除；删除只删本次运行（注解里的运行标识）的对象，同名的别人的对象不动；同名对象已存在时创建报 kube.ErrConfig。
func TestShardJobFilesLifecycle(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	j, _ := ShardJob{Image: "i", Shards: 1, Name: "b", Namespace: "ns", Secret: map[string][]byte{"k": []byte("v")}, Data: map[string][]byte{"d": []byte("x")}}.withDefaults()
	if err := j.createFiles(ctx, cs, "run1"); err != nil {
		t.Fatal(err)
	}
	if err := j.createFiles(ctx, cs, "run2"); !errors.Is(err, kube.ErrConfig) || !strings.Contains(err.Error(), "secret ns/b-secret already exists") {
		t.Fatalf("second create: %v", err)
	}
	j.adoptFiles(ctx, cs, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "b", UID: "job-uid"}})
	sec, _ := cs.CoreV1().Secrets("ns").Get(ctx, "b-secret", metav1.GetOptions{})
	cm, _ := cs.CoreV1().ConfigMaps("ns").Get(ctx, "b-data", metav1.GetOptions{})
	if len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != "job-uid" || len(cm.OwnerReferences) != 1 || string(cm.BinaryData["d"]) != "x" {
		t.Fatalf("after adopt: secret owners %+v, configmap %+v", sec.OwnerReferences, cm)
	}
	if err := j.deleteFiles(ctx, cs, "other-run"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets("ns").Get(ctx, "b-secret", metav1.GetOptions{}); err != nil {
		t.Fatalf("another run's delete removed the secret: %v", err)
	}
	if err := j.deleteFiles(ctx, cs, "run1"); err != nil {
		t.Fatal(err)
	}
	_, e1 := cs.CoreV1().Secrets("ns").Get(ctx, "b-secret", metav1.GetOptions{})
	_, e2 := cs.CoreV1().ConfigMaps("ns").Get(ctx, "b-data", metav1.GetOptions{})
	if !apierrors.IsNotFound(e1) || !apierrors.IsNotFound(e2) {
		t.Fatalf("after delete: %v, %v", e1, e2)
	}
	if err := j.deleteFiles(ctx, cs, "run1"); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
}

// TestShardLossReasons 钉住没有交回结果的分片 Pod 的归类（issue 22 要求原因"名副其实"）：
// OOMKilled → oom_killed，被信号杀死（退出码 137）或被驱逐 → killed，还在运行（协调者放弃）→ cancelled，
// 其它失败 → failed，没有 Pod 或日志里没有结果行 → no_result；ShardLosses 从合并的错误里逐分片取出。
func TestShardLossReasons(t *testing.T) {
	term := func(p *corev1.Pod, reason string, code int32) *corev1.Pod {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ShardContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}}}}
		return p
	}
	evicted := shardPod("b", "u", "3", corev1.PodFailed)
	evicted.Status.Reason = "Evicted"
	pods := []*corev1.Pod{
		term(shardPod("b", "u", "0", corev1.PodFailed), "OOMKilled", 137),
		term(shardPod("b", "u", "1", corev1.PodFailed), "Error", 137),
		shardPod("b", "u", "2", corev1.PodRunning),
		evicted,
		term(shardPod("b", "u", "4", corev1.PodFailed), "Error", 1),
		shardPod("b", "u", "5", corev1.PodSucceeded), // 日志里没有结果行
		// 序号 6 没有 Pod
	}
	cs := fake.NewClientset()
	for _, p := range pods {
		if _, err := cs.CoreV1().Pods("ns").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	j := ShardJob{Name: "b", Namespace: "ns", Shards: 7, group: -1}
	res, _, failed, reasons := j.collect(context.Background(), cs)
	want := []string{loadgen.LossOOMKilled, loadgen.LossKilled, loadgen.LossCancelled, loadgen.LossKilled, loadgen.LossFailed, loadgen.LossNoResult, loadgen.LossNoResult}
	if len(res) != 0 || len(failed) != 7 {
		t.Fatalf("%d results, failed %v", len(res), failed)
	}
	for i, w := range want {
		if reasons[i] != w {
			t.Errorf("shard %d (%s): reason %q, want %q", i, failed[i], reasons[i], w)
		}
	}
	err := errors.Join(fmt.Errorf("group 0: %w", &ShardJobError{Job: "ns/b-g0", Shards: 7, Failed: failed, Reasons: reasons}),
		&ShardJobError{Job: "ns/b-g1", Shards: 7, Failed: map[int]string{0: "later", 9: "x"}})
	lost := ShardLosses(err)
	if len(lost) != 8 || lost[0].Shard != 0 || lost[0].Reason != loadgen.LossOOMKilled || !strings.HasPrefix(lost[0].Detail, "ns/b-g0: pod b-0-Failed is Failed") ||
		lost[7].Shard != 9 || lost[7].Reason != loadgen.LossFailed {
		t.Fatalf("ShardLosses = %v", lost)
	}
}

package kube

import (
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestShardJobManifest 检查 Indexed Job 的形状：completions = parallelism = 分片数、按序号完成、
// 不重试、分片数与开始时刻进环境变量、资源请求即上限、节点选择与按 Job 名的反亲和。
func TestShardJobManifest(t *testing.T) {
	j, err := ShardJob{Image: "img:1", Shards: 4, CPU: "2", Memory: "1Gi", SpreadShards: true,
		NodeSelector: map[string]string{"pool": "bench"}, Env: map[string]string{"B": "2", "A": "1"},
		Args: []string{"prof", "--shard-from-env"}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	m := j.manifest(start)
	s := m.Spec
	if *s.Completions != 4 || *s.Parallelism != 4 || *s.CompletionMode != batchv1.IndexedCompletion || *s.BackoffLimit != 0 {
		t.Fatalf("spec %+v", s)
	}
	pod := s.Template.Spec
	c := pod.Containers[0]
	if c.Name != ShardContainer || c.Image != "img:1" || pod.RestartPolicy != corev1.RestartPolicyNever || pod.NodeSelector["pool"] != "bench" {
		t.Fatalf("pod %+v", pod)
	}
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	if got := strings.Join(env, " "); got != "CIBENCH_SHARD_COUNT=4 CIBENCH_SHARD_START=2026-01-02T03:04:05.000000006Z A=1 B=2" {
		t.Fatalf("env %s", got)
	}
	if c.Resources.Requests.Cpu().String() != "2" || c.Resources.Limits.Memory().String() != "1Gi" {
		t.Fatalf("resources %+v", c.Resources)
	}
	terms := pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 1 || terms[0].TopologyKey != "kubernetes.io/hostname" || terms[0].LabelSelector.MatchLabels["app.kubernetes.io/instance"] != "cibench-shards" {
		t.Fatalf("anti-affinity %+v", terms)
	}
	if m.Labels["app.kubernetes.io/instance"] != "cibench-shards" || s.Template.Labels["app.kubernetes.io/instance"] != "cibench-shards" {
		t.Fatalf("labels %v %v", m.Labels, s.Template.Labels)
	}
}

// TestShardJobValidation 检查错误点名字段与取值，且都是 ErrConfig。
func TestShardJobValidation(t *testing.T) {
	for _, tc := range []struct {
		j    ShardJob
		want string
	}{
		{ShardJob{Shards: 2}, "image"},
		{ShardJob{Image: "i", Shards: 0}, "shards=0"},
		{ShardJob{Image: "i", Shards: 2, Namespace: "Bad_NS"}, "namespace=Bad_NS"},
		{ShardJob{Image: "i", Shards: 2, Name: strings.Repeat("a", 60)}, "name="},
		{ShardJob{Image: "i", Shards: 2, CPU: "two"}, "cpu=two"},
		{ShardJob{Image: "i", Shards: 2, Timeout: -time.Second}, "must not be negative"},
	} {
		_, err := tc.j.withDefaults()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.j, err, tc.want)
		}
	}
	e := &ShardJobError{Shards: 3, Failed: map[int]string{2: "no pod", 0: "pod x is Failed"}}
	if got := e.Error(); !errors.Is(e, ErrShardJob) || !strings.Contains(got, "2 of 3 shards without a result: shard 0: pod x is Failed; shard 2: no pod") {
		t.Fatalf("%s", got)
	}
}

package kubejob

import (
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-cibench/cibench/deploy/kube"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/shard"
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
	if *s.Completions != 4 || *s.Parallelism != 4 || *s.CompletionMode != batchv1.IndexedCompletion || s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != 0 || s.BackoffLimit != nil {
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

// TestShardJobValidation 检查错误点名字段与取值，且都是 kube.ErrConfig。
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
		{ShardJob{Image: "i", Shards: 2, Groups: 12, Name: strings.Repeat("a", 50)}, "-g<group> suffix"},
		{ShardJob{Image: "i", Shards: 2, Groups: -1}, "groups=-1"},
		{ShardJob{Image: "i", Shards: 2, LogBytes: -1}, "log_bytes=-1"},
		{ShardJob{Image: "i", Shards: 2, LogTimeout: -time.Second}, "log_timeout"},
		{ShardJob{Image: "i", Shards: 2, RecordsDir: "/nonexistent/cibench-records"}, "records_dir=/nonexistent/cibench-records: must be an existing directory"},
	} {
		_, err := tc.j.withDefaults()
		if !errors.Is(err, kube.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.j, err, tc.want)
		}
	}
	e := &ShardJobError{Shards: 3, Failed: map[int]string{2: "no pod", 0: "pod x is Failed"}}
	if got := e.Error(); !errors.Is(e, ErrShardJob) || !strings.Contains(got, "2 of 3 shards without a result: shard 0: pod x is Failed; shard 2: no pod") {
		t.Fatalf("%s", got)
	}
}

// TestShardJobPerGroupManifest 检查每组一个 Job 时的名字与环境：第 k 个 Job 名为 Name-g<k>、
// 标签随之变化（收集与删除按它找 Pod），Pod 经 EnvShardGroup 得知只跑第 k 组；只有一个 Job 时没有该变量。
func TestShardJobPerGroupManifest(t *testing.T) {
	j, err := ShardJob{Image: "img:1", Shards: 2, Groups: 3, Name: "bench"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if m := j.manifest(time.Now()); envOf(m, EnvShardGroup) != "" {
		t.Fatalf("defaults set %s=%q", EnvShardGroup, envOf(m, EnvShardGroup))
	}
	j.Name, j.group = j.jobName(2), 2
	m := j.manifest(time.Now())
	if m.Name != "bench-g2" || m.Labels["app.kubernetes.io/instance"] != "bench-g2" || envOf(m, EnvShardGroup) != "2" {
		t.Fatalf("job %s labels %v group env %q", m.Name, m.Labels, envOf(m, EnvShardGroup))
	}
	if one := (ShardJob{Name: "bench", Groups: 1}).jobName(0); one != "bench" {
		t.Fatalf("single job name %q", one)
	}
}

// envOf 返回 Job 的分片容器里名为 name 的环境变量的值。
func envOf(m *batchv1.Job, name string) string {
	for _, e := range m.Spec.Template.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// TestJoinShardResults 检查按组的 Job 结果如何接成每个分片一个结果：分组与错误按组拼接，
// StartAt 统一为第一个 Job 的；只在某一组缺席的分片照样出现（缺的那组由合并点名），
// 全部缺席的分片不出现；同一分片的 Profile 前后不一时报 ErrShardJob。
func TestJoinShardResults(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := func(idx, group int, errMsg string) *shard.Result {
		return &shard.Result{Format: shard.Format, Index: idx, Count: 3, Profile: "p", StartAt: start.Add(time.Duration(group) * time.Minute),
			Only: []int{group}, Groups: []loadgen.ShardGroup{{Group: group}}, Error: errMsg}
	}
	got, err := joinShardResults(3, start, [][]*shard.Result{{r(0, 0, ""), r(1, 0, "")}, {r(0, 1, "boom")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Index != 0 || got[1].Index != 1 {
		t.Fatalf("joined %d results", len(got))
	}
	if g := got[0]; len(g.Groups) != 2 || g.Groups[1].Group != 1 || !g.StartAt.Equal(start) || g.Error != "group 1: boom" || len(g.Only) != 2 {
		t.Fatalf("shard 0: %+v", g)
	}
	if g := got[1]; len(g.Groups) != 1 || !g.StartAt.Equal(start) || g.Error != "" {
		t.Fatalf("shard 1: %+v", g)
	}
	bad := r(0, 1, "")
	bad.Profile = "q"
	if _, err := joinShardResults(3, start, [][]*shard.Result{{r(0, 0, "")}, {bad}}); !errors.Is(err, ErrShardJob) || !strings.Contains(err.Error(), "shard 0 ran profile q") {
		t.Fatalf("mixed profiles: %v", err)
	}
}

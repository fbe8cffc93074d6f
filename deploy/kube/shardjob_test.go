package kube_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/deploy/kube"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/internal/kubetest"
	"github.com/vllm-cibench/cibench/loadgen"
)

// shardResults 以真实的 loadgen.RunShard 对本进程的模拟器跑 count 片中的 idx 各片，
// 返回它们的结果行（WriteShardResult 的输出）。
func shardResults(t *testing.T, count int, idx ...int) string {
	t.Helper()
	_, ep := emulator.Start(t, emulator.Config{Model: "m", TTFT: time.Millisecond})
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: ep.BaseURLs, Model: "m"}, Provider: "emu"}
	p := loadgen.Profile{Concurrency: []int{count * 2}, InputLength: []int{16}, OutputLength: []int{8}, NumRequests: []int{10 * count}}
	var buf bytes.Buffer
	buf.WriteString("INFO: shard starting (a log line before the result)\n")
	for _, i := range idx {
		res, err := loadgen.RunShard(context.Background(), tgt, p, loadgen.Shard{Index: i, Count: count}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := loadgen.WriteShardResult(&buf, res); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

// jobGone 断言 Job 与它的 Pod 都已删除。
func jobGone(t *testing.T, c *kubetest.Cluster, ns, name string) {
	t.Helper()
	if _, err := c.Client.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("job %s still exists: %v", name, err)
	}
	if pods := podsWith(t, c, ns, "app.kubernetes.io/instance="+name); len(pods) != 0 {
		t.Fatalf("%d pods of job %s left", len(pods), name)
	}
}

// TestShardJobIntegration 在真实的 kube-apiserver + kube-controller-manager（job-controller、
// 垃圾回收）+ kwok 上跑分片 Job 的生命周期：Indexed Job 被创建、job-controller 建出 3 个带完成序号的
// Pod、kwok 让它们运行并成功结束、RunShards 经 API Server 的 pods/log 读出每片的结果行、最后前台
// 删除 Job。kwok 给每个容器的日志是同一个文件（kubetest.SetPodLog），里面放着由真实 RunShard
// 产生的第 0、1 片结果；收集方按 Pod 的完成序号取行，所以第 2 片没有结果，必须被点名、并让合并后的
// 分组不完整。另一个子测试在运行中取消 ctx（等价于 SIGTERM），Job 同样被删除。
func TestShardJobIntegration(t *testing.T) {
	c := kubetest.Start(t)
	ns := "default"
	t.Run("collect-and-missing", func(t *testing.T) {
		c.SetPodLog(t, shardResults(t, 3, 0, 1))
		job := kube.ShardJob{RESTConfig: c.RESTConfig, Namespace: ns, Name: "bench-shards", Image: "cibench/bench:test",
			Args: []string{"--shard-from-env"}, Shards: 3, StartDelay: time.Second, CPU: "1", Memory: "512Mi",
			NodeSelector: map[string]string{"kubernetes.io/hostname": kubetest.NodeName},
			Timeout:      2 * time.Minute, DeleteTimeout: 90 * time.Second, PollInterval: 200 * time.Millisecond}
		results, err := kube.RunShards(context.Background(), job)
		var je *kube.ShardJobError
		if !errors.As(err, &je) || !errors.Is(err, kube.ErrShardJob) {
			t.Fatalf("err = %v, want a ShardJobError", err)
		}
		if len(je.Failed) != 1 || !strings.Contains(je.Failed[2], "no cibench.shard/v1 line (shard 2)") {
			t.Fatalf("failed shards %v, want only shard 2 without a result line", je.Failed)
		}
		if len(results) != 2 || results[0].Index != 0 || results[1].Index != 1 {
			t.Fatalf("results %d", len(results))
		}
		rows, merr := loadgen.Merge(results...)
		var me *loadgen.MissingShardsError
		if !errors.As(merr, &me) || !slices.Equal(me.Groups[0], []int{2}) {
			t.Fatalf("merge error %v, want shard 2 missing from group 0", merr)
		}
		if len(rows) != 1 || !rows[0].Incomplete || rows[0].NumPrompts != 20 {
			t.Fatalf("rows %+v, want one incomplete row with shards 0 and 1 (20 of 30 requests)", rows)
		}
		jobGone(t, c, ns, job.Name)
	})
	t.Run("cancel-deletes", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		job := kube.ShardJob{RESTConfig: c.RESTConfig, Namespace: ns, Name: "bench-cancel", Image: "cibench/bench:test",
			Shards: 2, StartDelay: time.Second, Timeout: 2 * time.Minute, DeleteTimeout: 90 * time.Second, PollInterval: 200 * time.Millisecond}
		go func() {
			for ctx.Err() == nil {
				if _, err := c.Client.BatchV1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{}); err == nil {
					cancel()
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		_, err := kube.RunShards(ctx, job)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		jobGone(t, c, ns, job.Name)
	})
}

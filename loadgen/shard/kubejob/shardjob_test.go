package kubejob_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/deploy/kube"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/internal/kubetest"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/shard"
	"github.com/vllm-cibench/cibench/loadgen/shard/kubejob"
)

// shardResults 以真实的 shard.Run 对本进程的模拟器跑 count 片中的 idx 各片，
// 返回它们的结果行（WriteShardResult 的输出）。
func shardResults(t *testing.T, count int, idx ...int) string {
	t.Helper()
	_, ep := emulator.Start(t, emulator.Config{Model: "m", TTFT: time.Millisecond})
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: ep.BaseURLs, Model: "m"}, Provider: "emu"}
	p := loadgen.Profile{Concurrency: []int{count * 2}, InputLength: []int{16}, OutputLength: []int{8}, NumRequests: []int{10 * count}}
	var buf bytes.Buffer
	buf.WriteString("INFO: shard starting (a log line before the result)\n")
	for _, i := range idx {
		res, err := shard.Run(context.Background(), tgt, p, loadgen.Shard{Index: i, Count: count}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := shard.WriteResult(&buf, res); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

// shardOutput 像 bench 的 --shard-from-env 子进程那样为 count 片中的 idx 各片生成 stdout：真实的
// shard.Run 对本进程的模拟器跑本片（每片 10 个请求），记录经 shard.RecordWriter 写成 JSON Lines，
// 最后是结果行；keep ≥ 0 时第一个分片只保留结果行之前的最后 keep 条记录（像 kubelet 轮转掉了较早的
// 日志）。返回全部输出（各片依次拼接，kwok 给每个容器同一个文件）与日志里记录的总条数。
func shardOutput(t *testing.T, count, keep int, idx ...int) (string, int) {
	t.Helper()
	_, ep := emulator.Start(t, emulator.Config{Model: "m", TTFT: time.Millisecond})
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: ep.BaseURLs, Model: "m"}, Provider: "emu"}
	p := loadgen.Profile{Concurrency: []int{count * 2}, InputLength: []int{16}, OutputLength: []int{8}, NumRequests: []int{10 * count}}
	var buf bytes.Buffer
	total := 0
	for k, i := range idx {
		var out bytes.Buffer
		out.WriteString("INFO: shard starting (a log line before the records)\n")
		rw := shard.NewRecordWriter(&out)
		res, err := shard.Run(context.Background(), tgt, p, loadgen.Shard{Index: i, Count: count}, rw.Observer())
		if err != nil {
			t.Fatal(err)
		}
		if err := rw.Flush(); err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(out.String(), "\n")
		recs := lines[1 : len(lines)-1] // SplitAfter 在最后的换行之后留下一个空串
		if k == 0 && keep >= 0 {
			recs = recs[len(recs)-keep:]
		}
		total += len(recs)
		buf.WriteString(lines[0])
		buf.WriteString(strings.Join(recs, ""))
		if err := shard.WriteResult(&buf, res); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String(), total
}

// recordsJob 以 RecordsDir 跑两片的 RunShards，要求两片都交回结果，返回运行结果。
func recordsJob(t *testing.T, c *kubetest.Cluster, ns, name string) *kubejob.ShardRun {
	t.Helper()
	job := kubejob.ShardJob{RESTConfig: c.RESTConfig, Namespace: ns, Name: name, Image: "cibench/bench:test",
		Args: []string{"prof", "--shard-from-env"}, Shards: 2, StartDelay: time.Second, RecordsDir: t.TempDir(),
		Timeout: 4 * time.Minute, DeleteTimeout: 90 * time.Second, PollInterval: 200 * time.Millisecond}
	run, err := kubejob.RunShards(context.Background(), job)
	if err != nil || len(run.Results) != 2 || len(run.Records) != 2 {
		t.Fatalf("RunShards: %+v, %v", run, err)
	}
	return run
}

// replayCount 合并运行结果并用 shard.Replay 把各片的记录文件交给一个数 OnRecord 的观察者，返回条数；
// 同时核对每条记录属于第 0 组、没有重复的序号。
func replayCount(t *testing.T, run *kubejob.ShardRun) int {
	t.Helper()
	groups, err := shard.MergeGroups(shard.MergeOptions{MaxSkew: time.Minute}, run.Results...)
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	var srcs []shard.Records
	for _, f := range run.Records {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, shard.Records{Name: f, R: bytes.NewReader(b)})
	}
	seen := map[int]bool{}
	n := 0
	obs := &loadgen.Observer{OnRecord: func(r *loadgen.Record) error {
		if r.Group.Index != 0 || seen[r.Index] {
			t.Errorf("record group %d index %d (seen before: %v)", r.Group.Index, r.Index, seen[r.Index])
		}
		seen[r.Index] = true
		n++
		return nil
	}}
	if err := shard.Replay(obs, groups, nil, srcs...); err != nil {
		t.Fatalf("replay: %v", err)
	}
	return n
}

// jobGone 断言 Job 与它的 Pod 都已删除；失败时列出残留对象的状态（删除时刻、终结器、属主），
// 足以区分"没有发出删除"、"删除卡在终结器上"与"Pod 在 Job 删除之后才被建出"。
func jobGone(t *testing.T, c *kubetest.Cluster, ns, name string) {
	t.Helper()
	pods := c.Pods(t, ns, "app.kubernetes.io/instance="+name)
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "\n  %s phase %s created %s deletionTimestamp %v finalizers %v owners %+v", p.Name, p.Status.Phase,
			p.CreationTimestamp.Format(time.RFC3339Nano), p.DeletionTimestamp, p.Finalizers, p.OwnerReferences)
	}
	if j, err := c.Client.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		if err == nil {
			t.Fatalf("job %s still exists: uid %s, deletionTimestamp %v, finalizers %v, status %+v; %d pods:%s", name, j.UID, j.DeletionTimestamp, j.Finalizers, j.Status, len(pods), b.String())
		}
		t.Fatalf("job %s: get: %v", name, err)
	}
	if len(pods) != 0 {
		t.Fatalf("%d pods of job %s left:%s", len(pods), name, b.String())
	}
}

// cancelAfterCreate 是 API Server 的传输层包装：创建 Job 的 POST 照常送达并被服务端执行，
// 但响应到达之前调用方的 ctx 被取消（SIGTERM 恰好落在创建请求途中）——客户端只看到
// context.Canceled，不知道 Job 已经存在。这复现了 cancel-deletes 子测试偶发失败的时序。
//
// deliver 为真时响应照常交回（取消落在创建成功之后、等待开始之前）：cancel-deletes 用它代替
// "另一个 goroutine 看见 Job 就取消"，后者在 Job 于取消之前就已完成时（kwok 让 Pod 立即成功）
// 得不到 context.Canceled。
type cancelAfterCreate struct {
	next    http.RoundTripper
	cancel  context.CancelFunc
	deliver bool
	hit     atomic.Bool
}

// RoundTrip 对创建 Job 的请求：以不随调用方取消的上下文送出、读完响应，然后取消调用方的 ctx
// 并返回 context.Canceled；其余请求原样转发。
func (c *cancelAfterCreate) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/jobs") {
		return c.next.RoundTrip(req)
	}
	resp, err := c.next.RoundTrip(req.WithContext(context.WithoutCancel(req.Context())))
	c.hit.Store(true)
	c.cancel()
	if c.deliver {
		return resp, err
	}
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return nil, context.Canceled
}

// TestShardJobIntegration 在真实的 kube-apiserver + kube-controller-manager（job-controller、
// 垃圾回收）+ kwok 上跑分片 Job 的生命周期：Indexed Job 被创建、job-controller 建出 3 个带完成序号的
// Pod、kwok 让它们运行并成功结束、RunShards 经 API Server 的 pods/log 读出每片的结果行、最后前台
// 删除 Job。kwok 给每个容器的日志是同一个文件（kubetest.SetPodLog），里面放着由真实 RunShard
// 产生的第 0、1 片结果；收集方按 Pod 的完成序号取行，所以第 2 片没有结果，必须被点名、并让合并后的
// 分组不完整。cancel-deletes 在 Job 创建成功、等待开始之前取消 ctx（等价于 SIGTERM），cancel-during-create
// 在创建请求已被服务端执行、响应到达之前取消，两种情况下 Job 与它的 Pod 都被删除、错误带着
// context.Canceled。per-group-jobs* 以两组的档位跑每组一个 Job（见 perGroupJobs）。
func TestShardJobIntegration(t *testing.T) {
	c := kubetest.Start(t)
	ns := "default"
	t.Run("collect-and-missing", func(t *testing.T) {
		c.SetPodLog(t, shardResults(t, 3, 0, 1))
		job := kubejob.ShardJob{RESTConfig: c.RESTConfig, Namespace: ns, Name: "bench-shards", Image: "cibench/bench:test",
			Args: []string{"--shard-from-env"}, Shards: 3, StartDelay: time.Second, CPU: "1", Memory: "512Mi",
			NodeSelector: map[string]string{"kubernetes.io/hostname": kubetest.NodeName},
			Timeout:      2 * time.Minute, DeleteTimeout: 90 * time.Second, PollInterval: 200 * time.Millisecond}
		run, err := kubejob.RunShards(context.Background(), job)
		results := run.Results
		var je *kubejob.ShardJobError
		if !errors.As(err, &je) || !errors.Is(err, kubejob.ErrShardJob) {
			t.Fatalf("err = %v, want a ShardJobError", err)
		}
		if len(je.Failed) != 1 || !strings.Contains(je.Failed[2], "no cibench.shard/v2 line (shard 2)") {
			t.Fatalf("failed shards %v, want only shard 2 without a result line", je.Failed)
		}
		if len(results) != 2 || results[0].Index != 0 || results[1].Index != 1 {
			t.Fatalf("results %d", len(results))
		}
		// 结果行是测试里依次生成的（不是在约定时刻同时开始的）：负载高时两片的开始时刻曾相差 3.7 秒，
		// 超过默认的 1 秒偏差上限，合并因此报偏差而不是缺片。放宽 MaxSkew，与 perGroupJobs 相同。
		groups, merr := shard.MergeGroups(shard.MergeOptions{MaxSkew: time.Minute}, results...)
		var me *shard.MissingError
		if !errors.As(merr, &me) || !slices.Equal(me.Groups[0], []int{2}) {
			t.Fatalf("merge error %v, want shard 2 missing from group 0", merr)
		}
		if len(groups) != 1 || !groups[0].Summary.Incomplete || groups[0].Summary.NumPrompts != 20 {
			t.Fatalf("groups %+v, want one incomplete group with shards 0 and 1 (20 of 30 requests)", groups)
		}
		jobGone(t, c, ns, job.Name)
	})
	t.Run("records", func(t *testing.T) {
		// 每个 Pod 的日志：本片的逐请求记录（shard.RecordWriter，JSON Lines），最后是结果行——bench 的
		// --shard-from-env 子进程写到 stdout 的正是这个。两片各 10 个请求。
		log, want := shardOutput(t, 2, -1, 0, 1)
		c.SetPodLog(t, log)
		run := recordsJob(t, c, ns, "bench-records")
		if len(run.RecordGaps) != 0 {
			t.Fatalf("record gaps %v, want none: every record of both shards is in the log", run.RecordGaps)
		}
		if got := replayCount(t, run); got != want {
			t.Fatalf("the observer got %d OnRecord calls through the pod logs, want %d (one per request of both shards)", got, want)
		}
		jobGone(t, c, ns, "bench-records")
	})
	t.Run("records-rotated", func(t *testing.T) {
		// 分片 0 的日志像被 kubelet 轮转过：只剩结果行之前的最后 3 条记录；分片 1 完整。分片 0 的记录
		// 不全必须被点名（分片、分组、3 of 10），观察者收到的就是日志里有的 13 条，结果照常合并。
		log, _ := shardOutput(t, 2, 3, 0, 1)
		c.SetPodLog(t, log)
		run := recordsJob(t, c, ns, "bench-rotated")
		want := []shard.RecordGap{{Shard: 0, Group: 0, Want: 10, Have: 3}}
		if !slices.Equal(run.RecordGaps, want) {
			t.Fatalf("record gaps %v, want %v", run.RecordGaps, want)
		}
		if got := replayCount(t, run); got != 13 {
			t.Fatalf("the observer got %d OnRecord calls, want 13 (the 3 records left of shard 0, all 10 of shard 1)", got)
		}
		jobGone(t, c, ns, "bench-rotated")
	})
	t.Run("records-log-bytes", func(t *testing.T) {
		// 日志超过读取上限：LimitBytes 保留开头，最后的结果行被截掉。两片都必须以 no_result 报告并点明
		// LogBytes（不是悄悄少了记录、更不是成功），读到一半的记录被截回，记录文件为空。
		log, _ := shardOutput(t, 2, -1, 0, 1)
		c.SetPodLog(t, log)
		job := kubejob.ShardJob{RESTConfig: c.RESTConfig, Namespace: ns, Name: "bench-log-bytes", Image: "cibench/bench:test",
			Args: []string{"prof", "--shard-from-env"}, Shards: 2, StartDelay: time.Second, RecordsDir: t.TempDir(), LogBytes: 4096,
			Timeout: 4 * time.Minute, DeleteTimeout: 90 * time.Second, PollInterval: 200 * time.Millisecond}
		run, err := kubejob.RunShards(context.Background(), job)
		var je *kubejob.ShardJobError
		if !errors.As(err, &je) || len(je.Failed) != 2 || len(run.Results) != 0 {
			t.Fatalf("err = %v, %d results; want both shards without a result", err, len(run.Results))
		}
		for i := range 2 {
			if !strings.Contains(je.Failed[i], "4096-byte read bound ShardJob.LogBytes") || je.Reasons[i] != loadgen.LossNoResult {
				t.Errorf("shard %d: %q (%s), want no_result naming LogBytes", i, je.Failed[i], je.Reasons[i])
			}
			if b, err := os.ReadFile(run.Records[i]); err != nil || len(b) != 0 {
				t.Errorf("records of shard %d: %d bytes, %v; want an empty file", i, len(b), err)
			}
		}
		jobGone(t, c, ns, "bench-log-bytes")
	})
	t.Run("cancel-deletes", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rc := rest.CopyConfig(c.RESTConfig)
		wrap := &cancelAfterCreate{cancel: cancel, deliver: true}
		rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { wrap.next = rt; return wrap }
		job := kubejob.ShardJob{RESTConfig: rc, Namespace: ns, Name: "bench-cancel", Image: "cibench/bench:test",
			Shards: 2, StartDelay: time.Second, Timeout: 2 * time.Minute, DeleteTimeout: 90 * time.Second, PollInterval: 200 * time.Millisecond}
		_, err := kubejob.RunShards(ctx, job)
		if !wrap.hit.Load() {
			t.Fatal("the create request never went through the wrapper")
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		jobGone(t, c, ns, job.Name)
	})
	for _, tc := range []struct {
		name  string
		lines [][2]int // 日志里有结果行的 (分片, 分组)
	}{
		{"per-group-jobs", [][2]int{{0, 0}, {1, 0}, {0, 1}, {1, 1}}},
		{"per-group-jobs-missing", [][2]int{{0, 0}, {1, 0}, {0, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			perGroupJobs(t, c, ns, tc.name, tc.lines)
		})
	}
	t.Run("cancel-during-create", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rc := rest.CopyConfig(c.RESTConfig)
		wrap := &cancelAfterCreate{cancel: cancel}
		rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { wrap.next = rt; return wrap }
		job := kubejob.ShardJob{RESTConfig: rc, Namespace: ns, Name: "bench-cancel-create", Image: "cibench/bench:test",
			Shards: 2, StartDelay: time.Second, Timeout: 2 * time.Minute, DeleteTimeout: 90 * time.Second, PollInterval: 200 * time.Millisecond}
		_, err := kubejob.RunShards(ctx, job)
		if !wrap.hit.Load() {
			t.Fatal("the create request never went through the wrapper")
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		jobGone(t, c, ns, job.Name)
	})
}

// syncBuffer 是并发安全的日志缓冲。
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write 追加日志。
func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String 返回到目前为止的日志。
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// groupProfile 是两组的档位（两个并发档），每组一个 Job 的测试用它。
var groupProfile = loadgen.Profile{Concurrency: []int{2, 4}, InputLength: []int{16}, OutputLength: []int{8}, NumRequests: []int{6, 8}}

// perGroupJobs 以两组的档位跑 RunShards(Groups: 2)：必须先后出现两个 Indexed Job（第二个在第一个
// 删除之后才创建），每个 Pod 交回的是它那一组的结果（日志里同时有两组的行，收集方按 Pod 的完成序号
// 与 Job 的分组挑选），结果按分片接起来后 MergeGroups 逐组合并。lines 里缺的 (分片, 分组) 必须被点名
// （Job 名与分片序号），合并后那一组不完整，而别的组完整——一个 Job 有分片失败不会让后面的组不跑。
func perGroupJobs(t *testing.T, c *kubetest.Cluster, ns, name string, lines [][2]int) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", TTFT: time.Millisecond})
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: ep.BaseURLs, Model: "m"}, Provider: "emu"}
	var buf bytes.Buffer
	have := map[[2]int]bool{}
	for _, l := range lines {
		res, err := shard.Run(context.Background(), tgt, groupProfile, loadgen.Shard{Index: l[0], Count: 2, Groups: []int{l[1]}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := shard.WriteResult(&buf, res); err != nil {
			t.Fatal(err)
		}
		have[l] = true
	}
	c.SetPodLog(t, buf.String())

	var logs syncBuffer
	// Timeout 4 分钟只是上界：etcd 3.6 上一个 Job 从创建到完成约 1 秒。曾用 Debian 的 etcd 3.4 时，kwok 的
	// watch list 被拒、反射器退避重列，在两个忙循环占满两核时测得 7.6 秒到 1 分 44 秒（见 docs/deploy.md）。
	job := kubejob.ShardJob{RESTConfig: c.RESTConfig, Namespace: ns, Name: name, Image: "cibench/bench:test", Args: []string{"prof", "--shard-from-env"},
		Shards: 2, Groups: 2, StartDelay: time.Second, Timeout: 4 * time.Minute, DeleteTimeout: 90 * time.Second, PollInterval: 200 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(&logs, nil))}
	began := time.Now()
	run, err := kubejob.RunShards(context.Background(), job)
	results := run.Results
	t.Logf("RunShards took %s; its log:\n%s", time.Since(began), logs.String())
	// RunShards 记下每个 Job 的创建与删除完成（delete 等到 Job 与它的 Pod 都消失才记"deleted"）：
	// 顺序必须是 g0 创建、g0 删除、g1 创建、g1 删除。
	var events []string
	for line := range strings.SplitSeq(logs.String(), "\n") {
		_, rest, ok := strings.Cut(line, "job="+ns+"/")
		if !ok {
			continue
		}
		jobName := strings.Fields(rest)[0]
		switch {
		case strings.Contains(line, "shard job created"):
			events = append(events, "created "+jobName)
		case strings.Contains(line, "shard job deleted") && strings.Contains(line, "err=<nil>"):
			events = append(events, "deleted "+jobName)
		}
	}
	want := []string{"created " + name + "-g0", "deleted " + name + "-g0", "created " + name + "-g1", "deleted " + name + "-g1"}
	if !slices.Equal(events, want) {
		t.Errorf("job lifecycle %v, want %v (one job per group, the next created after the previous and its pods were deleted)", events, want)
	}
	missing := !have[[2]int{1, 1}]
	var je *kubejob.ShardJobError
	switch {
	case !missing && err != nil:
		t.Fatalf("RunShards: %v", err)
	case missing && (!errors.As(err, &je) || je.Job != ns+"/"+name+"-g1" || len(je.Failed) != 1 || !strings.Contains(je.Failed[1], "groups [1]")):
		t.Fatalf("err = %v, want a ShardJobError naming shard 1 of job %s-g1", err, name)
	}
	if len(results) != 2 {
		t.Fatalf("%d joined results, want 2", len(results))
	}
	// 结果行是测试里依次生成的（不是在约定时刻同时开始的），分组开始时刻相差的是生成它们的时间，放宽 MaxSkew。
	groups, merr := shard.MergeGroups(shard.MergeOptions{MaxSkew: time.Minute}, results...)
	if len(groups) != 2 {
		t.Fatalf("merged %d groups (%v), want 2", len(groups), merr)
	}
	for k, g := range groups {
		wantN := groupProfile.NumRequests[k]
		incomplete := missing && k == 1
		if incomplete {
			wantN /= 2 // 只有分片 0 的一半
		}
		if g.Summary.NumPrompts != wantN || g.Summary.Incomplete != incomplete || g.Summary.Concurrency != groupProfile.Concurrency[k] {
			t.Errorf("group %d: %d requests, incomplete %v, c%d; want %d, %v, c%d", k, g.Summary.NumPrompts, g.Summary.Incomplete, g.Summary.Concurrency,
				wantN, incomplete, groupProfile.Concurrency[k])
		}
	}
	var me *shard.MissingError
	if missing != errors.As(merr, &me) || (missing && !slices.Equal(me.Groups[1], []int{1})) {
		t.Fatalf("merge error %v (missing shard 1 of group 1: %v)", merr, missing)
	}
	jobGone(t, c, ns, name+"-g0")
	jobGone(t, c, ns, name+"-g1")
}

// hookHandler 是在特定日志消息处同步运行检查的 slog.Handler：RunShards 在创建 Job 之后、删除之前
// 各记一条日志，测试借此在那两个时刻查看集群里的对象。
type hookHandler struct{ on func(msg string) }

// Enabled 总是为真。
func (h hookHandler) Enabled(context.Context, slog.Level) bool { return true }

// Handle 把消息交给 on。
func (h hookHandler) Handle(_ context.Context, r slog.Record) error { h.on(r.Message); return nil }

// WithAttrs 返回自身。
func (h hookHandler) WithAttrs([]slog.Attr) slog.Handler { return h }

// WithGroup 返回自身。
func (h hookHandler) WithGroup(string) slog.Handler { return h }

// TestShardJobFilesIntegration 在真实的 API Server 上验证 issue 22 的 Kubernetes 部分：provider 文件
// （含 API key）随运行建成 Secret、数据集建成 ConfigMap，两者在 Job 之前存在、属主是 Job，挂载进
// 每个分片 Pod（只读，Secret 0400），Job 与 Pod 的定义里没有密钥；RunShards 返回时 Secret 与
// ConfigMap 都已删除。内容过大的 ConfigMap 在创建任何对象之前被拒绝。
func TestShardJobFilesIntegration(t *testing.T) {
	c := kubetest.Start(t)
	ns := "default"
	const key = "sk-kube-secret-4411"
	provider := []byte("providers:\n  - id: p\n    name: p\n    api_key: " + key + "\n    base_url: [http://h/v1]\n    model_name: m\n    model_category: m\n")
	dataset := []byte(`{"prompt": "hello"}` + "\n")
	c.SetPodLog(t, shardResults(t, 2, 0, 1))
	ctx := context.Background()
	var checked atomic.Int32
	var problems syncBuffer
	report := func(format string, args ...any) { fmt.Fprintf(&problems, format+"\n", args...) }
	name := "bench-files"
	check := func(msg string) {
		switch msg {
		case "kube: shard job created":
			sec, err := c.Client.CoreV1().Secrets(ns).Get(ctx, name+"-secret", metav1.GetOptions{})
			if err != nil || !bytes.Equal(sec.Data["providers.yaml"], provider) || len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].Kind != "Job" {
				report("secret while the job runs: %v, owners %+v", err, sec)
			}
			cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, name+"-data", metav1.GetOptions{})
			if err != nil || !bytes.Equal(cm.BinaryData["0000.jsonl"], dataset) || len(cm.OwnerReferences) != 1 {
				report("configmap while the job runs: %v, %+v", err, cm)
			}
			job, err := c.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				report("job: %v", err)
				return
			}
			if b, _ := json.Marshal(job); bytes.Contains(b, []byte(key)) {
				report("the API key is in the Job spec")
			}
			checked.Add(1)
		case "kube: shard job finished":
			pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + name})
			if err != nil || len(pods.Items) != 2 {
				report("pods: %v, %d", err, len(pods.Items))
				return
			}
			for _, p := range pods.Items {
				if b, _ := json.Marshal(p); bytes.Contains(b, []byte(key)) {
					report("the API key is in pod %s", p.Name)
				}
				vols := map[string]string{}
				for _, v := range p.Spec.Volumes {
					switch {
					case v.Secret != nil && v.Secret.DefaultMode != nil && *v.Secret.DefaultMode == 0o400:
						vols["secret"] = v.Secret.SecretName
					case v.ConfigMap != nil:
						vols["data"] = v.ConfigMap.Name
					}
				}
				mounts := map[string]bool{}
				for _, m := range p.Spec.Containers[0].VolumeMounts {
					mounts[m.MountPath] = m.ReadOnly
				}
				if vols["secret"] != name+"-secret" || vols["data"] != name+"-data" || !mounts[kubejob.SecretMountPath] || !mounts[kubejob.DataMountPath] {
					report("pod %s volumes %v mounts %v", p.Name, vols, mounts)
				}
			}
			checked.Add(1)
		}
	}
	job := kubejob.ShardJob{RESTConfig: c.RESTConfig, Namespace: ns, Name: name, Image: "cibench/bench:test",
		Args: []string{"prof", "-p", kubejob.SecretMountPath + "/providers.yaml", "-i", kubejob.DataMountPath, "--shard-from-env"}, Shards: 2,
		Secret: map[string][]byte{"providers.yaml": provider}, Data: map[string][]byte{"0000.jsonl": dataset},
		StartDelay: time.Second, Timeout: 4 * time.Minute, DeleteTimeout: 90 * time.Second, PollInterval: 200 * time.Millisecond,
		Log: slog.New(hookHandler{on: check})}
	run, err := kubejob.RunShards(ctx, job)
	if err != nil || len(run.Results) != 2 {
		t.Fatalf("RunShards: %v, %v", run, err)
	}
	if checked.Load() != 2 || problems.String() != "" {
		t.Fatalf("%d of 2 checkpoints reached; problems:\n%s", checked.Load(), problems.String())
	}
	if _, err := c.Client.CoreV1().Secrets(ns).Get(ctx, name+"-secret", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("secret after the run: %v, want NotFound", err)
	}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, name+"-data", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("configmap after the run: %v, want NotFound", err)
	}
	jobGone(t, c, ns, name)

	big := job
	big.Name, big.Log = "bench-big", nil
	big.Data = map[string][]byte{"0000.jsonl": bytes.Repeat([]byte("x"), kubejob.MaxShardFilesBytes+1)}
	if _, err := kubejob.RunShards(ctx, big); !errors.Is(err, kube.ErrConfig) || !strings.Contains(err.Error(), "data=") {
		t.Fatalf("oversized dataset: %v, want ErrConfig naming data", err)
	}
	if cms, _ := c.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=bench-big"}); len(cms.Items) != 0 {
		t.Fatalf("an oversized run created %d configmaps", len(cms.Items))
	}
}

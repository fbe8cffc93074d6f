package shard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"

	"github.com/vllm-cibench/cibench/loadgen"
)

// TestShardProbesOutsideWindow 复现 issue 22 的"探测流量落进测量窗口"：两个分片、并发 2、预热 3 个、
// 每个请求固定 150ms。分片 1 只有一个预热请求，比分片 0（两个、串行）早 150ms 抓"前"快照再去等屏障，
// 分片 0 的第二个预热请求因此落在分片 1 的快照之后。合并以前取最早的"前"快照，服务端 E2E 计数多出
// 一个（5 而不是 4）；现在取各分片开始之前抓到的快照里最晚的一个，服务端计数与发出的请求数完全相同。
func TestShardProbesOutsideWindow(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", TTFT: 150 * time.Millisecond})
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: ep.BaseURLs, Model: ep.Model}, Provider: "emu"}
	p := loadgen.Profile{InputLength: []int{16}, OutputLength: []int{2}, Concurrency: []int{2}, NumRequests: []int{4}, Warmup: 3, Seed: 3}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := RunLocal(ctx, tgt, p, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Groups[0].Summary
	if s.NumPrompts != 4 || s.ServerE2E.Count != 4 {
		t.Fatalf("merged group: %d requests, server E2E count %d (want 4 and 4: warm-up and probe traffic inside the window)", s.NumPrompts, s.ServerE2E.Count)
	}
}

// TestRunLocalShardsSpreadLikeOneProcess 验证本机分片（同一个 Target、三个实例）打到每个实例上的请求数
// 与单进程完全相同：实例按组内全局序号选。以前按各分片自己的发送次序轮流，
// 41 个请求分给 4 片（11/10/10/10）后是 16/13/12，单进程是 14/14/13。
func TestRunLocalShardsSpreadLikeOneProcess(t *testing.T) {
	var hits [3]atomic.Int64
	var urls []string
	for i := range 3 {
		em, err := emulator.New(emulator.Config{Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		h := em.Handler()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions" {
				hits[i].Add(1)
			}
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL+"/v1")
	}
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: urls, Model: "m"}, Provider: "emu"}
	p := loadgen.Profile{InputLength: []int{16}, OutputLength: []int{2}, Concurrency: []int{4}, NumRequests: []int{41}, Seed: 3}
	ctx := context.Background()
	var got [2][3]int64
	for k, n := range []int{1, 4} {
		for i := range hits {
			hits[i].Store(0)
		}
		var err error
		if n == 1 {
			_, err = loadgen.Run(ctx, tgt, p, nil)
		} else {
			_, err = RunLocal(ctx, tgt, p, n, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		// 每个进程（分片）发一个能力探测请求到第一个实例，不是负载：减掉。
		got[k] = [3]int64{hits[0].Load() - int64(n), hits[1].Load(), hits[2].Load()}
	}
	if got[0] != got[1] || got[0] != [3]int64{14, 14, 13} {
		t.Fatalf("requests per instance: one process %v, 4 shards %v (want 14/14/13 both)", got[0], got[1])
	}
}

// TestShardLossReasonsNamed 验证缺失分片的原因名副其实：连不上服务的分片（能力探测被拒绝连接）是
// unreachable，而不是笼统的失败；调用方告知的没有结果的分片（子进程被 SIGKILL）是 killed；
// 调用方也不知道原因的是 no_result。原因进入错误、MergedGroup.Lost 与汇总行的 MissingShards。
func TestShardLossReasonsNamed(t *testing.T) {
	tgt := startShardEmulator(t)
	p := loadgen.Profile{InputLength: []int{16}, OutputLength: []int{2}, Concurrency: []int{3}, NumRequests: []int{9}, Seed: 3}
	ctx := context.Background()
	good, err := Run(ctx, tgt, p, loadgen.Shard{Index: 0, Count: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL + "/v1"
	dead.Close() // 端口已关闭：拒绝连接
	bad := tgt
	bad.Endpoint.BaseURLs = []string{deadURL}
	unreach, err := Run(ctx, bad, p, loadgen.Shard{Index: 1, Count: 3}, nil)
	if !errors.Is(err, loadgen.ErrUnreachable) || unreach == nil || unreach.Reason != loadgen.LossUnreachable {
		t.Fatalf("unreachable shard: %v, reason %q", err, unreach.Reason)
	}
	for _, tc := range []struct {
		lost []loadgen.ShardLoss
		want string
	}{
		{[]loadgen.ShardLoss{{Shard: 2, Reason: loadgen.LossKilled, Detail: "signal: killed"}}, loadgen.LossKilled},
		{nil, loadgen.LossNoResult},
	} {
		groups, err := MergeGroups(MergeOptions{Lost: tc.lost}, good, unreach)
		var me *MissingError
		if !errors.As(err, &me) || len(me.Lost) != 2 || me.Lost[0].Shard != 1 || me.Lost[0].Reason != loadgen.LossUnreachable || me.Lost[1].Shard != 2 || me.Lost[1].Reason != tc.want {
			t.Fatalf("lost %v (%v), want shard 1 unreachable and shard 2 %s", me, err, tc.want)
		}
		if !strings.Contains(err.Error(), "shard 2: "+tc.want) {
			t.Fatalf("error does not name shard 2 as %s: %v", tc.want, err)
		}
		ms := groups[0].Summary.MissingShards
		if len(groups) != 1 || !groups[0].Summary.Incomplete || len(ms) != 2 || ms[1].Reason != tc.want || groups[0].Summary.NumPrompts != 3 {
			t.Fatalf("merged row: %+v", groups[0].Summary)
		}
	}
}

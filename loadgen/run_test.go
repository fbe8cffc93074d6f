package loadgen_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/loadgen"
)

// startEmulator 用 emulator.Start 启动模拟器（测试结束时回收），并把 Endpoint 换成 loadgen.Target。
func startEmulator(t testing.TB, cfg emulator.Config) (*emulator.Server, loadgen.Target) {
	t.Helper()
	em, ep := emulator.Start(t, cfg)
	return em, loadgen.Target{Endpoint: ep, Provider: "emu"}
}

// collect 是一个把记录复制保存下来的测试接收器（测试规模小，可以保留）。
type collect struct {
	mu       sync.Mutex
	recs     []loadgen.Record
	groups   []loadgen.Group
	ends     []loadgen.Summary
	progress int
}

// WriteRecord 复制并保存记录。
func (c *collect) WriteRecord(r *loadgen.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := *r
	cp.ChunkTimes = append([]time.Duration(nil), r.ChunkTimes...)
	cp.ChunkTokens = append([]int32(nil), r.ChunkTokens...)
	c.recs = append(c.recs, cp)
	return nil
}

// BeginGroup 记录分组开始。
func (c *collect) BeginGroup(g loadgen.Group) error { c.groups = append(c.groups, g); return nil }

// EndGroup 记录分组汇总。
func (c *collect) EndGroup(s loadgen.Summary) error { c.ends = append(c.ends, s); return nil }

// Progress 统计进度回调次数。
func (c *collect) Progress(loadgen.Progress) { c.progress++ }

// observer 把 collect 的方法接成 Run 的钩子。
func (c *collect) observer() *loadgen.Observer {
	return &loadgen.Observer{OnRecord: c.WriteRecord, OnGroupStart: c.BeginGroup, OnGroupEnd: c.EndGroup, OnProgress: c.Progress}
}

// TestRunBasicGroupsAndTokens 端到端验证分组、轮次、预热不计入、token 统计、goodput 与服务端指标。
func TestRunBasicGroupsAndTokens(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m"})
	p := loadgen.Profile{
		Concurrency:  []int{1, 4},
		InputLength:  []int{32},
		OutputLength: []int{8, 16},
		NumRequests:  []int{20},
		Warmup:       2,
		Epochs:       2,
		Goodput:      []string{"ttft:10000,e2e:100000"},
	}
	sink := &collect{}
	sums, err := loadgen.Run(context.Background(), tgt, p, sink.observer())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(sums), 1*2*2*2; got != want {
		t.Fatalf("summaries = %d, want %d", got, want)
	}
	if len(sink.recs) != 8*20 {
		t.Fatalf("records = %d, want %d (warmup must not be recorded)", len(sink.recs), 160)
	}
	if len(sink.groups) != 8 || len(sink.ends) != 8 {
		t.Fatalf("groups begin/end = %d/%d", len(sink.groups), len(sink.ends))
	}
	for i, s := range sums {
		if s.NumPrompts != 20 || s.Succeeded != 20 || s.Failed != 0 || s.FailRate != 0 {
			t.Errorf("row %d: prompts=%d ok=%d failed=%d", i, s.NumPrompts, s.Succeeded, s.Failed)
		}
		if s.CompletionTokens.Min != float64(s.OutputLength) || s.CompletionTokens.Avg != float64(s.OutputLength) {
			t.Errorf("row %d: completion tokens %+v, want all %d (ignore_eos)", i, s.CompletionTokens, s.OutputLength)
		}
		if s.AvgPromptTokens != 32 {
			t.Errorf("row %d: avg prompt tokens %v, want 32 (exact-length dataset)", i, s.AvgPromptTokens)
		}
		if s.TokenSource != loadgen.TokenSourceUsage {
			t.Errorf("row %d: token source %q", i, s.TokenSource)
		}
		if s.Round != i%2+1 {
			t.Errorf("row %d: round %d", i, s.Round)
		}
		if s.TPOTSec.Count != int64(20*(s.OutputLength-1)) {
			t.Errorf("row %d: TPOT_SEC samples %d, want %d", i, s.TPOTSec.Count, 20*(s.OutputLength-1))
		}
		if s.Goodput <= 0 || s.Goodput > s.QPS+1e-9 {
			t.Errorf("row %d: goodput %v vs qps %v", i, s.Goodput, s.QPS)
		}
		if !(s.TTFT.Valid() && s.TTFT.P75 <= s.TTFT.P99 && s.TTFT.P99 <= s.TTFT.Max && s.TTFT.Max <= s.E2E.Max) {
			t.Errorf("row %d: TTFT ordering broken: %+v / E2E %+v", i, s.TTFT, s.E2E)
		}
		if !s.ServerTTFT.Valid() || s.ServerTTFT.Count != 20 {
			t.Errorf("row %d: server TTFT count %d, want 20", i, s.ServerTTFT.Count)
		}
		if s.SpecAcceptRate.Avg != -1 {
			t.Errorf("row %d: spec accept %v without spec decode", i, s.SpecAcceptRate.Avg)
		}
	}
	for _, r := range sink.recs {
		if !r.OK || r.CompletionTokens != r.Group.OutputLength || len(r.ChunkTimes) != r.CompletionTokens {
			t.Fatalf("record %+v", r)
		}
		if r.TTFT <= 0 || r.TTFT > r.E2E || r.TPOT < 0 {
			t.Fatalf("record timings %+v", r)
		}
	}
}

// TestRunRejectsBadInput 验证非法 Target / Profile 在发出任何请求前被拒绝。
func TestRunRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	good := loadgen.Profile{InputLength: []int{8}, OutputLength: []int{8}}
	if _, err := loadgen.Run(ctx, loadgen.Target{Endpoint: endpoint.Endpoint{Model: "m"}}, good, nil); !errors.Is(err, loadgen.ErrInvalidTarget) {
		t.Fatalf("no URL: %v", err)
	}
	_, err := loadgen.Run(ctx, loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{"http://127.0.0.1:1/v1", "ftp://x"}, Model: "m"}}, good, nil)
	if !errors.Is(err, loadgen.ErrInvalidTarget) || !errors.Is(err, endpoint.ErrInvalid) ||
		err.Error() != `loadgen: invalid target: endpoint: base_urls[1] "ftp://x": invalid endpoint: scheme "ftp" is not http or https` {
		t.Fatalf("ftp URL: %v", err)
	}
	if _, err := loadgen.Run(ctx, loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{"http://127.0.0.1:1/v1"}}}, good, nil); !errors.Is(err, endpoint.ErrInvalid) {
		t.Fatalf("no model: %v", err)
	}
	bad := good
	bad.Backend = "grpc"
	if _, err := loadgen.Run(ctx, loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{"http://127.0.0.1:1/v1"}, Model: "m"}}, bad, nil); !errors.Is(err, loadgen.ErrInvalidProfile) {
		t.Fatalf("bad backend: %v", err)
	}
}

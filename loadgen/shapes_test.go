package loadgen_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/dataset"
)

// TestClimbRaisesConcurrencyOnSchedule 从记录重建在途请求数，验证爬坡按计划提升并发且不超过上限。
func TestClimbRaisesConcurrencyOnSchedule(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m", ITL: 2 * time.Millisecond})
	p := loadgen.Profile{
		Concurrency: []int{4}, InputLength: []int{8}, OutputLength: []int{20}, NumRequests: []int{60},
		ControlMethod: loadgen.ControlClimb, InitConcurrency: []int{1}, GrowthRate: 1, GrowthInterval: 100 * time.Millisecond,
	}
	sink := &collect{}
	sums, err := loadgen.Run(context.Background(), tgt, p, sink.observer())
	if err != nil {
		t.Fatal(err)
	}
	if sums[0].ControlMethod != string(loadgen.ControlClimb) || sums[0].GrowthRate != 1 || sums[0].Failed != 0 {
		t.Fatalf("%+v", sums[0])
	}
	// 在途请求数按发送时刻重建：第一个间隔内只能有 1 个，之后逐步增至 4 个，从不超过 4。
	start := sink.recs[0].Intended
	for _, r := range sink.recs {
		if r.Intended.Before(start) {
			start = r.Intended
		}
	}
	maxEarly, maxAll := 0, 0
	for _, r := range sink.recs {
		n := 0
		for _, o := range sink.recs {
			if !o.Intended.After(r.Intended) && o.Intended.Add(o.E2E).After(r.Intended) {
				n++
			}
		}
		if r.Intended.Sub(start) < 50*time.Millisecond {
			maxEarly = max(maxEarly, n)
		}
		maxAll = max(maxAll, n)
	}
	if maxEarly != 1 || maxAll > 4 || maxAll < 3 {
		t.Fatalf("in-flight: first interval %d (want 1), overall %d (want 3..4)", maxEarly, maxAll)
	}
	if sink.progress == 0 {
		t.Fatal("progress sink never called")
	}
}

// TestOpenLoopMeasuresFromIntendedTime 验证开环时延从计划到达时刻量起（排队可见），且到达计划可复现。
func TestOpenLoopMeasuresFromIntendedTime(t *testing.T) {
	// 服务端每个请求约 40ms，并发上限 1，到达速率 100/s：请求必然排队，
	// 从意图时刻量起的 E2E 必须包含排队时间（SlotWait 增长），而不是被隐藏。
	_, tgt := startEmulator(t, emulator.Config{Model: "m", TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond})
	p := loadgen.Profile{Concurrency: []int{1}, InputLength: []int{8}, OutputLength: []int{4}, NumRequests: []int{12},
		RequestRate: 100, Burstiness: 1, Seed: 3}
	sink := &collect{}
	sums, err := loadgen.Run(context.Background(), tgt, p, sink.observer())
	if err != nil {
		t.Fatal(err)
	}
	s := sums[0]
	if s.Failed != 0 || s.NumPrompts != 12 {
		t.Fatalf("%+v", s)
	}
	if !(s.SlotWait.Max > 0 && s.SlotWait.Max < s.E2E.Max) {
		t.Fatalf("slot wait %+v vs e2e %+v", s.SlotWait, s.E2E)
	}
	for _, r := range sink.recs {
		if r.SlotWait != r.Sent.Sub(r.Intended) || r.E2E < r.SlotWait || r.TTFT < r.SlotWait {
			t.Fatalf("record timing not anchored at intended time: %+v", r)
		}
	}
	// 同种子到达时刻可复现（相对第一个请求的间隔一致）。
	sink2 := &collect{}
	if _, err := loadgen.Run(context.Background(), tgt, p, sink2.observer()); err != nil {
		t.Fatal(err)
	}
	gaps := func(c *collect) map[int]time.Duration {
		m := map[int]time.Duration{}
		var first time.Time
		for _, r := range c.recs {
			if r.Index == 0 {
				first = r.Intended
			}
		}
		for _, r := range c.recs {
			m[r.Index] = r.Intended.Sub(first).Round(time.Millisecond)
		}
		return m
	}
	g1, g2 := gaps(sink), gaps(sink2)
	for i := range 12 {
		if (g1[i] - g2[i]).Abs() > 2*time.Millisecond {
			t.Fatalf("arrival %d: %v vs %v (seeded schedule differs)", i, g1[i], g2[i])
		}
	}
}

// TestOpenLoopUncapped 验证不限并发的开环模式。
func TestOpenLoopUncapped(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m"})
	p := loadgen.Profile{Concurrency: []int{0}, InputLength: []int{8}, OutputLength: []int{4}, NumRequests: []int{30}, RequestRate: 2000}
	sums, err := loadgen.Run(context.Background(), tgt, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sums[0].NumPrompts != 30 || sums[0].Failed != 0 {
		t.Fatalf("%+v", sums[0])
	}
}

// TestBackendsModesAndRoundRobin 覆盖 completions、非流式、图文、自定义数据集、输出抖动与多实例轮询。
func TestBackendsModesAndRoundRobin(t *testing.T) {
	_, a := startEmulator(t, emulator.Config{Model: "m"})
	_, b := startEmulator(t, emulator.Config{Model: "m"})
	two := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{a.BaseURLs[0], b.BaseURLs[0]}, Model: "m"}, Provider: "rr"}
	f := false
	cases := map[string]loadgen.Profile{
		"completions":   {Backend: loadgen.BackendCompletion},
		"non-stream":    {Stream: &f},
		"image-text":    {ModalType: loadgen.ModalImageText, ImageWidth: 32, ImageHeight: 16},
		"custom":        {Prompts: []dataset.Prompt{{Text: "你好 world"}, {Text: "second prompt", MaxTokens: 3}}},
		"output jitter": {OutputRangeRatioAbove: 0.5, OutputRangeRatioBelow: 0.5, Seed: 5},
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			if p.Prompts == nil {
				p.InputLength = []int{12}
			}
			p.OutputLength = []int{6}
			p.NumRequests = []int{10}
			sink := &collect{}
			sums, err := loadgen.Run(context.Background(), two, p, sink.observer())
			if err != nil {
				t.Fatal(err)
			}
			s := sums[0]
			if s.Failed != 0 {
				t.Fatalf("failed %d: %s", s.Failed, sink.recs[0].Error)
			}
			inst := map[int]int{}
			for _, r := range sink.recs {
				inst[r.Instance]++
				if r.CompletionTokens < 1 || r.TTFT <= 0 {
					t.Fatalf("record %+v", r)
				}
			}
			if inst[0] == 0 || inst[1] == 0 {
				t.Fatalf("round robin not used: %v", inst)
			}
			switch name {
			case "non-stream":
				if s.FirstToSecondToken.Valid() || s.TPOT.Valid() || s.TTFT.Max != s.E2E.Max {
					t.Fatalf("non-stream TTFT must equal E2E and TPOT be unmeasured: %+v %+v", s.TTFT, s.TPOT)
				}
			case "custom":
				if s.DatasetType != string(loadgen.DatasetCustom) || s.CompletionTokens.Min != 3 || s.CompletionTokens.Max != 6 {
					t.Fatalf("custom: %s %+v", s.DatasetType, s.CompletionTokens)
				}
			case "output jitter":
				if s.CompletionTokens.Min < 3 || s.CompletionTokens.Max > 9 || s.CompletionTokens.Min == s.CompletionTokens.Max {
					t.Fatalf("output jitter: %+v", s.CompletionTokens)
				}
			case "image-text":
				if s.AvgPromptTokens <= 12 {
					t.Fatalf("image tokens not counted by server: %v", s.AvgPromptTokens)
				}
			default:
				if s.CompletionTokens.Avg != 6 {
					t.Fatalf("%+v", s.CompletionTokens)
				}
			}
		})
	}
}

// TestSinkErrorAbortsRun 验证接收器报错会尽快终止运行并返回该错误。
func TestSinkErrorAbortsRun(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m"})
	var n atomic.Int32
	boom := errors.New("disk full")
	sink := &loadgen.Observer{OnRecord: func(*loadgen.Record) error {
		if n.Add(1) == 3 {
			return boom
		}
		return nil
	}}
	_, err := loadgen.Run(context.Background(), tgt, loadgen.Profile{InputLength: []int{8}, OutputLength: []int{4}, NumRequests: []int{1000}}, sink)
	if !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if n.Load() > 10 {
		t.Fatalf("run continued after sink error: %d records", n.Load())
	}
}

// TestCancelStopsRun 验证 ctx 取消会停止运行：后面的分组不再开始，被中断的分组只留下一行
// 标为不完整的汇总。
func TestCancelStopsRun(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m", ITL: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	sink := &loadgen.Observer{OnRecord: func(*loadgen.Record) error { cancel(); return nil }}
	sums, err := loadgen.Run(ctx, tgt, loadgen.Profile{InputLength: []int{8}, OutputLength: []int{100}, NumRequests: []int{100}, Concurrency: []int{4, 8}}, sink)
	if !errors.Is(err, context.Canceled) || len(sums) != 1 || !sums[0].Incomplete || sums[0].Concurrency != 4 {
		t.Fatalf("err %v, summaries %+v", err, sums)
	}
}

// TestUnreachableServer 验证服务不可达时在探测阶段报错。
func TestUnreachableServer(t *testing.T) {
	_, err := loadgen.Run(context.Background(), loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{"http://127.0.0.1:1/v1"}, Model: "m"}},
		loadgen.Profile{InputLength: []int{8}, OutputLength: []int{4}}, nil)
	if err == nil || !strings.Contains(err.Error(), "probe") {
		t.Fatalf("err %v", err)
	}
}

// TestClimbEndsWhenWorkIsDone 验证请求做完后，尚未到启动时刻的爬坡 worker 不再拖住分组。
func TestClimbEndsWhenWorkIsDone(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m"})
	p := loadgen.Profile{Concurrency: []int{8}, InputLength: []int{8}, OutputLength: []int{4}, NumRequests: []int{5},
		ControlMethod: loadgen.ControlClimb, InitConcurrency: []int{1}, GrowthRate: 1, GrowthInterval: time.Minute}
	start := time.Now()
	sums, err := loadgen.Run(context.Background(), tgt, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 30*time.Second || sums[0].NumPrompts != 5 {
		t.Fatalf("run took %v (climb schedule reaches 7 minutes), %d requests", el, sums[0].NumPrompts)
	}
}

package loadgen_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/loadgen"
)

// TestFinishReasonSurvivesLaterEvents 钉住数据损坏缺陷：finish_reason 曾直接引用 SSE 读取器
// 复用的缓冲区，之后的 usage 事件与下一个请求把它覆盖成 "promp"、"rompt_" 之类的碎片。
// 记录被接收方保留（collect 复制 Record）后，每条的 FinishReason 都必须仍是 "length"。
func TestFinishReasonSurvivesLaterEvents(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m"})
	p := loadgen.Profile{Concurrency: []int{2}, InputLength: []int{16}, OutputLength: []int{8}, NumRequests: []int{6}}
	sink := &collect{}
	if _, err := loadgen.Run(context.Background(), tgt, p, sink.observer()); err != nil {
		t.Fatal(err)
	}
	if len(sink.recs) != 6 {
		t.Fatalf("records %d", len(sink.recs))
	}
	for _, r := range sink.recs {
		if r.FinishReason != "length" {
			t.Errorf("request %d: finish reason %q, want \"length\"", r.Index, r.FinishReason)
		}
	}
}

// TestErrorTextSurvivesLaterRequests 钉住同一缺陷的另一处：流内错误事件的 message 曾引用读缓冲区，
// 同一 worker 的下一个请求会把已交出的记录里的 Error 覆盖。每个请求的错误文本各不相同，
// 保留下来的记录必须仍是各自的文本。
func TestErrorTextSurvivesLaterRequests(t *testing.T) {
	var n atomic.Int64
	tgt := scripted(t, func(w http.ResponseWriter, body string) {
		if strings.Contains(body, `"hi"`) {
			sseWrite(w, contentChunk("a"), "[DONE]")
			return
		}
		i := n.Add(1)
		sseWrite(w, roleChunk, `{"error":{"message":"boom number `+strconv.FormatInt(i, 10)+` happened","code":500}}`, "[DONE]")
	})
	recs, s := runOne(t, tgt, loadgen.Profile{}, 4)
	if s.Failed != 4 {
		t.Fatalf("failed %d", s.Failed)
	}
	got := map[string]bool{}
	for _, r := range recs {
		if r.ErrorClass != loadgen.ErrClassStreamError {
			t.Fatalf("class %q", r.ErrorClass)
		}
		got[r.Error] = true
	}
	for i := 1; i <= 4; i++ {
		if m := "boom number " + strconv.Itoa(i) + " happened"; !got[m] {
			t.Errorf("error text %q missing; have %v", m, got)
		}
	}
}

// TestInterruptedGroupKeepsIncompleteSummary 钉住中断时丢数据的缺陷：组中途取消 ctx 时，
// 这一组已完成的请求仍汇总成一行（Incomplete=true）交给调用方与 Observer.OnGroupEnd；被中断的在途请求
// 记为 canceled 写进逐请求记录，但不计入汇总。
func TestInterruptedGroupKeepsIncompleteSummary(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m", ITL: 2 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink := &cancelAfter{n: 10, cancel: cancel}
	p := loadgen.Profile{Concurrency: []int{4}, InputLength: []int{8}, OutputLength: []int{20}, NumRequests: []int{400}}
	sums, err := loadgen.Run(ctx, tgt, p, sink.observer())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if len(sums) != 1 || len(sink.ends) != 1 {
		t.Fatalf("summaries %d, EndGroup calls %d, want 1 each", len(sums), len(sink.ends))
	}
	s := sums[0]
	if !s.Incomplete || !sink.ends[0].Incomplete {
		t.Fatal("interrupted group not marked incomplete")
	}
	measured, canceled := 0, 0
	for _, r := range sink.recs {
		if r.ErrorClass == loadgen.ErrClassCanceled {
			canceled++
		} else {
			measured++
		}
	}
	if s.NumPrompts != measured || s.Succeeded != measured || s.NumPrompts >= 400 || measured < 10 {
		t.Fatalf("summary prompts %d ok %d, records measured %d canceled %d", s.NumPrompts, s.Succeeded, measured, canceled)
	}
	if s.FailRate != 0 || s.FailureClasses != nil || !s.TTFT.Valid() || s.CompletionTokens.Avg != 20 {
		t.Fatalf("incomplete row should describe what was measured: fail %v classes %v TTFT %+v tokens %+v",
			s.FailRate, s.FailureClasses, s.TTFT, s.CompletionTokens)
	}
}

// cancelAfter 是在收到 n 条记录后取消 ctx 的接收器（其余行为同 collect）。
type cancelAfter struct {
	collect
	n      int
	cancel context.CancelFunc
}

// observer 与 collect 相同，只换掉 OnRecord（包装器只写它关心的钩子，其余原样保留）。
func (c *cancelAfter) observer() *loadgen.Observer {
	o := c.collect.observer()
	o.OnRecord = c.WriteRecord
	return o
}

// WriteRecord 保存记录，第 n 条之后取消运行。
func (c *cancelAfter) WriteRecord(r *loadgen.Record) error {
	_ = c.collect.WriteRecord(r)
	if len(c.recs) >= c.n {
		c.cancel()
	}
	return nil
}

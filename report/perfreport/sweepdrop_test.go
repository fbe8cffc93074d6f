package perfreport_test

import (
	"context"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report/perfreport"
)

// TestSampleCollectorKeepsSweepEnd 是 issue 24 的回归测试：以前采样器包住下一个接收方、
// 按类型断言转发，没有实现 SweepSink，容量扫描的结论被静默丢掉（在旧代码上此测试得到
// "0 sweep results of 1"）。现在采样器与别的出口用 loadgen.Tee 并列，别的出口收到每条
// 记录与每个扫描结论，采样器也拿到了样本。
func TestSampleCollectorKeepsSweepEnd(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m"})
	var recs, sweeps int
	other := &loadgen.Observer{
		OnRecord:   func(*loadgen.Record) error { recs++; return nil },
		OnSweepEnd: func(loadgen.SweepResult) error { sweeps++; return nil },
	}
	coll := perfreport.NewSampleCollector("openai-chat", "sweep", 0)
	p := loadgen.Profile{ControlMethod: loadgen.ControlSweep, InputLength: []int{8}, OutputLength: []int{2}, Goodput: []string{"e2e:60000"},
		Sweep: loadgen.SweepConfig{StartRate: 20, MaxRate: 40, StepDuration: 200 * time.Millisecond, MinRequests: 4, Budget: 20 * time.Second}}
	res, err := loadgen.RunSweep(context.Background(), loadgen.Target{Endpoint: ep}, p, loadgen.Tee(coll.Observer(), other))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || sweeps != 1 {
		t.Fatalf("the other observer got %d sweep results of %d", sweeps, len(res))
	}
	var seen int64
	for _, s := range coll.Samples() {
		seen += s.Seen
	}
	if recs == 0 || seen == 0 || seen > int64(recs) {
		t.Fatalf("records: other observer %d, collector saw %d successes", recs, seen)
	}
}

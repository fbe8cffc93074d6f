package loadgen_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/internal/procstat"
	"github.com/vllm-cibench/cibench/loadgen"
)

// sweepSink 收集扫描结论与分组汇总。
type sweepSink struct {
	collect
	sweeps []loadgen.SweepResult
}

// EndSweep 记下结论。
func (s *sweepSink) EndSweep(r loadgen.SweepResult) error { s.sweeps = append(s.sweeps, r); return nil }

// observer 在 collect 的钩子上加 OnSweepEnd。
func (s *sweepSink) observer() *loadgen.Observer {
	o := s.collect.observer()
	o.OnSweepEnd = s.EndSweep
	return o
}

// TestSweepFindsLittlesLawCapacity 用 max_num_seqs 与固定时延的模拟器构造一个容量事先已知的
// 服务：每个请求占用一个执行槽 W = TTFT + (输出 token − 1)·ITL，槽数 c = max_num_seqs，
// 由 Little 定律 L = λW，满载（L = c）时的到达速率就是容量 λ* = c / W。扫描必须在 10% 以内
// 找到它。到达间隔用 burstiness 50 的 gamma（变异系数 0.14），让容量以下几乎不排队、
// 超过容量时积压线性增长——这样"SLO 不再成立"的速率就是容量本身，而不是泊松排队带来的更低值。
func TestSweepFindsLittlesLawCapacity(t *testing.T) {
	// 容量扫描在 40ms 的 SLO 余量内分辨成败：机器的定时滑移超过余量的一半时，测出的是机器
	// 而不是扫描逻辑，明确跳过并写出滑移（安静的 CI 机器上滑移在 1ms 以内）。
	if slip := procstat.TimerSlip(20, 5*time.Millisecond); slip > 40*time.Millisecond/2 {
		t.Skipf("machine too loaded to measure capacity: timer slip %v exceeds half the 40ms SLO margin", slip)
	}
	const (
		seqs   = 4
		ttft   = 120 * time.Millisecond
		itl    = 40 * time.Millisecond
		outTok = 3
	)
	// 每请求只有 3 个 chunk、容量 20 请求/秒：-race 下的模拟器与客户端同处一个进程、
	// CPU 也被共享，处理能力必须远高于被测容量，测到的才是 max_num_seqs 而不是本机 CPU。
	service := ttft + (outTok-1)*itl // 200ms
	capacity := float64(seqs) / service.Seconds()
	_, target := startEmulator(t, emulator.Config{MaxNumSeqs: seqs, TTFT: ttft, ITL: itl})
	sink := &sweepSink{}
	prof := loadgen.Profile{
		ControlMethod: loadgen.ControlSweep, InputLength: []int{16}, OutputLength: []int{outTok},
		Burstiness: 50, Seed: 3,
		Goodput: []string{"e2e:" + ms(service+40*time.Millisecond)},
		Sweep: loadgen.SweepConfig{StartRate: capacity * 3 / 4, Growth: 1.5, Precision: 0.05, StepDuration: 1200 * time.Millisecond,
			MinRequests: 10, Attainment: 0.9, Budget: 60 * time.Second},
	}
	res, err := loadgen.RunSweep(context.Background(), target, prof, sink.observer())
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || len(sink.sweeps) != 1 {
		t.Fatalf("sweeps = %d (sink %d), want 1", len(res), len(sink.sweeps))
	}
	r := res[0]
	for _, st := range r.Steps {
		t.Logf("offered %.1f/s: attainment %.2f pass=%v goodput %.1f e2e p99 %v %s", st.OfferedRate, st.Attainment, st.Pass, st.Summary.Goodput, st.Summary.E2E.P99, st.Reason)
	}
	t.Logf("capacity %.1f/s (Little), found %.1f/s, knee %.1f/s, stop %s, %v", capacity, r.MaxSustainableRate, r.KneeRate, r.Stop, r.Elapsed)
	if rel := math.Abs(r.MaxSustainableRate-capacity) / capacity; rel > 0.10 {
		t.Errorf("max sustainable rate %.1f/s is %.0f%% away from the Little's-law capacity %.1f/s (want within 10%%)", r.MaxSustainableRate, rel*100, capacity)
	}
	if r.Stop != loadgen.SweepStopConverged {
		t.Errorf("stop = %q, want converged", r.Stop)
	}
	if r.Elapsed <= 0 || r.Elapsed > 30*time.Second {
		t.Errorf("elapsed %v", r.Elapsed)
	}
	if math.Abs(r.KneeRate-capacity)/capacity > 0.2 {
		t.Errorf("knee %.1f/s not on the saturating part of the curve (max sustainable %.1f/s)", r.KneeRate, r.MaxSustainableRate)
	}
	// 每一级都是一个普通分组：汇总行交给了接收方，控制方式与级序号写在行里。
	if len(sink.ends) != len(r.Steps) {
		t.Fatalf("EndGroup rows = %d, steps = %d", len(sink.ends), len(r.Steps))
	}
	for i, s := range sink.ends {
		if s.ControlMethod != string(loadgen.ControlSweep) || s.Round != i+1 || s.Concurrency != 0 {
			t.Errorf("row %d: control %q round %d concurrency %d", i, s.ControlMethod, s.Round, s.Concurrency)
		}
		want := max(10, int(math.Ceil(r.Steps[i].OfferedRate*1.2)))
		if s.NumPrompts != want {
			t.Errorf("step %d at %.1f/s sent %d requests, want %d", i+1, r.Steps[i].OfferedRate, s.NumPrompts, want)
		}
	}
}

// ms 把时长写成 goodput 的毫秒数。
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// TestSweepStopsOnErrorsAndBudget 验证出现错误的级被判为超出容量（start_failed），
// 以及预算不够下一级时扫描自行结束而不是超时。
func TestSweepStopsOnErrorsAndBudget(t *testing.T) {
	_, target := startEmulator(t, emulator.Config{FailureRate: 1, FailureKinds: []string{"500"}})
	prof := loadgen.Profile{ControlMethod: loadgen.ControlSweep, InputLength: []int{8}, OutputLength: []int{2},
		Goodput: []string{"ttft:1000"}, Sweep: loadgen.SweepConfig{StartRate: 50, StepDuration: 100 * time.Millisecond, MinRequests: 5}}
	res, err := loadgen.RunSweep(context.Background(), target, prof, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0]; r.Stop != loadgen.SweepStopStartFailed || r.MaxSustainableRate != 0 || r.KneeRate != 0 || r.Steps[0].Pass || r.Steps[0].Summary.FailureClasses["http"] != 5 {
		t.Errorf("all-500 server: stop %q max %.1f step %+v", r.Stop, r.MaxSustainableRate, r.Steps[0].Reason)
	}

	_, target = startEmulator(t, emulator.Config{})
	prof = loadgen.Profile{ControlMethod: loadgen.ControlSweep, InputLength: []int{8}, OutputLength: []int{2},
		Goodput: []string{"ttft:5000"}, Sweep: loadgen.SweepConfig{StartRate: 20, StepDuration: 500 * time.Millisecond, Budget: 1200 * time.Millisecond}}
	start := time.Now()
	res, err = loadgen.RunSweep(context.Background(), target, prof, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	// 上限放宽到预算 + 3.8 s：忽略预算的扫描会一级一级翻倍走下去（远超 5 s），而忙的机器上取消在途请求、
	// 收尾可能要几百毫秒，不能让它判错。
	if r.Stop != loadgen.SweepStopBudget || len(r.Steps) == 0 || time.Since(start) > 5*time.Second {
		t.Errorf("budget 1.2s: stop %q after %d steps in %v", r.Stop, len(r.Steps), time.Since(start))
	}
	if r.MaxSustainableRate != r.Steps[len(r.Steps)-1].OfferedRate {
		t.Errorf("max sustainable %.1f, last passing step %.1f", r.MaxSustainableRate, r.Steps[len(r.Steps)-1].OfferedRate)
	}
}

// TestSweepValidate 检查扫描参数的校验点名字段。
func TestSweepValidate(t *testing.T) {
	base := loadgen.Profile{ControlMethod: loadgen.ControlSweep, InputLength: []int{8}, OutputLength: []int{2}, Goodput: []string{"e2e:100"}}
	for _, tc := range []struct {
		name string
		mod  func(*loadgen.Profile)
		want string
	}{
		{"tpot only", func(p *loadgen.Profile) { p.Goodput = []string{"tpot:10"} }, "goodput"},
		{"growth", func(p *loadgen.Profile) { p.Sweep.Growth = 1 }, "sweep.growth"},
		{"max below start", func(p *loadgen.Profile) { p.Sweep.StartRate, p.Sweep.MaxRate = 10, 5 }, "sweep.max_rate"},
		{"precision", func(p *loadgen.Profile) { p.Sweep.Precision = 1.5 }, "sweep.precision"},
		{"attainment", func(p *loadgen.Profile) { p.Sweep.Attainment = 2 }, "sweep.attainment"},
		{"request rate", func(p *loadgen.Profile) { p.RequestRate = 3 }, "request_rate"},
		{"fail rate", func(p *loadgen.Profile) { p.Sweep.MaxFailRate = -1 }, "sweep.max_fail_rate"},
	} {
		p := base
		tc.mod(&p)
		err := p.WithDefaults().Validate()
		if !errors.Is(err, loadgen.ErrInvalidProfile) || !containsField(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrInvalidProfile naming %s", tc.name, err, tc.want)
		}
	}
	if err := base.WithDefaults().Validate(); err != nil {
		t.Errorf("valid sweep profile: %v", err)
	}
	if c := base.WithDefaults().Concurrency; len(c) != 1 || c[0] != 0 {
		t.Errorf("sweep default concurrency = %v, want [0] (open loop)", c)
	}
	if _, err := loadgen.RunSweep(context.Background(), loadgen.Target{}, loadgen.Profile{}, nil); !errors.Is(err, loadgen.ErrInvalidProfile) {
		t.Errorf("RunSweep with a normal profile: %v", err)
	}
}

// containsField 报告错误文本是否以 "字段: " 的形式点名了 field（field.Error 的格式）。
func containsField(s, field string) bool {
	return strings.Contains(s, " "+field+": ")
}

// TestSweepCSV 检查逐级 CSV 与容量汇总行的取值。
func TestSweepCSV(t *testing.T) {
	st := time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC)
	res := loadgen.SweepResult{InputLength: 16, OutputLength: 3, Provider: "emu", Backend: "openai-chat", SLO: "e2e:240", Target: 0.9,
		MaxSustainableRate: 19.6875, MaxGoodput: 17, KneeRate: 19.6875, Stop: loadgen.SweepStopConverged, Started: st, Elapsed: 8500 * time.Millisecond,
		Steps: []loadgen.SweepStep{
			{OfferedRate: 15, Attainment: 1, Pass: true, Summary: loadgen.Summary{NumPrompts: 18, QPS: 13.5, Goodput: 13.4,
				TTFT: loadgen.Latency{Count: 18, P50: 120 * time.Millisecond, P99: 130 * time.Millisecond}, E2E: loadgen.Latency{Count: 18, P50: 200 * time.Millisecond, P99: 220 * time.Millisecond}}},
			{OfferedRate: 22.5, Attainment: 0.37, Reason: "SLO attainment 37.0% below 90.0%", Summary: loadgen.Summary{NumPrompts: 27, QPS: 18, Goodput: 6.7, FailRate: 0}},
		}}
	var b strings.Builder
	if err := loadgen.WriteSweepCSV(&b, res); err != nil {
		t.Fatal(err)
	}
	want := loadgen.SweepCSVHeader + "\n" +
		"1,15.0000,18,13.5000,13.4000,1.0000,0.000000,0.120000,0.130000,-1,0.200000,0.220000,true,\n" +
		"2,22.5000,27,18.0000,6.7000,0.3700,0.000000,-1,-1,-1,-1,-1,false,SLO attainment 37.0% below 90.0%\n"
	if b.String() != want {
		t.Errorf("sweep csv:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := loadgen.WriteCapacityCSV(&b, []loadgen.SweepResult{res}); err != nil {
		t.Fatal(err)
	}
	want = loadgen.CapacityCSVHeader + "\n2025-03-01 08:00:00,emu,openai-chat,16,3,0,e2e:240,0.9000,19.6875,17.0000,19.6875,2,converged,8.500\n"
	if b.String() != want {
		t.Errorf("capacity csv:\n%s\nwant:\n%s", b.String(), want)
	}
}

package pipeline_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/runtype"

	"github.com/vllm-cibench/cibench/internal/procstat"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/pipeline"
)

// TestCapacityProfileFromConfig 从配置树运行一个 control_method: sweep 的档位（每日）：模拟器
// max_num_seqs 2、每请求占用 100ms 执行槽，容量 20 请求/秒（Little 定律）。检查容量写进
// summary.json、逐级与容量汇总 CSV 落盘、给人看的摘要里有容量行，每日运行带上趋势分析，
// 而且扫描的各级不产生性能门禁。
func TestCapacityProfileFromConfig(t *testing.T) {
	// 容量扫描在 40ms 的 SLO 余量内分辨成败：机器的定时滑移超过余量的一半时，测出的是机器
	// 而不是扫描逻辑，明确跳过并写出滑移（安静的 CI 机器上滑移在 1ms 以内）。
	if slip := procstat.TimerSlip(20, 5*time.Millisecond); slip > 40*time.Millisecond/2 {
		t.Skipf("machine too loaded to measure capacity: timer slip %v exceeds half the 40ms SLO margin", slip)
	}
	root := t.TempDir()
	fsys := fstest.MapFS{
		"scenarios/cap.yaml": {Data: []byte("mode: emulator\nserved_model_name: cap-model\nemulator: {ttft: 60ms, itl: 20ms, max_num_seqs: 2}\n")},
		"tests/perf/profiles/capacity.yaml": {Data: []byte("control_method: sweep\ninput_length: [8]\noutput_length: [3]\nburstiness: 50\n" +
			"goodput: [\"e2e:140\"]\nsweep: {start_rate: 10, growth: 2, precision: 0.1, step_duration: 1s, min_requests: 8, attainment: 0.9, budget: 30s}\n")},
		"matrix.yaml": {Data: []byte("scenarios:\n  cap:\n    daily: {functional: {enabled: false}, accuracy: {enabled: false}, perf: {profiles: [capacity]}}\n")},
	}
	o := options(t, fsys, runtype.Daily, root)
	out, err := pipeline.Run(context.Background(), o)
	if err != nil || out.ExitCode != gate.ExitOK {
		t.Fatalf("exit %d err %v: %s", out.ExitCode, err, o.Out)
	}
	res := summary(t, out.Dir)
	sc := scenario(t, res, "cap")
	if len(sc.Capacity) != 1 {
		t.Fatalf("capacity %+v", sc.Capacity)
	}
	c := sc.Capacity[0]
	if c.MaxSustainableRate < 15 || c.MaxSustainableRate > 22 || len(c.Steps) < 3 {
		t.Errorf("max sustainable %.2f req/s after %d steps (stop %s), want ≈20", c.MaxSustainableRate, len(c.Steps), c.Stop)
	}
	if len(sc.Perf) != 0 {
		t.Errorf("sweep steps recorded as %d perf rows", len(sc.Perf))
	}
	for _, g := range res.Gates {
		if g.Kind == gate.KindPerformance {
			t.Errorf("perf gate %s from a sweep", g.Name)
		}
	}
	if res.Trend == nil || res.Trend.Runs != 1 {
		t.Errorf("daily trend %+v", res.Trend)
	}
	dir := filepath.Join(out.Dir, "cap", "perf", "capacity")
	sweeps, _ := filepath.Glob(filepath.Join(dir, "sweep_cap_input8_output3_concurrency0_*.csv"))
	caps, _ := filepath.Glob(filepath.Join(dir, "capacity_cap_*.csv"))
	if len(sweeps) != 1 || len(caps) != 1 {
		t.Fatalf("sweep CSVs %v capacity CSVs %v", sweeps, caps)
	}
	b, err := os.ReadFile(sweeps[0])
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != len(c.Steps)+1 || lines[0] != loadgen.SweepCSVHeader {
		t.Errorf("sweep CSV has %d lines for %d steps", len(lines), len(c.Steps))
	}
	b, _ = os.ReadFile(caps[0])
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 2 || !strings.Contains(lines[1], ",cap,openai-chat,8,3,0,e2e:140,") {
		t.Errorf("capacity CSV:\n%s", b)
	}
	if s := o.Out.(*bytes.Buffer).String(); !strings.Contains(s, "capacity cap in8/out3: ") {
		t.Errorf("summary output lacks the capacity line:\n%s", s)
	}
}

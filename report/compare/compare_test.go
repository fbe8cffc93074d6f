package compare_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/explain"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/compare"
	"github.com/vllm-cibench/cibench/report/perfreport"
	"github.com/vllm-cibench/cibench/runtype"
)

// breakdown 返回排队均值为 queue 的分解（prefill 20ms，解码 100ms，64 个样本）。
func breakdown(queue float64) *explain.Breakdown {
	d := func(m float64) *explain.Dist { return &explain.Dist{Count: 64, Sum: 64 * m} }
	ttft := 0.021 + queue
	return &explain.Breakdown{ClientTTFT: explain.Moments{N: 64, Mean: ttft, Var: 1e-6}, ClientE2E: explain.Moments{N: 64, Mean: ttft + 0.1, Var: 1e-6},
		ServerTTFT: d(0.020 + queue), Queue: d(queue), Prefill: d(0.020), Decode: d(0.1), ServerE2E: d(0.12 + queue)}
}

// writeRun 写出一次运行：一个场景 name、一个组合（并发 8），TTFT 约为 21ms + queue，带样本与分解。
func writeRun(t *testing.T, rt runtype.Type, id, name, hw string, queue float64, concs ...int) string {
	t.Helper()
	root := t.TempDir()
	run, err := report.NewRun(root, rt, report.RunID(id), time.Unix(1700000000, 0), report.WithRenderers(perfreport.Renderer()),
		report.WithCommit("c-"+id, "main"))
	if err != nil {
		t.Fatal(err)
	}
	if err := run.AddScenario(report.ScenarioInfo{Name: name, Model: "m", Quant: "none", Deploy: "emulator", Backend: "openai-chat", Hardware: hw}); err != nil {
		t.Fatal(err)
	}
	if len(concs) == 0 {
		concs = []int{8}
	}
	for _, conc := range concs {
		ttft := time.Duration((0.021 + queue) * float64(time.Second))
		lat := loadgen.Latency{Count: 64, P50: ttft, P75: ttft, P90: ttft, P95: ttft, P99: ttft + time.Millisecond, Min: ttft, Max: ttft + time.Millisecond, Avg: ttft}
		e2e := lat
		e2e.P99 += 100 * time.Millisecond
		row := loadgen.Summary{InputLength: 128, OutputLength: 128, Concurrency: conc, Backend: "openai-chat", ControlMethod: "normal", NumPrompts: 64,
			Succeeded: 64, QPS: 60, TTFT: lat, E2E: e2e, Round: 1, Epochs: 1, Phases: breakdown(queue)}
		if err := perfreport.RecordRows(run, name, []loadgen.Summary{row}); err != nil {
			t.Fatal(err)
		}
		s := perfreport.Samples{Backend: "openai-chat", ControlMethod: "normal", InputLength: 128, OutputLength: 128, Concurrency: conc, Seen: 64}
		for i := range 64 {
			us := int64(ttft/time.Microsecond) + int64(i%8)*100
			s.TTFTMicros = append(s.TTFTMicros, us)
			s.E2EMicros = append(s.E2EMicros, us+100000)
			s.GapMicros = append(s.GapMicros, 16000+int64(i%4)*100)
		}
		if err := perfreport.RecordSamples(run, name, []perfreport.Samples{s}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := run.Finish(context.Background(), nil, time.Unix(1700000100, 0)); err != nil {
		t.Fatal(err)
	}
	return run.Dir()
}

// TestDirsQueueRegression：B 的排队多了 30ms：TTFT 行失败，归因点名排队；两侧标注齐全；
// 文本、HTML、JSON 都写出。
func TestDirsQueueRegression(t *testing.T) {
	a := writeRun(t, runtype.Daily, "a", "vllm-old", "H100 x1", 0.001)
	b := writeRun(t, runtype.PR, "b", "vllm-new", "", 0.031)
	c, err := compare.Dirs(context.Background(), a, b, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Pairs) != 1 || c.Pairs[0].A.Scenario != "vllm-old" || c.Pairs[0].B.Scenario != "vllm-new" || c.Pairs[0].A.Hardware != "H100 x1" {
		t.Fatalf("pairs %+v", c.Pairs)
	}
	var ttft *compare.Row
	for i := range c.Rows {
		if c.Rows[i].Metric == gate.MetricTTFTP99 {
			ttft = &c.Rows[i]
		}
	}
	if ttft == nil || ttft.Verdict != gate.VerdictFail || ttft.Interval == nil || ttft.Explain == nil || ttft.Explain.TTFT.Named[0] != explain.PhaseQueue {
		t.Fatalf("ttft row %+v", ttft)
	}
	var text, page, js bytes.Buffer
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"A: run a (daily) commit c-a on main, scenario vllm-old, model m, quant none, hardware H100 x1, deploy emulator",
		"hardware not recorded", "ttft_p99_seconds", "fail", "queue +30.0 ms (100%)", "A dir: " + a} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if err := c.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h2>Pair 1</h2>", "<svg", "vllm-old", "row-fail", "queue &#43;30.0 ms"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("html lacks %q", want)
		}
	}
	if err := c.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back compare.Comparison
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Rows) != len(c.Rows) {
		t.Fatalf("json round trip: %v", err)
	}
}

// TestPairingAndErrors：同名配对、Pairs 映射、没有配对时的错误与只在一侧的场景。
func TestPairingAndErrors(t *testing.T) {
	load := func(dir string) report.Result {
		r, err := report.Load(osDirFS(dir))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := load(writeRun(t, runtype.Daily, "a", "x", "", 0.001))
	b := load(writeRun(t, runtype.PR, "b", "y", "", 0.001))
	two := b
	two.Scenarios = append(append([]report.Scenario(nil), b.Scenarios...), report.Scenario{Name: "z"})
	if _, err := compare.Runs(context.Background(), a, two, compare.Options{}); !errors.Is(err, compare.ErrNothingToCompare) ||
		!strings.Contains(err.Error(), "A has x, B has y, z") {
		t.Fatalf("no pairs: %v", err)
	}
	c, err := compare.Runs(context.Background(), a, two, compare.Options{Pairs: map[string]string{"y": "x"}})
	if err != nil || len(c.Pairs) != 1 || len(c.Unmatched) != 1 || c.Unmatched[0] != "B: z" {
		t.Fatalf("mapped: %+v %v", c, err)
	}
	var text bytes.Buffer
	if err := c.WriteText(&text); err != nil || !strings.Contains(text.String(), "not compared (no counterpart): B: z") {
		t.Fatalf("text %q %v", text.String(), err)
	}
	// 没有阶段分解的一侧（例如旧的运行）：比较照常，归因如实说明。
	for i := range a.Scenarios {
		a.Scenarios[i].Sections = nil
	}
	if _, err := compare.Runs(context.Background(), report.Result{}, b, compare.Options{}); !errors.Is(err, compare.ErrNothingToCompare) ||
		!strings.Contains(err.Error(), "no scenarios") {
		t.Fatalf("empty A: %v", err)
	}
	if _, err := compare.Dirs(context.Background(), t.TempDir(), t.TempDir(), compare.Options{}); err == nil {
		t.Fatal("empty directories compared")
	}
}

// osDirFS 是 os.DirFS（测试里少一次导入别名）。
func osDirFS(dir string) fs.FS { return os.DirFS(dir) }

// TestCompareSummaryAndOrder 检查 issue 37 §5：比较页没有“9 个组合里 3 个失败”这样的总结，判定是黑色的
// 普通文字，行按字典序（c16、c4、c8）。现在文本与 HTML 都以总结开头，行按输入、输出、并发的数值排序，
// 判定带颜色；没有显著变化的组合不画整幅的图（收在折叠里）。
func TestCompareSummaryAndOrder(t *testing.T) {
	a := writeRun(t, runtype.Daily, "a", "s", "", 0.001, 16, 4, 8)
	b := writeRun(t, runtype.PR, "b", "s", "", 0.031, 16, 4, 8)
	c, err := compare.Dirs(context.Background(), a, b, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var concs []int
	for _, r := range c.Rows {
		if r.Metric == gate.MetricTTFTP99 {
			concs = append(concs, r.Key.Concurrency)
		}
	}
	if len(concs) != 3 || concs[0] != 4 || concs[1] != 8 || concs[2] != 16 {
		t.Fatalf("rows in order %v, want c4, c8, c16", concs)
	}
	var text, page bytes.Buffer
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	want := "3 of 3 combinations failed"
	if !strings.Contains(text.String(), want) || !strings.Contains(page.String(), want) {
		t.Errorf("summary %q missing:\n%s", want, text.String())
	}
	if !strings.Contains(page.String(), `<td class="v-fail">fail</td>`) {
		t.Error("the verdict is not coloured")
	}
}

// TestCompareUsesTheBaselinesGateSettings 复现 issue 37 §3：比较页用自己的默认设置重新计算同一对运行
// （@95% 的区间），报告里却是 @99.8%。现在比较用 A（基线）运行时记下的门禁设置，并写明用的是哪一套。
func TestCompareUsesTheBaselinesGateSettings(t *testing.T) {
	a := writeRun(t, runtype.Daily, "a", "s", "", 0.001)
	b := writeRun(t, runtype.PR, "b", "s", "", 0.031)
	ra, err := report.Load(os.DirFS(a))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := report.Load(os.DirFS(b))
	if err != nil {
		t.Fatal(err)
	}
	th := gate.Thresholds{Mode: gate.ModeSignificant, Confidence: 0.998}
	ra.Thresholds = &th
	c, err := compare.Runs(context.Background(), ra, rb, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Thresholds != th || !strings.Contains(c.ThresholdsFrom, "recorded in run a (A)") {
		t.Fatalf("settings %+v from %q", c.Thresholds, c.ThresholdsFrom)
	}
	var text bytes.Buffer
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "gate settings: recorded in run a (A)") || !strings.Contains(text.String(), "@99.8%") {
		t.Errorf("text does not name the settings or use their level:\n%s", text.String())
	}
	ra.Thresholds = nil
	if c, _ = compare.Runs(context.Background(), ra, rb, compare.Options{}); !strings.HasPrefix(c.ThresholdsFrom, "defaults") {
		t.Errorf("without recorded settings: from %q", c.ThresholdsFrom)
	}
}

// TestCompareChartsShareOneScale 复现 issue 37 §4：比较页上每张堆叠图有自己的满刻度、没有横轴，
// 未变的 40 ms 与 201 ms 画得一样长。现在整页共用一个满刻度并画出刻度。
func TestCompareChartsShareOneScale(t *testing.T) {
	a := writeRun(t, runtype.Daily, "a", "s", "", 0.001, 4, 8)
	b := writeRun(t, runtype.PR, "b", "s", "", 0.031, 4, 8)
	c, err := compare.Dirs(context.Background(), a, b, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := c.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(page.String(), -1)
	if len(svgs) < 2 {
		t.Fatalf("%d charts", len(svgs))
	}
	ticks := map[string]bool{}
	for _, s := range svgs {
		if !strings.Contains(s, `class="axis"`) {
			t.Fatal("a stacked chart has no axis")
		}
		full := regexp.MustCompile(`class="tick"[^>]*>([^<]*)<`).FindAllStringSubmatch(s, -1)
		ticks[full[len(full)-1][1]] = true
	}
	if len(ticks) != 1 {
		t.Errorf("charts on one page use different full scales: %v", ticks)
	}
}

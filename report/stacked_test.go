package report

import (
	"bytes"
	"html"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/explain"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/runtype"
)

// queueRegression 返回一次排队 +30ms 的归因。
func queueRegression() explain.Explanation {
	d := func(m float64) *explain.Dist { return &explain.Dist{Count: 100, Sum: 100 * m} }
	b := func(q float64) *explain.Breakdown {
		return &explain.Breakdown{ClientTTFT: explain.Moments{N: 100, Mean: 0.022 + q, Var: 1e-6}, ClientE2E: explain.Moments{N: 100, Mean: 0.122 + q, Var: 1e-6},
			ServerTTFT: d(0.021 + q), Queue: d(q), Prefill: d(0.02), Decode: d(0.1), ServerE2E: d(0.121 + q)}
	}
	return explain.Compare(b(0.001), b(0.031), explain.Options{})
}

// TestPhaseChart：基线与当前两根横条，各段按阶段着色、提示里是原值（毫秒），条末写总值，
// 图例列出每个阶段；没有份额（不可归因）时不画。
func TestPhaseChart(t *testing.T) {
	e := queueRegression()
	ch, ok := PhaseChart("mean TTFT by phase (ms)", e, explain.MetricTTFT)
	if !ok || len(ch.Bars) != 2 || ch.Bars[0].Label != "baseline" || ch.Bars[1].Label != "current" {
		t.Fatalf("chart %+v %v", ch, ok)
	}
	svg := string(ch.SVG())
	for _, want := range []string{"<svg", "mean TTFT by phase (ms)", "<title>current queue: 31 ms</title>", "<title>baseline prefill: 20 ms</title>",
		">23 ms</text>", ">53 ms</text>", ">client</text>", ">frontend</text>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks %q:\n%s", want, svg)
		}
	}
	if _, ok := PhaseChart("e2e", e, explain.MetricE2E); !ok {
		t.Fatal("E2E chart missing")
	}
	if _, ok := PhaseChart("none", explain.Explanation{}, explain.MetricTTFT); ok {
		t.Fatal("chart drawn without components")
	}
	// 负的一段按 0 画，总值仍是代数和；全为 0 时不除以 0。
	s := Stacked{Title: "t", Unit: "ms", Bars: []Stack{{Label: "a", Parts: []StackPart{{"x", -1}, {"y", 3}}}, {Label: "b", Parts: []StackPart{{"x", 0}}}}}
	if out := string(s.SVG()); !strings.Contains(out, ">2 ms</text>") || strings.Contains(out, "NaN") {
		t.Fatalf("svg %s", out)
	}
	if out := string((Stacked{Bars: []Stack{{Label: "z", Parts: []StackPart{{"x", 0}}}}}).SVG()); strings.Contains(out, "NaN") {
		t.Fatalf("zero chart %s", out)
	}
}

// TestHTMLExplainsFailedGate：失败的性能门禁在 HTML 里带“时间花在哪里”的一节（堆叠图与文字）。
func TestHTMLExplainsFailedGate(t *testing.T) {
	e := queueRegression()
	k := gate.Key{Scenario: "emu", InputLength: 128, OutputLength: 128, Concurrency: 8}
	base, d := 0.022, 136.0
	g := gate.Gate{Kind: gate.KindPerformance, Scenario: "emu", Name: "perf/" + k.String() + "/ttft_p99_seconds", Metric: gate.MetricTTFTP99,
		Key: &k, Current: 0.052, Baseline: &base, DeltaPct: &d, Limit: 10, Verdict: gate.VerdictFail, Reason: "regressed",
		Explain: &e, Attribution: e.Summary(explain.MetricTTFT)}
	e2e := g
	e2e.Metric, e2e.Name, e2e.Attribution = gate.MetricE2EP99, "perf/"+k.String()+"/e2e_p99_seconds", e.Summary(explain.MetricE2E)
	// QPS 门禁的归因与 E2E 是同一段（issue 37 §2：两段一模一样的文字、三遍同样的注意事项）。
	qps := e2e
	qps.Metric, qps.Name = gate.MetricQPS, "perf/"+k.String()+"/qps"
	var b bytes.Buffer
	if err := WriteHTML(&b, Result{RunType: runtype.PR, RunID: "r", Gates: []gate.Gate{g, e2e, qps}}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"Where the time went: emu perf/in128-out128-c8/ttft_p99_seconds", "mean TTFT by phase (ms)", "mean E2E by phase (ms)", "<svg"} {
		if !strings.Contains(page, want) {
			t.Errorf("html lacks %q", want)
		}
	}
	if n := strings.Count(page, "Where the time went: emu"); n != 2 {
		t.Errorf("%d attribution blocks, want 2 (TTFT, and one for E2E and QPS)", n)
	}
	if n := strings.Count(page, "the server histograms carry no per-request variance"); n != 1 {
		t.Errorf("the caveat appears %d times, want once", n)
	}
	if n := strings.Count(html.UnescapeString(page), e.Summary(explain.MetricE2E)); n != 1 {
		t.Errorf("the E2E attribution appears %d times, want once", n)
	}
}

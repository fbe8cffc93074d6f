package perfreport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/perfreport"
	"github.com/vllm-cibench/cibench/runtype"
)

// TestRecordSamplesMerges 检查同一组合再次记录时合并（Seen 相加、样本按记录顺序追加，总数以
// DefaultMaxSamples 的两倍为上限），不同组合各占一项；合并结果落在 perf/samples.json 并被 Load 读回。
func TestRecordSamplesMerges(t *testing.T) {
	run, err := newRun(t.TempDir(), runtype.Daily, "d", t0)
	if err != nil {
		t.Fatal(err)
	}
	n := perfreport.DefaultMaxSamples + 100
	mk := func(conc int, first int64) perfreport.Samples {
		us := make([]int64, n)
		for i := range us {
			us[i] = first + int64(i)
		}
		return perfreport.Samples{Backend: "openai-chat", ControlMethod: "climb", InputLength: 8, OutputLength: 4, Concurrency: conc, Seen: int64(n), TTFTMicros: us, E2EMicros: us[:10], GapMicros: us[:3]}
	}
	for _, sets := range [][]perfreport.Samples{{mk(1, 0)}, {mk(1, 1_000_000), mk(2, 5)}} {
		if err := perfreport.RecordSamples(run, "s", sets); err != nil {
			t.Fatal(err)
		}
	}
	res, err := report.Load(os.DirFS(run.Dir()))
	if err != nil {
		t.Fatal(err)
	}
	got := view(t, res.Scenarios[0]).PerfSamples
	if len(got) != 2 || got[0].Concurrency != 1 || got[1].Concurrency != 2 {
		t.Fatalf("combos %+v", got)
	}
	a := got[0]
	if a.Seen != int64(2*n) || len(a.TTFTMicros) != 2*perfreport.DefaultMaxSamples || a.TTFTMicros[n] != 1_000_000 || len(a.E2EMicros) != 20 || len(a.GapMicros) != 6 {
		t.Fatalf("merged: seen %d ttft %d (at %d: %d) e2e %d gap %d", a.Seen, len(a.TTFTMicros), n, a.TTFTMicros[n], len(a.E2EMicros), len(a.GapMicros))
	}
	if got[1].Seen != int64(n) || got[1].TTFTMicros[0] != 5 {
		t.Fatalf("second combo %+v", got[1].Seen)
	}
	// 样本是 Detail 分节：只在 perf/samples.json 里。
	if _, ok := res.Scenarios[0].Sections[perfreport.SamplesSection().Key]; ok {
		t.Error("samples are a summary section")
	}
}

// TestRendererOnMissingShardsAndBackends 检查渲染器：缺了分片的行让 Incomplete 为真、HTML 标为
// INCOMPLETE；没写后端的行按场景的后端归入曲线，两个后端的曲线各自成线（图例带后端名）；
// 总览表给出行数；门禁输入逐字段转换汇总行。
func TestRendererOnMissingShardsAndBackends(t *testing.T) {
	rd := perfreport.Renderer()
	sc := report.Scenario{Name: "s", Backend: "openai"}
	row := func(backend string, c int, ttft time.Duration) loadgen.Summary {
		return loadgen.Summary{InputLength: 128, OutputLength: 128, Concurrency: c, Round: 1, Backend: backend, ControlMethod: "climb",
			NumPrompts: 16, Succeeded: 16, QPS: float64(c), OutputTokenThroughput: 100, TTFT: lat(ttft), E2E: lat(2 * ttft), TPOT: lat(time.Millisecond)}
	}
	rows := []loadgen.Summary{row("", 1, 10*time.Millisecond), row("openai-chat", 1, 20*time.Millisecond), row("openai-chat", 2, 30*time.Millisecond)}
	rows[2].MissingShards = []loadgen.ShardLoss{{Shard: 1, Reason: loadgen.LossKilled, Detail: "signal: killed"}}
	if err := perfreport.Set(&sc, rows, nil); err != nil {
		t.Fatal(err)
	}
	if bad, err := rd.Incomplete(sc); err != nil || !bad {
		t.Fatalf("Incomplete = %v, %v", bad, err)
	}
	cells, err := rd.Cells(sc)
	if err != nil || len(cells) != 1 || cells[0] != (report.Cell{Text: "3", Num: true}) || len(rd.Columns) != 1 || rd.Columns[0] != "perf rows" {
		t.Fatalf("cells %+v %v columns %v", cells, err, rd.Columns)
	}
	page, err := rd.HTML(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h3>Performance</h3>", "3 summary rows", "INCOMPLETE merge: missing shard 1: killed (signal: killed)",
		"in128/out128 openai<", "in128/out128 openai-chat<", "TTFT P99 vs concurrency"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	var in gate.Scenario
	if err := rd.Gate(sc, &in); err != nil {
		t.Fatal(err)
	}
	if len(in.Perf) != 3 || in.Perf[1].Backend != "openai-chat" || in.Perf[2].TTFT.P99 != 30*time.Millisecond || in.Perf[2].Succeeded != 16 || in.Perf[2].QPS != 2 {
		t.Fatalf("gate rows %+v", in.Perf)
	}
	// 没有性能结果的场景：说明而不是空白，总览为 0，不残缺。
	empty := report.Scenario{Name: "e"}
	page, err = rd.HTML(empty, nil)
	if err != nil || !strings.Contains(string(page), "No performance results.") {
		t.Fatalf("empty HTML %q %v", page, err)
	}
	if bad, err := rd.Incomplete(empty); err != nil || bad {
		t.Fatalf("empty Incomplete = %v, %v", bad, err)
	}
}

// TestMistypedSections 检查分节的 JSON 合法而类型不对时，读取函数、渲染器的每个钩子与记录函数
// 都返回写明场景与分节的错误，而不是当作没有数据。
func TestMistypedSections(t *testing.T) {
	sc := report.Scenario{Name: "s", Sections: map[string]json.RawMessage{
		perfreport.RowsSection().Key: json.RawMessage(`{"not":"rows"}`), perfreport.CapacitySection().Key: json.RawMessage(`7`)},
		Details: map[string]json.RawMessage{perfreport.TimelineSection().Key: json.RawMessage(`"x"`), perfreport.SamplesSection().Key: json.RawMessage(`{}`)}}
	rd := perfreport.Renderer()
	check := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "scenario s: section") {
			t.Errorf("%s: %v", what, err)
		}
	}
	_, err := perfreport.Rows(sc)
	check("Rows", err)
	_, err = perfreport.Capacity(sc)
	check("Capacity", err)
	_, err = perfreport.Timeline(sc)
	check("Timeline", err)
	_, err = perfreport.SamplesOf(sc)
	check("SamplesOf", err)
	_, err = rd.Cells(sc)
	check("Cells", err)
	_, err = rd.HTML(sc, nil)
	check("HTML", err)
	check("Gate", rd.Gate(sc, &gate.Scenario{}))
	_, err = rd.Incomplete(sc)
	check("Incomplete", err)
	// 时间线、容量与样本单独读错也各自报告（HTML 与门禁不会略过它们）。
	for _, key := range []string{perfreport.CapacitySection().Key, perfreport.TimelineSection().Key, perfreport.SamplesSection().Key} {
		one := report.Scenario{Name: "s", Sections: map[string]json.RawMessage{key: json.RawMessage(`{"bad":1}`)}}
		_, herr := rd.HTML(one, nil)
		gerr := rd.Gate(one, &gate.Scenario{})
		if herr == nil && gerr == nil {
			t.Errorf("section %s: neither HTML nor Gate reports the mistyped section", key)
		}
	}

	// 产物目录中的分节类型不对时，记录函数不会覆盖它，而是返回错误。
	root := t.TempDir()
	dir := filepath.Join(root, "pr", "bad")
	files := map[string]string{
		"run.json":        `{"schema":"` + report.SchemaVersion + `","run_type":"pr","run_id":"bad"}`,
		"s/scenario.json": `{"name":"s"}`,
	}
	for _, sec := range []report.Section{perfreport.RowsSection(), perfreport.CapacitySection(), perfreport.TimelineSection(), perfreport.SamplesSection()} {
		idx, _ := json.Marshal(sec)
		files["s/section-"+sec.Key+".json"] = string(idx)
		files["s/"+sec.File] = `{"not":"a list"}`
	}
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run, err := newRun(root, "pr", "bad", t0)
	if err != nil {
		t.Fatal(err)
	}
	check("RecordRows", perfreport.RecordRows(run, "s", []loadgen.Summary{{}}))
	check("RecordCapacity", perfreport.RecordCapacity(run, "s", []loadgen.SweepResult{{}}))
	check("RecordTimeline", perfreport.RecordTimeline(run, "s", []loadgen.Timeline{{}}))
	check("RecordSamples", perfreport.RecordSamples(run, "s", []perfreport.Samples{{}}))
	b, _ := os.ReadFile(filepath.Join(dir, "s", "perf", "summary.json"))
	if !bytes.Equal(b, []byte(`{"not":"a list"}`)) {
		t.Errorf("perf/summary.json overwritten: %s", b)
	}
	// Finish 把读不出来的性能分节当作残缺：complete=false，错误写明阶段。
	code, err := run.Finish(context.Background(), nil, t0.Add(time.Minute))
	if err == nil || !strings.Contains(err.Error(), "perf") || code != gate.ExitError || run.Result().Complete {
		t.Fatalf("Finish = %d, %v (complete %v)", code, err, run.Result().Complete)
	}
}

// TestSectionsAreValuesNotVariables 复现 issue #30 的“导出的可变变量”：分节曾是包级变量，
// 导入者改了它的键，之后读写用的就是另一个键。现在每次得到的是同一个值的副本。
func TestSectionsAreValuesNotVariables(t *testing.T) {
	s := perfreport.RowsSection()
	s.Key = "tampered"
	if got := perfreport.RowsSection().Key; got != "perf" {
		t.Fatalf("RowsSection().Key = %q", got)
	}
	if perfreport.SamplesSection().File != "perf/samples.json" || !perfreport.TimelineSection().Detail || perfreport.CapacitySection().Key != "capacity" {
		t.Fatal("section values changed")
	}
}

package report_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vllm-cibench/cibench/gate"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/internal/redact"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/accuracyreport"
	"github.com/vllm-cibench/cibench/report/functionalreport"
	"github.com/vllm-cibench/cibench/report/perfreport"
	"github.com/vllm-cibench/cibench/runtype"
)

// readJSONFile 解码 path 处的 JSON 文件，失败时终止测试。
func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestRunTreeAndReopen 检查目录结构、逐阶段落盘的文件内容，以及重新打开
// 同一 run_id 时恢复出相同的结果（分阶段 CI job 依赖这一点）。
func TestRunTreeAndReopen(t *testing.T) {
	root := t.TempDir()
	run, err := newRun(root, runtype.PR, "123-1", t0, report.WithCommit("abc123", "main"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "pr", "123-1"); run.Dir() != want {
		t.Fatalf("Dir = %q want %q", run.Dir(), want)
	}
	if err := run.AddScenario(report.ScenarioInfo{Name: "local-qwen", Model: "qwen", Quant: "w8a8", Deploy: "emulator", Backend: "openai-chat"}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []report.Stage{report.StageFunctional, report.StagePerf, report.StageAccuracy, report.StageLogs} {
		d, err := run.ScenarioDir("local-qwen", st)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(root, "pr", "123-1", "local-qwen", string(st)); d != want {
			t.Fatalf("ScenarioDir = %q want %q", d, want)
		}
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Fatalf("%s not created: %v", d, err)
		}
	}
	rep := funcReport(3, 1)
	rows := perfRows(1, 1)
	if err := functionalreport.Record(run, "local-qwen", rep); err != nil {
		t.Fatal(err)
	}
	if err := perfreport.RecordRows(run, "local-qwen", rows[:5]); err != nil {
		t.Fatal(err)
	}
	if err := perfreport.RecordRows(run, "local-qwen", rows[5:]); err != nil {
		t.Fatal(err)
	}
	if err := accuracyreport.Record(run, "local-qwen", acc("gpqa", 0.41, ptr(0.3))); err != nil {
		t.Fatal(err)
	}
	if err := run.RecordError("local-qwen", report.StageAccuracy, errors.New("eval mmlu: timeout")); err != nil {
		t.Fatal(err)
	}
	if err := run.RecordError("other", report.StageDeploy, errors.New("health check: connection refused")); err != nil {
		t.Fatal(err)
	}
	if err := run.RecordError("other", report.StageDeploy, nil); err != nil {
		t.Fatal(err)
	}

	var gotRows []loadgen.Summary
	readJSONFile(t, filepath.Join(run.Dir(), "local-qwen", "perf", "summary.json"), &gotRows)
	if len(gotRows) != len(rows) || gotRows[7].Concurrency != rows[7].Concurrency || gotRows[7].TTFT.P99 != rows[7].TTFT.P99 {
		t.Fatalf("perf/summary.json: %d rows, row7 %+v", len(gotRows), gotRows[7].TTFT)
	}
	var gotRep functional.Report
	readJSONFile(t, filepath.Join(run.Dir(), "local-qwen", "functional", "result.json"), &gotRep)
	if len(gotRep.Results) != 5 || gotRep.Results[3].Status != functional.StatusFail {
		t.Fatalf("functional/result.json: %+v", gotRep.Results)
	}
	var errs []report.StageError
	readJSONFile(t, filepath.Join(run.Dir(), "other", "errors-deploy.json"), &errs)
	if len(errs) != 1 || errs[0].Message != "health check: connection refused" {
		t.Fatalf("errors-deploy.json = %+v", errs)
	}
	var sum report.Result
	readJSONFile(t, filepath.Join(run.Dir(), "summary.json"), &sum)
	if sum.Complete || len(sum.Scenarios) != 2 || sum.Commit != "abc123" || sum.Schema != report.SchemaVersion {
		t.Fatalf("summary.json: complete=%v scenarios=%d commit=%q", sum.Complete, len(sum.Scenarios), sum.Commit)
	}

	// 重新打开：结果与首次打开时一致，开始时间沿用首次的。
	again, err := newRun(root, runtype.PR, "123-1", t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want, got := run.Result(), again.Result()
	if !got.Started.Equal(t0) || got.Commit != "abc123" {
		t.Fatalf("reopened started=%v commit=%q", got.Started, got.Commit)
	}
	if !reflect.DeepEqual(normalize(got.Scenarios), normalize(want.Scenarios)) {
		t.Fatalf("reopened scenarios differ:\n got %+v\nwant %+v", got.Scenarios, want.Scenarios)
	}
}

// normalize 去掉 JSON 往返中不保留的单调时钟读数，便于 DeepEqual。
func normalize(s []report.Scenario) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestNamesRejected 检查所有可能越出运行目录的名字都被拒绝。
func TestNamesRejected(t *testing.T) {
	root := t.TempDir()
	for _, c := range [][2]string{{"../x", "1"}, {"pr", ".."}, {"pr", "a/b"}, {"", "1"}, {"pr", ""}, {"pr", ".hidden"}, {"p r", "1"}} {
		if _, err := newRun(root, runtype.Type(c[0]), report.RunID(c[1]), t0); !errors.Is(err, report.ErrInvalidName) {
			t.Errorf("NewRun(%q, %q) = %v, want ErrInvalidName", c[0], c[1], err)
		}
	}
	if _, err := newRun("", "pr", "1", t0); !errors.Is(err, report.ErrInvalidName) {
		t.Errorf("empty root: %v", err)
	}
	run, err := newRun(root, "pr", "1", t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"../x", "/etc/passwd", "a/../../x", ".", "", "a/.tmp-x"} {
		if err := run.WriteFile(rel, []byte("x")); !errors.Is(err, report.ErrInvalidName) {
			t.Errorf("WriteFile(%q) = %v", rel, err)
		}
		if _, err := run.Create(rel); !errors.Is(err, report.ErrInvalidName) {
			t.Errorf("Create(%q) = %v", rel, err)
		}
	}
	if _, err := run.ScenarioDir("../s", report.StagePerf); !errors.Is(err, report.ErrInvalidName) {
		t.Errorf("ScenarioDir: %v", err)
	}
	if _, err := run.ScenarioDir("s", "a/b"); !errors.Is(err, report.ErrInvalidName) {
		t.Errorf("ScenarioDir stage: %v", err)
	}
	if err := run.AddScenario(report.ScenarioInfo{Name: "a b"}); !errors.Is(err, report.ErrInvalidName) {
		t.Errorf("AddScenario: %v", err)
	}
	if err := perfreport.RecordRows(run, "x/y", nil); !errors.Is(err, report.ErrInvalidName) {
		t.Errorf("perfreport.RecordRows: %v", err)
	}
	if err := run.RecordError("s", "..", errors.New("x")); !errors.Is(err, report.ErrInvalidName) {
		t.Errorf("RecordError: %v", err)
	}
	// 越界检查之后目录外什么也没有写。
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 || entries[0].Name() != "pr" {
		t.Fatalf("root has %v", entries)
	}
}

// TestCreateStreamsAtomically 检查 Create 的文件在 Close 之前不可见，
// Close 之后完整且已脱敏（密钥被切在两次 Write 之间也一样）。
func TestCreateStreamsAtomically(t *testing.T) {
	run, err := newRun(t.TempDir(), "pr", "1", t0, report.WithSecrets(report.NewSecrets("SeCrEt-VaLuE-42")))
	if err != nil {
		t.Fatal(err)
	}
	w, err := run.Create("s/perf/requests.csv")
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(run.Dir(), "s", "perf", "requests.csv")
	for i := range 1000 {
		fmt.Fprintf(w, "%d,ok,SeCrEt-Va", i)
		fmt.Fprintf(w, "LuE-42\n")
	}
	if _, err := os.Stat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("file visible before Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	b, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 1000 || lines[999] != "999,ok,"+redact.Mask {
		t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
	// 临时文件没有残留。
	ents, _ := os.ReadDir(filepath.Dir(target))
	if len(ents) != 1 {
		t.Fatalf("leftovers: %v", ents)
	}
}

// TestFinishSealsRun 检查 Finish 之后不能再记录，manifest 带哈希且完整。
func TestFinishSealsRun(t *testing.T) {
	run, err := newRun(t.TempDir(), "daily", "d1", t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := perfreport.RecordRows(run, "s", perfRows(1, 1)); err != nil {
		t.Fatal(err)
	}
	if err := run.WriteManifest(t0.Add(time.Minute), false); err != nil {
		t.Fatal(err)
	}
	var m report.Manifest
	readJSONFile(t, filepath.Join(run.Dir(), "manifest.json"), &m)
	if m.Complete || len(m.Files) == 0 || m.Files[0].SHA256 != "" {
		t.Fatalf("interim manifest: %+v", m)
	}
	code, err := run.Finish(context.Background(), []gate.Gate{{Kind: gate.KindFunctional, Scenario: "s", Name: "functional", Verdict: gate.VerdictFail}}, t0.Add(time.Hour))
	if err != nil || code != gate.ExitGateFailed {
		t.Fatalf("Finish = %d, %v", code, err)
	}
	if err := perfreport.RecordRows(run, "s", nil); !errors.Is(err, report.ErrFinished) {
		t.Fatalf("perfreport.RecordRows after Finish = %v", err)
	}
	if err := run.AddScenario(report.ScenarioInfo{Name: "s"}); !errors.Is(err, report.ErrFinished) {
		t.Fatalf("AddScenario after Finish = %v", err)
	}
	readJSONFile(t, filepath.Join(run.Dir(), "manifest.json"), &m)
	paths := map[string]string{}
	for _, f := range m.Files {
		paths[f.Path] = f.SHA256
	}
	for _, p := range []string{"run.json", "summary.json", "junit.xml", "report.html", "s/scenario.json", "s/perf/summary.json"} {
		if len(paths[p]) != 64 {
			t.Errorf("manifest entry %q hash %q", p, paths[p])
		}
	}
	if !m.Complete || !m.Updated.Equal(t0.Add(time.Hour)) {
		t.Fatalf("final manifest complete=%v updated=%v", m.Complete, m.Updated)
	}
	res, err := report.Load(os.DirFS(run.Dir()))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.Verdict != gate.VerdictFail || res.ExitCode != 1 || len(res.Gates) != 1 {
		t.Fatalf("Load after Finish: %+v", res)
	}
}

// TestLoadErrors 检查 Load 对缺失与损坏文件给出带文件名的错误。
func TestLoadErrors(t *testing.T) {
	if _, err := report.Load(fstest.MapFS{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("empty dir: %v", err)
	}
	_, err := report.Load(fstest.MapFS{"run.json": {Data: []byte(`{"schema":"other/v9"}`)}})
	if err == nil || !strings.Contains(err.Error(), "other/v9") {
		t.Fatalf("wrong schema: %v", err)
	}
	_, err = report.Load(fstest.MapFS{
		"run.json":               {Data: []byte(`{"schema":"` + report.SchemaVersion + `"}`)},
		"s/scenario.json":        {Data: []byte(`{"name":"s"}`)},
		"s/section-perf.json":    {Data: []byte(`{"key":"perf","file":"perf/summary.json"}`)},
		"s/perf/summary.json":    {Data: []byte(`[{"InputLength": `)},
		"notascenario/readme.md": {Data: []byte("hi")},
	})
	if err == nil || !strings.Contains(err.Error(), "s/perf/summary.json") {
		t.Fatalf("corrupt perf: %v", err)
	}
	// Load 不认识分节的类型：JSON 合法而字段类型不对的分节由阶段的读取函数报告，错误写明场景与分节。
	res, err := report.Load(fstest.MapFS{
		"run.json":            {Data: []byte(`{"schema":"` + report.SchemaVersion + `"}`)},
		"s/scenario.json":     {Data: []byte(`{"name":"s"}`)},
		"s/section-perf.json": {Data: []byte(`{"key":"perf","file":"perf/summary.json"}`)},
		"s/perf/summary.json": {Data: []byte(`[{"InputLength": "x"}]`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := perfreport.Rows(res.Scenarios[0]); err == nil || !strings.Contains(err.Error(), "scenario s: section perf") {
		t.Fatalf("mistyped perf section: %v", err)
	}
	if _, err := res.GateInputs(renderers()...); err == nil || !strings.Contains(err.Error(), "perf gate input") {
		t.Fatalf("GateInputs on a mistyped section: %v", err)
	}
	// 索引本身不合法（键与场景字段重名）是 Load 的错误。
	_, err = report.Load(fstest.MapFS{
		"run.json":            {Data: []byte(`{"schema":"` + report.SchemaVersion + `"}`)},
		"s/scenario.json":     {Data: []byte(`{"name":"s"}`)},
		"s/section-name.json": {Data: []byte(`{"key":"name","file":"x/y.json"}`)},
	})
	if !errors.Is(err, report.ErrSection) || !strings.Contains(err.Error(), "s/section-name.json") {
		t.Fatalf("bad section index: %v", err)
	}
	if _, err := newRun(filepath.Join(t.TempDir()), "pr", "x", t0); err != nil {
		t.Fatal(err)
	}
}

// TestPrune 检查只删除过期的运行目录，且不跟随符号链接、不碰根目录之外。
func TestPrune(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "keep.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(40 * 24 * time.Hour)
	for id, age := range map[string]time.Duration{"old": 20 * 24 * time.Hour, "fresh": 2 * 24 * time.Hour, "edge": 14 * 24 * time.Hour} {
		if _, err := newRun(root, "pr", report.RunID(id), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	// 没有 run.json 的目录按修改时间判断。
	noMeta := filepath.Join(root, "pr", "nometa")
	if err := os.MkdirAll(noMeta, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(noMeta, now.Add(-30*24*time.Hour), now.Add(-30*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "pr", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "pr", "file.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	removed, err := report.Prune(root, "pr", report.DefaultRetention("pr"), now)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(removed, []string{"nometa", "old"}) {
		t.Fatalf("removed %v", removed)
	}
	left, _ := os.ReadDir(filepath.Join(root, "pr"))
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if !reflect.DeepEqual(names, []string{"edge", "file.txt", "fresh", "link"}) {
		t.Fatalf("left %v", names)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep.txt")); err != nil {
		t.Fatalf("outside file touched: %v", err)
	}
	if got, err := report.Prune(root, "daily", report.DefaultRetention("daily"), now); err != nil || got != nil {
		t.Fatalf("missing run type dir: %v %v", got, err)
	}
	if got, err := report.Prune(root, "pr", 0, now); err != nil || got != nil {
		t.Fatalf("zero retention: %v %v", got, err)
	}
	if _, err := report.Prune(root, "../x", time.Hour, now); !errors.Is(err, report.ErrInvalidName) {
		t.Fatalf("bad run type: %v", err)
	}
	if _, err := report.Prune("", "pr", time.Hour, now); !errors.Is(err, report.ErrInvalidName) {
		t.Fatalf("empty root: %v", err)
	}
	if report.DefaultRetention("daily") != 30*24*time.Hour || report.DefaultRetention("pr") != 14*24*time.Hour {
		t.Fatal("default retention")
	}
}

// TestConcurrentRecordsAndCancelledFinish 并发记录多个场景（-race 下检查锁），
// 自定义阶段的错误能被重新装配，且用已取消的 ctx 调用 Finish 时仍完成脱敏。
func TestConcurrentRecordsAndCancelledFinish(t *testing.T) {
	root := t.TempDir()
	run, err := newRun(root, "pr", "conc", t0, report.WithSecrets(report.NewSecrets("TOPSECRET-123")))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 8)
	for i := range 8 {
		go func() {
			name := fmt.Sprintf("s%d", i)
			err := errors.Join(
				run.AddScenario(report.ScenarioInfo{Name: name, Model: "m"}),
				perfreport.RecordRows(run, name, perfRows(1, 1)[:2]),
				functionalreport.Record(run, name, funcReport(1, 0)),
				run.RecordError(name, "push", errors.New("pushgateway down TOPSECRET-123")),
				run.RecordError(name, report.StageDeploy, errors.New("first")),
			)
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	logs, err := run.ScenarioDir("s3", report.StageLogs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logs, "server.log"), []byte("key TOPSECRET-123\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := run.Finish(ctx, nil, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(logs, "server.log"))
	if err != nil || string(b) != "key "+redact.Mask+"\n" {
		t.Fatalf("server.log = %q, %v", b, err)
	}
	res, err := report.Load(os.DirFS(run.Dir()))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Scenarios) != 8 {
		t.Fatalf("%d scenarios", len(res.Scenarios))
	}
	for _, s := range res.Scenarios {
		sc := view(t, s)
		if len(sc.Perf) != 2 || len(sc.Errors) != 2 || sc.Errors[0].Stage != report.StageDeploy || sc.Errors[1].Stage != "push" ||
			sc.Errors[1].Message != "pushgateway down "+redact.Mask {
			t.Fatalf("%s: perf %d errors %+v", sc.Name, len(sc.Perf), sc.Errors)
		}
	}
}

// TestNonFiniteValuesRecorded 检查 NaN/Inf（例如除零得到的 QPS）不会让
// JSON 落盘失败：它们按"不可测"记为 −1，且调用方的数据不被修改。
func TestNonFiniteValuesRecorded(t *testing.T) {
	run, err := newRun(t.TempDir(), "pr", "nan", t0)
	if err != nil {
		t.Fatal(err)
	}
	rows := perfRows(1, 1)[:1]
	rows[0].QPS = math.Inf(1)
	rows[0].SpecAcceptRate.Avg = math.NaN()
	if err := perfreport.RecordRows(run, "s", rows); err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(rows[0].QPS, 1) {
		t.Fatal("caller's row was modified")
	}
	a := acc("gpqa", math.NaN(), ptr(0.3))
	a.Result.Metrics["score:std"] = math.Inf(-1)
	if err := accuracyreport.Record(run, "s", a); err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(a.Result.Metrics["score:std"], -1) {
		t.Fatal("caller's metrics map was modified")
	}
	rep := funcReport(1, 0)
	nan := math.NaN()
	rep.Suites = []functional.SuiteSummary{{Suite: "chat", PassRatio: &nan}}
	if err := functionalreport.Record(run, "s", rep); err != nil {
		t.Fatal(err)
	}
	res, err := report.Load(os.DirFS(run.Dir()))
	if err != nil {
		t.Fatal(err)
	}
	sc := view(t, res.Scenarios[0])
	if sc.Perf[0].QPS != -1 || sc.Perf[0].SpecAcceptRate.Avg != -1 || sc.Accuracy[0].Result.Score != -1 ||
		sc.Accuracy[0].Result.Metrics["score:std"] != -1 || sc.Functional.Suites[0].PassRatio == nil || *sc.Functional.Suites[0].PassRatio != -1 {
		t.Fatalf("not sanitized: %+v %+v %+v", sc.Perf[0].QPS, sc.Accuracy[0].Result, sc.Functional.Suites)
	}
}

// TestFinishIncomplete 检查被中断 / 只跑了部分阶段的运行：产物与 Finish 相同（summary.json
// 带门禁与退出码、junit.xml、带文件链接的 report.html、带哈希的 manifest），但 complete
// 保持 false；门禁全过时被中断的退出码为 130，部分阶段为 0，有失败时为 1；这样的每日
// 运行不会成为基线，Load 也不沿用它的门禁。
func TestFinishIncomplete(t *testing.T) {
	pass := []gate.Gate{{Kind: gate.KindFunctional, Scenario: "s", Name: "functional", Verdict: gate.VerdictPass}}
	fail := []gate.Gate{{Kind: gate.KindFunctional, Scenario: "s", Name: "functional", Verdict: gate.VerdictFail}}
	cases := []struct {
		name        string
		gates       []gate.Gate
		interrupted bool
		code        int
		badge       string
	}{
		{"interrupted", pass, true, gate.ExitInterrupted, `id="verdict">INTERRUPTED`},
		// 有门禁失败时页面是 FAIL（issue 37），中断另起一句说明。
		{"interrupted with a failed gate", fail, true, gate.ExitGateFailed, `id="verdict">FAIL`},
		{"partial stages", pass, false, gate.ExitOK, `id="verdict">INCOMPLETE`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			run, err := newRun(root, "daily", "d1", t0)
			if err != nil {
				t.Fatal(err)
			}
			if err := perfreport.RecordRows(run, "s", perfRows(1, 1)); err != nil {
				t.Fatal(err)
			}
			code, err := run.FinishIncomplete(context.Background(), tc.gates, t0.Add(time.Hour), tc.interrupted)
			if err != nil || code != tc.code {
				t.Fatalf("FinishIncomplete = %d, %v; want %d", code, err, tc.code)
			}
			if err := perfreport.RecordRows(run, "s", nil); !errors.Is(err, report.ErrFinished) {
				t.Fatalf("perfreport.RecordRows after FinishIncomplete = %v", err)
			}
			var sum report.Result
			readJSONFile(t, filepath.Join(run.Dir(), "summary.json"), &sum)
			if sum.Complete || sum.Interrupted != tc.interrupted || sum.ExitCode != tc.code || len(sum.Gates) != 1 || sum.Finished.IsZero() {
				t.Fatalf("summary.json: complete=%v interrupted=%v exit=%d gates=%d finished=%v",
					sum.Complete, sum.Interrupted, sum.ExitCode, len(sum.Gates), sum.Finished)
			}
			html, err := os.ReadFile(filepath.Join(run.Dir(), "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(html), tc.badge) || !strings.Contains(string(html), "s/perf/summary.json") {
				t.Fatalf("report.html lacks %q or the scenario file links", tc.badge)
			}
			var m report.Manifest
			readJSONFile(t, filepath.Join(run.Dir(), "manifest.json"), &m)
			hashed := map[string]bool{}
			for _, f := range m.Files {
				hashed[f.Path] = len(f.SHA256) == 64
			}
			for _, p := range []string{"summary.json", "junit.xml", "report.html"} {
				if !hashed[p] {
					t.Errorf("manifest: %s missing or unhashed", p)
				}
			}
			res, err := report.Load(os.DirFS(run.Dir()))
			if err != nil {
				t.Fatal(err)
			}
			if res.Complete || len(res.Gates) != 0 {
				t.Fatalf("Load reused an incomplete run's verdict: complete=%v gates=%d", res.Complete, len(res.Gates))
			}
			src, err := report.ArtifactBaselines(os.DirFS(root), renderers()...)
			if err != nil {
				t.Fatal(err)
			}
			if len(src.Perf) != 0 || len(src.Functional) != 0 {
				t.Fatalf("an incomplete daily run became a baseline: %v", src)
			}
		})
	}
}

// TestFinishWithMissingShards 验证 issue 22：一行分片合并缺了分片（分片 1 被 SIGKILL）的每日运行，即使
// 调用方用 Finish、门禁全部通过，summary.json 也是 complete=false、行里带着缺失的分片与原因，
// 退出码非零，HTML 标为 INCOMPLETE 并点名分片，而且它不会成为基线。
func TestFinishWithMissingShards(t *testing.T) {
	root := t.TempDir()
	run, err := newRun(root, "daily", "d1", t0)
	if err != nil {
		t.Fatal(err)
	}
	rows := perfRows(1, 1)
	rows[0].Incomplete = true
	rows[0].MissingShards = []loadgen.ShardLoss{{Shard: 1, Reason: loadgen.LossKilled, Detail: "signal: killed"}}
	if err := perfreport.RecordRows(run, "s", rows); err != nil {
		t.Fatal(err)
	}
	pass := []gate.Gate{{Kind: gate.KindFunctional, Scenario: "s", Name: "functional", Verdict: gate.VerdictPass}}
	code, err := run.Finish(context.Background(), pass, t0.Add(time.Hour))
	if err != nil || code == gate.ExitOK {
		t.Fatalf("Finish = %d, %v; want a non-zero exit code", code, err)
	}
	var sum report.Result
	readJSONFile(t, filepath.Join(run.Dir(), "summary.json"), &sum)
	if sum.Complete || sum.ExitCode != code {
		t.Fatalf("summary.json: complete=%v exit=%d", sum.Complete, sum.ExitCode)
	}
	raw, _ := os.ReadFile(filepath.Join(run.Dir(), "s", "perf", "summary.json"))
	if !strings.Contains(string(raw), `"MissingShards"`) || !strings.Contains(string(raw), `"reason": "killed"`) {
		t.Fatalf("scenario perf summary.json lacks the missing shard:\n%s", raw)
	}
	html, _ := os.ReadFile(filepath.Join(run.Dir(), "report.html"))
	if !strings.Contains(string(html), `id="verdict">INCOMPLETE`) || !strings.Contains(string(html), "missing shard 1: killed (signal: killed)") {
		t.Fatalf("report.html does not mark the merge incomplete and name shard 1")
	}
	src, err := report.ArtifactBaselines(os.DirFS(root), renderers()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(src.Perf) != 0 {
		t.Fatalf("a daily run with a missing shard became a baseline: %v", src)
	}
}

// TestArtifactBaselines 检查从产物目录选取最近一次已完成的每日运行。
func TestArtifactBaselines(t *testing.T) {
	root := t.TempDir()
	write := func(id string, started time.Time, ttft time.Duration, finish bool) {
		run, err := newRun(root, runtype.Daily, report.RunID(id), started)
		if err != nil {
			t.Fatal(err)
		}
		if err := run.AddScenario(report.ScenarioInfo{Name: "s", Model: "m", Quant: "none"}); err != nil {
			t.Fatal(err)
		}
		if err := perfreport.RecordRows(run, "s", []loadgen.Summary{oneRow(1, ttft, time.Second, 1, 0)}); err != nil {
			t.Fatal(err)
		}
		if finish {
			if _, err := run.Finish(context.Background(), nil, started.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("b-newer", t0.Add(24*time.Hour), 20*time.Millisecond, true)
	write("a-older", t0, 10*time.Millisecond, true)
	write("c-cancelled", t0.Add(48*time.Hour), 99*time.Millisecond, false)
	if _, err := newRun(root, runtype.PR, "pr1", t0); err != nil {
		t.Fatal(err)
	}
	src, err := report.ArtifactBaselines(os.DirFS(root), renderers()...)
	if err != nil {
		t.Fatal(err)
	}
	b, ok, err := src.Lookup(context.Background(), gate.Key{Scenario: "s", Model: "m", InputLength: 128, OutputLength: 128, Concurrency: 1})
	if err != nil || !ok || b.RunID != "b-newer" || b.TTFTP99 != 20*time.Millisecond {
		t.Fatalf("lookup = %+v %v %v", b, ok, err)
	}
	if _, ok, _ := src.Lookup(context.Background(), gate.Key{Scenario: "s", Model: "other", InputLength: 128, OutputLength: 128, Concurrency: 1}); ok {
		t.Fatal("matched another model")
	}
	if _, ok, _ := src.Lookup(context.Background(), gate.Key{Scenario: "s", InputLength: 128, OutputLength: 128, Concurrency: 2}); ok {
		t.Fatal("matched another concurrency")
	}
	empty, err := report.ArtifactBaselines(os.DirFS(t.TempDir()), renderers()...)
	if err != nil || len(empty.Perf) != 0 || len(empty.Functional) != 0 {
		t.Fatalf("empty root: %v %v", empty, err)
	}
}

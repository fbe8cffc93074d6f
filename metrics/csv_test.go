package metrics_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/metrics"
)

// specHeaderFile 读取从需求 §5（docs/requirements.md）逐字节复制出的表头。
func specHeaderFile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/acs_bench_summary_header.txt")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimRight(string(b), "\n")
}

// TestSummaryHeaderMatchesSpecByteForByte 把表头与从需求逐字节复制的文件比较。
func TestSummaryHeaderMatchesSpecByteForByte(t *testing.T) {
	want := specHeaderFile(t)
	if metrics.SummaryHeader != want {
		t.Fatalf("header differs from spec:\n got %s\nwant %s", metrics.SummaryHeader, want)
	}
	var buf bytes.Buffer
	w := metrics.NewSummaryWriter(&buf)
	if err := w.WriteHeader(); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteHeader(); err != nil { // 重复调用不重复写
		t.Fatal(err)
	}
	if got := buf.String(); got != want+"\n" {
		t.Fatalf("written header:\n%q", got)
	}
}

// sampleSummary 构造一行各列取值可区分的汇总。
func sampleSummary() loadgen.Summary {
	ms := time.Millisecond
	l := func(base time.Duration) loadgen.Latency {
		return loadgen.Latency{Count: 10, P75: base, P90: base + ms, P95: base + 2*ms, P99: base + 3*ms, Min: base - ms, Max: base + 4*ms, Avg: base + ms/2}
	}
	return loadgen.Summary{
		ExecutionTime: time.Date(2026, 11, 22, 8, 30, 1, 0, time.Local), InputLength: 128, OutputLength: 1024, Concurrency: 4,
		TotalTokenThroughput: 1234.5, OutputTokenThroughput: 1000.25, TTFT: l(50 * ms), TPOT: l(10 * ms), TPOTSec: l(9 * ms),
		FirstToSecondToken: l(11 * ms), E2E: l(2 * time.Second), TotalTime: 12500 * ms, QPS: 3.2, FailRate: 0.0625,
		Backend: "openai-chat", Temperature: 0.6, TopK: 8, TopP: 1, ControlMethod: "climb", GrowthRate: 2, Round: 3,
		NumPrompts: 64, Provider: "p1",
		CompletionTokens:   loadgen.Values{Count: 10, P75: 1, P90: 1020, P95: 1021, P99: 1022, Min: 1000, Max: 1024, Avg: 1010.5},
		AvgReasoningTokens: 100, AvgContentTokens: 910.5, AvgPromptTokens: 128,
		ServerTTFT: l(40 * ms), ServerE2E: l(time.Second),
		SpecAcceptRate: loadgen.Values{P75: -1, P90: -1, P95: -1, P99: -1, Min: -1, Max: -1, Avg: 0.7},
	}
}

// TestSummaryRowValues 验证各列的取值、单位与格式。
func TestSummaryRowValues(t *testing.T) {
	row := metrics.SummaryRow(sampleSummary())
	cols := metrics.SummaryColumns()
	if len(row) != len(cols) {
		t.Fatalf("row has %d fields, header %d", len(row), len(cols))
	}
	got := map[string]string{}
	for i, c := range cols {
		got[c] = row[i]
	}
	want := map[string]string{
		"Execution_Time": "2026-11-22 08:30:01", "Input_Length": "128", "Concurrency": "4",
		"Total_Token_Throughput(tokens/s)": "1234.5000", "TP75_TTFT(s)": "0.050000", "TP99_TTFT(s)": "0.053000",
		"MAX_TTFT(s)": "0.054000", "AVG_TTFT(s)": "0.050500", "TP90_TPOT_SEC(s)": "0.010000",
		"MIN_TIME_BETWEEN_FIRST_AND_SECOND_TOKEN(s)": "0.010000", "TP75_E2E(s)": "2.000000",
		"Total_Time(s)": "12.500000", "QPS": "3.2000", "Fail_Rate": "0.062500", "Backend": "openai-chat",
		"Temperature": "0.6", "Top_K": "8", "Top_P": "1", "Control_Method": "climb", "Growth_Rate": "2",
		"Rounds": "3", "Num_Prompts": "64", "Provider": "p1", "TP90_COMPLETION_TOKENS": "1020.0000",
		"MIN_COMPLETION_TOKENS": "1000.0000", "AVG_COMPLETION_TOKENS": "1010.5000", "AVG_REASONING_TOKENS": "100.0000",
		"TP75_SERVER_TTFT(ms)": "40.000", "AVG_SERVER_E2E(ms)": "1000.500",
		"TP75_SERVER_TPOT(ms)": "-1", "AVG_SERVER_TPOT(ms)": "-1", // 服务端没有 TPOT 直方图
		"TP90_SPEC_ACCEPT_RATE": "-1", "AVG_SPEC_ACCEPT_RATE": "0.7000",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// TestSummaryRowUnmeasuredIsMinusOne 验证不可测的列写作 -1 而不是 0。
func TestSummaryRowUnmeasuredIsMinusOne(t *testing.T) {
	row := metrics.SummaryRow(loadgen.Summary{CompletionTokens: loadgen.Unmeasured(), SpecAcceptRate: loadgen.Unmeasured(),
		AvgReasoningTokens: -1, AvgContentTokens: -1, AvgPromptTokens: -1})
	cols := metrics.SummaryColumns()
	for i, c := range cols {
		if strings.Contains(c, "TTFT") || strings.Contains(c, "TPOT") || strings.Contains(c, "E2E") ||
			strings.Contains(c, "TOKENS") || strings.Contains(c, "SPEC") || strings.Contains(c, "SECOND_TOKEN") {
			if row[i] != "-1" {
				t.Errorf("%s = %q, want -1 when unmeasured", c, row[i])
			}
		}
	}
}

// TestSummaryWriterIncremental 验证每行写完立即落盘（崩溃不丢）。
func TestSummaryWriterIncremental(t *testing.T) {
	var buf bytes.Buffer
	w := metrics.NewSummaryWriter(&buf)
	rounds := -1
	for i, c := range metrics.SummaryColumns() {
		if c == "Rounds" {
			rounds = i
		}
	}
	for i := range 3 {
		s := sampleSummary()
		s.Round = i + 1
		if err := w.Write(s); err != nil {
			t.Fatal(err)
		}
		// 每行写完立即可见（崩溃不丢）。
		rows, err := csv.NewReader(bytes.NewReader(buf.Bytes())).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != i+2 || rows[i+1][rounds] != string(rune('1'+i)) {
			t.Fatalf("after %d rows: %d lines, rounds col %q", i+1, len(rows), rows[len(rows)-1][rounds])
		}
	}
}

// failWriter 在写入 n 字节后报错。
type failWriter struct{ n int }

// Write 写满额度后返回错误。
func (f *failWriter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

// TestWritersReportIOErrors 验证写入错误被返回而不是吞掉。
func TestWritersReportIOErrors(t *testing.T) {
	if err := metrics.NewSummaryWriter(&failWriter{}).Write(sampleSummary()); err == nil {
		t.Fatal("summary writer swallowed the write error")
	}
	if err := metrics.NewRecordWriter(&failWriter{}).WriteRecord(&loadgen.Record{}); err == nil {
		t.Fatal("record writer swallowed the write error")
	}
	if err := metrics.NewRecordWriter(io.Discard).WriteRecord(nil); err == nil {
		t.Fatal("nil record accepted")
	}
}

// TestRecordWriterRow 验证逐请求行的全部列，包括失败行与 chunk 时间线。
func TestRecordWriterRow(t *testing.T) {
	var buf bytes.Buffer
	w := metrics.NewRecordWriter(&buf, metrics.WithChunkTimes())
	intended := time.Unix(1700000000, 250_000_000)
	rec := &loadgen.Record{
		Group: loadgen.Group{InputLength: 128, OutputLength: 3, Concurrency: 2, Round: 1}, Index: 7, Instance: 1,
		Intended: intended, Sent: intended.Add(2 * time.Millisecond), SlotWait: 2 * time.Millisecond,
		TTFT: 50 * time.Millisecond, FirstToSecond: 10 * time.Millisecond, TPOT: 10 * time.Millisecond, E2E: 70 * time.Millisecond,
		ChunkTimes: []time.Duration{50 * time.Millisecond, 60 * time.Millisecond, 70 * time.Millisecond}, ChunkTokens: []int32{1, 1, 1},
		PromptTokens: 128, CompletionTokens: 3, TokenSource: "usage", FinishReason: "length", OK: true, Status: 200,
		ClientLag: 150 * time.Microsecond,
	}
	if err := w.WriteRecord(rec); err != nil {
		t.Fatal(err)
	}
	failed := &loadgen.Record{Index: 8, TTFT: -1, FirstToSecond: -1, TPOT: -1, E2E: time.Second, Status: 503, ClientLag: -1, ChunkTokensEstimated: true,
		ErrorClass: "http", Error: `HTTP 503: "overloaded", retry`}
	if err := w.WriteRecord(failed); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || strings.Join(rows[0], ",") != strings.Join(metrics.RecordColumns(), ",") {
		t.Fatalf("rows %d header %v", len(rows), rows[0])
	}
	want := []string{"7", "1", "128", "3", "2", "1", "1700000000.250000", "1700000000.252000", "0.002000", "0.050000",
		"0.010000", "0.010000", "0.070000", "128", "3", "0", "usage", "3", "length", "true", "200", "", "", "0.050000;0.060000;0.070000", "1;1;1", "0.000150", "false"}
	if strings.Join(rows[1], "|") != strings.Join(want, "|") {
		t.Fatalf("row\n got %v\nwant %v", rows[1], want)
	}
	if rows[2][9] != "-1" || rows[2][19] != "false" || rows[2][22] != `HTTP 503: "overloaded", retry` || rows[2][25] != "-1" || rows[2][26] != "true" {
		t.Fatalf("failed row %v", rows[2])
	}
}

// memFiles 是按名字收集输出的内存"目录"。
type memFiles map[string]*bytes.Buffer

// nopCloser 给 bytes.Buffer 加上 Close。
type nopCloser struct{ *bytes.Buffer }

// Close 什么也不做。
func (nopCloser) Close() error { return nil }

// create 为 name 新建一个内存缓冲。
func (m memFiles) create(name string) (io.WriteCloser, error) {
	b := &bytes.Buffer{}
	m[name] = b
	return nopCloser{b}, nil
}

// TestArtifactSinkNamesAndRows 验证 A.6 的产物命名、按组合切分文件与汇总行。
func TestArtifactSinkNamesAndRows(t *testing.T) {
	files := memFiles{}
	ts := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
	sink, err := metrics.NewArtifactSink(metrics.ArtifactNames{Provider: "ascend/vllm", ControlMethod: "climb", Time: ts}, files.create)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.WriteRecord(&loadgen.Record{}); err == nil {
		t.Fatal("record before BeginGroup accepted")
	}
	for round := 1; round <= 2; round++ {
		g := loadgen.Group{Concurrency: 4, InputLength: 128, OutputLength: 256, Round: round}
		if err := sink.BeginGroup(g); err != nil {
			t.Fatal(err)
		}
		if err := sink.WriteRecord(&loadgen.Record{Group: g, Index: round}); err != nil {
			t.Fatal(err)
		}
		s := sampleSummary()
		s.Round = round
		if err := sink.EndGroup(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.BeginGroup(loadgen.Group{Concurrency: 8, InputLength: 128, OutputLength: 256, Round: 1}); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"requests_ascend-vllm_random_climb_concurrency4_threading-pool_input128_output256_20261122010203.csv",
		"summary_ascend-vllm_climb_threading-pool_20261122010203.csv",
		"requests_ascend-vllm_random_climb_concurrency8_threading-pool_input128_output256_20261122010203.csv",
	}
	if strings.Join(sink.Files(), "\n") != strings.Join(want, "\n") {
		t.Fatalf("files:\n%s", strings.Join(sink.Files(), "\n"))
	}
	reqRows, _ := csv.NewReader(files[want[0]]).ReadAll()
	sumRows, _ := csv.NewReader(files[want[1]]).ReadAll()
	if len(reqRows) != 3 || len(sumRows) != 3 || strings.Join(sumRows[0], ",") != specHeaderFile(t) {
		t.Fatalf("requests rows %d, summary rows %d", len(reqRows), len(sumRows))
	}
	if _, err := metrics.NewArtifactSink(metrics.ArtifactNames{}, files.create); err == nil {
		t.Fatal("zero time accepted")
	}
	if _, err := metrics.NewArtifactSink(metrics.ArtifactNames{Time: ts}, nil); err == nil {
		t.Fatal("nil create accepted")
	}
}

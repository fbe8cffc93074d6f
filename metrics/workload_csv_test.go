package metrics_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/metrics"
)

// readRows 解析 CSV 文本。
func readRows(t *testing.T, s string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestWorkloadWriterRows 检查 workload_ 与 turns_ 文件：首行写表头（只写一次），时长以秒写 6 位小数，
// 不可得的值写 -1；没有轮次的组不写 turns 行。
func TestWorkloadWriterRows(t *testing.T) {
	var w, tu bytes.Buffer
	ww := metrics.NewWorkloadWriter(&w, &tu)
	lag := loadgen.Latency{Count: 3, P50: 1500 * time.Microsecond, P90: 2 * time.Millisecond, P99: 3 * time.Millisecond, Max: 4 * time.Millisecond}
	s := loadgen.Summary{InputLength: 8, OutputLength: 2, Concurrency: 4, Round: 1, DatasetType: "mooncake_trace", NumPrompts: 3,
		Workload: loadgen.WorkloadStats{DispatchLag: lag, Cache: loadgen.ServerCache{HitRate: 0.25, PrefixHits: 10, PrefixQueries: 40, Preemptions: -1, PeakKVUsage: -1},
			AvgCachedTokens: -1, Turns: []loadgen.TurnSummary{{Turn: 1, Requests: 3, Succeeded: 3, TTFT: lag, AvgPromptTokens: 8, AvgCachedTokens: -1}}}}
	if err := ww.Write(s); err != nil {
		t.Fatal(err)
	}
	s.Round, s.Workload.Turns, s.Workload.DispatchLag = 2, nil, loadgen.Latency{}
	if err := ww.Write(s); err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, w.String())
	if len(rows) != 3 || strings.Join(rows[0], ",") != strings.Join(metrics.WorkloadCSVHeader(), ",") {
		t.Fatalf("workload rows %v", rows)
	}
	if got := strings.Join(rows[1], ","); got != "8,2,4,1,mooncake_trace,3,0.001500,0.002000,0.003000,0.004000,0.25,10,40,-1,-1,-1,0" {
		t.Fatalf("workload row 1 %s", got)
	}
	if rows[2][3] != "2" || rows[2][6] != "-1" {
		t.Fatalf("workload row 2 %v: round 2 and no dispatch lag (-1)", rows[2])
	}
	turns := readRows(t, tu.String())
	if len(turns) != 2 || turns[0][4] != "Turn" || strings.Join(turns[1][:8], ",") != "8,2,4,1,1,3,3,0.001500" || turns[1][11] != "-1" {
		t.Fatalf("turns rows %v", turns)
	}
}

// TestSessionWriterRows 检查 sessions_ 文件：预热请求不写，失败请求的 TTFT/ITL 为 -1，表头只写一次。
func TestSessionWriterRows(t *testing.T) {
	var b bytes.Buffer
	sw := metrics.NewSessionWriter(&b)
	g := loadgen.Group{InputLength: 8, OutputLength: 2, Concurrency: 4, Round: 1}
	recs := []loadgen.Record{
		{Group: g, Index: 0, SessionID: "s1", Turn: 1, PromptTokens: 8, CachedTokens: 4, CompletionTokens: 2, OK: true,
			SlotWait: time.Millisecond, TTFT: 2 * time.Millisecond, TPOT: time.Millisecond, E2E: 5 * time.Millisecond},
		{Group: g, Index: 1, Warmup: true},
		{Group: g, Index: 2, SessionID: "s2", ErrorClass: loadgen.ErrClassHTTP, TTFT: -1, TPOT: -1, E2E: time.Millisecond, CachedTokens: -1},
	}
	for i := range recs {
		if err := sw.WriteRecord(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.Flush(); err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, b.String())
	if len(rows) != 3 || strings.Join(rows[0], ",") != strings.Join(metrics.SessionCSVHeader(), ",") {
		t.Fatalf("session rows %v", rows)
	}
	if got := strings.Join(rows[1], ","); got != "8,2,4,1,0,s1,1,8,4,2,true,,0.001000,0.002000,0.001000,0.005000" {
		t.Fatalf("ok row %s", got)
	}
	if got := strings.Join(rows[2], ","); got != "8,2,4,1,2,s2,0,0,-1,0,false,http,0.000000,-1,-1,0.001000" {
		t.Fatalf("failed row %s", got)
	}
}

// diskFull 的写入总是失败（磁盘满）。
type diskFull struct{}

// Write 返回错误。
func (diskFull) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestWorkloadWritersReportWriteErrors 检查写入失败被报出，而不是静默丢行。
func TestWorkloadWritersReportWriteErrors(t *testing.T) {
	if err := metrics.NewWorkloadWriter(diskFull{}, nil).Write(loadgen.Summary{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("workload: %v", err)
	}
	s := loadgen.Summary{Workload: loadgen.WorkloadStats{Turns: []loadgen.TurnSummary{{Turn: 1}}}}
	if err := metrics.NewWorkloadWriter(&bytes.Buffer{}, diskFull{}).Write(s); err == nil || !strings.Contains(err.Error(), "turns") {
		t.Fatalf("turns: %v", err)
	}
	sw := metrics.NewSessionWriter(diskFull{})
	if err := sw.WriteRecord(&loadgen.Record{}); err != nil {
		t.Fatal(err) // 还在缓冲里
	}
	if err := sw.Flush(); err == nil || !strings.Contains(err.Error(), "sessions") {
		t.Fatalf("sessions: %v", err)
	}
}

// TestHeadersCannotBeRewrittenByImporters 复现 issue #30 的“导出的可变变量”：表头曾是导出的切片，
// 任何导入者改它一格，之后写出的每个 CSV 都跟着错。现在每次得到的是副本。
func TestHeadersCannotBeRewrittenByImporters(t *testing.T) {
	for name, f := range map[string]func() []string{"timeline": metrics.TimelineColumns, "workload": metrics.WorkloadCSVHeader,
		"turns": metrics.TurnCSVHeader, "sessions": metrics.SessionCSVHeader} {
		h := f()
		first := h[0]
		h[0] = "Tampered"
		if got := f()[0]; got != first {
			t.Errorf("%s header changed by a caller: %q", name, got)
		}
	}
}

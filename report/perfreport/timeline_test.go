package perfreport_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/perfreport"
	"github.com/vllm-cibench/cibench/runtype"
)

// climbTimeline 构造一个爬坡分组的时间线：目标并发 2→4→6→8，每 0.5 秒一行；
// 第 3 行没有完成的请求（时延为 -1），服务端没有 /metrics（-1）。
func climbTimeline() []loadgen.Timeline {
	g := loadgen.Group{InputLength: 128, OutputLength: 128, Concurrency: 8, Round: 1}
	var rows []loadgen.Timeline
	for i := range 8 {
		r := loadgen.Timeline{Group: g, Time: t0.Add(time.Duration(i+1) * 500 * time.Millisecond), Elapsed: time.Duration(i+1) * 500 * time.Millisecond,
			Interval: 500 * time.Millisecond, TargetConcurrency: min(2+2*(i/2), 8), InFlight: min(2+2*(i/2), 8), Started: 3, Completed: 3,
			TTFTP50: 20 * time.Millisecond, TTFTP99: time.Duration(30+i) * time.Millisecond, ITLP50: 2 * time.Millisecond, ITLP99: 5 * time.Millisecond,
			ServerRunning: -1, ServerWaiting: -1, ServerKVCacheUsage: -1, ServerPreemptions: -1}
		if i == 2 {
			r.Completed, r.TTFTP50, r.TTFTP99, r.ITLP50, r.ITLP99 = 0, -1, -1, -1, -1
		}
		rows = append(rows, r)
	}
	return rows
}

// TestTimelineRecordLoadAndChart 验证时间线单独落盘到 perf/timeline.json（不进 summary.json）、
// Load 读回相同的行，HTML 每个分组画三张图（TTFT 与 ITL 各自的纵轴，issue 37 §4）：目标并发是阶梯线
// （H/V 路径），-1 的时延断线；时间线默认展开。
func TestTimelineRecordLoadAndChart(t *testing.T) {
	root := t.TempDir()
	run, err := newRun(root, runtype.PR, "tl-1", t0)
	if err != nil {
		t.Fatal(err)
	}
	rows := climbTimeline()
	if err := perfreport.RecordRows(run, "emu", perfRows(1, 1)[:1]); err != nil {
		t.Fatal(err)
	}
	if err := perfreport.RecordTimeline(run, "emu", rows); err != nil {
		t.Fatal(err)
	}
	dir := run.Dir()
	if _, err := os.Stat(filepath.Join(dir, "emu", "perf", "timeline.json")); err != nil {
		t.Fatal(err)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	if bytes.Contains(sum, []byte("TargetConcurrency")) {
		t.Error("timeline rows leaked into summary.json")
	}
	res, err := report.Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	got := view(t, res.Scenarios[0]).Timeline
	for i := range got { // JSON 往返后时区表示不同，按时刻比较
		if !got[i].Time.Equal(rows[i].Time) {
			t.Fatalf("row %d time %v", i, got[i].Time)
		}
		got[i].Time = rows[i].Time
	}
	if !reflect.DeepEqual(got, rows) {
		t.Fatalf("loaded timeline differs:\n%+v\n%+v", got, rows)
	}
	var buf bytes.Buffer
	if err := report.WriteHTML(&buf, res, renderers()...); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{`<details class="timeline" open>`, "live timeline, 1 groups", "TTFT over time, in128/out128 c=8 round 1", "ITL P99 over time, in128/out128 c=8 round 1", "Concurrency over time, in128/out128 c=8 round 1"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if strings.Contains(html, "server running") {
		t.Error("server series drawn although every row is -1")
	}
	// 阶梯线：目标并发的路径含 H…V… 段。TTFT P50 在第 3 行断开：路径里有两个 M。
	if !regexp.MustCompile(`<path class="line" d="M[^"]*H[0-9.]+ V[0-9.]+[^"]*" fill="none" stroke="#000000"`).MatchString(html) {
		t.Error("target concurrency is not drawn as a step line")
	}
	tl := html[strings.Index(html, "TTFT over time"):]
	ttft := regexp.MustCompile(`<path class="line" d="(M[^"]*)" fill="none" stroke="#0072B2"`).FindStringSubmatch(tl)
	if ttft == nil || strings.Count(ttft[1], "M") != 2 {
		t.Errorf("TTFT P50 path should break at the row without completions: %v", ttft)
	}
}

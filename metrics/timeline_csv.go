package metrics

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"

	"github.com/vllm-cibench/cibench/loadgen"
)

// TimelineColumns 返回时间线 CSV（timeline_*.csv，--bucket-interval）的表头（新切片，调用方可以随意
// 修改：表头不是可以被导入者改写的包级变量）。时刻为 Unix 秒（微秒精度），时长为秒，计数为整数；
// 不可测一律 -1（没有样本的时延、服务端没有 /metrics 或该指标时的服务端列）。
func TimelineColumns() []string { return slices.Clone(timelineColumns) }

// timelineColumns 是 TimelineColumns 的唯一定义。
var timelineColumns = []string{
	"Time", "Input_Length", "Output_Length", "Concurrency", "Round",
	"Elapsed(s)", "Interval(s)", "Target_Concurrency", "In_Flight",
	"Started", "Completed", "Failed", "Output_Tokens", "Output_Token_Throughput(tokens/s)",
	"P50_TTFT(s)", "P99_TTFT(s)", "P50_ITL(s)", "P99_ITL(s)",
	"Server_Num_Requests_Running", "Server_Num_Requests_Waiting", "Server_KV_Cache_Usage", "Server_Num_Preemptions",
}

// TimelineRow 把一行时间线转成与 TimelineColumns 对齐的字段。
func TimelineRow(t loadgen.Timeline) []string {
	i := strconv.Itoa
	return []string{
		unixSecs(t.Time), i(t.Group.InputLength), i(t.Group.OutputLength), i(t.Group.Concurrency), i(t.Group.Round),
		secs(t.Elapsed), secs(t.Interval), i(t.TargetConcurrency), i(t.InFlight),
		i(t.Started), i(t.Completed), i(t.Failed), strconv.FormatInt(t.OutputTokens, 10), num(t.OutputTokenThroughput),
		secs(t.TTFTP50), secs(t.TTFTP99), secs(t.ITLP50), secs(t.ITLP99),
		num(t.ServerRunning), num(t.ServerWaiting), num(t.ServerKVCacheUsage), num(t.ServerPreemptions),
	}
}

// TimelineWriter 把时间线行增量写入 CSV：第一行之前写表头，每行写完立即 Flush
// （压测中途崩溃也保留已采样的行）。Observer 把它接成 loadgen.Run 的 OnTimeline；并发安全。
type TimelineWriter struct {
	mu     sync.Mutex
	w      *csv.Writer
	header bool
}

// Observer 返回只带 OnTimeline 的 loadgen.Observer。
func (tw *TimelineWriter) Observer() *loadgen.Observer {
	return &loadgen.Observer{OnTimeline: tw.WriteTimeline}
}

// NewTimelineWriter 返回写往 w 的时间线写入器。
func NewTimelineWriter(w io.Writer) *TimelineWriter { return &TimelineWriter{w: csv.NewWriter(w)} }

// WriteTimeline 追加一行并刷新。
func (tw *TimelineWriter) WriteTimeline(t loadgen.Timeline) error {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if !tw.header {
		tw.header = true
		if err := tw.w.Write(timelineColumns); err != nil {
			return fmt.Errorf("metrics: write timeline header: %w", err)
		}
	}
	if err := tw.w.Write(TimelineRow(t)); err != nil {
		return fmt.Errorf("metrics: write timeline row: %w", err)
	}
	tw.w.Flush()
	if err := tw.w.Error(); err != nil {
		return fmt.Errorf("metrics: write timeline row: %w", err)
	}
	return nil
}

package metrics

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
)

// 真实负载的 CSV 文件。acs-bench 的汇总与逐请求 CSV 的表头保持原样（下游脚本按列号读），
// 新的列写进这三个新文件：每组一行的 workload、每组每轮一行的 turns、每个会话 / 轨迹请求一行的
// sessions。不可得的值写 -1，时长以秒为单位。
// 表头是函数而不是包级变量（见 WorkloadCSVHeader）：导出的切片可以被任何导入者改写，
// 之后写出的每个 CSV 都会跟着错；这里的未导出值只由本包读取。
var (
	workloadCSVHeader = []string{"Input_Length", "Output_Length", "Concurrency", "Round", "Dataset_Type", "Num_Prompts",
		"Dispatch_Lag_P50(s)", "Dispatch_Lag_P90(s)", "Dispatch_Lag_P99(s)", "Dispatch_Lag_Max(s)",
		"Prefix_Cache_Hit_Rate", "Prefix_Cache_Hits", "Prefix_Cache_Queries", "Preemptions", "Peak_KV_Cache_Usage",
		"Avg_Cached_Tokens", "Cached_Tokens_Count"}
	turnCSVHeader = []string{"Input_Length", "Output_Length", "Concurrency", "Round", "Turn", "Requests", "Succeeded",
		"TTFT_P50(s)", "TTFT_P90(s)", "TTFT_P99(s)", "TTFT_Avg(s)", "ITL_P50(s)", "ITL_P99(s)", "ITL_Avg(s)",
		"E2E_P50(s)", "E2E_P99(s)", "E2E_Avg(s)", "Avg_Prompt_Tokens", "Avg_Cached_Tokens"}
	sessionCSVHeader = []string{"Input_Length", "Output_Length", "Concurrency", "Round", "Index", "Session_ID", "Turn",
		"Prompt_Tokens", "Cached_Tokens", "Completion_Tokens", "OK", "Error_Class",
		"Dispatch_Lag(s)", "TTFT(s)", "ITL(s)", "E2E(s)"}
)

// WorkloadCSVHeader 返回 workload_*.csv 的表头（新切片，调用方可以随意修改）。
func WorkloadCSVHeader() []string { return slices.Clone(workloadCSVHeader) }

// TurnCSVHeader 返回 turns_*.csv 的表头（新切片）。
func TurnCSVHeader() []string { return slices.Clone(turnCSVHeader) }

// SessionCSVHeader 返回 sessions_*.csv 的表头（新切片）。
func SessionCSVHeader() []string { return slices.Clone(sessionCSVHeader) }

// WorkloadWriter 把汇总写成 workload_*.csv 与 turns_*.csv 的行（两个流各自带表头，首行写入时
// 才写表头）。不是并发安全的。
type WorkloadWriter struct {
	w, t         *csv.Writer
	wHead, tHead bool
}

// NewWorkloadWriter 创建写入 workload（w）与 turns（turns，可为 nil 表示不写）的写入器。
func NewWorkloadWriter(w, turns io.Writer) *WorkloadWriter {
	ww := &WorkloadWriter{w: csv.NewWriter(w)}
	if turns != nil {
		ww.t = csv.NewWriter(turns)
	}
	return ww
}

// workSecs 把时长写成秒（不可得为 -1）：真实负载文件的时长列以秒为单位、6 位小数。
func workSecs(d time.Duration, valid bool) string {
	if !valid {
		return "-1"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 6, 64)
}

// workNum 写一个浮点数（-1 原样）。
func workNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Write 追加一组的 workload 行与其各轮的 turns 行，并刷新。
func (ww *WorkloadWriter) Write(s loadgen.Summary) error {
	if !ww.wHead {
		if err := ww.w.Write(workloadCSVHeader); err != nil {
			return err
		}
		ww.wHead = true
	}
	w, lag := s.Workload, s.Workload.DispatchLag
	c := w.Cache
	row := []string{strconv.Itoa(s.InputLength), strconv.Itoa(s.OutputLength), strconv.Itoa(s.Concurrency), strconv.Itoa(s.Round),
		s.DatasetType, strconv.Itoa(s.NumPrompts),
		workSecs(lag.P50, lag.Valid()), workSecs(lag.P90, lag.Valid()), workSecs(lag.P99, lag.Valid()), workSecs(lag.Max, lag.Valid()),
		workNum(c.HitRate), workNum(c.PrefixHits), workNum(c.PrefixQueries), workNum(c.Preemptions), workNum(c.PeakKVUsage),
		workNum(w.AvgCachedTokens), strconv.Itoa(w.CachedTokensCount)}
	if err := ww.w.Write(row); err != nil {
		return err
	}
	ww.w.Flush()
	if err := ww.w.Error(); err != nil {
		return fmt.Errorf("metrics: write workload csv: %w", err)
	}
	if ww.t == nil || len(w.Turns) == 0 {
		return nil
	}
	if !ww.tHead {
		if err := ww.t.Write(turnCSVHeader); err != nil {
			return err
		}
		ww.tHead = true
	}
	for _, t := range w.Turns {
		r := []string{strconv.Itoa(s.InputLength), strconv.Itoa(s.OutputLength), strconv.Itoa(s.Concurrency), strconv.Itoa(s.Round),
			strconv.Itoa(t.Turn), strconv.Itoa(t.Requests), strconv.Itoa(t.Succeeded),
			workSecs(t.TTFT.P50, t.TTFT.Valid()), workSecs(t.TTFT.P90, t.TTFT.Valid()), workSecs(t.TTFT.P99, t.TTFT.Valid()), workSecs(t.TTFT.Avg, t.TTFT.Valid()),
			workSecs(t.ITL.P50, t.ITL.Valid()), workSecs(t.ITL.P99, t.ITL.Valid()), workSecs(t.ITL.Avg, t.ITL.Valid()),
			workSecs(t.E2E.P50, t.E2E.Valid()), workSecs(t.E2E.P99, t.E2E.Valid()), workSecs(t.E2E.Avg, t.E2E.Valid()),
			workNum(t.AvgPromptTokens), workNum(t.AvgCachedTokens)}
		if err := ww.t.Write(r); err != nil {
			return err
		}
	}
	ww.t.Flush()
	if err := ww.t.Error(); err != nil {
		return fmt.Errorf("metrics: write turns csv: %w", err)
	}
	return nil
}

// SessionWriter 把会话与轨迹请求逐条写成 sessions_*.csv（首行写入时写表头）。不是并发安全的，
// 与 Observer 的约定一致（钩子被串行调用）。
type SessionWriter struct {
	w    *csv.Writer
	head bool
	row  []string
}

// NewSessionWriter 创建写入 w 的逐请求会话写入器。
func NewSessionWriter(w io.Writer) *SessionWriter { return &SessionWriter{w: csv.NewWriter(w)} }

// WriteRecord 写一条记录（预热请求不写）。
func (sw *SessionWriter) WriteRecord(r *loadgen.Record) error {
	if r.Warmup {
		return nil
	}
	if !sw.head {
		if err := sw.w.Write(sessionCSVHeader); err != nil {
			return err
		}
		sw.head = true
	}
	g := r.Group
	sw.row = append(sw.row[:0], strconv.Itoa(g.InputLength), strconv.Itoa(g.OutputLength), strconv.Itoa(g.Concurrency), strconv.Itoa(g.Round),
		strconv.Itoa(r.Index), r.SessionID, strconv.Itoa(r.Turn), strconv.Itoa(r.PromptTokens), strconv.Itoa(r.CachedTokens),
		strconv.Itoa(r.CompletionTokens), strconv.FormatBool(r.OK), r.ErrorClass,
		workSecs(r.SlotWait, true), workSecs(r.TTFT, r.OK && r.TTFT >= 0), workSecs(r.TPOT, r.OK && r.TPOT >= 0), workSecs(r.E2E, true))
	return sw.w.Write(sw.row)
}

// Flush 把缓冲的行写出，返回写入中的错误。
func (sw *SessionWriter) Flush() error {
	sw.w.Flush()
	if err := sw.w.Error(); err != nil {
		return fmt.Errorf("metrics: write sessions csv: %w", err)
	}
	return nil
}

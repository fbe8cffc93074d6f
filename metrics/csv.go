package metrics

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
)

// SummaryHeader 是需求 §5（docs/requirements.md）规定的 acs-bench 汇总 CSV 表头，逐字节一致。
const SummaryHeader = "Execution_Time,Input_Length,Output_Length,Concurrency,Total_Token_Throughput(tokens/s),Output_Token_Throughput(tokens/s),TP75_TTFT(s),TP90_TTFT(s),TP95_TTFT(s),TP99_TTFT(s),MAX_TTFT(s),AVG_TTFT(s),TP75_TPOT(s),TP90_TPOT(s),TP95_TPOT(s),TP99_TPOT(s),MAX_TPOT(s),AVG_TPOT(s),TP90_TPOT_SEC(s),TP95_TPOT_SEC(s),TP99_TPOT_SEC(s),MAX_TPOT_SEC(s),AVG_TPOT_SEC(s),TP90_TIME_BETWEEN_FIRST_AND_SECOND_TOKEN(s),TP95_TIME_BETWEEN_FIRST_AND_SECOND_TOKEN(s),TP99_TIME_BETWEEN_FIRST_AND_SECOND_TOKEN(s),MIN_TIME_BETWEEN_FIRST_AND_SECOND_TOKEN(s),MAX_TIME_BETWEEN_FIRST_AND_SECOND_TOKEN(s),AVG_TIME_BETWEEN_FIRST_AND_SECOND_TOKEN(s),TP75_E2E(s),TP90_E2E(s),TP95_E2E(s),TP99_E2E(s),MAX_E2E(s),AVG_E2E(s),Total_Time(s),QPS,Fail_Rate,Backend,Temperature,Top_K,Top_P,Control_Method,Growth_Rate,Rounds,Num_Prompts,Provider,TP90_COMPLETION_TOKENS,TP95_COMPLETION_TOKENS,TP99_COMPLETION_TOKENS,MIN_COMPLETION_TOKENS,AVG_COMPLETION_TOKENS,AVG_REASONING_TOKENS,AVG_CONTENT_TOKENS,AVG_PROMPT_TOKENS,TP75_SERVER_TTFT(ms),TP90_SERVER_TTFT(ms),TP95_SERVER_TTFT(ms),TP99_SERVER_TTFT(ms),MAX_SERVER_TTFT(ms),AVG_SERVER_TTFT(ms),TP75_SERVER_TPOT(ms),TP90_SERVER_TPOT(ms),TP95_SERVER_TPOT(ms),TP99_SERVER_TPOT(ms),MAX_SERVER_TPOT(ms),AVG_SERVER_TPOT(ms),TP75_SERVER_E2E(ms),TP90_SERVER_E2E(ms),TP95_SERVER_E2E(ms),TP99_SERVER_E2E(ms),MAX_SERVER_E2E(ms),AVG_SERVER_E2E(ms),TP90_SPEC_ACCEPT_RATE,TP95_SPEC_ACCEPT_RATE,TP99_SPEC_ACCEPT_RATE,MIN_SPEC_ACCEPT_RATE,MAX_SPEC_ACCEPT_RATE,AVG_SPEC_ACCEPT_RATE"

// ExecutionTimeLayout 是 Execution_Time 列的本地时间格式。
const ExecutionTimeLayout = "2006-01-02 15:04:05"

// ArtifactTimeLayout 是产物文件名中 {time} 的格式。
const ArtifactTimeLayout = "20060102150405"

// SummaryColumns 返回汇总表头的各列名（每次返回新切片）。
func SummaryColumns() []string { return strings.Split(SummaryHeader, ",") }

// 数值格式：秒保留微秒、毫秒保留 3 位小数、其余 4 位；不可测一律写 "-1"。
func secs(d time.Duration) string {
	if d < 0 {
		return "-1"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 6, 64)
}

// millis 把时长写成毫秒（服务端列的单位）。
func millis(d time.Duration) string {
	if d < 0 {
		return "-1"
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
}

// num 写一个普通数值；负数（约定的不可测）写作 -1。
func num(v float64) string {
	if v < 0 {
		return "-1"
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

// csvStatCode 把 lat/vals 的字段码映射到统计量：'7' P75、'9' P90、'5' P95、'1' P99、
// 'n' MIN、'x' MAX、'a' AVG（字段码串按 CSV 表头的列顺序书写）。
var csvStatCode = map[rune]stat{'7': statP75, '9': statP90, '5': statP95, '1': statP99, 'n': statMin, 'x': statMax, 'a': statAvg}

// lat 按列顺序输出 Latency 的若干字段；没有样本时全部为 -1。
func lat(l loadgen.Latency, f func(time.Duration) string, fields string) []string {
	out := make([]string, 0, len(fields))
	for _, c := range fields {
		if !l.Valid() {
			out = append(out, "-1")
			continue
		}
		out = append(out, f(*latencyField(&l, csvStatCode[c])))
	}
	return out
}

// vals 与 lat 相同，用于无量纲的 Values（单个字段可独立为 -1）。
func vals(v loadgen.Values, fields string) []string {
	out := make([]string, 0, len(fields))
	for _, c := range fields {
		out = append(out, num(*valuesStat(&v, csvStatCode[c])))
	}
	return out
}

// SummaryRow 把一行汇总转成与 SummaryHeader 对齐的字段。Execution_Time 使用
// s.ExecutionTime 自带的时区（调用方决定本地时间的含义）。
func SummaryRow(s loadgen.Summary) []string {
	row := make([]string, 0, 80)
	et := ""
	if !s.ExecutionTime.IsZero() {
		et = s.ExecutionTime.Format(ExecutionTimeLayout)
	}
	row = append(row, et, strconv.Itoa(s.InputLength), strconv.Itoa(s.OutputLength), strconv.Itoa(s.Concurrency),
		num(s.TotalTokenThroughput), num(s.OutputTokenThroughput))
	row = append(row, lat(s.TTFT, secs, "7951xa")...)
	row = append(row, lat(s.TPOT, secs, "7951xa")...)
	row = append(row, lat(s.TPOTSec, secs, "951xa")...)
	row = append(row, lat(s.FirstToSecondToken, secs, "951nxa")...)
	row = append(row, lat(s.E2E, secs, "7951xa")...)
	row = append(row, secs(s.TotalTime), num(s.QPS), strconv.FormatFloat(s.FailRate, 'f', 6, 64),
		s.Backend, strconv.FormatFloat(s.Temperature, 'f', -1, 64), strconv.Itoa(s.TopK), strconv.FormatFloat(s.TopP, 'f', -1, 64),
		s.ControlMethod, strconv.Itoa(s.GrowthRate), strconv.Itoa(s.Round), strconv.Itoa(s.NumPrompts), s.Provider)
	row = append(row, vals(s.CompletionTokens, "951na")...)
	row = append(row, num(s.AvgReasoningTokens), num(s.AvgContentTokens), num(s.AvgPromptTokens))
	row = append(row, lat(s.ServerTTFT, millis, "7951xa")...)
	row = append(row, lat(s.ServerTPOT, millis, "7951xa")...)
	row = append(row, lat(s.ServerE2E, millis, "7951xa")...)
	row = append(row, vals(s.SpecAcceptRate, "951nxa")...)
	return row
}

// SummaryWriter 把汇总行增量写入 CSV：第一次写入前先写表头，每行写完立即 Flush，
// 进程崩溃时已写出的行不会丢失。并发安全。
type SummaryWriter struct {
	mu     sync.Mutex
	w      *csv.Writer
	header bool
}

// NewSummaryWriter 返回写往 w 的汇总写入器。
func NewSummaryWriter(w io.Writer) *SummaryWriter { return &SummaryWriter{w: csv.NewWriter(w)} }

// WriteHeader 立即写出表头（通常不需要调用：第一行之前会自动写）。重复调用无效果。
func (s *SummaryWriter) WriteHeader() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeHeader()
}

// writeHeader 在持锁状态下写出表头。
func (s *SummaryWriter) writeHeader() error {
	if s.header {
		return nil
	}
	s.header = true
	if err := s.w.Write(SummaryColumns()); err != nil {
		return fmt.Errorf("metrics: write summary header: %w", err)
	}
	s.w.Flush()
	return s.w.Error()
}

// Write 追加一行汇总并刷新。
func (s *SummaryWriter) Write(sum loadgen.Summary) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writeHeader(); err != nil {
		return err
	}
	if err := s.w.Write(SummaryRow(sum)); err != nil {
		return fmt.Errorf("metrics: write summary row: %w", err)
	}
	s.w.Flush()
	if err := s.w.Error(); err != nil {
		return fmt.Errorf("metrics: write summary row: %w", err)
	}
	return nil
}

// RecordColumns 返回逐请求 CSV 的表头（每次一个新切片，改动它不影响写出的表头）。时间为 Unix 秒（微秒精度），时长为秒，
// 不可测为 -1；Chunk_Times(s) 与 Chunk_Tokens（每个输出 chunk 的到达时刻与 token 增量，
// 以 ';' 分隔）仅在 WithChunkTimes 时填写。Client_Lag(s) 是客户端自身的读取滞后
// （首个输出 chunk 到达套接字 → 被解析完，不计入 TTFT；无内核时间戳时为 -1）；
// Chunk_Tokens_Estimated 为 true 时 Chunk_Tokens 是把 usage 总数分摊到各 chunk 的估算
// （见 loadgen.Record.ChunkTokens）。新列一律追加在最后，以免移动既有列的位置。
func RecordColumns() []string { return slices.Clone(recordColumns) }

// recordColumns 是 RecordColumns 的底层表；库只读它，外部拿到的是副本。
var recordColumns = []string{
	"Request_ID", "Round", "Input_Length", "Output_Length", "Concurrency", "Instance",
	"Intended_Time", "Send_Time", "Slot_Wait(s)", "TTFT(s)", "Time_Between_First_And_Second_Token(s)",
	"TPOT(s)", "E2E(s)", "Prompt_Tokens", "Completion_Tokens", "Reasoning_Tokens", "Token_Source",
	"Chunks", "Finish_Reason", "Success", "Status", "Error_Class", "Error", "Chunk_Times(s)", "Chunk_Tokens",
	"Client_Lag(s)", "Chunk_Tokens_Estimated",
}

// RecordWriter 把逐请求记录写成 CSV，可单独使用；Observer 把它接成 loadgen.Run 的钩子。
// 每行写完立即 Flush（崩溃不丢已测数据）。并发安全。
type RecordWriter struct {
	mu         sync.Mutex
	w          *csv.Writer
	header     bool
	chunkTimes bool
	row        []string
	sb         strings.Builder
}

// Observer 返回只带 OnRecord 的 loadgen.Observer（要和别的出口一起用时交给 loadgen.Tee）。
func (r *RecordWriter) Observer() *loadgen.Observer {
	return &loadgen.Observer{OnRecord: r.WriteRecord}
}

// RecordOption 配置 RecordWriter。
type RecordOption func(*RecordWriter)

// WithChunkTimes 让每行附带全部输出 chunk 的到达时刻（相对意图发送时刻）。
// 行会随输出长度变长，默认关闭。
func WithChunkTimes() RecordOption { return func(r *RecordWriter) { r.chunkTimes = true } }

// NewRecordWriter 返回写往 w 的逐请求写入器；表头在第一行之前写出。
func NewRecordWriter(w io.Writer, opts ...RecordOption) *RecordWriter {
	r := &RecordWriter{w: csv.NewWriter(w), row: make([]string, len(recordColumns))}
	for _, o := range opts {
		o(r)
	}
	return r
}

// unixSecs 把时刻写成 Unix 秒（微秒精度）。
func unixSecs(t time.Time) string {
	if t.IsZero() {
		return "-1"
	}
	return strconv.FormatFloat(float64(t.UnixMicro())/1e6, 'f', 6, 64)
}

// WriteRecord 追加一条记录并刷新。
func (r *RecordWriter) WriteRecord(rec *loadgen.Record) error {
	if rec == nil {
		return errors.New("metrics: write record: nil record")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.header {
		r.header = true
		if err := r.w.Write(recordColumns); err != nil {
			return fmt.Errorf("metrics: write record header: %w", err)
		}
	}
	row := r.row
	row[0] = strconv.Itoa(rec.Index)
	row[1] = strconv.Itoa(rec.Group.Round)
	row[2] = strconv.Itoa(rec.Group.InputLength)
	row[3] = strconv.Itoa(rec.Group.OutputLength)
	row[4] = strconv.Itoa(rec.Group.Concurrency)
	row[5] = strconv.Itoa(rec.Instance)
	row[6] = unixSecs(rec.Intended)
	row[7] = unixSecs(rec.Sent)
	row[8] = secs(rec.SlotWait)
	row[9] = secs(rec.TTFT)
	row[10] = secs(rec.FirstToSecond)
	row[11] = secs(rec.TPOT)
	row[12] = secs(rec.E2E)
	row[13] = strconv.Itoa(rec.PromptTokens)
	row[14] = strconv.Itoa(rec.CompletionTokens)
	row[15] = strconv.Itoa(rec.ReasoningTokens)
	row[16] = rec.TokenSource
	row[17] = strconv.Itoa(len(rec.ChunkTimes))
	row[18] = rec.FinishReason
	row[19] = strconv.FormatBool(rec.OK)
	row[20] = strconv.Itoa(rec.Status)
	row[21] = rec.ErrorClass
	row[22] = rec.Error
	row[23], row[24] = "", ""
	if r.chunkTimes {
		r.sb.Reset()
		for i, t := range rec.ChunkTimes {
			if i > 0 {
				r.sb.WriteByte(';')
			}
			r.sb.WriteString(strconv.FormatFloat(t.Seconds(), 'f', 6, 64))
		}
		row[23] = r.sb.String()
		r.sb.Reset()
		for i, k := range rec.ChunkTokens {
			if i > 0 {
				r.sb.WriteByte(';')
			}
			r.sb.WriteString(strconv.Itoa(int(k)))
		}
		row[24] = r.sb.String()
	}
	row[25] = secs(rec.ClientLag)
	row[26] = strconv.FormatBool(rec.ChunkTokensEstimated)
	if err := r.w.Write(row); err != nil {
		return fmt.Errorf("metrics: write record: %w", err)
	}
	r.w.Flush()
	if err := r.w.Error(); err != nil {
		return fmt.Errorf("metrics: write record: %w", err)
	}
	return nil
}

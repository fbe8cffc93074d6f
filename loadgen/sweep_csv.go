package loadgen

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"
)

// SweepCSVHeader 是每次扫描的逐级 CSV 表头（一级一行，按执行顺序）：到达速率、实测
// 吞吐与 goodput、SLO 达标比例、失败率与时延分位（秒），以及这一级是否在容量之内。
const SweepCSVHeader = "Step,Offered_Rate(req/s),Num_Prompts,QPS,Goodput(req/s),SLO_Attainment,Fail_Rate,TP50_TTFT(s),TP99_TTFT(s),TP99_TPOT(s),TP50_E2E(s),TP99_E2E(s),Pass,Reason"

// CapacityCSVHeader 是容量汇总 CSV 的表头：每次扫描一行。
const CapacityCSVHeader = "Execution_Time,Provider,Backend,Input_Length,Output_Length,Concurrency,SLO,SLO_Attainment_Target,Max_Sustainable_Rate(req/s),Max_Goodput(req/s),Knee_Rate(req/s),Steps,Stop,Elapsed(s)"

// f4 把数值写成 4 位小数；负数（不可测）写作 -1。
func f4(v float64) string {
	if v < 0 {
		return "-1"
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

// sec 把时长写成秒（微秒精度），样本为空时写作 -1。
func sec(l Latency, d time.Duration) string {
	if !l.Valid() {
		return "-1"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 6, 64)
}

// WriteSweepCSV 把一次扫描的各级写成 CSV（含表头）。
func WriteSweepCSV(w io.Writer, res SweepResult) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(splitHeader(SweepCSVHeader)); err != nil {
		return fmt.Errorf("loadgen: sweep csv: %w", err)
	}
	for i, st := range res.Steps {
		s := st.Summary
		row := []string{strconv.Itoa(i + 1), f4(st.OfferedRate), strconv.Itoa(s.NumPrompts), f4(s.QPS), f4(s.Goodput), f4(st.Attainment),
			strconv.FormatFloat(s.FailRate, 'f', 6, 64), sec(s.TTFT, s.TTFT.P50), sec(s.TTFT, s.TTFT.P99), sec(s.TPOT, s.TPOT.P99),
			sec(s.E2E, s.E2E.P50), sec(s.E2E, s.E2E.P99), strconv.FormatBool(st.Pass), st.Reason}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("loadgen: sweep csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("loadgen: sweep csv: %w", err)
	}
	return nil
}

// CapacityRow 返回与 CapacityCSVHeader 对齐的一行（Execution_Time 用 res.Started 自带的时区）。
func CapacityRow(res SweepResult) []string {
	return []string{res.Started.Format("2006-01-02 15:04:05"), res.Provider, res.Backend, strconv.Itoa(res.InputLength), strconv.Itoa(res.OutputLength),
		strconv.Itoa(res.Concurrency), res.SLO, f4(res.Target), f4(res.MaxSustainableRate), f4(res.MaxGoodput), f4(res.KneeRate),
		strconv.Itoa(len(res.Steps)), res.Stop, strconv.FormatFloat(res.Elapsed.Seconds(), 'f', 3, 64)}
}

// WriteCapacityCSV 把若干次扫描写成容量汇总 CSV（含表头，每次扫描一行）。
func WriteCapacityCSV(w io.Writer, results []SweepResult) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(splitHeader(CapacityCSVHeader)); err != nil {
		return fmt.Errorf("loadgen: capacity csv: %w", err)
	}
	for _, r := range results {
		if err := cw.Write(CapacityRow(r)); err != nil {
			return fmt.Errorf("loadgen: capacity csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("loadgen: capacity csv: %w", err)
	}
	return nil
}

// splitHeader 按逗号拆分表头。
func splitHeader(h string) []string {
	var out []string
	start := 0
	for i := 0; i < len(h); i++ {
		if h[i] == ',' {
			out = append(out, h[start:i])
			start = i + 1
		}
	}
	return append(out, h[start:])
}

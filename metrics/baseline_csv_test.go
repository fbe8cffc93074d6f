package metrics_test

import (
	"bytes"
	"context"
	"errors"
	"github.com/vllm-cibench/cibench/gate"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/metrics"
)

// specHeader 是需求 §5（docs/requirements.md）的汇总 CSV 表头（测试里独立写一份，防止读写两端同错）。
const specHeader = "Execution_Time,Input_Length,Output_Length,Concurrency,Total_Token_Throughput(tokens/s),Output_Token_Throughput(tokens/s),TP75_TTFT(s),TP90_TTFT(s),TP95_TTFT(s),TP99_TTFT(s),MAX_TTFT(s),AVG_TTFT(s),TP75_TPOT(s),TP90_TPOT(s),TP95_TPOT(s),TP99_TPOT(s),MAX_TPOT(s),AVG_TPOT(s),TP90_TPOT_SEC(s),TP95_TPOT_SEC(s),TP99_TPOT_SEC(s),MAX_TPOT_SEC(s),AVG_TPOT_SEC(s),TP90_TIME_BETWEEN_FIRST_AND_SECOND_TOKEN(s),TP95_TIME_BETWEEN_FIRST_AND_SECOND_TOKEN(s),TP99_TIME_BETWEEN_FIRST_AND_SECOND_TOKEN(s),MIN_TIME_BETWEEN_FIRST_AND_SECOND_TOKEN(s),MAX_TIME_BETWEEN_FIRST_AND_SECOND_TOKEN(s),AVG_TIME_BETWEEN_FIRST_AND_SECOND_TOKEN(s),TP75_E2E(s),TP90_E2E(s),TP95_E2E(s),TP99_E2E(s),MAX_E2E(s),AVG_E2E(s),Total_Time(s),QPS,Fail_Rate,Backend,Temperature,Top_K,Top_P,Control_Method,Growth_Rate,Rounds,Num_Prompts,Provider,TP90_COMPLETION_TOKENS,TP95_COMPLETION_TOKENS,TP99_COMPLETION_TOKENS,MIN_COMPLETION_TOKENS,AVG_COMPLETION_TOKENS,AVG_REASONING_TOKENS,AVG_CONTENT_TOKENS,AVG_PROMPT_TOKENS,TP75_SERVER_TTFT(ms),TP90_SERVER_TTFT(ms),TP95_SERVER_TTFT(ms),TP99_SERVER_TTFT(ms),MAX_SERVER_TTFT(ms),AVG_SERVER_TTFT(ms),TP75_SERVER_TPOT(ms),TP90_SERVER_TPOT(ms),TP95_SERVER_TPOT(ms),TP99_SERVER_TPOT(ms),MAX_SERVER_TPOT(ms),AVG_SERVER_TPOT(ms),TP75_SERVER_E2E(ms),TP90_SERVER_E2E(ms),TP95_SERVER_E2E(ms),TP99_SERVER_E2E(ms),MAX_SERVER_E2E(ms),AVG_SERVER_E2E(ms),TP90_SPEC_ACCEPT_RATE,TP95_SPEC_ACCEPT_RATE,TP99_SPEC_ACCEPT_RATE,MIN_SPEC_ACCEPT_RATE,MAX_SPEC_ACCEPT_RATE,AVG_SPEC_ACCEPT_RATE"

// csvRow 按表头生成一行：未给出的列写 -1（不可测）。
func csvRow(vals map[string]string) string {
	cols := strings.Split(specHeader, ",")
	out := make([]string, len(cols))
	for i, c := range cols {
		v, ok := vals[c]
		if !ok {
			v = "-1"
		}
		out[i] = v
	}
	return strings.Join(out, ",")
}

// baseRow 是一行典型的每日汇总（并发 4，2048/1024）。
func baseRow(round string) map[string]string {
	return map[string]string{
		"Execution_Time": "2026-11-21 08:05:01", "Input_Length": "2048", "Output_Length": "1024", "Concurrency": "4",
		"Total_Token_Throughput(tokens/s)": "7373.0000", "Output_Token_Throughput(tokens/s)": "2050.0000",
		"TP75_TTFT(s)": "0.400000", "TP90_TTFT(s)": "0.480000", "TP95_TTFT(s)": "0.520000", "TP99_TTFT(s)": "0.600000",
		"MAX_TTFT(s)": "0.800000", "AVG_TTFT(s)": "0.360000",
		"TP99_E2E(s)": "123.500000", "Total_Time(s)": "96.000000", "QPS": "10.0000", "Fail_Rate": "0.007812",
		"Backend": "openai-chat", "Temperature": "0.6", "Top_K": "8", "Top_P": "1", "Control_Method": "climb",
		"Growth_Rate": "2", "Rounds": round, "Num_Prompts": "128", "Provider": "emulator",
		"AVG_COMPLETION_TOKENS": "1024.0000", "TP99_SERVER_TTFT(ms)": "540.000", "AVG_SPEC_ACCEPT_RATE": "0.7200",
	}
}

// TestReadSummaryCSV 用需求表头的 CSV 读回基线：秒列、ms 列换算、-1 不可测、多轮按轮次排序。
func TestReadSummaryCSV(t *testing.T) {
	text := specHeader + "\n" + csvRow(baseRow("2")) + "\n" + csvRow(baseRow("1")) + "\n"
	b, err := metrics.NewCSVBaseline(strings.NewReader(text), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	_, perf, err := b.ReadDaily(context.Background(), metrics.RunInfo{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	rows := comboRows(perf, combo{Backend: "openai-chat", InputLength: 2048, OutputLength: 1024, Concurrency: 4, ControlMethod: "climb"})
	if len(rows) != 2 || rows[0].Round != 1 || rows[1].Round != 2 {
		t.Fatalf("lookup: %d rows %+v, want rounds 1 and 2", len(rows), rows)
	}
	s := rows[0]
	if s.TTFT.P99 != 600*time.Millisecond || s.TTFT.Max != 800*time.Millisecond || s.TTFT.Count != 128 {
		t.Errorf("TTFT = %+v, want P99 0.6s, Max 0.8s, Count 128", s.TTFT)
	}
	// -1 列不写入：E2E 只有 P99 可测，P75 保持零值，Count 取 Num_Prompts。
	if s.E2E.P99 != 123500*time.Millisecond || s.E2E.P75 != 0 || s.E2E.Count != 128 {
		t.Errorf("E2E = %+v, want P99 123.5s, P75 unset, Count 128", s.E2E)
	}
	if s.ServerTTFT.P99 != 540*time.Millisecond {
		t.Errorf("ServerTTFT.P99 = %v, want 540ms (ms column converted)", s.ServerTTFT.P99)
	}
	if s.TPOT.Valid() {
		t.Errorf("TPOT valid with all columns -1: %+v", s.TPOT)
	}
	if s.QPS != 10 || s.FailRate != 0.007812 || s.NumPrompts != 128 || s.TotalTime != 96*time.Second {
		t.Errorf("scalars QPS=%v FailRate=%v NumPrompts=%d TotalTime=%v", s.QPS, s.FailRate, s.NumPrompts, s.TotalTime)
	}
	if s.SpecAcceptRate.Avg != 0.72 || s.SpecAcceptRate.P99 != -1 || s.SpecAcceptRate.Count != 128 {
		t.Errorf("SpecAcceptRate = %+v, want Avg 0.72 only", s.SpecAcceptRate)
	}
	if s.CompletionTokens.Avg != 1024 || s.Goodput != -1 {
		t.Errorf("CompletionTokens.Avg = %v Goodput = %v", s.CompletionTokens.Avg, s.Goodput)
	}
	if want := time.Date(2026, 11, 21, 8, 5, 1, 0, time.UTC); !s.ExecutionTime.Equal(want) {
		t.Errorf("ExecutionTime = %v, want %v", s.ExecutionTime, want)
	}
	if s.Provider != "emulator" || s.Temperature != 0.6 || s.TopK != 8 || s.TopP != 1 || s.GrowthRate != 2 {
		t.Errorf("provenance fields %+v", s)
	}
	// 同一份 CSV 经 gate.Source 给出的基线：两轮按中位数聚合（P99 0.6s 两轮相同）。
	base, found, err := b.Lookup(context.Background(), gate.Key{Scenario: "any", Backend: "openai-chat", ControlMethod: "climb",
		InputLength: 2048, OutputLength: 1024, Concurrency: 4})
	if err != nil || !found || base.TTFTP99 != 600*time.Millisecond || base.QPS != 10 || base.TTFT.Count != 128 || base.Succeeded != int64(s.Succeeded) {
		t.Errorf("Lookup = %+v found=%v err=%v, want TTFT P99 0.6s, QPS 10, Count 128", base, found, err)
	}
}

// TestReadSummaryCSVErrors 坏数值、缺列、短行都报告行号与列名。
func TestReadSummaryCSVErrors(t *testing.T) {
	bad := baseRow("1")
	bad["QPS"] = "fast"
	for _, tc := range []struct {
		name, text string
		line       int
		column     string
	}{
		{"bad number", specHeader + "\n" + csvRow(bad) + "\n", 2, "QPS"},
		{"missing column", "Input_Length,Output_Length\n128,128\n", 1, "Concurrency"},
		{"short row", specHeader + "\n1,2,3\n", 2, "*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := metrics.ReadSummaryCSV(strings.NewReader(tc.text), nil)
			var ce *metrics.CSVError
			if !errors.As(err, &ce) || !errors.Is(err, metrics.ErrInvalid) {
				t.Fatalf("err = %v, want *CSVError", err)
			}
			if ce.Line != tc.line || ce.Column != tc.column {
				t.Errorf("line %d column %s, want %d %s (%v)", ce.Line, ce.Column, tc.line, tc.column, err)
			}
		})
	}
}

// TestCSVBaselineEmpty 空文件与只有表头都返回 ErrNoBaseline；取消的 ctx 立即返回。
func TestCSVBaselineEmpty(t *testing.T) {
	for _, text := range []string{"", specHeader + "\n"} {
		b, err := metrics.NewCSVBaseline(strings.NewReader(text), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.ReadDaily(context.Background(), metrics.RunInfo{}); !errors.Is(err, metrics.ErrNoBaseline) {
			t.Errorf("%q: err = %v, want ErrNoBaseline", text, err)
		}
		// 经 gate.Source：没有基线不是错误。
		if _, found, err := b.Lookup(context.Background(), gate.Key{Scenario: "s", InputLength: 1}); found || err != nil {
			t.Errorf("%q: Lookup found=%v err=%v, want not found without error", text, found, err)
		}
	}
	b, _ := metrics.NewCSVBaseline(strings.NewReader(specHeader+"\n"+csvRow(baseRow("1"))), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := b.ReadDaily(ctx, metrics.RunInfo{}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestCSVBaselineLookupMiss 确认不同组合不会被当作基线。
func TestCSVBaselineLookupMiss(t *testing.T) {
	b, err := metrics.NewCSVBaseline(strings.NewReader(specHeader+"\n"+csvRow(baseRow("1"))), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if got, found, err := b.Lookup(context.Background(), gate.Key{Scenario: "s", Backend: "openai-chat", InputLength: 2048, OutputLength: 1024, Concurrency: 2}); found || err != nil {
		t.Errorf("Lookup found %+v (err %v) for another concurrency", got, err)
	}
}

// TestCSVRoundTripWithSummaryWriter 与 loadgen 同事的写入器对接：SummaryWriter 写出的 CSV
// 经 ReadSummaryCSV 读回，门禁与看板用到的字段在 CSV 精度内（秒 6 位、毫秒 3 位小数）不变。
func TestCSVRoundTripWithSummaryWriter(t *testing.T) {
	var buf strings.Builder
	w := metrics.NewSummaryWriter(&buf)
	want := dailyResults().Perf
	for _, s := range want {
		if err := w.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	if first, _, _ := strings.Cut(buf.String(), "\n"); first != specHeader {
		t.Fatalf("writer header differs from the spec header")
	}
	got, err := metrics.ReadSummaryCSV(strings.NewReader(buf.String()), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows read back, want %d", len(got), len(want))
	}
	near := func(a, b time.Duration) bool { d := a - b; return d > -time.Microsecond && d < time.Microsecond }
	for i := range want {
		g, w := got[i], want[i]
		if comboOf(g) != comboOf(w) || g.Round != w.Round || g.NumPrompts != w.NumPrompts || g.Provider != w.Provider {
			t.Errorf("row %d identity %+v, want %+v", i, comboOf(g), comboOf(w))
		}
		for _, f := range []struct {
			name string
			g, w time.Duration
		}{
			{"TTFT.P99", g.TTFT.P99, w.TTFT.P99}, {"TTFT.P75", g.TTFT.P75, w.TTFT.P75}, {"E2E.P99", g.E2E.P99, w.E2E.P99},
			{"E2E.Avg", g.E2E.Avg, w.E2E.Avg}, {"TPOTSec.P90", g.TPOTSec.P90, w.TPOTSec.P90},
			{"FirstToSecondToken.Min", g.FirstToSecondToken.Min, w.FirstToSecondToken.Min},
			{"ServerTTFT.P99", g.ServerTTFT.P99, w.ServerTTFT.P99}, {"ServerE2E.Max", g.ServerE2E.Max, w.ServerE2E.Max},
			{"TotalTime", g.TotalTime, w.TotalTime},
		} {
			if !near(f.g, f.w) {
				t.Errorf("row %d %s = %v, want %v", i, f.name, f.g, f.w)
			}
		}
		if d := g.QPS - w.QPS; d > 1e-4 || d < -1e-4 {
			t.Errorf("row %d QPS %v, want %v", i, g.QPS, w.QPS)
		}
		if d := g.FailRate - w.FailRate; d > 1e-6 || d < -1e-6 {
			t.Errorf("row %d FailRate %v, want %v", i, g.FailRate, w.FailRate)
		}
		if g.SpecAcceptRate.Avg != w.SpecAcceptRate.Avg || g.SpecAcceptRate.P99 != -1 {
			t.Errorf("row %d SpecAcceptRate %+v, want avg only", i, g.SpecAcceptRate)
		}
		if !g.ExecutionTime.Equal(w.ExecutionTime) {
			t.Errorf("row %d ExecutionTime %v, want %v", i, g.ExecutionTime, w.ExecutionTime)
		}
	}
}

// FuzzReadSummaryCSV 确认任意输入都不会让读取器崩溃：要么解析成功，要么返回错误；
// 解析成功的每一行都必须有样本数与可测标记一致的时延分布。
func FuzzReadSummaryCSV(f *testing.F) {
	f.Add(specHeader + "\n" + csvRow(baseRow("1")) + "\n")
	f.Add("Input_Length,Output_Length,Concurrency,TP99_TTFT(s)\n1,2,3,0.5\n")
	f.Add("Input_Length,Output_Length,Concurrency,Execution_Time\n1,2,3,2026-01-01 00:00:00\n")
	f.Add("\ufeffInput_Length , Output_Length,Concurrency\n1,2,x\n")
	f.Fuzz(func(t *testing.T, text string) {
		rows, err := metrics.ReadSummaryCSV(strings.NewReader(text), time.UTC)
		if err != nil {
			return
		}
		for _, r := range rows {
			if r.TTFT.Count < 0 || (r.TTFT.Count == 0 && r.TTFT.P99 != 0) {
				t.Fatalf("inconsistent TTFT %+v", r.TTFT)
			}
		}
	})
}

// combo 是一个压测组合的身份（测试用：按它从读回的汇总行里挑出各轮）。
type combo struct {
	Backend       string
	InputLength   int
	OutputLength  int
	Concurrency   int
	ControlMethod string
}

// comboOf 取出一个汇总行的组合身份。
func comboOf(s loadgen.Summary) combo {
	return combo{Backend: s.Backend, InputLength: s.InputLength, OutputLength: s.OutputLength, Concurrency: s.Concurrency, ControlMethod: s.ControlMethod}
}

// comboRows 返回与 c 相同组合的全部行（按轮次升序）。
func comboRows(rows []loadgen.Summary, c combo) []loadgen.Summary {
	var out []loadgen.Summary
	for _, s := range rows {
		if comboOf(s) == c {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Round < out[j].Round })
	return out
}

// TestCSVBaselineIsGateSource 用真实的 CSV 写出与读回作为 gate.Source：按组合聚合、
// 缺组合与空 CSV 都是"没有基线"，取消的 ctx 是错误。
func TestCSVBaselineIsGateSource(t *testing.T) {
	var buf bytes.Buffer
	w := metrics.NewSummaryWriter(&buf)
	rows := []loadgen.Summary{gateRow(4, 40*time.Millisecond, 2*time.Second, 8, 0), gateRow(4, 60*time.Millisecond, 2*time.Second, 8, 0), gateRow(1, time.Millisecond, time.Second, 1, 0)}
	for i := range rows {
		rows[i].ExecutionTime = time.Date(2026, 11, 20, 2, 0, 0, 0, time.UTC)
		rows[i].Round = i + 1
		if err := w.Write(rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	csvSrc, err := metrics.NewCSVBaseline(&buf, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	src := csvSrc
	key := gate.Key{Scenario: "s", Model: "m", Backend: "openai-chat", ControlMethod: "climb", InputLength: 128, OutputLength: 128, Concurrency: 4}
	b, ok, err := src.Lookup(context.Background(), key)
	if err != nil || !ok {
		t.Fatalf("lookup: %v %v", ok, err)
	}
	if math.Abs(b.TTFTP99.Seconds()-0.05) > 1e-6 || b.QPS != 8 {
		t.Fatalf("aggregated %+v", b)
	}
	key.Concurrency = 16
	if _, ok, err := src.Lookup(context.Background(), key); ok || err != nil {
		t.Fatalf("missing combo: %v %v", ok, err)
	}
	emptySrc, err := metrics.NewCSVBaseline(strings.NewReader(metrics.SummaryHeader+"\n"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := emptySrc.Lookup(context.Background(), key); ok || err != nil {
		t.Fatalf("no rows must be 'no baseline', got %v %v", ok, err)
	}
	// 已查过的场景命中缓存；另一个场景的查询在取消的 ctx 下失败，且失败不进缓存。
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	other := key
	other.Scenario, other.Concurrency = "other", 4
	if _, _, err := csvSrc.Lookup(ctx, other); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if b, ok, err := csvSrc.Lookup(context.Background(), other); err != nil || !ok || b.QPS != 8 {
		t.Fatalf("after a cancelled lookup: %+v %v %v (a cancelled query must not be cached)", b, ok, err)
	}
	key.Concurrency = 4
	if _, ok, err := csvSrc.Lookup(ctx, key); !ok || err != nil {
		t.Fatalf("cached scenario with a cancelled ctx: %v %v", ok, err)
	}
}

// gateRow 构造一个组合的一行汇总（TTFT、E2E 只有 P99 与计数）。
func gateRow(c int, ttft, e2e time.Duration, qps, failRate float64) loadgen.Summary {
	l := func(p99 time.Duration) loadgen.Latency { return loadgen.Latency{Count: 16, P99: p99, Max: p99} }
	return loadgen.Summary{InputLength: 128, OutputLength: 128, Concurrency: c, Round: 1, Backend: "openai-chat", ControlMethod: "climb",
		TTFT: l(ttft), E2E: l(e2e), QPS: qps, FailRate: failRate, NumPrompts: 16}
}

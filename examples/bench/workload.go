package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/dataset"
	"github.com/vllm-cibench/cibench/metrics"
)

// workloadDefs 返回真实负载的选项（只有长名，acs-bench 没有这些参数）：轨迹回放、
// shared_prefix（inference-perf 的参数名）、prefix_repetition（vLLM bench 的参数名）、
// sharegpt 与多轮会话。时长以毫秒给出，与 -gi 一致。
func workloadDefs() []*optDef {
	p := func(o *options) *loadgen.Profile { return &o.p }
	ms := func(set func(o *options, d time.Duration)) func(o *options, v float64) error {
		return func(o *options, v float64) error { set(o, time.Duration(v*float64(time.Millisecond))); return nil }
	}
	return []*optDef{
		{long: "trace-block-size", kind: kInt, field: "trace.block_size", min: 1, max: loadgen.MaxTokens,
			help: "mooncake_trace: tokens per hash_id block (default 512)", setInt: func(o *options, v int) { p(o).Trace.BlockSize = v }},
		{long: "trace-salt", kind: kInt, field: "trace.salt", help: "trace replay: salt of the block texts (another salt shares no block with the last run)",
			setInt: func(o *options, v int) { p(o).Trace.Salt = int64(v) }},
		{long: "trace-time-scale", kind: kFloat, field: "trace.time_scale", min: 1e-6, max: dataset.MaxTimeScale,
			help: "trace replay: multiply the trace's gaps by this (0.5 = twice as fast; default 1)", setFloat: func(o *options, v float64) error { p(o).Trace.TimeScale = v; return nil }},
		{long: "trace-start-offset", kind: kFloat, field: "trace.start_offset", min: 0, max: float64(loadgen.MaxTimeout / time.Millisecond),
			help: "trace replay: skip requests before this trace time (ms)", setFloat: ms(func(o *options, d time.Duration) { p(o).Trace.StartOffset = d })},
		{long: "trace-end-offset", kind: kFloat, field: "trace.end_offset", min: 0, max: float64(loadgen.MaxTimeout / time.Millisecond),
			help: "trace replay: stop at this trace time (ms; 0 = end of trace)", setFloat: ms(func(o *options, d time.Duration) { p(o).Trace.EndOffset = d })},
		{long: "trace-max-idle", kind: kFloat, field: "trace.max_idle", min: 0, max: float64(loadgen.MaxTimeout / time.Millisecond),
			help: "trace replay: cap every gap between arrivals at this many ms (0 = no cap)", setFloat: ms(func(o *options, d time.Duration) { p(o).Trace.MaxIdle = d })},

		{long: "shared-prefix-num-groups", kind: kInt, field: "shared_prefix.num_groups", min: 1, max: loadgen.MaxTokens,
			help: "shared_prefix: groups, each with its own system prompt (default 10)", setInt: func(o *options, v int) { p(o).SharedPrefix.NumGroups = v }},
		{long: "shared-prefix-num-prompts-per-group", kind: kInt, field: "shared_prefix.num_prompts_per_group", min: 1, max: loadgen.MaxTokens,
			help: "shared_prefix: questions per group (default 10)", setInt: func(o *options, v int) { p(o).SharedPrefix.NumPromptsPerGroup = v }},
		{long: "shared-prefix-system-prompt-len", kind: kInt, field: "shared_prefix.system_prompt_len", min: 0, max: loadgen.MaxTokens,
			help: "shared_prefix: system prompt tokens (default 100)", setInt: func(o *options, v int) { p(o).SharedPrefix.SystemPromptLen = v }},
		{long: "shared-prefix-question-len", kind: kInt, field: "shared_prefix.question_len", min: 1, max: loadgen.MaxTokens,
			help: "shared_prefix: question tokens (default 50)", setInt: func(o *options, v int) { p(o).SharedPrefix.QuestionLen = v }},
		{long: "shared-prefix-output-len", kind: kInt, field: "shared_prefix.output_len", min: 1, max: loadgen.MaxTokens,
			help: "shared_prefix: output tokens (default 50)", setInt: func(o *options, v int) { p(o).SharedPrefix.OutputLen = v }},
		{long: "shared-prefix-seed", kind: kInt, field: "shared_prefix.seed", help: "shared_prefix: seed of texts and shuffle (default --seed)",
			setInt: func(o *options, v int) { s := int64(v); p(o).SharedPrefix.Seed = &s }},

		{long: "prefix-repetition-prefix-len", kind: kInt, field: "prefix_repetition.prefix_len", min: 0, max: loadgen.MaxTokens,
			help: "prefix_repetition: prefix tokens (default 256)", setInt: func(o *options, v int) { p(o).PrefixRepetition.PrefixLen = v }},
		{long: "prefix-repetition-suffix-len", kind: kInt, field: "prefix_repetition.suffix_len", min: 0, max: loadgen.MaxTokens,
			help: "prefix_repetition: suffix tokens (default 256)", setInt: func(o *options, v int) { p(o).PrefixRepetition.SuffixLen = v }},
		{long: "prefix-repetition-num-prefixes", kind: kInt, field: "prefix_repetition.num_prefixes", min: 1, max: dataset.MaxSetPrompts,
			help: "prefix_repetition: distinct prefixes (default 10)", setInt: func(o *options, v int) { p(o).PrefixRepetition.NumPrefixes = v }},
		{long: "prefix-repetition-output-len", kind: kInt, field: "prefix_repetition.output_len", min: 1, max: loadgen.MaxTokens,
			help: "prefix_repetition: output tokens (default 128)", setInt: func(o *options, v int) { p(o).PrefixRepetition.OutputLen = v }},

		{long: "sharegpt-output-len", kind: kInt, field: "sharegpt.output_len", min: 0, max: loadgen.MaxTokens,
			help: "sharegpt: output tokens of every request (default: the first answer's length)", setInt: func(o *options, v int) { p(o).ShareGPT.OutputLen = v }},

		{long: "multi-turn-conversations", kind: kInt, field: "multi_turn.conversations", min: 0, max: loadgen.MaxConversations,
			help:   "multi-turn sessions per group (0 = off); -c is the number of clients, -il/-ol the question/answer tokens per turn",
			setInt: func(o *options, v int) { p(o).MultiTurn.Conversations = v }},
		{long: "multi-turn-turns-mean", kind: kFloat, field: "multi_turn.turns_mean", min: 1, max: loadgen.MaxTurns,
			help: "multi-turn: mean turns per conversation (default 5)", setFloat: func(o *options, v float64) error { p(o).MultiTurn.TurnsMean = v; return nil }},
		{long: "multi-turn-turns-stddev", kind: kFloat, field: "multi_turn.turns_stddev", min: 0, max: loadgen.MaxTurns,
			help: "multi-turn: standard deviation of the turns (default 0)", setFloat: func(o *options, v float64) error { p(o).MultiTurn.TurnsStddev = v; return nil }},
		{long: "multi-turn-think-time", kind: kFloat, field: "multi_turn.think_time", min: 0, max: float64(loadgen.MaxTimeout / time.Millisecond),
			help: "multi-turn: ms between an answer and the conversation's next turn", setFloat: ms(func(o *options, d time.Duration) { p(o).MultiTurn.ThinkTime = d })},
		{long: "multi-turn-max-active-conversations", kind: kInt, field: "multi_turn.max_active_conversations", min: 0, max: loadgen.MaxConcurrency,
			help: "multi-turn: conversations open at once (default = -c)", setInt: func(o *options, v int) { p(o).MultiTurn.MaxActiveConversations = v }},
		{long: "multi-turn-sampling", kind: kString, field: "multi_turn.sampling",
			help: "multi-turn: how a client picks the next conversation: round_robin or random", setStr: func(o *options, v string) error { p(o).MultiTurn.Sampling = loadgen.SessionSampling(v); return nil }},
	}
}

// readWorkloadInput 读取轨迹与 ShareGPT 数据集的 -i 文件（inputPath，命令行层的字段），错误带选项名与文件名（读取器的
// 错误本身带文件名与行号）。不是这些数据集时返回 false。
func readWorkloadInput(flag, inputPath string, p *loadgen.Profile) (bool, error) {
	dt := p.DatasetType
	if dt != loadgen.DatasetMooncakeTrace && dt != loadgen.DatasetAzureTrace && dt != loadgen.DatasetShareGPT {
		return false, nil
	}
	if inputPath == "" {
		return true, fmt.Errorf("--dataset-type %s: needs %s (the %s file)", dt, flag, dt)
	}
	f, err := os.Open(inputPath)
	if err != nil {
		return true, fmt.Errorf("%s: %w", flag, err)
	}
	defer f.Close()
	switch dt {
	case loadgen.DatasetMooncakeTrace:
		bs := p.Trace.BlockSize
		if bs == 0 {
			bs = dataset.DefaultTraceBlockSize
		}
		p.TraceRequests, err = dataset.ReadMooncakeTrace(f, inputPath, bs)
	case loadgen.DatasetAzureTrace:
		p.TraceRequests, err = dataset.ReadAzureTrace(f, inputPath)
	default:
		p.Prompts, err = dataset.ReadShareGPT(f, inputPath)
	}
	return true, err
}

// ownLengths 报告数据集是否自带输入 / 输出长度（这时不补 -il/-ol 的默认值）。
func ownLengths(dt loadgen.DatasetType) bool {
	switch dt {
	case loadgen.DatasetMooncakeTrace, loadgen.DatasetAzureTrace, loadgen.DatasetSharedPrefix, loadgen.DatasetPrefixRepetition, loadgen.DatasetShareGPT:
		return true
	}
	return false
}

// workloadSink 在 acs-bench 的产物之外写真实负载的三个新文件（workload_*、turns_*、sessions_*，
// 名字由汇总文件名换前缀得到）。它只是另一个观察者：Observer() 只挂 OnRecord 与 OnGroupEnd，
// 与 acs-bench 产物、进度行一起经 loadgen.Tee 接上，不必包装别的出口。
// 只在真实负载（自带长度的数据集、多轮会话）时创建；sessions 只在轨迹回放与多轮会话时写。
type workloadSink struct {
	base     string // 汇总文件名（summary_…csv），新文件由它换前缀得到
	sessions bool
	create   func(name string) (io.WriteCloser, error)
	files    []string
	closers  []io.Closer
	ww       *metrics.WorkloadWriter
	sw       *metrics.SessionWriter
}

// newWorkloadSink 创建写往 create 的真实负载产物接收器。
func newWorkloadSink(base string, sessions bool, create func(string) (io.WriteCloser, error)) *workloadSink {
	return &workloadSink{base: base, sessions: sessions, create: create}
}

// Observer 返回写会话行（OnRecord）与 workload/turns 行（OnGroupEnd）的观察者。
func (s *workloadSink) Observer() *loadgen.Observer {
	return &loadgen.Observer{OnRecord: s.WriteRecord, OnGroupEnd: s.EndGroup}
}

// open 创建一个以 prefix 替换 "summary_" 前缀的文件。
func (s *workloadSink) open(prefix string) (io.Writer, error) {
	name := prefix + strings.TrimPrefix(s.base, "summary_")
	f, err := s.create(name)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	s.files = append(s.files, name)
	s.closers = append(s.closers, f)
	return f, nil
}

// WriteRecord 写会话行（只在轨迹回放与多轮会话时）。
func (s *workloadSink) WriteRecord(r *loadgen.Record) error {
	if !s.sessions {
		return nil
	}
	if s.sw == nil {
		f, err := s.open("sessions_")
		if err != nil {
			return err
		}
		s.sw = metrics.NewSessionWriter(f)
	}
	return s.sw.WriteRecord(r)
}

// EndGroup 写 workload 与 turns 行。
func (s *workloadSink) EndGroup(sum loadgen.Summary) error {
	if s.ww == nil {
		w, err := s.open("workload_")
		if err != nil {
			return err
		}
		var t io.Writer
		if len(sum.Workload.Turns) > 0 {
			if t, err = s.open("turns_"); err != nil {
				return err
			}
		}
		s.ww = metrics.NewWorkloadWriter(w, t)
	}
	if s.sw != nil {
		if err := s.sw.Flush(); err != nil {
			return err
		}
	}
	return s.ww.Write(sum)
}

// Close 刷新并关闭新文件。
func (s *workloadSink) Close() error {
	var first error
	if s.sw != nil {
		first = s.sw.Flush()
	}
	for _, c := range s.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// printWorkload 在 stderr 上给出一组的真实负载要点：轨迹的发出滞后（跟不上时刻表时明说）、
// 服务端前缀命中率、抢占与 KV 峰值，多轮会话各轮的 TTFT。没有这些数据时不打印。
func printWorkload(w io.Writer, s loadgen.Summary) {
	wl := s.Workload
	if lag := wl.DispatchLag; lag.Valid() {
		verdict := "kept the schedule"
		if lag.P50 > time.Millisecond {
			verdict = "DID NOT keep the schedule (median > 1ms): the client is too slow for this trace"
		}
		fmt.Fprintf(w, "  dispatch lag p50 %.3fms p99 %.3fms max %.3fms: %s\n", ms(lag.P50), ms(lag.P99), ms(lag.Max), verdict)
	}
	if c := wl.Cache; c.HitRate >= 0 || c.Preemptions >= 0 || c.PeakKVUsage >= 0 {
		fmt.Fprintf(w, "  server: prefix cache hit rate %s, preemptions %s, peak KV usage %s\n", orNA(c.HitRate), orNA(c.Preemptions), orNA(c.PeakKVUsage))
	}
	for _, t := range wl.Turns {
		fmt.Fprintf(w, "  turn %d: %d req, TTFT p50 %.3fms, avg prompt %.0f tokens, avg cached %s\n", t.Turn, t.Requests, ms(t.TTFT.P50), t.AvgPromptTokens, orNA(t.AvgCachedTokens))
	}
}

// ms 把时长写成毫秒。
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// orNA 把 -1（不可得）写成 n/a。
func orNA(v float64) string {
	if v < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.4g", v)
}

package metrics_test

import (
	"time"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/metrics"
	"github.com/vllm-cibench/cibench/runtype"
)

// ms 把毫秒数转成 time.Duration，让夹具数值读起来像 CSV。
func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// latency 构造一组单调的时延统计（min ≤ p75 ≤ … ≤ max），base 为 P75 毫秒数。
func latency(count int64, base float64) loadgen.Latency {
	return loadgen.Latency{
		Count: count, Min: ms(base * 0.5), P75: ms(base), P90: ms(base * 1.2), P95: ms(base * 1.3),
		P99: ms(base * 1.5), Max: ms(base * 2), Avg: ms(base * 0.9),
	}
}

// summary 构造一个接近真实每日运行的压测分组：时延随并发与输入长度增长。
func summary(in, out, conc, round int) loadgen.Summary {
	n := conc * 32
	f := float64(conc) * (1 + float64(in)/2048)
	spec := loadgen.Unmeasured()
	spec.Avg = 0.72
	return loadgen.Summary{
		ExecutionTime: time.Date(2026, 11, 21, 0, 5, round, 0, time.UTC),
		InputLength:   in, OutputLength: out, Concurrency: conc, Round: round,
		Provider: "emulator", Backend: "openai-chat", Temperature: 0.6, TopK: 8, TopP: 1,
		ControlMethod: "climb", GrowthRate: 2, ConcurrencyBackend: "threading-pool", DatasetType: "random",
		NumPrompts: n, Succeeded: n - 1, Failed: 1,
		TotalTime: ms(12000 * f), TotalTokenThroughput: 1843.25 * float64(conc), OutputTokenThroughput: 512.5 * float64(conc),
		QPS: 2.5 * float64(conc), FailRate: 1 / float64(n), Goodput: -1,
		TTFT: latency(int64(n-1), 50*f), TPOT: latency(int64(n-1), 10*f), TPOTSec: latency(int64(n-1)*int64(out-1), 10*f),
		FirstToSecondToken: latency(int64(n-1), 11*f), E2E: latency(int64(n-1), (50+10*float64(out))*f),
		SlotWait: latency(int64(n-1), 0.25),
		CompletionTokens: loadgen.Values{Count: int64(n - 1), P75: float64(out), P90: float64(out), P95: float64(out),
			P99: float64(out), Min: float64(out), Max: float64(out), Avg: float64(out)},
		AvgReasoningTokens: 0, AvgContentTokens: float64(out), AvgPromptTokens: float64(in), TokenSource: "usage",
		ServerTTFT: latency(int64(n), 45*f), ServerTPOT: latency(int64(n), 9.5*f), ServerE2E: latency(int64(n), (45+9.5*float64(out))*f),
		SpecAcceptRate: spec,
		Workload: loadgen.WorkloadStats{
			DispatchLag: latency(int64(n-1), 0.4),
			Cache: loadgen.ServerCache{HitRate: 0.375, PrefixHits: 0.375 * float64(n*in), PrefixQueries: float64(n * in),
				Preemptions: float64(conc - 1), PeakKVUsage: 0.25 * float64(conc)},
			AvgCachedTokens: 0.375 * float64(in), CachedTokensCount: n - 1,
			Turns: []loadgen.TurnSummary{
				{Turn: 1, Requests: n / 2, Succeeded: n / 2, TTFT: latency(int64(n/2), 50*f), AvgPromptTokens: float64(in), AvgCachedTokens: 0},
				{Turn: 2, Requests: n / 2, Succeeded: n/2 - 1, TTFT: latency(int64(n/2-1), 20*f), AvgPromptTokens: float64(2*in + out), AvgCachedTokens: float64(in + out)},
			},
		},
	}
}

// dailyResults 是一次每日运行的完整结果：两个压测组合、三个功能用例（含失败与跳过）、GPQA 精度。
func dailyResults() results {
	return results{
		Info: metrics.RunInfo{
			Model: "Qwen3-32B", ModelRaw: "qwen3-32b-w8a8-internal", Quant: "w8a8", Scenario: "local-hybrid",
			RunType: runtype.Daily, Commit: "0123abcd", Branch: "main", RunID: "daily-20261121",
		},
		Perf: []loadgen.Summary{summary(128, 128, 1, 1), summary(2048, 1024, 4, 1)},
		// 两次容量扫描：一次找到 19.6875 请求/秒，一次起始速率就不满足（不导出）。
		Capacity: []loadgen.SweepResult{
			{Backend: "openai-chat", InputLength: 128, OutputLength: 128, MaxSustainableRate: 19.6875, Stop: loadgen.SweepStopConverged},
			{Backend: "openai-chat", InputLength: 2048, OutputLength: 1024, Stop: loadgen.SweepStopStartFailed},
		},
		Functional: &functional.Report{
			Model: "Qwen3-32B", Started: time.Date(2026, 11, 21, 0, 1, 0, 0, time.UTC), Duration: 8 * time.Second,
			Results: []functional.Result{
				{CaseID: "chat.basic", Suite: "chat", Status: functional.StatusPass, Duration: ms(120)},
				{CaseID: "chat.multi_turn", Suite: "chat", Status: functional.StatusFail, Reason: "expected 2 choices", Duration: ms(340)},
				{CaseID: "tools.parallel", Suite: "function_call", Status: functional.StatusSkip, Reason: "tools unsupported"},
			},
			Suites: []functional.SuiteSummary{
				{Suite: "chat", Total: 2, Passed: 1, Failed: 1, Ran: 2, PassRatio: ptr(0.5)},
				{Suite: "function_call", Total: 1, Skipped: 1},
			},
		},
		Accuracy: []accuracy.EvalResult{{
			Dataset: "gpqa", Model: "Qwen3-32B", Score: 0.625, Examples: 198, Requests: 1980, Errors: 2,
			Metrics: map[string]float64{"score": 0.625, "score:std": 0.484},
			Source: &accuracy.DataSource{Kind: "url", Location: "https://openaipublic.blob.core.windows.net/simple-evals/", Files: []accuracy.DataFile{
				{Name: "gpqa_diamond.csv", Location: "https://openaipublic.blob.core.windows.net/simple-evals/gpqa_diamond.csv", SHA256: "7a0a3f3bb7dc1c3f0c5c0e04b4b6fba19f7a3a6f9a3de1f7a0f0c5d4e1f2a3b4"}}},
		}},
	}
}

// ptr 返回 v 的指针，用于填写可选的通过率。
func ptr(v float64) *float64 { return &v }

// Package acme 是一个虚构团队（ACME）加进 cibench 参考流水线的东西，全部经公开 API：
//
//   - 一个厂商能力 acme_lora（functional.Features.Register），场景 YAML 的 features 可以声明它；
//   - 一个依赖该能力的功能用例 acme/short_answer（driver.Options.Cases）；
//   - 一个性能导出器：数每个档位的请求与失败，写出 acme_requests.json（driver.Options.PerfExporters）；
//   - 一个精度评测 acme-words（accuracy.Registry.Register），精度配置的 datasets 可以列出它；
//   - 一个门禁 acme/failed_requests：导出器看到的失败请求数必须为 0（driver.Options.Gates）。
//
// 它在一个独立的 Go 模块里（examples/team/go.mod），只导入 cibench 的公开包；main.go 用
// Apply 把这些东西交给 driver.Run。没有全局状态：每次 Apply 都新建登记表与计数器。
package acme

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/examples/ci/driver"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
)

// FeatureLoRA 是 ACME 的厂商能力：服务端加载了 ACME 的 LoRA 适配器。
const FeatureLoRA functional.Feature = "acme_lora"

// EvalName 是 ACME 评测在精度配置 datasets[].name 中的名字。
const EvalName = "acme-words"

// Settings 是 ACME 附加物的参数；零值字段取 DefaultSettings 的值。
type Settings struct {
	// CaseTokenLimit 是用例 acme/short_answer 允许的 completion_tokens 上限（请求 max_tokens=8、ignore_eos）。
	CaseTokenLimit int
	// EvalMinWords 是 acme-words 评测中一条回复得分所需的最少词数。
	EvalMinWords int
}

// DefaultSettings 返回 ACME 的默认参数：用例允许 8 个 token，评测要求回复至少 1 个词。
func DefaultSettings() Settings { return Settings{CaseTokenLimit: 8, EvalMinWords: 1} }

// Apply 把 ACME 的能力、用例、导出器、评测与门禁加进 o。o.Features 与 o.Evals 为 nil 时
// 从内置登记表出发。名字冲突（例如调用两次）返回登记表的错误。
func Apply(o *driver.Options, s Settings) error {
	d := DefaultSettings()
	if s.CaseTokenLimit == 0 {
		s.CaseTokenLimit = d.CaseTokenLimit
	}
	if s.EvalMinWords == 0 {
		s.EvalMinWords = d.EvalMinWords
	}
	if o.Features == nil {
		o.Features = functional.DefaultFeatures()
	}
	if err := o.Features.Register(FeatureLoRA); err != nil {
		return err
	}
	if o.Evals == nil {
		o.Evals = accuracy.DefaultRegistry()
	}
	if err := o.Evals.Register(EvalName, func(accuracy.Source, accuracy.EvalOptions) (accuracy.Eval, error) {
		return wordsEval{min: s.EvalMinWords}, nil
	}); err != nil {
		return err
	}
	o.Cases = append(o.Cases, shortAnswer(s.CaseTokenLimit))
	st := &stats{}
	o.PerfExporters = append(o.PerfExporters, st.exporter)
	o.Gates = append(o.Gates, st.gate)
	return nil
}

// shortAnswer 是依赖 acme_lora 的功能用例：max_tokens=8 且 ignore_eos 的回答，
// usage.completion_tokens 不得超过 limit。
func shortAnswer(limit int) functional.Case {
	return functional.Case{
		ID: "short_answer", Suite: "acme", Requires: []functional.Feature{FeatureLoRA},
		Description: fmt.Sprintf("max_tokens=8 with ignore_eos yields at most %d completion tokens", limit),
		Run: func(ctx context.Context, t *functional.T) {
			resp, err := t.Post(ctx, "/v1/chat/completions", map[string]any{
				"model": t.Model(), "max_tokens": 8, "ignore_eos": true,
				"messages": []map[string]string{{"role": "user", "content": "hello from acme"}},
			})
			if err != nil {
				t.Fatalf("request: %v", err)
			}
			if resp.Status != 200 {
				t.Fatalf("status %d, want 200: %s", resp.Status, resp.Body)
			}
			var body struct {
				Usage struct {
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(resp.Body, &body); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got := body.Usage.CompletionTokens; got > limit || got == 0 {
				t.Fatalf("completion_tokens = %d, want 1..%d", got, limit)
			}
		},
	}
}

// stats 是导出器与门禁共享的计数（每次 Apply 一份）：导出器在性能档位运行时累计，
// 门禁在运行结束时读取。loadgen 串行调用同一个接收方，但不同档位的导出器各自计数，
// 所以累计时加锁。
type stats struct {
	mu       sync.Mutex
	requests map[string]int // 场景名 → 请求数
	failed   map[string]int // 场景名 → 失败数
}

// counter 是一个档位的导出器：数请求与失败，关闭时写出 acme_requests.json。
type counter struct {
	st               *stats
	run              driver.PerfRun
	requests, failed int
	byClass          map[string]int
}

// WriteRecord 计数一条记录。
func (c *counter) WriteRecord(r *loadgen.Record) error {
	c.requests++
	if !r.OK {
		c.failed++
		c.byClass[r.ErrorClass]++
	}
	return nil
}

// exporter 是 driver.PerfExporter：为一个档位创建计数器。
func (st *stats) exporter(run driver.PerfRun) (loadgen.RecordSink, func() error, error) {
	c := &counter{st: st, run: run, byClass: map[string]int{}}
	return c, c.close, nil
}

// close 把档位的计数并入场景总数，并写出 acme_requests.json。
func (c *counter) close() error {
	c.st.mu.Lock()
	if c.st.requests == nil {
		c.st.requests, c.st.failed = map[string]int{}, map[string]int{}
	}
	c.st.requests[c.run.Scenario] += c.requests
	c.st.failed[c.run.Scenario] += c.failed
	c.st.mu.Unlock()
	w, err := c.run.Create("acme_requests.json")
	if err != nil {
		return err
	}
	err = json.NewEncoder(w).Encode(map[string]any{"profile": c.run.Profile, "requests": c.requests, "failed": c.failed, "failed_by_class": c.byClass})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// gate 是 driver.GateFunc：每个跑过性能阶段的场景一条门禁，导出器看到的失败请求必须为 0；
// 性能阶段有结果行而导出器一条记录也没看到也是失败（导出器被绕过了）。
func (st *stats) gate(_ context.Context, res report.Result) ([]report.Gate, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []report.Gate
	for _, sc := range res.Scenarios {
		if len(sc.Perf) == 0 {
			continue
		}
		g := report.Gate{Kind: report.GatePerformance, Scenario: sc.Name, Name: "acme/failed_requests", Metric: "acme_failed_requests",
			Current: float64(st.failed[sc.Name]), Limit: 0, Verdict: report.VerdictPass,
			Reason: fmt.Sprintf("acme exporter saw %d requests, %d failed", st.requests[sc.Name], st.failed[sc.Name])}
		if st.failed[sc.Name] > 0 || st.requests[sc.Name] == 0 {
			g.Verdict = report.VerdictFail
		}
		out = append(out, g)
	}
	return out, nil
}

// wordsEval 是 acme-words 评测：三道自带的题，回复至少 min 个词得 1 分。它不读
// simple-evals 的数据（Source 被忽略），题目随代码提供。
type wordsEval struct{ min int }

// Name 返回 EvalName。
func (wordsEval) Name() string { return EvalName }

// Examples 返回三道固定的题。
func (wordsEval) Examples(context.Context) ([]accuracy.Example, error) {
	var out []accuracy.Example
	for i, q := range []string{"Name a colour.", "Name a fruit.", "Name a city."} {
		out = append(out, accuracy.Example{Index: i, ID: fmt.Sprintf("%s/%d", EvalName, i), Samples: 1,
			Messages: []accuracy.Message{{Role: "user", Content: q}}})
	}
	return out, nil
}

// Score 在回复至少有 min 个词时记 1 分。
func (e wordsEval) Score(_ context.Context, ex accuracy.Example, responses []string) (accuracy.SingleResult, error) {
	s := 0.0
	if len(strings.Fields(responses[0])) >= e.min {
		s = 1
	}
	return accuracy.SingleResult{Index: ex.Index, ID: ex.ID, Score: s, Prompt: ex.Messages[0].Content, Response: responses[0], Responses: responses}, nil
}

// 编译期检查：计数器是 loadgen 的接收方，评测实现 accuracy.Eval。
var (
	_ loadgen.RecordSink = (*counter)(nil)
	_ accuracy.Eval      = wordsEval{}
)

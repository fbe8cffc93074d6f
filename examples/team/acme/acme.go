// Package acme 是一个虚构团队（ACME）加进 cibench 参考流水线的东西，全部经公开 API：
//
//   - 一个厂商能力 acme_lora（functional.Features.Register），场景 YAML 的 features 可以声明它；
//   - 一个依赖该能力的功能用例 acme/short_answer（pipeline.Options.Cases）；
//   - 一个性能导出器：数每个档位的请求与失败，写出 acme_requests.json（pipeline.Options.PerfExporters）；
//   - 一个精度评测 acme-words（accuracy.Registry.Register），精度配置的 datasets 可以列出它；
//   - 一个门禁 acme/failed_requests：导出器看到的失败请求数必须为 0（pipeline.Options.Gates）；
//   - 一个团队阶段 acme-models（pipeline.Options.TeamStages）：向服务要模型列表，结果作为分节
//     "acme_models" 记进报告，它自己的 report.Renderer 把它渲染进 JUnit 与 HTML，门禁
//     acme/model_listed 读同一个分节——report 包一行都不用改；
//   - 自己的部署方式 acme-fleet、成批到达的 Pacer、embeddings 端点的压测与从 YAML 读参数的
//     用例 acme/greeting（见 seams.go）。
//
// 它在一个独立的 Go 模块里（examples/team/go.mod），只导入 cibench 的公开包；main.go 用
// Apply 把这些东西交给 pipeline.Run。没有全局状态：登记表是 Options 里的值。
package acme

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report/perfreport"
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
	// ProbeModel 是团队阶段 acme-models 期望服务列出的模型；空取场景的 served-model-name。
	ProbeModel string
}

// DefaultSettings 返回 ACME 的默认参数：用例允许 8 个 token，评测要求回复至少 1 个词。
func DefaultSettings() Settings { return Settings{CaseTokenLimit: 8, EvalMinWords: 1} }

// Apply 把 ACME 的能力、用例、导出器、评测与门禁加进 o。o.Features 与 o.Evals 为 nil 时
// 从内置登记表出发。名字冲突（例如调用两次）返回登记表的错误。导出器与门禁之间不共享
// 内存：导出器写文件，门禁读文件。
func Apply(o *pipeline.Options, s Settings) error {
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
		o.Evals = simpleevals.Registry()
	}
	if err := o.Evals.Register(EvalName, func(accuracy.Source, accuracy.EvalOptions) (accuracy.Eval, error) {
		return wordsEval{min: s.EvalMinWords}, nil
	}); err != nil {
		return err
	}
	o.Cases = append(o.Cases, shortAnswer(s.CaseTokenLimit))
	o.PerfExporters = append(o.PerfExporters, exporter)
	o.Gates = append(o.Gates, failedRequestsGate, modelListedGate)
	o.TeamStages = append(o.TeamStages, stage(s.ProbeModel))
	return applySeams(o)
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

// exportFile 是导出器在每个档位目录下写出的文件名，门禁读它。
const exportFile = "acme_requests.json"

// export 是 exportFile 的内容。
type export struct {
	Profile       string         `json:"profile"`
	Requests      int            `json:"requests"`
	Failed        int            `json:"failed"`
	FailedByClass map[string]int `json:"failed_by_class"`
	// Arrivals 是不同的计划到达时刻的个数（Record.Intended）：成批到达的档位（acme-burst）
	// 每批一个时刻，少于请求数。
	Arrivals int `json:"arrivals"`
}

// counter 是一个档位的导出器：数请求与失败（按错误类别），关闭时写出 exportFile。
// loadgen 串行调用一次运行的全部钩子，所以不加锁。
type counter struct {
	run     pipeline.PerfRun
	exp     export
	instant map[int64]bool
}

// record 是 OnRecord 钩子：计数一条记录。
func (c *counter) record(r *loadgen.Record) error {
	c.exp.Requests++
	if k := r.Intended.UnixNano(); !c.instant[k] {
		c.instant[k] = true
		c.exp.Arrivals++
	}
	if !r.OK {
		c.exp.Failed++
		c.exp.FailedByClass[r.ErrorClass]++
	}
	return nil
}

// exporter 是 pipeline.PerfExporter：为一个档位创建计数器，只挂 OnRecord 一个钩子。
func exporter(run pipeline.PerfRun) (*loadgen.Observer, func() error, error) {
	c := &counter{run: run, exp: export{Profile: run.Profile, FailedByClass: map[string]int{}}, instant: map[int64]bool{}}
	return &loadgen.Observer{OnRecord: c.record}, c.close, nil
}

// close 写出 exportFile（经 driver 的 Create：脱敏、原子落盘、进入 manifest 与 HTML）。
func (c *counter) close() error {
	w, err := c.run.Create(exportFile)
	if err != nil {
		return err
	}
	err = json.NewEncoder(w).Encode(c.exp)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// failedRequestsGate 是 pipeline.GateFunc：每个跑过性能阶段的场景一条门禁，读该场景各档位的 exportFile，
// 失败请求必须为 0；性能阶段有结果行而没有任何导出文件也是失败（导出器被绕过了）。
// 它读产物而不是与导出器共享内存，所以按阶段拆分的 CI 的汇总 job 里也成立。
func failedRequestsGate(_ context.Context, run pipeline.GateRun) ([]gate.Gate, error) {
	var out []gate.Gate
	var errs []error
	for _, sc := range run.Result.Scenarios {
		rows, err := perfreport.Rows(sc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(rows) == 0 {
			continue
		}
		files, _ := fs.Glob(run.Files, path.Join(sc.Name, "perf", "*", exportFile))
		total := export{}
		for _, f := range files {
			var e export
			b, err := fs.ReadFile(run.Files, f)
			if err == nil {
				err = json.Unmarshal(b, &e)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", f, err))
				continue
			}
			total.Requests += e.Requests
			total.Failed += e.Failed
		}
		g := gate.Gate{Kind: gate.KindPerformance, Scenario: sc.Name, Name: "acme/failed_requests", Metric: "acme_failed_requests",
			Current: float64(total.Failed), Limit: 0, Verdict: gate.VerdictPass,
			Reason: fmt.Sprintf("acme exporter saw %d requests in %d profile(s), %d failed", total.Requests, len(files), total.Failed)}
		if total.Failed > 0 || total.Requests == 0 {
			g.Verdict = gate.VerdictFail
		}
		out = append(out, g)
	}
	return out, errors.Join(errs...)
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

// 编译期检查：评测实现 accuracy.Eval，导出器与门禁是驱动要的函数类型。
var (
	_ accuracy.Eval         = wordsEval{}
	_ pipeline.PerfExporter = exporter
	_ pipeline.GateFunc     = failedRequestsGate
)

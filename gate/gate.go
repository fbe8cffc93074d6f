package gate

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/vllm-cibench/cibench/explain"
)

// Verdict 是一个门禁（或整次运行）的结论。
type Verdict string

// 门禁结论取值。NoBaseline 与 Skipped 都不是失败：前者表示没有可比的每日
// 基线（不凭空构造），后者表示该项未配置或未执行。
const (
	VerdictPass       Verdict = "pass"
	VerdictFail       Verdict = "fail"
	VerdictNoBaseline Verdict = "no_baseline"
	VerdictSkipped    Verdict = "skipped"
	// VerdictInterrupted 表示该项因运行被中断（Ctrl-C、SIGTERM、取消）没有做完而
	// 无法判定。它不是失败：只有中断、没有失败的运行以 ExitInterrupted 结束。
	VerdictInterrupted Verdict = "interrupted"
)

// Kind 是门禁的类别。
type Kind string

// 门禁类别取值。
const (
	KindFunctional  Kind = "functional"
	KindAccuracy    Kind = "accuracy"
	KindPerformance Kind = "performance"
	KindStage       Kind = "stage" // 阶段本身失败（部署失败、超时、服务中途退出）
)

// 门禁指标名，与 Prometheus 命名习惯一致（时间单位为秒）。
const (
	MetricFailedCases = "failed_cases"
	MetricScore       = "score"
	MetricTTFTP99     = "ttft_p99_seconds"
	MetricE2EP99      = "e2e_p99_seconds"
	MetricQPS         = "qps"
	MetricFailRate    = "fail_rate"
	MetricStageError  = "stage_error"
)

// 退出码语义（驱动据此退出）：
//   - ExitOK：没有任何门禁失败。存在 no_baseline / skipped 时仍为 0，
//     报告会明确列出哪些门禁因无基线而未判定。
//   - ExitGateFailed：至少一个门禁失败（功能用例失败、精度低于阈值、
//     性能回归超限、失败率超限，或某阶段无法完成）。
//   - ExitError：驱动自身无法运行（参数或配置错误、产物目录不可写），
//     此时没有可信的门禁结论。由驱动使用，ExitCode 不返回。
//   - ExitInterrupted：运行被 Ctrl-C / SIGTERM 中断；已测得的部分仍写入报告。
//     有 interrupted 门禁而无失败门禁时 ExitCode 返回它；门禁失败优先于中断。
const (
	ExitOK          = 0
	ExitGateFailed  = 1
	ExitError       = 2
	ExitInterrupted = 130
)

// Gate 是一项门禁的结论，带着判定所用的全部数值，报告据此写明"哪项、差多少"。
type Gate struct {
	Kind     Kind     `json:"kind"`
	Scenario string   `json:"scenario"`
	Name     string   `json:"name"`   // 场景内唯一，如 "perf/in128-out128-c4-openai-chat/ttft_p99_seconds"
	Metric   string   `json:"metric"` // Metric* 常量之一
	Key      *Key     `json:"key,omitempty"`
	Current  float64  `json:"current"`
	Baseline *float64 `json:"baseline,omitempty"`
	// DeltaPct 是相对基线（或精度阈值）的变化百分比，(current−ref)/ref×100。
	DeltaPct    *float64 `json:"delta_pct,omitempty"`
	Limit       float64  `json:"limit"` // 阈值：比例门禁为百分比（+10 / −5），绝对门禁为原值
	Verdict     Verdict  `json:"verdict"`
	Reason      string   `json:"reason,omitempty"`
	BaselineRun string   `json:"baseline_run,omitempty"`

	// 以下是性能门禁的统计证据（perf.go）。Quantile 是实际比较的分位点
	// （lower_quantile 时可能低于 0.99）；Mode 是判定模式；Support 说明样本是否
	// 足以支撑该分位；Samples 是两侧样本量；Interval 是相对变化的置信区间。
	Quantile float64      `json:"quantile,omitempty"`
	Mode     string       `json:"mode,omitempty"`
	Support  string       `json:"support,omitempty"`
	Samples  *SampleSizes `json:"samples,omitempty"`
	Interval *Interval    `json:"interval,omitempty"`
	// Statistic 是做出判定的统计量："p99"（或 lower_quantile 降到的 "p95" 等）、"rate"（QPS），
	// 或 "geomean_shift"（on_insufficient: shift 时由整个分布的位移判定，见 Shift）。
	Statistic string `json:"statistic,omitempty"`
	// Shift 是 geomean_shift 判定的证据；Current/Baseline/DeltaPct 仍是需求的 P99 数字。
	Shift *Shift `json:"shift,omitempty"`
	// Explain 是两侧阶段分解的比较（explain.Compare），Attribution 是与本项指标相关的那一段
	// 文字（TTFT 门禁取 TTFT 的归因，E2E 与 QPS 门禁取 E2E 的归因，再加缓存、抢占、KV 的前后值）。
	// 两侧都没有分解时为空。门禁失败或告警时 Reason 末尾同样写上它，红色的门禁因此自带解释。
	Explain     *explain.Explanation `json:"explain,omitempty"`
	Attribution string               `json:"attribution,omitempty"`
	// Distribution 是 TTFT、E2E 门禁两侧逐请求样本在 DistributionLevels 上的分位数（秒），
	// 报告据它把当前与基线的分布画在一张图上；任一侧没有样本时为 nil。
	Distribution *Distribution `json:"distribution,omitempty"`
	// BaselineOutputThroughput 是 QPS 门禁所比基线的输出 token 吞吐（tokens/s，各轮中位数），报告的
	// 吞吐柱状图据它画基线标记；基线没有记录吞吐时为 nil。它只是给人看的旁证，不参与判定。
	BaselineOutputThroughput *float64 `json:"baseline_output_throughput,omitempty"`
}

// Distribution 是一项时延门禁两侧的分布：Levels 是分位点（0.01…0.99），Current、Baseline 是对应的
// 分位数（秒），与 Levels 一一对应。分位数用 Quantile 的规则（与自助区间相同）。
type Distribution struct {
	Levels   []float64 `json:"levels"`
	Current  []float64 `json:"current"`
	Baseline []float64 `json:"baseline"`
}

// Shift 是"整个分布的位移"判定的证据：几何均值之比的变化与其 Welch t 区间。
type Shift struct {
	// ChangePct 是几何均值的相对变化（百分比）；LoPct、HiPct 是其置信区间，Level 是置信水平。
	ChangePct float64 `json:"change_pct"`
	LoPct     float64 `json:"lo_pct"`
	HiPct     float64 `json:"hi_pct"`
	Level     float64 `json:"level"`
	// DF 是 Welch–Satterthwaite 自由度；Current、Baseline 是两侧参与的样本数。
	DF       float64 `json:"df"`
	Current  int     `json:"current"`
	Baseline int     `json:"baseline"`
}

// ExitCode 返回门禁对应的退出码：任何一项失败为 ExitGateFailed；否则有被中断的
// 项为 ExitInterrupted；否则 ExitOK。
func ExitCode(gates []Gate) int {
	code := ExitOK
	for _, g := range gates {
		switch g.Verdict {
		case VerdictFail:
			return ExitGateFailed
		case VerdictInterrupted:
			code = ExitInterrupted
		}
	}
	return code
}

// Evaluate 对每个场景计算门禁：
//   - 每个阶段错误一项 stage 门禁（失败；被中断的为 interrupted）；
//   - 功能：没有失败或被取消的用例（skip/unsupported 不算失败），且 src 实现
//     FunctionalSource 时，每日基线中通过的用例现在没有变成 skip/unsupported/消失；
//     未执行且无错误时 skipped；功能阶段被中断而没有报告、或只有被取消的用例时
//     interrupted（作业超时取消的用例仍是失败）；
//   - 精度：JudgeAccuracy 的判定（精度阶段经 accuracy.Gate 调用它）原样成为门禁；精度阶段被中断、只评了部分样本时
//     interrupted（部分样本上的分数不代表模型，不拿它判定）；
//   - 性能：每个组合的失败率 ≤ MaxFailRate（不需基线），以及 TTFT P99、
//     E2E P99、QPS 与 src 中同键的每日基线比较；无基线时 no_baseline。
//
// src 为 nil 等同于没有任何基线。查询失败不会中止评估，而是写进对应门禁的原因。
// ctx 取消时返回已算出的门禁与包装了 ctx.Err() 的错误。
func Evaluate(ctx context.Context, scenarios []Scenario, th Thresholds, src Source) ([]Gate, error) {
	th = th.withDefaults()
	var gates []Gate
	for _, sc := range scenarios {
		for _, e := range sc.Errors {
			gates = append(gates, StageGate(sc.Name, e))
		}
		gates = append(gates, functionalGate(ctx, sc, src))
		for _, a := range sc.Accuracy {
			gates = append(gates, AccuracyGate(sc, a))
		}
		keys, groups := groupPerf(sc)
		for _, k := range keys {
			if err := ctx.Err(); err != nil {
				return gates, fmt.Errorf("gate: evaluate: %w", err)
			}
			cur := Aggregate(groups[k])
			cur.Samples = findSamples(sc.Samples, k)
			gates = append(gates, perfGates(ctx, k, cur, th, src)...)
		}
	}
	return gates, nil
}

// StageGate 把一个阶段错误变成 stage 门禁：失败（Current 1），被中断时为 interrupted。
// 团队自己的阶段失败时也可以用它得到与内置阶段同样的门禁。
func StageGate(scenario string, e StageError) Gate {
	g := Gate{Kind: KindStage, Scenario: scenario, Name: "stage/" + e.Stage, Metric: MetricStageError,
		Current: 1, Verdict: VerdictFail, Reason: fmt.Sprintf("%s stage failed: %s", e.Stage, e.Message)}
	if e.Interrupted {
		g.Current, g.Verdict, g.Reason = 0, VerdictInterrupted, fmt.Sprintf("%s stage interrupted: %s", e.Stage, e.Message)
	}
	return g
}

// caseName 返回报告里用于列出用例的名字：目录中的 ID 已带 "<suite>/" 前缀时原样使用。
func caseName(c Case) string {
	if strings.HasPrefix(c.ID, c.Suite+"/") {
		return c.ID
	}
	return c.Suite + "/" + c.ID
}

// functionalGate 计算一个场景的功能门禁：失败或被取消（cancelled 没有结论，不是跳过）的
// 用例让它失败；有功能基线时，基线中通过而现在 skip/unsupported/消失的用例也让它失败
// （pass → skip 漂移）。
func functionalGate(ctx context.Context, sc Scenario, src Source) Gate {
	g := Gate{Kind: KindFunctional, Scenario: sc.Name, Name: "functional", Metric: MetricFailedCases}
	if sc.Functional == nil {
		g.Verdict, g.Reason = VerdictSkipped, "functional stage produced no report"
		for _, e := range sc.Errors {
			if e.Stage != StageFunctional && e.Stage != StageDeploy {
				continue
			}
			switch {
			case !e.Interrupted:
				g.Verdict, g.Current, g.Reason = VerdictFail, 1, fmt.Sprintf("no functional report: %s stage failed", e.Stage)
			case g.Verdict != VerdictFail:
				g.Verdict, g.Reason = VerdictInterrupted, fmt.Sprintf("no functional report: %s stage interrupted", e.Stage)
			}
		}
		return g
	}
	var failed, cancelled []string
	pass, skip, unsup := 0, 0, 0
	for _, c := range sc.Functional.Cases {
		switch c.Status {
		case CasePass:
			pass++
		case CaseSkip:
			skip++
		case CaseUnsupported:
			unsup++
		case CaseCancelled:
			cancelled = append(cancelled, caseName(c))
		default:
			// fail 以及任何未知状态（更新的生产者）：不认识的结论不能算通过。
			failed = append(failed, caseName(c))
		}
	}
	drift, baseRun, why := functionalDrift(ctx, sc, src)
	g.BaselineRun = baseRun
	g.Current = float64(len(failed) + len(cancelled) + len(drift))
	counts := fmt.Sprintf("%d passed, %d skipped", pass, skip)
	if unsup > 0 {
		counts += fmt.Sprintf(", %d unsupported", unsup)
	}
	if g.Current == 0 {
		g.Verdict, g.Reason = VerdictPass, counts+why
		return g
	}
	var parts []string
	if len(failed) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d cases failed: %s", len(failed), len(sc.Functional.Cases), listCases(failed)))
	}
	if len(cancelled) > 0 {
		parts = append(parts, fmt.Sprintf("%d cancelled before a verdict (run interrupted or timed out): %s", len(cancelled), listCases(cancelled)))
	}
	if len(drift) > 0 {
		parts = append(parts, fmt.Sprintf("%d cases passed in daily run %s but not now: %s", len(drift), baseRun, listCases(drift)))
	}
	g.Verdict = VerdictFail
	g.Reason = strings.Join(parts, "; ") + " (" + counts + ")"
	if len(failed) == 0 && len(drift) == 0 && sc.interrupted(StageFunctional) {
		// 只有被信号中断取消的用例：没有结论，但也不是失败（作业超时取消的仍是失败）。
		g.Verdict = VerdictInterrupted
	}
	return g
}

// listCases 把用例名列表截到前 10 个。
func listCases(ids []string) string {
	shown := ids
	if len(shown) > 10 {
		shown = append(shown[:10:10], fmt.Sprintf("… %d more", len(ids)-10))
	}
	return strings.Join(shown, ", ")
}

// functionalDrift 返回基线中通过、现在却 skip/unsupported/消失（且在本次选择范围内）
// 的用例，形如 "chat/b (now skip)"；以及基线运行 ID 与写进原因的说明（没有基线时）。
func functionalDrift(ctx context.Context, sc Scenario, src Source) ([]string, string, string) {
	fs, ok := src.(FunctionalSource)
	if !ok {
		return nil, "", ""
	}
	base, found, err := fs.FunctionalBaseline(ctx, sc.Name)
	switch {
	case err != nil:
		return nil, "", "; functional baseline lookup failed: " + err.Error()
	case !found:
		return nil, "", "; no daily functional baseline"
	}
	now := map[string]CaseStatus{}
	for _, c := range sc.Functional.Cases {
		now[c.ID] = c.Status
	}
	ids := make([]string, 0, len(base.Statuses))
	for id := range base.Statuses {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var drift []string
	for _, id := range ids {
		if base.Statuses[id] != CasePass {
			continue
		}
		st, present := now[id]
		switch {
		case !present:
			suite, _, _ := strings.Cut(id, "/")
			if sc.Functional.InScope == nil || sc.Functional.InScope(id, suite) {
				drift = append(drift, id+" (now missing)")
			}
		case st.notRun():
			drift = append(drift, fmt.Sprintf("%s (now %s)", id, st))
		}
	}
	return drift, base.RunID, ""
}

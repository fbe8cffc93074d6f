package report

import (
	"context"
	"fmt"
	"github.com/vllm-cibench/cibench/accuracy"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
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

// GateKind 是门禁的类别。
type GateKind string

// 门禁类别取值。
const (
	GateFunctional  GateKind = "functional"
	GateAccuracy    GateKind = "accuracy"
	GatePerformance GateKind = "performance"
	GateStage       GateKind = "stage" // 阶段本身失败（部署失败、超时、服务中途退出）
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
//     此时没有可信的门禁结论。由驱动使用，本包不返回。
//   - ExitInterrupted：运行被 Ctrl-C / SIGTERM 中断；已测得的部分仍写入报告。
//     有 interrupted 门禁而无失败门禁时 ExitCode 返回它；门禁失败优先于中断。
const (
	ExitOK          = 0
	ExitGateFailed  = 1
	ExitError       = 2
	ExitInterrupted = 130
)

// Thresholds 是门禁阈值（YAML 可配置）。比例均为小数（0.10 = 10%）。
// 零值字段取默认值（规格第 5、8 节）；负值表示关闭该项检查（记为 skipped）。
type Thresholds struct {
	// TTFTP99Regression：TTFT P99 相对基线变差超过该比例即失败，默认 0.10。
	TTFTP99Regression float64 `yaml:"ttft_p99_regression" json:"ttft_p99_regression"`
	// E2EP99Regression：E2E P99 相对基线变差超过该比例即失败，默认 0.10。
	E2EP99Regression float64 `yaml:"e2e_p99_regression" json:"e2e_p99_regression"`
	// QPSDrop：QPS 相对基线下降超过该比例即失败，默认 0.05。
	QPSDrop float64 `yaml:"qps_drop" json:"qps_drop"`
	// MaxFailRate：失败率（绝对值，[0,1]）超过该值即失败，默认 0.05；不需要基线。
	MaxFailRate float64 `yaml:"max_fail_rate" json:"max_fail_rate"`
	// RequireBaseline 为 true 时，无基线的性能门禁记为失败而不是 no_baseline。
	RequireBaseline bool `yaml:"require_baseline" json:"require_baseline"`

	// 以下是性能门禁的统计选项（见 perfstat.go 与 docs/report.md）；零值保持规格行为。
	// Mode 为 spec（默认：点估计越过阈值即失败）或 significant（整个置信区间越过才失败）。
	Mode string `yaml:"mode" json:"mode,omitempty"`
	// OnInsufficient 是样本不足以支撑分位数时的处理：spec（默认）、fail、warn 或 lower_quantile。
	OnInsufficient string `yaml:"on_insufficient" json:"on_insufficient,omitempty"`
	// Confidence 是置信水平，默认 0.95；Resamples 是自助法重抽样次数，默认 2000；
	// Seed 是随机种子（同样的样本与种子永远得到同样的区间）。
	Confidence float64 `yaml:"confidence" json:"confidence,omitempty"`
	Resamples  int     `yaml:"resamples" json:"resamples,omitempty"`
	Seed       int64   `yaml:"seed" json:"seed,omitempty"`
	// PerGate 按门禁覆盖 Mode 与 OnInsufficient。
	PerGate PerGateOptions `yaml:"per_gate" json:"per_gate"`
}

// DefaultThresholds 返回规格中的 PR 性能门禁阈值。
func DefaultThresholds() Thresholds {
	return Thresholds{TTFTP99Regression: 0.10, E2EP99Regression: 0.10, QPSDrop: 0.05, MaxFailRate: 0.05}
}

// withDefaults 把零值字段替换为默认值。
func (t Thresholds) withDefaults() Thresholds {
	d := DefaultThresholds()
	if t.TTFTP99Regression == 0 {
		t.TTFTP99Regression = d.TTFTP99Regression
	}
	if t.E2EP99Regression == 0 {
		t.E2EP99Regression = d.E2EP99Regression
	}
	if t.QPSDrop == 0 {
		t.QPSDrop = d.QPSDrop
	}
	if t.MaxFailRate == 0 {
		t.MaxFailRate = d.MaxFailRate
	}
	return t
}

// BaselineKey 标识"同场景同组合"：性能门禁只与键完全相同的每日基线比较。
// Model、Quant、Backend、ControlMethod 为空表示调用方不区分。
type BaselineKey struct {
	Scenario      string `json:"scenario"`
	Model         string `json:"model,omitempty"`
	Quant         string `json:"quant,omitempty"`
	Backend       string `json:"backend,omitempty"`
	ControlMethod string `json:"control_method,omitempty"`
	InputLength   int    `json:"input_len"`
	OutputLength  int    `json:"output_len"`
	Concurrency   int    `json:"concurrency"`
}

// String 返回便于人读的键描述，用于报告与门禁名。
func (k BaselineKey) String() string {
	s := fmt.Sprintf("in%d-out%d-c%d", k.InputLength, k.OutputLength, k.Concurrency)
	if k.Backend != "" {
		s += "-" + k.Backend
	}
	return s
}

// Baseline 是一个组合在基线运行中的关键数值，也是当前运行聚合后的数值。
// 时延为 0、QPS 为负表示该项不可得（不参与比较，门禁记为 no_baseline）。
type Baseline struct {
	RunID    string        `json:"run_id,omitempty"`
	Time     time.Time     `json:"time,omitzero"`
	TTFTP99  time.Duration `json:"ttft_p99_ns"`
	E2EP99   time.Duration `json:"e2e_p99_ns"`
	QPS      float64       `json:"qps"`
	FailRate float64       `json:"fail_rate"`
	// TTFT、E2E 是各轮时延摘要按字段的中位数（含 Count），用于判断样本是否支撑分位数
	// 与 lower_quantile；Succeeded 是各轮成功请求数的中位数。
	TTFT      loadgen.Latency `json:"-"`
	E2E       loadgen.Latency `json:"-"`
	Succeeded int64           `json:"-"`
	// Samples 是该组合的逐请求样本（没有时为 nil：置信区间不可得）。
	Samples *PerfSamples `json:"-"`
}

// BaselineSource 提供最近一次每日运行中同键的基线。found 为 false 表示没有
// 基线（不是错误）；err 表示查询本身失败（如 Prometheus 不可达），门禁会
// 记为 no_baseline 并附上原因。metrics 包的 Prometheus/CSV 读取器实现它。
type BaselineSource interface {
	Lookup(ctx context.Context, key BaselineKey) (b Baseline, found bool, err error)
}

// BaselineFunc 让普通函数满足 BaselineSource。
type BaselineFunc func(ctx context.Context, key BaselineKey) (Baseline, bool, error)

// Lookup 调用 f 本身。
func (f BaselineFunc) Lookup(ctx context.Context, key BaselineKey) (Baseline, bool, error) {
	return f(ctx, key)
}

// StaticBaselines 是内存中的基线表，由 BaselinesFromResult 或
// ArtifactBaselines 构建。查找时先精确匹配；找不到时忽略字符串字段
// 中一方为空的差异。
type StaticBaselines map[BaselineKey]Baseline

var _ BaselineSource = StaticBaselines(nil)

// Lookup 按键查找基线。
func (s StaticBaselines) Lookup(_ context.Context, key BaselineKey) (Baseline, bool, error) {
	if b, ok := s[key]; ok {
		return b, true, nil
	}
	for k, b := range s {
		if k.Scenario == key.Scenario && k.InputLength == key.InputLength && k.OutputLength == key.OutputLength &&
			k.Concurrency == key.Concurrency && looseEq(k.Model, key.Model) && looseEq(k.Quant, key.Quant) &&
			looseEq(k.Backend, key.Backend) && looseEq(k.ControlMethod, key.ControlMethod) {
			return b, true, nil
		}
	}
	return Baseline{}, false, nil
}

// looseEq 在任一方为空时视为相等。
func looseEq(a, b string) bool { return a == "" || b == "" || a == b }

// keyOf 返回压测汇总行所属的基线键。
func keyOf(sc Scenario, row loadgen.Summary) BaselineKey {
	backend := row.Backend
	if backend == "" {
		backend = sc.Backend
	}
	return BaselineKey{Scenario: sc.Name, Model: sc.Model, Quant: sc.Quant, Backend: backend, ControlMethod: row.ControlMethod,
		InputLength: row.InputLength, OutputLength: row.OutputLength, Concurrency: row.Concurrency}
}

// Aggregate 把同一组合的多轮（epochs）汇总行合成一个数值：各指标取各轮的
// 中位数，避免单轮抖动主导门禁。时延不可测（Count 为 0）的轮次不参与该项。
func Aggregate(rows []loadgen.Summary) Baseline {
	var ttft, e2e, qps, fr []float64
	for _, r := range rows {
		if r.TTFT.Valid() {
			ttft = append(ttft, float64(r.TTFT.P99))
		}
		if r.E2E.Valid() {
			e2e = append(e2e, float64(r.E2E.P99))
		}
		qps = append(qps, r.QPS)
		fr = append(fr, r.FailRate)
	}
	b := Baseline{QPS: -1, Succeeded: medianSucceeded(rows)}
	b.TTFT = aggregateLatency(rows, func(s *loadgen.Summary) loadgen.Latency { return s.TTFT })
	b.E2E = aggregateLatency(rows, func(s *loadgen.Summary) loadgen.Latency { return s.E2E })
	if len(ttft) > 0 {
		b.TTFTP99 = time.Duration(median(ttft))
	}
	if len(e2e) > 0 {
		b.E2EP99 = time.Duration(median(e2e))
	}
	if len(qps) > 0 {
		b.QPS, b.FailRate = median(qps), median(fr)
	}
	for _, r := range rows {
		if b.Time.IsZero() || r.ExecutionTime.Before(b.Time) {
			b.Time = r.ExecutionTime
		}
	}
	return b
}

// median 返回 xs 的中位数（偶数个取中间两者均值）；会重排 xs。
func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// groupPerf 按基线键分组场景的压测行，保持首次出现的顺序。
func groupPerf(sc Scenario) ([]BaselineKey, map[BaselineKey][]loadgen.Summary) {
	var keys []BaselineKey
	groups := map[BaselineKey][]loadgen.Summary{}
	for _, row := range sc.Perf {
		k := keyOf(sc, row)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], row)
	}
	return keys, groups
}

// BaselinesFromResult 把一次（每日）运行的压测结果转换成基线表。
func BaselinesFromResult(res Result) StaticBaselines {
	out := StaticBaselines{}
	for _, sc := range res.Scenarios {
		keys, groups := groupPerf(sc)
		for _, k := range keys {
			b := Aggregate(groups[k])
			b.RunID = res.RunID
			b.Samples = findSamples(sc.PerfSamples, k)
			if b.Time.IsZero() {
				b.Time = res.Started
			}
			out[k] = b
		}
	}
	return out
}

// Gate 是一项门禁的结论，带着判定所用的全部数值，报告据此写明"哪项、差多少"。
type Gate struct {
	Kind     GateKind     `json:"kind"`
	Scenario string       `json:"scenario"`
	Name     string       `json:"name"`   // 场景内唯一，如 "perf/in128-out128-c4-openai-chat/ttft_p99_seconds"
	Metric   string       `json:"metric"` // Metric* 常量之一
	Key      *BaselineKey `json:"key,omitempty"`
	Current  float64      `json:"current"`
	Baseline *float64     `json:"baseline,omitempty"`
	// DeltaPct 是相对基线（或精度阈值）的变化百分比，(current−ref)/ref×100。
	DeltaPct    *float64 `json:"delta_pct,omitempty"`
	Limit       float64  `json:"limit"` // 阈值：比例门禁为百分比（+10 / −5），绝对门禁为原值
	Verdict     Verdict  `json:"verdict"`
	Reason      string   `json:"reason,omitempty"`
	BaselineRun string   `json:"baseline_run,omitempty"`

	// 以下是性能门禁的统计证据（perfstat.go）。Quantile 是实际比较的分位点
	// （lower_quantile 时可能低于 0.99）；Mode 是判定模式；Support 说明样本是否
	// 足以支撑该分位；Samples 是两侧样本量；Interval 是相对变化的置信区间。
	Quantile float64       `json:"quantile,omitempty"`
	Mode     string        `json:"mode,omitempty"`
	Support  string        `json:"support,omitempty"`
	Samples  *GateSamples  `json:"samples,omitempty"`
	Interval *GateInterval `json:"interval,omitempty"`
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

// Evaluate 对 res 中每个场景计算门禁：
//   - 每个阶段错误一项 stage 门禁（失败；RecordInterrupted 记下的为 interrupted）；
//   - 功能：没有失败或被取消的用例（skip/unsupported 不算失败），且 src 实现
//     FunctionalBaselineSource 时，每日基线中通过的用例现在没有变成 skip/unsupported/消失；
//     未执行且无错误时 skipped；功能阶段被中断（RecordInterrupted）而没有报告、或只有被
//     取消的用例时 interrupted（作业超时取消的用例仍是失败）；
//   - 精度：accuracy.Gate 的判定；精度阶段被中断、只评了部分样本时 interrupted
//     （部分样本上的分数不代表模型，不拿它判定）；
//   - 性能：每个组合的失败率 ≤ MaxFailRate（不需基线），以及 TTFT P99、
//     E2E P99、QPS 与 src 中同键的每日基线比较；无基线时 no_baseline。
//
// src 为 nil 等同于没有任何基线。查询失败不会中止评估，而是写进对应门禁的原因。
func Evaluate(ctx context.Context, res Result, th Thresholds, src BaselineSource) ([]Gate, error) {
	th = th.withDefaults()
	var gates []Gate
	for _, sc := range res.Scenarios {
		for _, e := range sc.Errors {
			g := Gate{Kind: GateStage, Scenario: sc.Name, Name: "stage/" + string(e.Stage), Metric: MetricStageError,
				Current: 1, Verdict: VerdictFail, Reason: fmt.Sprintf("%s stage failed: %s", e.Stage, e.Message)}
			if e.Interrupted {
				g.Current, g.Verdict, g.Reason = 0, VerdictInterrupted, fmt.Sprintf("%s stage interrupted: %s", e.Stage, e.Message)
			}
			gates = append(gates, g)
		}
		gates = append(gates, functionalGate(ctx, sc, src))
		for _, a := range sc.Accuracy {
			gates = append(gates, scenarioAccuracyGate(sc, a))
		}
		keys, groups := groupPerf(sc)
		for _, k := range keys {
			if err := ctx.Err(); err != nil {
				return gates, fmt.Errorf("report: evaluate: %w", err)
			}
			cur := Aggregate(groups[k])
			cur.Samples = findSamples(sc.PerfSamples, k)
			gates = append(gates, perfGates(ctx, k, cur, th, src)...)
		}
	}
	return gates, nil
}

// caseName 返回报告里用于列出用例的名字：目录中的 ID 已带 "<suite>/" 前缀时原样使用。
func caseName(r functional.Result) string {
	if strings.HasPrefix(r.CaseID, r.Suite+"/") {
		return r.CaseID
	}
	return r.Suite + "/" + r.CaseID
}

// functionalGate 计算一个场景的功能门禁：失败或被取消（cancelled 没有结论，不是跳过）的
// 用例让它失败；有功能基线时，基线中通过而现在 skip/unsupported/消失的用例也让它失败
// （pass → skip 漂移）。
func functionalGate(ctx context.Context, sc Scenario, src BaselineSource) Gate {
	g := Gate{Kind: GateFunctional, Scenario: sc.Name, Name: "functional", Metric: MetricFailedCases}
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
	for _, r := range sc.Functional.Results {
		switch r.Status {
		case functional.StatusPass:
			pass++
		case functional.StatusSkip:
			skip++
		case functional.StatusUnsupported:
			unsup++
		case functional.StatusCancelled:
			cancelled = append(cancelled, caseName(r))
		default:
			// fail 以及任何未知状态（更新的生产者）：不认识的结论不能算通过。
			failed = append(failed, caseName(r))
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
		parts = append(parts, fmt.Sprintf("%d of %d cases failed: %s", len(failed), len(sc.Functional.Results), listCases(failed)))
	}
	if len(cancelled) > 0 {
		parts = append(parts, fmt.Sprintf("%d cancelled before a verdict (run interrupted or timed out): %s", len(cancelled), listCases(cancelled)))
	}
	if len(drift) > 0 {
		parts = append(parts, fmt.Sprintf("%d cases passed in daily run %s but not now: %s", len(drift), baseRun, listCases(drift)))
	}
	g.Verdict = VerdictFail
	g.Reason = strings.Join(parts, "; ") + " (" + counts + ")"
	if len(failed) == 0 && len(drift) == 0 && stageInterrupted(sc, StageFunctional) {
		// 只有被信号中断取消的用例：没有结论，但也不是失败（作业超时取消的仍是失败）。
		g.Verdict = VerdictInterrupted
	}
	return g
}

// stageInterrupted 报告场景的 st 阶段是否被中断（RecordInterrupted）。
func stageInterrupted(sc Scenario, st Stage) bool {
	for _, e := range sc.Errors {
		if e.Stage == st && e.Interrupted {
			return true
		}
	}
	return false
}

// scenarioAccuracyGate 在 accuracyGate 之上考虑中断：精度阶段被中断、结果只覆盖
// 部分样本时，分数不代表模型，门禁记为 interrupted 而不是按阈值判定。
func scenarioAccuracyGate(sc Scenario, a Accuracy) Gate {
	g := accuracyGate(sc.Name, a)
	if a.Result.Partial && stageInterrupted(sc, StageAccuracy) {
		g.Verdict = VerdictInterrupted
		g.Reason = fmt.Sprintf("interrupted after %d of %d examples; a partial score is not judged", a.Result.Examples, a.Result.Planned)
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
func functionalDrift(ctx context.Context, sc Scenario, src BaselineSource) ([]string, string, string) {
	fs, ok := src.(FunctionalBaselineSource)
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
	now := map[string]functional.Status{}
	for _, r := range sc.Functional.Results {
		now[r.CaseID] = r.Status
	}
	ids := make([]string, 0, len(base.Statuses))
	for id := range base.Statuses {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var drift []string
	for _, id := range ids {
		if base.Statuses[id] != functional.StatusPass {
			continue
		}
		st, present := now[id]
		switch {
		case !present:
			suite, _, _ := strings.Cut(id, "/")
			if functional.Matches(sc.Functional.Selection, id, suite) {
				drift = append(drift, id+" (now missing)")
			}
		case st.NotRun():
			drift = append(drift, fmt.Sprintf("%s (now %s)", id, st))
		}
	}
	return drift, base.RunID, ""
}

// accuracyGate 把 accuracy.Gate（精度门禁唯一的判定函数，RunStage 与 examples/accuracy
// 也用它）的结论转成报告的门禁：分数不设门禁且其余检查通过时记为 skipped 并说明原因。
func accuracyGate(scenario string, a Accuracy) Gate {
	v := accuracy.Gate(a.Spec(), a.Result)
	metric := v.Metric
	g := Gate{Kind: GateAccuracy, Scenario: scenario, Name: "accuracy/" + a.Result.Dataset, Metric: metric, Current: v.Value, Reason: v.Reason}
	if a.Threshold != nil {
		t := *a.Threshold
		g.Baseline, g.Limit = &t, t
		if t != 0 {
			d := (v.Value - t) / t * 100
			g.DeltaPct = &d
		}
	}
	switch {
	case !v.Pass:
		g.Verdict = VerdictFail
	case !v.ScoreGated:
		g.Verdict = VerdictSkipped
	default:
		g.Verdict = VerdictPass
	}
	return g
}

// eps 吸收浮点误差，使"恰好 10%"判为通过（规格是"超过 10% 失败"）。
const eps = 1e-9

// perfGates 计算一个组合的四项性能门禁。
func perfGates(ctx context.Context, k BaselineKey, cur Baseline, th Thresholds, src BaselineSource) []Gate {
	key := k
	prefix := "perf/" + k.String() + "/"
	mk := func(metric string, current float64) Gate {
		return Gate{Kind: GatePerformance, Scenario: k.Scenario, Name: prefix + metric, Metric: metric, Key: &key, Current: current}
	}
	// 失败率是绝对门禁，不依赖基线。
	fr := mk(MetricFailRate, cur.FailRate)
	fr.Limit = th.MaxFailRate
	switch {
	case th.MaxFailRate < 0:
		fr.Verdict, fr.Reason = VerdictSkipped, "fail-rate check disabled"
	case cur.FailRate > th.MaxFailRate+eps:
		fr.Verdict, fr.Reason = VerdictFail, fmt.Sprintf("fail rate %.2f%% above %.2f%%", cur.FailRate*100, th.MaxFailRate*100)
	default:
		fr.Verdict, fr.Reason = VerdictPass, fmt.Sprintf("fail rate %.2f%% ≤ %.2f%%", cur.FailRate*100, th.MaxFailRate*100)
	}

	var base Baseline
	found, why := false, "no daily baseline for this scenario and combination"
	if src != nil {
		b, ok, err := src.Lookup(ctx, k)
		switch {
		case err != nil:
			why = "baseline lookup failed: " + err.Error()
		case ok:
			base, found = b, true
		}
	}
	cmps := []perfCmp{
		{metric: MetricTTFTP99, q: 0.99, cur: cur.TTFTP99.Seconds(), base: base.TTFTP99.Seconds(), curLat: cur.TTFT, baseLat: base.TTFT,
			curN: cur.TTFT.Count, baseN: base.TTFT.Count, limit: th.TTFTP99Regression, higherBad: true, valid: cur.TTFTP99 > 0},
		{metric: MetricE2EP99, q: 0.99, cur: cur.E2EP99.Seconds(), base: base.E2EP99.Seconds(), curLat: cur.E2E, baseLat: base.E2E,
			curN: cur.E2E.Count, baseN: base.E2E.Count, limit: th.E2EP99Regression, higherBad: true, valid: cur.E2EP99 > 0},
		{metric: MetricQPS, cur: cur.QPS, base: base.QPS, curN: cur.Succeeded, baseN: base.Succeeded,
			limit: th.QPSDrop, valid: cur.QPS >= 0},
	}
	out := make([]Gate, 0, 4)
	for _, c := range cmps {
		g := mk(c.metric, c.cur)
		g.Limit = c.limit * 100
		if !c.higherBad {
			g.Limit = -g.Limit
		}
		switch {
		case c.limit < 0:
			g.Verdict, g.Reason = VerdictSkipped, c.metric+" check disabled"
		case !found || c.base <= 0:
			reason := why
			if found {
				reason = "baseline " + base.RunID + " has no " + c.metric
			}
			g.Verdict, g.Reason = VerdictNoBaseline, reason
			if th.RequireBaseline {
				g.Verdict = VerdictFail
			}
		default:
			g.BaselineRun = base.RunID
			c.curS, c.baseS = samplesFor(cur.Samples, c.metric), samplesFor(base.Samples, c.metric)
			judge(&g, c, th)
		}
		if math.IsNaN(g.Current) {
			g.Current = -1
		}
		out = append(out, g)
	}
	return append(out, fr)
}

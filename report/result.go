package report

import (
	"github.com/vllm-cibench/cibench/gate"
	"time"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/runtype"
)

// Stage 是场景内的阶段名，同时也是产物目录名。
type Stage string

// 阶段取值。顺序即执行顺序（规格第 1 节）。
const (
	StageDeploy     Stage = "deploy"
	StageFunctional Stage = "functional"
	StagePerf       Stage = "perf"
	StageAccuracy   Stage = "accuracy"
	StageLogs       Stage = "logs"
)

// 运行类型（runtype.PR 与 runtype.Daily 的别名，与 matrix、metrics 同一类型）。
// 目录名与指标标签 run_type 使用同一取值。
const (
	RunTypePR    = runtype.PR
	RunTypeDaily = runtype.Daily
)

// RunID 是一次运行的标识，也是产物目录 <root>/<run_type>/<run_id>/ 的最后一段。
// 它是独立的类型，使 NewRun 的运行类型与运行 ID 不会被悄悄写反。
type RunID string

// Result 是一次 CI 运行的全部结论，JSON 摘要、JUnit 与 HTML 都由它渲染。
// 字段全部可序列化，以便分阶段执行（每个 CI job 一个阶段）时从产物目录
// 重新装配（见 Load）。
type Result struct {
	Schema   string       `json:"schema"`
	RunType  runtype.Type `json:"run_type"`
	RunID    string       `json:"run_id"`
	Commit   string       `json:"commit,omitempty"`
	Branch   string       `json:"branch,omitempty"`
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished,omitzero"`
	Complete bool         `json:"complete"` // Finish 之后为 true；中断或只跑了部分阶段的运行保持 false
	// Interrupted 表示运行被信号或作业超时中断（FinishIncomplete 时记录）。
	Interrupted bool        `json:"interrupted,omitempty"`
	Scenarios   []Scenario  `json:"scenarios"`
	Gates       []gate.Gate `json:"gates,omitempty"`
	// Trend 是每日运行的趋势分析（最近 N 个每日结果上的变点），见 DailyTrend。
	Trend    *gate.Trend  `json:"trend,omitempty"`
	Verdict  gate.Verdict `json:"verdict,omitempty"` // 门禁总结论（Finish 时填写）
	ExitCode int          `json:"exit_code"`         // 与 gate.ExitCode(Gates) 一致
}

// SchemaVersion 是 summary.json 的格式版本，格式不兼容变化时递增。
const SchemaVersion = "cibench.report/v1"

// Scenario 是一个场景（部署 × 模型 × 量化）的全部阶段结果。
type Scenario struct {
	Name    string `json:"name"`
	Model   string `json:"model,omitempty"`
	Quant   string `json:"quant,omitempty"`
	Deploy  string `json:"deploy,omitempty"` // 部署方式，如 emulator、local、kube、external
	Backend string `json:"backend,omitempty"`

	Functional *functional.Report `json:"functional,omitempty"`
	Perf       []loadgen.Summary  `json:"perf,omitempty"`
	// PerfSamples 是各压测组合的有界逐请求样本（<scenario>/perf/samples.json），
	// 性能门禁用它计算置信区间；体积较大，不写进 summary.json。
	PerfSamples []PerfSamples `json:"-"`
	// Timeline 是 --bucket-interval 的实时时间线（各分组的行按时间顺序），单独存放在
	// perf/timeline.json，不进 summary.json（长时间运行的行数可达数千）。
	Timeline []loadgen.Timeline `json:"-"`
	Accuracy []Accuracy         `json:"accuracy,omitempty"`
	// Capacity 是容量扫描（control_method: sweep）的结论，见 RecordCapacity。
	Capacity []loadgen.SweepResult `json:"capacity,omitempty"`
	Errors   []StageError          `json:"errors,omitempty"`
	// Stages 是驱动登记的各阶段状态（按阶段顺序），让人和工具不必从错误列表里
	// 推断"哪个阶段跑完了、哪个被中断了、哪个没跑"。
	Stages []StageResult `json:"stages,omitempty"`
}

// StageStatus 是一个阶段的结局。
type StageStatus string

// 阶段状态取值。Interrupted 与 Failed 是不同的结局：中断（Ctrl-C、SIGTERM、取消）
// 说明的是运行没有做完，而不是被测服务有问题，所以它不产生失败的门禁。
const (
	StageOK          StageStatus = "ok"
	StageFailed      StageStatus = "failed"
	StageSkipped     StageStatus = "skipped"
	StageInterrupted StageStatus = "interrupted"
)

// StageResult 是一个阶段的状态、开始时间、耗时与原因（失败、中断或跳过时）。
// Reason 写入前已脱敏。
type StageResult struct {
	Stage    Stage       `json:"stage"`
	Status   StageStatus `json:"status"`
	Started  time.Time   `json:"started,omitzero"`
	Duration float64     `json:"duration_seconds,omitempty"`
	Reason   string      `json:"reason,omitempty"`
}

// Accuracy 是一项精度评测结果及其门禁设置；门禁由 accuracy.Gate 判定（见 Spec）。
// Threshold 为 nil 表示分数不设门禁（内置样例或 report_only），失败请求比例照常判定。
// Result.Source 记录评分所用数据的来源与 sha256，Result.Errors 是失败的请求数。
type Accuracy struct {
	Result    accuracy.EvalResult `json:"result"`
	Threshold *float64            `json:"threshold,omitempty"`
	// Metric 是门禁比较的指标（空即 score）；它从不改写 Result.Score。
	Metric string `json:"metric,omitempty"`
	// MaxErrorRate 是允许的失败请求比例（0 = 任何失败都让门禁失败）。
	MaxErrorRate float64 `json:"max_error_rate"`
}

// Spec 返回交给 accuracy.Gate 的门禁设置。
func (a Accuracy) Spec() accuracy.DatasetConfig {
	rate := a.MaxErrorRate
	return accuracy.DatasetConfig{Name: a.Result.Dataset, Threshold: a.Threshold, Metric: a.Metric, MaxErrorRate: &rate}
}

// StageError 记录某阶段无法完成的原因（部署失败、超时、服务器中途退出……）。
// 失败继续策略下它不会中止运行，但会让对应门禁失败。Message 写入前已脱敏。
//
// Interrupted 为 true 表示阶段是被中断（RecordInterrupted）而不是失败：它的门禁记为
// interrupted，不算失败。
type StageError struct {
	Stage       Stage  `json:"stage"`
	Message     string `json:"message"`
	Interrupted bool   `json:"interrupted,omitempty"`
}

// ScenarioInfo 是场景的描述信息，由驱动在场景开始时登记。
type ScenarioInfo struct {
	Name    string
	Model   string
	Quant   string
	Deploy  string
	Backend string
}

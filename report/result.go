package report

import (
	"encoding/json"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/runtype"
)

// Stage 是场景内的阶段名，同时也是产物目录名。
type Stage string

// 阶段取值。顺序即执行顺序（需求 §1（docs/requirements.md））。门禁认识的三个名字只在 gate 定义一次，这里取它们的值
// （同一个名字不再有两处定义可以走样）。
const (
	StageDeploy     Stage = gate.StageDeploy
	StageFunctional Stage = gate.StageFunctional
	StagePerf       Stage = "perf"
	StageAccuracy   Stage = gate.StageAccuracy
	StageLogs       Stage = "logs"
)

// 运行类型（runtype.PR 与 runtype.Daily 的别名，与 matrix、metrics 同一类型）。
// 目录名与指标标签 run_type 使用同一取值。取值只在 runtype 定义一次，这两个名字为兼容保留。
const (
	// Deprecated: 用 runtype.PR。
	RunTypePR = runtype.PR
	// Deprecated: 用 runtype.Daily。
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
	// Thresholds 是这次运行计算门禁所用的阈值与统计设置（SetThresholds 记下；没有记录时为 nil）。
	// 比较两次运行时（report/compare）用基线一侧记下的设置，与当时的门禁口径一致。
	Thresholds *gate.Thresholds `json:"gate_thresholds,omitempty"`
	// Trend 是每日运行的趋势分析（最近 N 个每日结果上的变点），见 DailyTrend。
	Trend    *gate.Trend  `json:"trend,omitempty"`
	Verdict  gate.Verdict `json:"verdict,omitempty"` // 门禁总结论（Finish 时填写）
	ExitCode int          `json:"exit_code"`         // 与 gate.ExitCode(Gates) 一致
}

// SchemaVersion 是 summary.json 的格式版本，格式不兼容变化时递增。
const SchemaVersion = "cibench.report/v1"

// Scenario 是一个场景（部署 × 模型 × 量化）的描述、阶段状态、阶段错误与各阶段结果。
//
// 各阶段的结果是按名字存放的分节（见 Section）：report 只保存它们的 JSON 原文，
// 不认识其中的类型——功能报告、压测行、精度结果由各自的子包（functionalreport、
// perfreport、accuracyreport）或团队自己的代码编码与解码。summary.json 里分节是场景
// 对象上与 name、errors 并列的键（"functional": {...}, "perf": [...]），形状与分节
// 拆出之前相同；详细分节（Section.Detail，如时间线、逐请求样本）只写各自的文件。
type Scenario struct {
	Name    string `json:"name"`
	Model   string `json:"model,omitempty"`
	Quant   string `json:"quant,omitempty"`
	Deploy  string `json:"deploy,omitempty"` // 部署方式，如 emulator、local、kube、external
	Backend string `json:"backend,omitempty"`
	// Hardware 是被测服务所在硬件的说明（见 ScenarioInfo.Hardware），空表示没有记录。
	Hardware string `json:"hardware,omitempty"`

	// Sections 是进 summary.json 的分节（键 → JSON 原文）；Details 是只写文件、不进
	// summary.json 的详细分节。两者都用 SetSection 写、Decode 读。
	Sections map[string]json.RawMessage `json:"-"`
	Details  map[string]json.RawMessage `json:"-"`

	Errors []StageError `json:"errors,omitempty"`
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
	// Hardware 是被测服务所在硬件的说明（场景文件的 hardware:，如 "Ascend 910B x8"），
	// 比较两次运行时用来标注两侧。
	Hardware string
}

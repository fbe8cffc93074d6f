package metrics

import (
	"errors"
	"github.com/vllm-cibench/cibench/field"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/runtype"
)

// 运行类型的取值（runtype.PR 与 runtype.Daily 的别名，与 matrix、report 同一类型）。
// 只有 RunTypeDaily 会被推送。
const (
	RunTypePR    = runtype.PR
	RunTypeDaily = runtype.Daily
)

// QuantNone 是未量化时 quant 标签的取值；RunInfo.Quant 为空时使用它，
// 使所有序列都带 quant 标签，Grafana 变量不会出现空值。
const QuantNone = "none"

// ErrInvalid 是输入（RunInfo、选项、结果）校验失败时所有错误的哨兵，
// 具体错误是 *field.Error（Err 为 ErrInvalid）：字段（Go 字段名，如 "RunInfo.Model"、
// "Perf[3]"）与取值（绝不会是密钥：密钥字段不经过这里），可用 errors.Is / errors.As 判断。
var ErrInvalid = errors.New("metrics: invalid input")

// RunInfo 是一次运行（一个场景）的身份信息，对应规格第 7 节统一标签中
// 与具体压测组合无关的部分。
//
// 其中 Model、Quant、Scenario、RunType 是稳定身份：它们成为每条序列的标签，
// 也是 Pushgateway 的分组键，因此每日推送会替换昨天的同一组而不是越积越多；
// Commit、Branch、RunID、ModelRaw 每天都变，只放在 run_info 序列上
// （见 docs/metrics.md 的"分组键与 _info 序列"）。
type RunInfo struct {
	Model    string       // served-model-name，指标与展示的主标识（必填）
	ModelRaw string       // 内部模型名（可选），只进 run_info
	Quant    string       // w8a8 | w4a8 | none；空视为 none，大写会转成小写
	Scenario string       // 场景名（必填）
	RunType  runtype.Type // pr | daily（必填）
	Commit   string
	Branch   string
	RunID    string
}

// Results 是一个场景一次运行的全部结果：metrics 把它整体转换为指标族，
// Pushgateway 一次替换整组，所以三个阶段的结果应一起交给 Push。
// 某阶段失败或未运行时对应字段留空，该阶段的序列就不出现（而不是写 0）。
type Results struct {
	Info       RunInfo
	Perf       []loadgen.Summary     // 每行一个压测分组（acs-bench 汇总 CSV 的一行）
	Functional *functional.Report    // 功能测试报告，nil 表示未运行
	Accuracy   []accuracy.EvalResult // 每个数据集一个结果
	// Capacity 是容量扫描的结论，导出为 capacity_requests_per_second。
	Capacity []loadgen.SweepResult
}

// labelValueOK 检查标签值：必须是合法 UTF-8 且不含换行，避免破坏文本暴露格式与 Grafana 表格。
func labelValueOK(v string) bool {
	return utf8.ValidString(v) && !strings.ContainsAny(v, "\n\r")
}

// prefixRE 是指标前缀允许的形式：小写 snake case，以字母开头。
var prefixRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// validate 检查 RunInfo 的必填字段与取值，并返回补全了默认值的副本。
func (ri RunInfo) validate() (RunInfo, error) {
	// 量化类型统一为小写（配置里可能写 W8A8），保证同一量化只有一个标签值。
	ri.Quant = strings.ToLower(ri.Quant)
	if ri.Quant == "" {
		ri.Quant = QuantNone
	}
	required := []struct{ field, value string }{
		{"RunInfo.Model", ri.Model},
		{"RunInfo.Scenario", ri.Scenario},
		{"RunInfo.RunType", string(ri.RunType)},
	}
	for _, r := range required {
		if r.value == "" {
			return ri, &field.Error{Err: ErrInvalid, Field: r.field, Value: r.value, Reason: "required"}
		}
	}
	if !ri.RunType.Valid() {
		return ri, &field.Error{Err: ErrInvalid, Field: "RunInfo.RunType", Value: string(ri.RunType), Reason: `must be "pr" or "daily"`}
	}
	all := []struct{ field, value string }{
		{"RunInfo.Model", ri.Model}, {"RunInfo.ModelRaw", ri.ModelRaw}, {"RunInfo.Quant", ri.Quant},
		{"RunInfo.Scenario", ri.Scenario}, {"RunInfo.Commit", ri.Commit}, {"RunInfo.Branch", ri.Branch},
		{"RunInfo.RunID", ri.RunID},
	}
	for _, a := range all {
		if !labelValueOK(a.value) {
			return ri, &field.Error{Err: ErrInvalid, Field: a.field, Value: a.value, Reason: "label value must be valid UTF-8 without newlines"}
		}
	}
	return ri, nil
}

// normalizePrefix 校验并规范化前缀：去掉末尾下划线，空表示不加前缀。
func normalizePrefix(p string) (string, error) {
	p = strings.TrimRight(p, "_")
	if p == "" {
		return "", nil
	}
	if !prefixRE.MatchString(p) {
		return "", &field.Error{Err: ErrInvalid, Field: "Options.Prefix", Value: p, Reason: "must be lower snake case starting with a letter"}
	}
	return p, nil
}

// MetricName 把前缀与指标基名拼成完整指标名；prefix 为空时原样返回 name。
// 前缀末尾的下划线可有可无，不会重复。Grafana 面板与基线查询都用它生成名字，
// 保证三处（导出、看板、基线）一致。
func MetricName(prefix, name string) string {
	p := strings.TrimRight(prefix, "_")
	if p == "" {
		return name
	}
	return p + "_" + name
}

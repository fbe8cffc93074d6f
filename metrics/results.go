package metrics

import (
	"errors"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/vllm-cibench/cibench/field"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-cibench/cibench/runtype"
)

// 运行类型的取值（runtype.PR 与 runtype.Daily 的别名，与 matrix、report 同一类型）。
// 本包不按运行类型做取舍：需求 §7（docs/requirements.md）"仅每日推送"是驱动程序的策略（pipeline）。
const (
	// Deprecated: 用 runtype.PR（运行类型只在 runtype 定义；这两个名字为兼容保留）。
	RunTypePR = runtype.PR
	// Deprecated: 用 runtype.Daily。
	RunTypeDaily = runtype.Daily
)

// QuantNone 是未量化时 quant 标签的取值；RunInfo.Quant 为空时使用它，
// 使所有序列都带 quant 标签，Grafana 变量不会出现空值。
const QuantNone = "none"

// ErrInvalid 是输入（RunInfo、选项、结果）校验失败时所有错误的哨兵，
// 具体错误是 *field.Error（Err 为 ErrInvalid）：字段（Go 字段名，如 "RunInfo.Model"、
// "Perf[3]"）与取值（绝不会是密钥：密钥字段不经过这里），可用 errors.Is / errors.As 判断。
var ErrInvalid = errors.New("metrics: invalid input")

// RunInfo 是一次运行（一个场景）的身份信息，对应需求 §7（docs/requirements.md）统一标签中
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

// Labels 校验 ri 并返回它的稳定身份标签（model、quant、scenario、run_type），
// 用作本地暴露时的 Options.ConstLabels；推送时同样的标签在分组键里（见 Pusher.GroupingKey）。
func (ri RunInfo) Labels() (prometheus.Labels, error) {
	v, err := ri.validate()
	if err != nil {
		return nil, err
	}
	return prometheus.Labels{LabelModel: v.Model, LabelQuant: v.Quant, LabelScenario: v.Scenario, LabelRunType: string(v.RunType)}, nil
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

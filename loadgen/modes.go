package loadgen

import (
	"strconv"
	"strings"
)

// 本文件定义 Profile 里"取值是一个有限集合"的字段的类型：后端、控制方式、爬坡策略、
// 数据集类型、模态与时间戳取法。它们曾经是裸 string，拼错的值（"openai_chat"）要到
// Validate 才被发现，而库的调用方在 Go 代码里拼写时编译器帮不上忙。有了具名类型：
//   - Go 调用方写常量（loadgen.BackendChat），类型不对编译不过；
//   - YAML、flag.TextVar 与任何走 encoding.TextUnmarshaler 的解码器在解码时就拒绝未知值，
//     错误是 *field.Error，点名 YAML 键与取值；
//   - 每个类型的 Validate 与 Profile.Validate 共用同一张取值表（下面的 xxxValues），
//     新增取值（例如新的数据集类型）只需在常量与取值表各加一行。
//
// 零值 "" 表示"未设置"：UnmarshalText 接受空串，Profile.WithDefaults 把它换成默认值，
// 而 Validate 拒绝空串（到 Validate 时默认值应已填好）。

// Backend 是请求使用的 OpenAI 接口，取值与 acs-bench 的 --backend 一致。
type Backend string

// Backend 的取值。
const (
	BackendChat       Backend = "openai-chat" // /v1/chat/completions（默认）
	BackendCompletion Backend = "openai"      // /v1/completions
)

// ControlMethod 是并发的控制方式：固定并发、爬坡或容量扫描。
type ControlMethod string

// ControlMethod 的取值（ControlSweep 见 sweep.go 的说明）。
const (
	ControlNormal ControlMethod = "normal"
	ControlClimb  ControlMethod = "climb"
	// ControlSweep 是容量扫描控制方式：开环到达速率从低到高逐级（先倍增、再二分）
	// 提高，直到 goodput SLO 不再成立或出现错误，报告最大可持续速率、goodput 曲线与拐点。
	ControlSweep ControlMethod = "sweep"
)

// ClimbMode 是爬坡时并发的增长方式。
type ClimbMode string

// ClimbMode 的取值。
const (
	ClimbStatic ClimbMode = "static" // 每个间隔跳升 GrowthRate（默认）
	ClimbLinear ClimbMode = "linear" // 在间隔内均匀逐个增加
)

// DatasetType 是 prompt 的来源。
type DatasetType string

// DatasetType 的取值。新增类型时同时加进 datasetTypeValues。
const (
	DatasetRandom DatasetType = "random" // 内置中英混合随机文本（默认）
	DatasetCustom DatasetType = "custom" // 调用方给出的 Profile.Prompts
)

// ModalType 是请求的模态。
type ModalType string

// ModalType 的取值。
const (
	ModalText      ModalType = "text"       // 纯文本（默认）
	ModalImageText ModalType = "image-text" // chat 后端，附带一张 PNG 图片
)

// TimestampMode 是响应数据到达时刻的取法。
type TimestampMode string

// TimestampMode 的取值。
const (
	// TimestampsKernel：响应数据的到达时刻取内核接收时间戳（默认，平台支持时）；
	// TimestampsRead：取客户端读到数据时的 time.Now()，即应用层看到的时刻，
	// 含客户端自身的调度滞后。见 Record 与 docs/loadgen.md。
	TimestampsKernel TimestampMode = "kernel"
	TimestampsRead   TimestampMode = "read"
)

// 各类型的全部合法取值，Validate、UnmarshalText 与错误信息共用，顺序即错误信息里的顺序。
var (
	backendValues       = []Backend{BackendChat, BackendCompletion}
	controlMethodValues = []ControlMethod{ControlNormal, ControlClimb, ControlSweep}
	climbModeValues     = []ClimbMode{ClimbStatic, ClimbLinear}
	datasetTypeValues   = []DatasetType{DatasetRandom, DatasetCustom, DatasetMooncakeTrace, DatasetAzureTrace, DatasetSharedPrefix, DatasetPrefixRepetition, DatasetShareGPT}
	modalTypeValues     = []ModalType{ModalText, ModalImageText}
	timestampModeValues = []TimestampMode{TimestampsKernel, TimestampsRead}
)

// checkMode 检查 v 是否在取值表 values 中；不在时返回点名 YAML 键 field 的 *field.Error，
// 原因列出全部合法取值（`want "a", "b" or "c"`）。
func checkMode[T ~string](field string, v T, values []T) error {
	for _, x := range values {
		if v == x {
			return nil
		}
	}
	return invalid(field, v, "want "+wantList(values))
}

// wantList 把取值表写成 `"a", "b" or "c"`。
func wantList[T ~string](values []T) string {
	var b strings.Builder
	for i, x := range values {
		switch {
		case i == 0:
		case i == len(values)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(string(x)))
	}
	return b.String()
}

// parseMode 是各类型 UnmarshalText 的共同实现：空串表示未设置（交给 WithDefaults），
// 其余取值必须在表中。
func parseMode[T ~string](field string, text []byte, out *T, values []T) error {
	v := T(text)
	if v != "" {
		if err := checkMode(field, v, values); err != nil {
			return err
		}
	}
	*out = v
	return nil
}

// Validate 报告 b 是否是已知后端；错误是点名 "backend" 的 *field.Error。
func (b Backend) Validate() error { return checkMode("backend", b, backendValues) }

// MarshalText 实现 encoding.TextMarshaler（YAML、JSON 与 flag 输出原样的字符串）。
func (b Backend) MarshalText() ([]byte, error) { return []byte(b), nil }

// UnmarshalText 实现 encoding.TextUnmarshaler：解码时就拒绝未知取值，空串表示未设置。
func (b *Backend) UnmarshalText(text []byte) error {
	return parseMode("backend", text, b, backendValues)
}

// Validate 报告 m 是否是已知控制方式；错误点名 "control_method"。
func (m ControlMethod) Validate() error {
	return checkMode("control_method", m, controlMethodValues)
}

// MarshalText 实现 encoding.TextMarshaler。
func (m ControlMethod) MarshalText() ([]byte, error) { return []byte(m), nil }

// UnmarshalText 实现 encoding.TextUnmarshaler：拒绝未知取值，空串表示未设置。
func (m *ControlMethod) UnmarshalText(text []byte) error {
	return parseMode("control_method", text, m, controlMethodValues)
}

// Validate 报告 m 是否是已知爬坡策略；错误点名 "climb_mode"。
func (m ClimbMode) Validate() error { return checkMode("climb_mode", m, climbModeValues) }

// MarshalText 实现 encoding.TextMarshaler。
func (m ClimbMode) MarshalText() ([]byte, error) { return []byte(m), nil }

// UnmarshalText 实现 encoding.TextUnmarshaler：拒绝未知取值，空串表示未设置。
func (m *ClimbMode) UnmarshalText(text []byte) error {
	return parseMode("climb_mode", text, m, climbModeValues)
}

// Validate 报告 d 是否是已知数据集类型；错误点名 "dataset_type"。
func (d DatasetType) Validate() error {
	return checkMode("dataset_type", d, datasetTypeValues)
}

// MarshalText 实现 encoding.TextMarshaler。
func (d DatasetType) MarshalText() ([]byte, error) { return []byte(d), nil }

// UnmarshalText 实现 encoding.TextUnmarshaler：拒绝未知取值，空串表示未设置。
func (d *DatasetType) UnmarshalText(text []byte) error {
	return parseMode("dataset_type", text, d, datasetTypeValues)
}

// Validate 报告 m 是否是已知模态；错误点名 "modal_type"。
func (m ModalType) Validate() error { return checkMode("modal_type", m, modalTypeValues) }

// MarshalText 实现 encoding.TextMarshaler。
func (m ModalType) MarshalText() ([]byte, error) { return []byte(m), nil }

// UnmarshalText 实现 encoding.TextUnmarshaler：拒绝未知取值，空串表示未设置。
func (m *ModalType) UnmarshalText(text []byte) error {
	return parseMode("modal_type", text, m, modalTypeValues)
}

// Validate 报告 m 是否是已知时间戳取法；错误点名 "timestamps"。
func (m TimestampMode) Validate() error {
	return checkMode("timestamps", m, timestampModeValues)
}

// MarshalText 实现 encoding.TextMarshaler。
func (m TimestampMode) MarshalText() ([]byte, error) { return []byte(m), nil }

// UnmarshalText 实现 encoding.TextUnmarshaler：拒绝未知取值，空串表示未设置。
func (m *TimestampMode) UnmarshalText(text []byte) error {
	return parseMode("timestamps", text, m, timestampModeValues)
}

package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"maps"
	"path"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/internal/junit"
)

// 本文件是阶段结果进入报告的唯一接缝：report 不导入任何阶段包（functional、loadgen、
// accuracy），一个阶段的结果以"分节"（Section，JSON 原文）记进场景，再由调用方交进来的
// Renderer 渲染成 JUnit、HTML 片段与门禁输入。内置阶段的 Renderer 在子包 functionalreport、
// perfreport、accuracyreport 里；团队的新阶段照同样的方式接入，不必改 report。

// ErrSection 表示分节的描述不合法（键或文件名），或分节内容无法编码。
var ErrSection = errors.New("report: invalid section")

// Section 描述场景里一个分节的存放：它在 summary.json 场景对象上的键，以及它在场景目录下的文件。
//
// 每次记录都把分节原子地写进 <scenario>/<File>，并写一份索引 <scenario>/section-<Key>.json
// （内容即本描述），Load 据此找回分节而不需要知道它的类型；分阶段的 CI job 各写各的索引，
// 合并产物时互不覆盖（与 stage-*.json、errors-*.json 同一做法）。
type Section struct {
	// Key 是分节名：summary.json 中场景对象上的键（"functional"、"perf"），必须是安全的
	// 单段名字，且不能是场景自身的字段（name、model、quant、deploy、backend、errors、stages）。
	Key string `json:"key"`
	// File 是场景目录下的斜杠相对路径，至少两段（"<阶段目录>/<文件>"，如 "perf/summary.json"）。
	File string `json:"file"`
	// Detail 为 true 时分节只写文件、不进 summary.json（体积随运行时长增长的时间线、
	// 逐请求样本）；Load 与 ArtifactBaselines 照样读回它。
	Detail bool `json:"detail,omitempty"`
}

// reservedKeys 是场景对象自身的 JSON 键，分节不能占用。
var reservedKeys = map[string]bool{"name": true, "model": true, "quant": true, "deploy": true, "backend": true, "hardware": true, "errors": true, "stages": true}

// Validate 检查分节描述：键是安全的单段名字且不与场景字段重名，文件是场景目录内至少两段的
// 相对路径、不与 report 自己的文件冲突。错误包装 ErrSection 并写明键与取值。
func (s Section) Validate() error {
	if !safeName.MatchString(s.Key) || len(s.Key) > 100 {
		return fmt.Errorf("%w: key %q (want [A-Za-z0-9_][A-Za-z0-9._-]*)", ErrSection, s.Key)
	}
	if reservedKeys[s.Key] {
		return fmt.Errorf("%w: key %q is a scenario field", ErrSection, s.Key)
	}
	if !fs.ValidPath(s.File) || !strings.Contains(s.File, "/") || strings.HasSuffix(s.File, "/") {
		return fmt.Errorf("%w: section %s: file %q (want <stage>/<file>, relative, slash-separated)", ErrSection, s.Key, s.File)
	}
	for _, seg := range strings.Split(s.File, "/") {
		if strings.HasPrefix(seg, tmpPrefix) || strings.HasPrefix(seg, ".") {
			return fmt.Errorf("%w: section %s: file %q has a hidden or reserved segment", ErrSection, s.Key, s.File)
		}
	}
	return nil
}

// sectionIndex 返回分节索引文件相对场景目录的路径。
func sectionIndex(key string) string { return "section-" + key + ".json" }

// Section 返回场景中键为 key 的分节原文（先找 Sections，再找 Details）；没有时 ok 为 false。
func (sc Scenario) Section(key string) (raw json.RawMessage, ok bool) {
	if raw, ok = sc.Sections[key]; ok {
		return raw, true
	}
	raw, ok = sc.Details[key]
	return raw, ok
}

// Decode 把场景中键为 key 的分节解码进 v（指针），返回分节是否存在。分节不存在时
// v 不变、返回 (false, nil)；原文无法解码时错误写明场景与键。
func (sc Scenario) Decode(key string, v any) (bool, error) {
	raw, ok := sc.Section(key)
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("report: scenario %s: section %s: %w", sc.Name, key, err)
	}
	return true, nil
}

// SetSection 把 v 编码为分节 sec 存进场景（覆盖同名分节），不落盘：用于在内存里组装
// Result（测试、从别处导入的结果）。记录进产物目录用 Run.RecordSection。
// 编码前 v 中的 NaN/±Inf 换成 −1（见 RecordSection）。
func (sc *Scenario) SetSection(sec Section, v any) error {
	if err := sec.Validate(); err != nil {
		return err
	}
	raw, err := encodeSection(sec, v)
	if err != nil {
		return err
	}
	sc.putSection(sec, raw)
	return nil
}

// putSection 把原文放进 Sections 或 Details（并从另一处删掉同名键）。
func (sc *Scenario) putSection(sec Section, raw json.RawMessage) {
	dst, other := &sc.Sections, &sc.Details
	if sec.Detail {
		dst, other = other, dst
	}
	if *dst == nil {
		*dst = map[string]json.RawMessage{}
	}
	(*dst)[sec.Key] = raw
	delete(*other, sec.Key)
}

// encodeSection 清洗 v 中的非有限浮点数后编码为紧凑 JSON。v 不是指针时先复制一份再清洗
// （切片、映射等引用的元素仍是调用方的，其中的 NaN 会被就地换成 −1，与记录前的语义一致）。
func encodeSection(sec Section, v any) (json.RawMessage, error) {
	if v != nil {
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Pointer {
			cp := reflect.New(rv.Type())
			cp.Elem().Set(rv)
			rv = cp
		}
		sanitizeValue(rv)
		v = rv.Interface()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: encode section %s: %w", ErrSection, sec.Key, err)
	}
	// null 不是结果：它在 summary.json 里与"没有这个分节"无法区分，读回时也会被丢掉。
	if string(b) == "null" {
		return nil, fmt.Errorf("%w: section %s: nothing to record (nil value)", ErrSection, sec.Key)
	}
	return b, nil
}

// RecordSection 把 v 记为场景 scenario 的分节 sec（覆盖此前的记录）：立即原子写入
// <scenario>/<sec.File>、分节索引与 summary.json（Detail 分节不进 summary.json）。
//
// encoding/json 拒绝编码 NaN/±Inf，一个除零得到的 QPS 就会让文件写不出来，所以编码前
// v 中所有 NaN/±Inf 的浮点数都换成 −1（与 acs-bench CSV 的"不可测"约定一致）。
func (r *Run) RecordSection(scenario string, sec Section, v any) error {
	return r.UpdateSection(scenario, sec, func(json.RawMessage) (any, error) { return v, nil })
}

// UpdateSection 在 Run 的锁内把分节的当前原文（没有时为 nil）交给 update，update 的返回值
// 成为新内容并像 RecordSection 一样落盘。追加（性能行、精度结果）与合并（逐请求样本）
// 用它实现，并发的两次追加不会互相覆盖。update 返回错误时什么也不写。
func (r *Run) UpdateSection(scenario string, sec Section, update func(old json.RawMessage) (any, error)) error {
	if err := sec.Validate(); err != nil {
		return err
	}
	if err := checkName("scenario", scenario); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return ErrFinished
	}
	var old json.RawMessage
	for _, s := range r.res.Scenarios {
		if s.Name == scenario {
			old, _ = s.Section(sec.Key)
		}
	}
	v, err := update(old)
	if err != nil {
		return fmt.Errorf("report: scenario %s: section %s: %w", scenario, sec.Key, err)
	}
	raw, err := encodeSection(sec, v)
	if err != nil {
		return err
	}
	// 场景在分节可以写出之后才登记：失败的记录不留下空场景。
	sc := r.scenarioLocked(scenario)
	sc.putSection(sec, raw)
	idx := path.Join(scenario, sectionIndex(sec.Key))
	if r.indexed[idx] != sec {
		if err := r.writeJSONLocked(idx, sec); err != nil {
			return err
		}
		r.indexed[idx] = sec
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, raw, "", "  "); err != nil {
		return fmt.Errorf("report: indent section %s: %w", sec.Key, err)
	}
	ind.WriteByte('\n')
	if err := r.writeFileLocked(path.Join(scenario, sec.File), ind.Bytes()); err != nil {
		return err
	}
	return r.persistScenarioLocked(sc, "")
}

// scenarioHead 与 scenarioTail 是场景对象在分节之前、之后的固定字段（MarshalJSON 用）。
type (
	scenarioHead struct {
		Name    string `json:"name"`
		Model   string `json:"model,omitempty"`
		Quant   string `json:"quant,omitempty"`
		Deploy  string `json:"deploy,omitempty"`
		Backend string `json:"backend,omitempty"`
		// Hardware 在 backend 之后：旧的 summary.json 没有它，读回时为空。
		Hardware string `json:"hardware,omitempty"`
	}
	scenarioTail struct {
		Errors []StageError  `json:"errors,omitempty"`
		Stages []StageResult `json:"stages,omitempty"`
	}
)

// MarshalJSON 把场景写成一个对象：name…backend，然后按键排序的分节（原文照抄），
// 最后 errors、stages。Details 不写（它们在各自的文件里）。
func (sc Scenario) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(scenarioHead{sc.Name, sc.Model, sc.Quant, sc.Deploy, sc.Backend, sc.Hardware})
	if err != nil {
		return nil, err
	}
	tail, err := json.Marshal(scenarioTail{sc.Errors, sc.Stages})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(head[:len(head)-1])
	for _, k := range slices.Sorted(maps.Keys(sc.Sections)) {
		key, _ := json.Marshal(k)
		b.WriteByte(',')
		b.Write(key)
		b.WriteByte(':')
		if !json.Valid(sc.Sections[k]) {
			return nil, fmt.Errorf("%w: scenario %s: section %s is not valid JSON", ErrSection, sc.Name, k)
		}
		b.Write(sc.Sections[k])
	}
	if len(tail) > 2 {
		b.WriteByte(',')
		b.Write(tail[1:])
	} else {
		b.WriteByte('}')
	}
	return b.Bytes(), nil
}

// UnmarshalJSON 读回 MarshalJSON 的输出：固定字段按名字解码，其余每个键都是一个分节，
// 原文保存在 Sections 里（report 不需要知道它的类型）。
func (sc *Scenario) UnmarshalJSON(b []byte) error {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	var head scenarioHead
	var tail scenarioTail
	if err := json.Unmarshal(b, &head); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &tail); err != nil {
		return err
	}
	*sc = Scenario{Name: head.Name, Model: head.Model, Quant: head.Quant, Deploy: head.Deploy, Backend: head.Backend, Hardware: head.Hardware,
		Errors: tail.Errors, Stages: tail.Stages}
	for k, v := range all {
		if reservedKeys[k] || string(v) == "null" {
			continue
		}
		if sc.Sections == nil {
			sc.Sections = map[string]json.RawMessage{}
		}
		sc.Sections[k] = v
	}
	return nil
}

// clone 返回场景的副本，分节映射各自复制（原文不可变，共享无妨），切片为浅拷贝。
func (sc Scenario) clone() Scenario {
	sc.Sections = maps.Clone(sc.Sections)
	sc.Details = maps.Clone(sc.Details)
	return sc
}

// Cell 是场景总览表中的一个单元格。Num 为 true 时右对齐（数字列）。
type Cell struct {
	Text string
	Num  bool
}

// JUnitSuite 是 Renderer.JUnit 给出的一个 testsuite（写成与 functional.WriteJUnit 同一种 XML
// 方言）。计数（tests、failures、skipped）由 report 按用例算出，不必填写。
type JUnitSuite struct {
	Name string
	// Seconds 是套件耗时，也计入根元素 testsuites 的 time。
	Seconds float64
	// Timestamp 是套件开始时间；零值不写。
	Timestamp time.Time
	Cases     []JUnitCase
}

// JUnitCase 是一个 testcase。Failure 与 Skipped 至多一个非 nil（都为 nil 即通过）。
type JUnitCase struct {
	Name, Classname string
	Seconds         float64
	Failure         *JUnitMessage
	Skipped         *JUnitMessage
	// SystemOut 是附加说明（例如"重试后才通过"），写进 system-out。
	SystemOut string
}

// JUnitMessage 是 failure / skipped 元素：Message 是一行摘要，Type 是类别，Body 是细节。
type JUnitMessage struct {
	Message, Type, Body string
}

// junitSuite 把公开的套件转换为 XML 元素（计数随用例累加）。
func junitSuite(s JUnitSuite) junit.Suite {
	out := junit.Suite{Name: s.Name, Time: junit.Seconds(s.Seconds)}
	if !s.Timestamp.IsZero() {
		out.Timestamp = s.Timestamp.UTC().Format("2006-01-02T15:04:05")
	}
	msg := func(m *JUnitMessage) *junit.Message {
		if m == nil {
			return nil
		}
		return &junit.Message{Message: m.Message, Type: m.Type, Body: m.Body}
	}
	for _, c := range s.Cases {
		out.Add(junit.Case{Name: c.Name, Classname: c.Classname, Time: junit.Seconds(c.Seconds), Failure: msg(c.Failure), Skipped: msg(c.Skipped), SystemOut: c.SystemOut})
	}
	return out
}

// Renderer 是一个阶段接入报告与门禁的方式：它读场景中自己的分节（Scenario.Decode），
// 给出 JUnit 套件、HTML 片段、场景总览表的列、门禁输入与"结果是否完整"。
// 所有字段都可以为空（httptrace.ClientTrace 式的可选钩子）：只想出现在 summary.json 的
// 阶段一个钩子也不用填。内置阶段的 Renderer 由 functionalreport.Renderer、
// perfreport.Renderer、accuracyreport.Renderer 返回；交给 WithRenderers、WriteHTML、
// WriteJUnit、Result.GateInputs 的顺序就是 HTML 中各阶段出现的顺序。
//
// 钩子对场景只读，可能被多次调用（HTML、JUnit、门禁各一次），不应有副作用；Finish 持有
// Run 的锁调用它们，所以钩子不能调用 Run 的方法。
type Renderer struct {
	// Name 是阶段名，用在错误信息里。
	Name string
	// Columns 是场景总览表中本阶段的列名；Cells 为一个场景给出同样个数的单元格。
	Columns []string
	Cells   func(sc Scenario) ([]Cell, error)
	// HTML 返回场景页面中本阶段的片段（含自己的 <h3> 标题；没有数据时给出说明而不是空白）。
	// 片段由调用方生成并负责转义（html/template 或 Chart.SVG），report 原样嵌入。
	HTML func(sc Scenario, gates []gate.Gate) (template.HTML, error)
	// JUnit 返回本阶段的测试套件（套件的 Seconds 之和计入根元素的 time）。
	JUnit func(sc Scenario) ([]JUnitSuite, error)
	// Gate 把本阶段的结果加进门禁输入 in（in 已填好场景身份与阶段错误）。
	Gate func(sc Scenario, in *gate.Scenario) error
	// Incomplete 报告本阶段的结果是否残缺（例如分片合并缺了分片）：残缺的运行
	// complete=false，永远不会成为基线；门禁都通过时退出码为 gate.ExitError。
	Incomplete func(sc Scenario) (bool, error)
}

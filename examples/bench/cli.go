package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/field"

	"gopkg.in/yaml.v3"

	"github.com/vllm-cibench/cibench/internal/yamlstrict"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/dataset"
)

// kind 是选项值的类型。
type kind int

// 选项值的类型：布尔、整数、浮点、字符串、整数列表、字符串列表、Go 时长。
const (
	kBool kind = iota
	kInt
	kFloat
	kString
	kIntList
	kStrList
	kDuration
)

// typeName 是 --help 中显示的类型名（沿用acs-bench 选项（docs/requirements.md 附录 A） 的写法）。
func (k kind) typeName() string {
	return [...]string{"Bool", "Int", "Float", "String", "Int,...", "String,...", "Duration"}[k]
}

// optDef 描述一个命令行选项：acs-bench 的短名与长名、类型、默认值、设置的 Profile 字段。
// reject 非空时，该选项只接受默认值（或，def 为空时，根本不能给出），其他取值以 reject
// 为原因报错——这些是 acs-bench 有、而本实现里没有意义的选项，宁可报错也不静默忽略。
type optDef struct {
	short, long string
	kind        kind
	def         string
	field       string // 设置的 loadgen.Profile YAML 键（多个用 "/" 连接），供错误定位与文档
	help        string
	min, max    float64 // 数值（列表则逐项）的闭区间；min == max == 0 表示不检查
	reject      string

	setBool  func(o *options, v bool)
	setInt   func(o *options, v int)
	setFloat func(o *options, v float64) error
	setStr   func(o *options, v string) error
	setInts  func(o *options, v []int)
	setStrs  func(o *options, v []string) error
	setDur   func(o *options, v time.Duration)
}

// names 返回 "-il/--input-length" 形式的名字。
func (d *optDef) names() string {
	switch {
	case d.short == "":
		return "--" + d.long
	case d.short == "seed": // acs-bench 选项（docs/requirements.md 附录 A） 把 --seed 列为短名
		return "--seed/--" + d.long
	}
	return "-" + d.short + "/--" + d.long
}

// occurrence 是命令行上出现的一次选项。
type occurrence struct {
	def     *optDef
	written string // 用户写的名字（含横线），错误信息里原样引用
	value   string
}

// errHelp 表示用户要求了 --help（已打印，正常退出）。
var errHelp = errors.New("help requested")

// isBoolLiteral 报告 s 是否是布尔值的写法：true/false（大小写不限，含 acs-bench
// 用户常写的 True/False）、1/0、t/f、yes/no。
func isBoolLiteral(s string) bool {
	_, ok := parseBool(s)
	return ok
}

// parseBool 解析布尔值写法，见 isBoolLiteral。
func parseBool(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "true", "1", "t", "yes", "y":
		return true, true
	case "false", "0", "f", "no", "n":
		return false, true
	}
	return false, false
}

// optTable 是一个子命令的选项表，按名字（不含横线）索引。
type optTable struct {
	cmd  string
	defs []*optDef
	by   map[string]*optDef
}

// newTable 建立索引；短名与长名都可以用一个或两个横线书写。
func newTable(cmd string, defs []*optDef) *optTable {
	t := &optTable{cmd: cmd, defs: defs, by: map[string]*optDef{}}
	for _, d := range defs {
		for _, n := range []string{d.short, d.long} {
			if n == "" {
				continue
			}
			if prev, dup := t.by[n]; dup && prev != d {
				panic("bench: duplicate option name " + n)
			}
			t.by[n] = d
		}
	}
	return t
}

// tokenize 把参数切成选项出现序列：--x v、--x=v、-x v、-x=v；布尔选项还可以单独出现
// （即 true），或后跟一个布尔值写法（--ignore-eos false、-ub True）。不认识的名字、
// 缺值与多余的位置参数都报错并点名。
func (t *optTable) tokenize(args []string) ([]occurrence, error) {
	var out []occurrence
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-h" || a == "--help" || a == "-help" {
			return nil, errHelp
		}
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			return nil, fmt.Errorf("%s: unexpected argument %q (options start with - or --; see --help)", t.cmd, a)
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		written, val, hasVal := a, "", false
		if k, v, ok := strings.Cut(name, "="); ok {
			name, val, hasVal = k, v, true
			written = a[:len(a)-len(v)-1]
		}
		d, ok := t.by[name]
		if !ok {
			return nil, fmt.Errorf("%s: unknown option %s (see --help)", t.cmd, written)
		}
		if !hasVal {
			switch {
			case d.kind == kBool && i+1 < len(args) && isBoolLiteral(args[i+1]):
				i++
				val = args[i]
			case d.kind == kBool:
				val = "true"
			case i+1 < len(args):
				i++
				val = args[i]
			default:
				return nil, fmt.Errorf("%s: option %s needs a value (%s)", t.cmd, written, d.kind.typeName())
			}
		}
		out = append(out, occurrence{def: d, written: written, value: val})
	}
	return out, nil
}

// apply 逐个应用选项：先做语法与范围检查（错误点名选项与取值），列表选项累积所有
// 出现（逗号分隔与重复给出等价），标量选项以最后一次为准；然后检查被拒绝的选项。
// 返回 Profile 字段 → 设置它的选项写法，供后续校验错误定位。
func (t *optTable) apply(o *options, occ []occurrence) (map[string]string, error) {
	set := map[string]string{}
	lists := map[*optDef][]string{}
	var order []*optDef
	last := map[*optDef]occurrence{}
	for _, oc := range occ {
		d := oc.def
		if _, seen := last[d]; !seen {
			order = append(order, d)
		}
		last[d] = oc
		if d.kind == kIntList || d.kind == kStrList {
			items := strings.Split(oc.value, ",")
			for _, it := range items {
				if strings.TrimSpace(it) == "" {
					return nil, fmt.Errorf("%s %q: empty item in the list (write 1,2,4 or repeat the option)", oc.written, oc.value)
				}
			}
			lists[d] = append(lists[d], items...)
		}
	}
	for _, d := range order {
		oc := last[d]
		if err := t.applyOne(o, d, oc, lists[d]); err != nil {
			return nil, err
		}
		if d.field != "" {
			for _, f := range strings.Split(d.field, "/") {
				set[f] = oc.written
			}
		}
	}
	return set, nil
}

// inRange 检查数值是否在选项的区间内。
func (d *optDef) inRange(v float64) bool {
	if d.min == 0 && d.max == 0 {
		return true
	}
	return v >= d.min && v <= d.max
}

// rangeText 是区间的可读写法。
func (d *optDef) rangeText() string {
	return fmt.Sprintf("must be in [%s, %s]", strconv.FormatFloat(d.min, 'g', -1, 64), strconv.FormatFloat(d.max, 'g', -1, 64))
}

// applyOne 解析并应用一个选项的值。
func (t *optTable) applyOne(o *options, d *optDef, oc occurrence, items []string) error {
	bad := func(why string) error { return fmt.Errorf("%s %q: %s", oc.written, oc.value, why) }
	if d.reject != "" {
		if err := d.checkReject(oc, items); err != nil {
			return err
		}
	}
	switch d.kind {
	case kBool:
		b, ok := parseBool(oc.value)
		if !ok {
			return bad("want true or false")
		}
		if d.setBool != nil {
			d.setBool(o, b)
		}
	case kInt:
		n, err := strconv.Atoi(strings.TrimSpace(oc.value))
		if err != nil {
			return bad("not an integer")
		}
		if !d.inRange(float64(n)) {
			return bad(d.rangeText())
		}
		if d.setInt != nil {
			d.setInt(o, n)
		}
	case kFloat:
		f, err := strconv.ParseFloat(strings.TrimSpace(oc.value), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return bad("not a finite number")
		}
		if !d.inRange(f) {
			return bad(d.rangeText())
		}
		if d.setFloat != nil {
			if err := d.setFloat(o, f); err != nil {
				return bad(err.Error())
			}
		}
	case kString:
		if d.setStr != nil {
			if err := d.setStr(o, oc.value); err != nil {
				return bad(err.Error())
			}
		}
	case kDuration:
		v, err := time.ParseDuration(oc.value)
		if err != nil || v < 0 {
			return bad("want a non-negative duration such as 10ms")
		}
		if d.setDur != nil {
			d.setDur(o, v)
		}
	case kIntList:
		ns := make([]int, len(items))
		for i, it := range items {
			n, err := strconv.Atoi(strings.TrimSpace(it))
			if err != nil {
				return fmt.Errorf("%s %q: item %q is not an integer", oc.written, strings.Join(items, ","), it)
			}
			if !d.inRange(float64(n)) {
				return fmt.Errorf("%s %q: item %d %s", oc.written, strings.Join(items, ","), n, d.rangeText())
			}
			ns[i] = n
		}
		if d.setInts != nil {
			d.setInts(o, ns)
		}
	case kStrList:
		ss := make([]string, len(items))
		for i, it := range items {
			ss[i] = strings.TrimSpace(it)
		}
		if d.setStrs != nil {
			if err := d.setStrs(o, ss); err != nil {
				return fmt.Errorf("%s %q: %w", oc.written, strings.Join(items, ","), err)
			}
		}
	}
	return nil
}

// checkReject 对本实现中没有意义的选项：只接受默认值；def 为空时任何取值都报错。
func (d *optDef) checkReject(oc occurrence, items []string) error {
	fail := fmt.Errorf("%s %q: %s", oc.written, oc.value, d.reject)
	if d.def == "" {
		return fail
	}
	switch d.kind {
	case kBool:
		b, ok := parseBool(oc.value)
		want, _ := parseBool(d.def)
		if ok && b != want {
			return fail
		}
	case kInt, kFloat:
		v, err := strconv.ParseFloat(strings.TrimSpace(oc.value), 64)
		want, _ := strconv.ParseFloat(d.def, 64)
		if err == nil && v != want {
			return fail
		}
	case kStrList:
		for _, it := range items {
			if strings.TrimSpace(it) != d.def {
				return fail
			}
		}
	default:
		if oc.value != d.def {
			return fail
		}
	}
	return nil
}

// usage 打印子命令的帮助：每个选项的短名、长名、类型、默认值与说明；
// 不支持的选项单列一节，说明只接受什么值。
func (t *optTable) usage(w io.Writer, synopsis string) {
	fmt.Fprintf(w, "usage: %s\n\n", synopsis)
	var ok, rej []*optDef
	for _, d := range t.defs {
		if d.reject != "" {
			rej = append(rej, d)
		} else {
			ok = append(ok, d)
		}
	}
	line := func(d *optDef, text string) {
		def := ""
		if d.def != "" {
			def = " (default " + d.def + ")"
		}
		fmt.Fprintf(w, "  %-40s %-10s %s%s\n", d.names(), d.kind.typeName(), text, def)
	}
	fmt.Fprintln(w, "options (short and long names are equivalent; one or two dashes; Bool as -x, -x true|false|True|False, or -x=...;")
	fmt.Fprintln(w, "lists comma-separated without spaces or repeated):")
	for _, d := range ok {
		line(d, d.help)
	}
	if len(rej) > 0 {
		fmt.Fprintln(w, "\naccepted from acs-bench command lines but only with their default value (anything else is an error):")
		for _, d := range rej {
			line(d, d.reject)
		}
	}
}

// profileYAML 是 --perf-profile 读入的文件：内容与每个键的值节点（定位行号用）。
type profileYAML struct {
	path  string
	nodes map[string]*yaml.Node
}

// benchProfile 是 --perf-profile 文件的形状：loadgen.Profile 的全部键（内联），加上只对
// 命令行程序有意义的两项。它们曾是 loadgen.Profile 的字段，但库从不打开文件：数据集由调用方
// 读成 Profile.Prompts，分词器由调用方读成 Target.Tokenizer。把"路径"留在这一层，库的类型
// 就只描述压测本身（docs/packages.md "命令行与 acs-bench 的翻译层"）。
type benchProfile struct {
	loadgen.Profile `yaml:",inline"`
	// InputPath 是 custom 数据集（JSONL 文件或 generate dataset 的目录），同 -i/--input-path。
	InputPath string `yaml:"input_path"`
	// Tokenizer 是本地 HuggingFace tokenizer.json（或其目录），同 -t/--tokenizer。
	Tokenizer string `yaml:"tokenizer"`
}

// profile 返回 o 当前的 --perf-profile 形状（Profile 加命令行层的两项）。
func (o *options) profile() benchProfile {
	return benchProfile{Profile: o.p, InputPath: o.inputPath, Tokenizer: o.tokenizer}
}

// zeroIsDefault 是 Profile 中"0 表示取默认值"的字段：YAML 里显式写 0 多半是笔误
// （epochs: 0 曾被当成 1 跑），因此报错而不是静默改成默认值。
var zeroIsDefault = map[string]string{
	"epochs": "must be >= 1", "requests_per_concurrency": "must be >= 1", "burstiness": "must be > 0",
	"timeout": "must be > 0", "growth_interval": "must be > 0", "image_width": "must be >= 1", "image_height": "must be >= 1",
}

// loadProfileYAML 严格解码 YAML 档位（未知键、类型错误报 文件:行），并检查被默认值
// 掩盖的显式 0。
func loadProfileYAML(path string) (benchProfile, *profileYAML, error) {
	var p benchProfile
	data, err := os.ReadFile(path)
	if err != nil {
		return p, nil, fmt.Errorf("--perf-profile: %w", err)
	}
	// 与矩阵、providers.yaml 等一切用户 YAML 同一个严格解码器："文件:行:列: 字段路径: 原因"。
	if err := yamlstrict.Unmarshal(path, data, &p); err != nil {
		return p, nil, err
	}
	py := &profileYAML{path: path, nodes: map[string]*yaml.Node{}}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err == nil && len(root.Content) == 1 && root.Content[0].Kind == yaml.MappingNode {
		m := root.Content[0]
		for i := 0; i+1 < len(m.Content); i += 2 {
			py.nodes[m.Content[i].Value] = m.Content[i+1]
			// 嵌套一层的键（trace.block_size、multi_turn.turns_mean……）以带点的路径登记，
			// 校验错误因此能指到子字段所在的行。
			if sub := m.Content[i+1]; sub.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(sub.Content); j += 2 {
					py.nodes[m.Content[i].Value+"."+sub.Content[j].Value] = sub.Content[j+1]
				}
			}
		}
	}
	keys := make([]string, 0, len(zeroIsDefault))
	for k := range zeroIsDefault {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if n, ok := py.nodes[k]; ok && n.Kind == yaml.ScalarNode && isZeroScalar(n.Value) {
			return p, nil, fmt.Errorf("%s:%d: %s: %s: %s (omit the key for the default)", path, n.Line, k, n.Value, zeroIsDefault[k])
		}
	}
	return p, py, nil
}

// isZeroScalar 报告 YAML 标量是否表示零（0、0.0、0s、0ms）。
func isZeroScalar(v string) bool {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return f == 0
	}
	if d, err := time.ParseDuration(v); err == nil {
		return d == 0
	}
	return false
}

// at 返回 YAML 键（列表则其第 idx 项）所在的 "文件:行"，找不到时为文件名。
func (py *profileYAML) at(field string, idx int) string {
	if py == nil {
		return ""
	}
	n, ok := py.nodes[field]
	if !ok {
		return py.path
	}
	if n.Kind == yaml.SequenceNode && idx >= 0 && idx < len(n.Content) {
		return fmt.Sprintf("%s:%d", py.path, n.Content[idx].Line)
	}
	return fmt.Sprintf("%s:%d", py.path, n.Line)
}

// locate 把 Profile 校验错误改写成点名来源的错误：命令行给出的字段点名选项，
// 来自 --perf-profile 的字段点名 文件:行。
func locate(err error, set map[string]string, py *profileYAML) error {
	var pe *field.Error
	if !errors.As(err, &pe) {
		return err
	}
	name, idx := field.Index(pe.Field)
	if flag, ok := set[name]; ok {
		return fmt.Errorf("%s %v: %s (%w)", flag, pe.Value, pe.Reason, err)
	}
	if py != nil {
		return fmt.Errorf("%s: %s: %v: %s (%w)", py.at(name, idx), name, pe.Value, pe.Reason, err)
	}
	return err
}

// readDataset 读取 -i：一个 JSONL 文件，或一个目录（其中所有 .jsonl 文件，按文件名排序，
// 即 generate dataset 的输出目录）。
func readDataset(flag, path string) ([]dataset.Prompt, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	files := []string{path}
	if st.IsDir() {
		files, err = filepath.Glob(filepath.Join(path, "*.jsonl"))
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", flag, path, err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s %s: no .jsonl files in the directory (write them with: bench generate dataset -o %s ...)", flag, path, path)
		}
		sort.Strings(files)
	}
	var all []dataset.Prompt
	for _, f := range files {
		ps, err := readPromptFile(f)
		if err != nil {
			return nil, err
		}
		all = append(all, ps...)
	}
	return all, nil
}

// readPromptFile 读取一个 JSONL 数据集文件，错误带文件名与行号。
func readPromptFile(path string) ([]dataset.Prompt, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ps, err := dataset.ReadPrompts(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ps, nil
}

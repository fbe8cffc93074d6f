package yamlstrict

import (
	"encoding"
	"errors"
	"fmt"
	"github.com/vllm-cibench/cibench/field"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// maxNodes 限制一次解码访问的 YAML 节点总数。别名（&a / *a）可以让很小的
// 文件展开成指数级的树（"billion laughs"），这里给出硬上限以保证加载器在
// 任何输入下都能快速结束。
const maxNodes = 200000

// 解码错误是 *field.Error（cibench 全部配置加载器共用的字段错误类型），不带哨兵：
// 同一个错误无论经哪个入口（矩阵、bench、accuracy、functional）读到，文本都是
// "文件:行:列: 路径: 说明 (got "值")"；需要包名前缀的入口自己设置 Err。

// Decoder 把 yaml.Node 严格地解码进 Go 值：未知字段、重复键、类型不符
// 都记为 Error（带文件、行列与字段路径），并继续解码其余部分，
// 以便一次报告尽可能多的问题。
//
// 一个 Decoder 对应一个文件，不可并发使用。
type Decoder struct {
	// File 是错误中显示的文件名。
	File string
	// Errs 是至今累计的错误，按发现顺序。
	Errs []*field.Error
	// Pos 记录每个已解码字段路径（如 "perf.override.concurrency[1]"）的节点，
	// 供解码后的跨字段校验用 ErrAt 定位到行列。
	Pos map[string]*yaml.Node
	// Custom 非 nil 时在解码每个值之前被调用；返回 true 表示它已自行解释节点 n
	// （例如保持键顺序的映射、延迟解码的片段），解码器不再处理该值。
	Custom func(d *Decoder, n *yaml.Node, path string, v reflect.Value) bool
	// Check 非 nil 时在每个非空标量、结构体、列表或映射解码之后被调用（v 可寻址），
	// 返回的错误记在该节点处；用于枚举类字段，让非法取值指向它所在的行。
	Check func(v reflect.Value) error

	nodes int
}

// NewDecoder 为显示名为 file 的文件创建解码器。
func NewDecoder(file string) *Decoder {
	return &Decoder{File: file, Pos: map[string]*yaml.Node{}}
}

// Err 把累计的错误合并为一个 error（errors.Join，每条是 *field.Error）；没有错误时返回 nil。
func (d *Decoder) Err() error {
	if len(d.Errs) == 0 {
		return nil
	}
	errs := make([]error, len(d.Errs))
	for i, e := range d.Errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// ErrEmpty 表示文档为空（没有内容或只有注释）。Unmarshal 返回的空文档错误满足
// errors.Is(err, ErrEmpty)，接受空文件的调用方（例如叠加在默认值上的配置）据此忽略它。
var ErrEmpty = errors.New("file is empty")

// Unmarshal 把 data（恰好一个 YAML 文档）严格解码进 out（非 nil 指针）：未知字段、
// 重复键、类型不符、整数越界、多文档都是错误，每条是带 file:行:列 与字段路径的 *field.Error
// （多条以 errors.Join 合并）。空文档不修改 out，返回 "file: file is empty"（ErrEmpty）；
// 文档中未出现的键保持 out 中的原值，因此可以先填默认值再叠加。
//
// 这是 cibench 读取一切用户所写 YAML 的唯一入口（矩阵、档位、providers.yaml、
// 功能与精度配置），同一个错误在每个入口读起来都一样。
func Unmarshal(file string, data []byte, out any) error {
	return NewDecoder(file).Unmarshal(data, out)
}

// Unmarshal 与包级的 Unmarshal 相同，但用 d（调用方可以先设置 Custom、Check 钩子）。
func (d *Decoder) Unmarshal(data []byte, out any) error {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("yamlstrict: unmarshal %s: out must be a non-nil pointer, got %T", d.File, out)
	}
	root := d.ParseDocument(data)
	if root == nil && len(d.Errs) == 0 {
		return fmt.Errorf("%s: %w", d.File, ErrEmpty)
	}
	if root != nil {
		d.Pos[""] = root
		d.Decode(root, "", v.Elem())
	}
	return d.Err()
}

// Errorf 在节点 n 处记录一条错误；n 为 nil 时只记录文件。
func (d *Decoder) Errorf(n *yaml.Node, path, value, format string, args ...any) {
	e := &field.Error{File: d.File, Field: path, Value: value, Reason: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	d.Errs = append(d.Errs, e)
}

// ErrAt 在已记录的字段路径 path（找不到则逐级向上找父路径）处记录错误，
// 用于解码之后的语义校验。
func (d *Decoder) ErrAt(path, value, format string, args ...any) {
	p := path
	for {
		if n, ok := d.Pos[p]; ok {
			d.Errorf(n, path, value, format, args...)
			return
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			if n, ok := d.Pos[""]; ok {
				d.Errorf(n, path, value, format, args...)
				return
			}
			d.Errorf(nil, path, value, format, args...)
			return
		}
		p = p[:i]
	}
}

// ParseDocument 读取恰好一个 YAML 文档并返回其根节点；空文件返回 nil。
// 多文档文件被拒绝，因为配置树里一个文件只描述一件事。
func (d *Decoder) ParseDocument(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		d.Errs = append(d.Errs, yamlSyntaxError(d.File, err))
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		d.Errorf(&extra, "", "", "only one YAML document per file is allowed")
		return nil
	} else if !errors.Is(err, io.EOF) {
		d.Errs = append(d.Errs, yamlSyntaxError(d.File, err))
		return nil
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0]
	}
	return nil
}

// yamlSyntaxError 把 yaml.v3 的语法错误（"yaml: line N: …"）转换为带行号的 Error。
func yamlSyntaxError(file string, err error) *field.Error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	e := &field.Error{File: file, Reason: "invalid YAML: " + msg}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ":"); i > 0 {
			if line, err := strconv.Atoi(rest[:i]); err == nil {
				e.Line, e.Col = line, 1
				e.Reason = "invalid YAML:" + rest[i+1:]
			}
		}
	}
	return e
}

// Describe 给出节点的简短描述，用于类型不符的错误信息。
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "a string"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "null"
		}
		return "a scalar " + n.ShortTag()
	}
	return "an unsupported node"
}

var (
	durationType  = reflect.TypeOf(time.Duration(0))
	nodeType      = reflect.TypeOf(yaml.Node{})
	unmarshalType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
	textType      = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

// Decode 把节点 n 解码进 v（必须可寻址），path 是该值的字段路径。
func (d *Decoder) Decode(n *yaml.Node, path string, v reflect.Value) {
	d.nodes++
	if d.nodes > maxNodes {
		if d.nodes == maxNodes+1 {
			d.Errorf(n, path, "", "document too large (more than %d nodes after alias expansion)", maxNodes)
		}
		return
	}
	for n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			d.Errorf(n, path, "", "unresolved alias")
			return
		}
		n = n.Alias
	}
	if _, seen := d.Pos[path]; !seen {
		d.Pos[path] = n
	}
	t := v.Type()
	pt := reflect.PointerTo(t)
	switch {
	case d.Custom != nil && d.Custom(d, n, path, v):
		return
	case t == nodeType:
		v.Set(reflect.ValueOf(*n))
		return
	case pt.Implements(unmarshalType):
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.Errorf(n, path, ScalarValue(n), "%s", cleanYAMLErr(err))
		}
		return
	}
	if t.Kind() == reflect.Pointer {
		if IsNull(n) {
			v.Set(reflect.Zero(t))
			return
		}
		// 总是解码进新分配的值（先复制旧值）：被叠加的基础配置可能与别处共享
		// 同一个指针，就地修改会把覆盖项泄漏回基础配置。
		nv := reflect.New(t.Elem())
		if !v.IsNil() {
			nv.Elem().Set(v.Elem())
		}
		d.Decode(n, path, nv.Elem())
		v.Set(nv)
		return
	}
	if t == durationType {
		d.decodeDuration(n, path, v)
		return
	}
	if pt.Implements(textType) {
		if n.Kind != yaml.ScalarNode {
			d.Errorf(n, path, "", "want a string, got %s", Describe(n))
			return
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
			// 类型自己报告的字段错误只取原因与哨兵：位置、YAML 路径与取值由解码器给出，
			// 否则文本里会出现两遍字段名与取值（"backend: …: backend: … (got x) (got x)"）。
			var fe *field.Error
			if errors.As(err, &fe) {
				d.Errs = append(d.Errs, &field.Error{Err: fe.Err, File: d.File, Line: n.Line, Col: n.Column,
					Field: path, Value: n.Value, Reason: fe.Reason})
			} else {
				d.Errorf(n, path, n.Value, "%v", err)
			}
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, path, v)
	case reflect.Slice:
		d.decodeSlice(n, path, v)
	case reflect.Map:
		d.decodeMap(n, path, v)
	case reflect.Interface:
		var x any
		if err := n.Decode(&x); err != nil {
			d.Errorf(n, path, "", "%s", cleanYAMLErr(err))
			return
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
	default:
		d.decodeScalar(n, path, v)
	}
	if d.Check != nil && !IsNull(n) {
		if err := d.Check(v); err != nil {
			d.Errorf(n, path, n.Value, "%v", err)
			d.Errs[len(d.Errs)-1].Cause = err // 让 errors.Is 认出登记表的哨兵（如 ErrUnknownFeature）
		}
	}
}

// IsNull 报告节点是否为 YAML 空值（null、~ 或空）。
func IsNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// ScalarValue 返回标量节点的原文，非标量返回空串。
func ScalarValue(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return ""
}

// cleanYAMLErr 去掉 yaml.v3 错误信息中的冗余前缀，行号由 Error 自己给出。
func cleanYAMLErr(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "yaml: unmarshal errors:\n")
	s = strings.TrimPrefix(s, "yaml: ")
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			s = rest[i+2:]
		}
	}
	return s
}

// decodeDuration 只接受 Go 时长字符串（"30s"、"1h30m"）：裸整数在 YAML 里
// 会被当成纳秒，几乎总是写错了，因此明确拒绝。
func (d *Decoder) decodeDuration(n *yaml.Node, path string, v reflect.Value) {
	if IsNull(n) {
		return
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.Errorf(n, path, ScalarValue(n), "want a duration such as \"30s\" or \"20m\", got %s", Describe(n))
		return
	}
	dur, err := time.ParseDuration(n.Value)
	if err != nil {
		d.Errorf(n, path, n.Value, "invalid duration (want e.g. \"30s\", \"20m\", \"1h\")")
		return
	}
	if dur < 0 {
		d.Errorf(n, path, n.Value, "duration must not be negative")
		return
	}
	v.SetInt(int64(dur))
}

// structField 是结构体中一个可由 YAML 设置的字段。
type structField struct {
	index []int
	name  string
}

// yamlFields 按 yaml 标签（含 ",inline" 展开）列出结构体字段。
func yamlFields(t reflect.Type) []structField {
	var out []structField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct {
			for _, sub := range yamlFields(f.Type) {
				sub.index = append([]int{i}, sub.index...)
				out = append(out, sub)
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, structField{index: []int{i}, name: name})
	}
	return out
}

// JoinPath 在 path 后追加字段名。
func JoinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// decodeStruct 按字段标签解码映射，未知字段与重复键都是错误。
func (d *Decoder) decodeStruct(n *yaml.Node, path string, v reflect.Value) {
	if IsNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, path, ScalarValue(n), "want a mapping, got %s", Describe(n))
		return
	}
	fields := yamlFields(v.Type())
	byName := make(map[string]structField, len(fields))
	for _, f := range fields {
		byName[f.name] = f
	}
	// 合并键（<<: *anchor）先展开，显式写出的键随后覆盖，与 YAML 的合并语义一致。
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			d.decodeMerge(n.Content[i+1], path, v)
		}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.Errorf(k, path, "", "mapping keys must be strings, got %s", Describe(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			continue
		}
		fp := JoinPath(path, k.Value)
		if seen[k.Value] {
			d.Errorf(k, fp, "", "duplicate key")
			continue
		}
		seen[k.Value] = true
		f, ok := byName[k.Value]
		if !ok {
			d.Errorf(k, fp, "", "unknown field %q (known fields: %s)", k.Value, knownNames(fields))
			continue
		}
		d.Decode(val, fp, v.FieldByIndex(f.index))
	}
}

// decodeMerge 把合并键的值（一个映射或映射列表，通常是别名）解码进结构体 v。
func (d *Decoder) decodeMerge(n *yaml.Node, path string, v reflect.Value) {
	d.nodes++
	if d.nodes > maxNodes {
		if d.nodes == maxNodes+1 {
			d.Errorf(n, path, "", "document too large (more than %d nodes after alias expansion)", maxNodes)
		}
		return
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		d.decodeStruct(n, path, v)
	case yaml.SequenceNode:
		for _, item := range n.Content {
			d.decodeMerge(item, path, v)
		}
	default:
		d.Errorf(n, path, ScalarValue(n), "merge key (<<) needs a mapping or a list of mappings, got %s", Describe(n))
	}
}

// knownNames 把字段名排序后用逗号连接，放进“未知字段”错误里提示正确拼写。
func knownNames(fields []structField) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// decodeSlice 解码列表；null 得到 nil 切片。
func (d *Decoder) decodeSlice(n *yaml.Node, path string, v reflect.Value) {
	if IsNull(n) {
		v.Set(reflect.Zero(v.Type()))
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.Errorf(n, path, ScalarValue(n), "want a list, got %s", Describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		d.Decode(item, fmt.Sprintf("%s[%d]", path, i), s.Index(i))
	}
	v.Set(s)
}

// decodeMap 解码映射（整体替换原值）；重复键是错误。
func (d *Decoder) decodeMap(n *yaml.Node, path string, v reflect.Value) {
	// 映射整体替换而不是与已有内容合并：配置文件写出的映射（如 JSON Schema）
	// 就是完整的值，与默认值合并会悄悄产生两者都不是的东西。
	d.decodeMapInto(n, path, v, false)
}

// MergeMap 与普通映射的解码相同（键必须是标量、不得重复，值逐个经 Decode），但按键合并进 v 中
// 已有的内容而不是整体替换：同名键以本节点为准，其余键保留。供 Custom 钩子用于“名字 → 独立
// 条目”的映射（如功能配置的 params:），几个文件叠加时前一个文件的条目不会悄悄消失。
func (d *Decoder) MergeMap(n *yaml.Node, path string, v reflect.Value) {
	d.decodeMapInto(n, path, v, true)
}

// decodeMapInto 是 decodeMap 与 MergeMap 的实现；merge 为 false 时先把 v 换成新映射。
func (d *Decoder) decodeMapInto(n *yaml.Node, path string, v reflect.Value, merge bool) {
	if IsNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, path, ScalarValue(n), "want a mapping, got %s", Describe(n))
		return
	}
	t := v.Type()
	if !merge || v.IsNil() {
		v.Set(reflect.MakeMap(t))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.Errorf(k, path, "", "mapping keys must be scalars, got %s", Describe(k))
			continue
		}
		fp := JoinPath(path, k.Value)
		if seen[k.Value] {
			d.Errorf(k, fp, "", "duplicate key")
			continue
		}
		seen[k.Value] = true
		key := reflect.New(t.Key()).Elem()
		d.Decode(k, fp, key)
		elem := reflect.New(t.Elem()).Elem()
		d.Decode(val, fp, elem)
		v.SetMapIndex(key, elem)
	}
}

// decodeScalar 解码布尔、整数、浮点与字符串，并按 YAML 标签检查类型：
// 例如 "true" 写进整数字段、列表写进字符串字段都会报错，而不是被默默转换。
func (d *Decoder) decodeScalar(n *yaml.Node, path string, v reflect.Value) {
	if IsNull(n) {
		return
	}
	if n.Kind != yaml.ScalarNode {
		d.Errorf(n, path, "", "want %s, got %s", kindName(v.Kind()), Describe(n))
		return
	}
	tag := n.ShortTag()
	switch v.Kind() {
	case reflect.String:
		if tag != "!!str" {
			d.Errorf(n, path, n.Value, "want a string, got %s (quote it if it is meant as text)", Describe(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		if tag != "!!bool" {
			d.Errorf(n, path, n.Value, "want a boolean (true/false), got %s", Describe(n))
			return
		}
		b, _ := strconv.ParseBool(strings.ToLower(n.Value))
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var x int64
		if tag != "!!int" || n.Decode(&x) != nil {
			d.Errorf(n, path, n.Value, "want an integer, got %s", Describe(n))
			return
		}
		if v.OverflowInt(x) {
			d.Errorf(n, path, n.Value, "integer out of range for %s", v.Type())
			return
		}
		v.SetInt(x)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		var x uint64
		if tag != "!!int" || n.Decode(&x) != nil {
			d.Errorf(n, path, n.Value, "want a non-negative integer, got %s", Describe(n))
			return
		}
		if v.OverflowUint(x) {
			d.Errorf(n, path, n.Value, "integer out of range for %s", v.Type())
			return
		}
		v.SetUint(x)
	case reflect.Float32, reflect.Float64:
		var x float64
		if (tag != "!!float" && tag != "!!int") || n.Decode(&x) != nil {
			d.Errorf(n, path, n.Value, "want a number, got %s", Describe(n))
			return
		}
		v.SetFloat(x)
	default:
		d.Errorf(n, path, n.Value, "unsupported field type %s", v.Type())
	}
}

// kindName 给出 Go 类型种类的人类可读名字。
func kindName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	}
	return "a scalar"
}

package matrix

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// upper 实现 yaml.Unmarshaler，检验解码器把节点交还给自定义解码逻辑。
type upper string

// UnmarshalYAML 把字符串转成大写；非字符串报错。
func (u *upper) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	*u = upper(strings.ToUpper(s))
	return nil
}

// inner 用于 ",inline" 展开。
type inner struct {
	Shared string `yaml:"shared"`
}

// everything 覆盖严格解码器支持的每一种字段类型。
type everything struct {
	inner     `yaml:",inline"`
	U8        uint8             `yaml:"u8"`
	I8        int8              `yaml:"i8"`
	F32       float32           `yaml:"f32"`
	Any       any               `yaml:"any"`
	Addr      netip.Addr        `yaml:"addr"`
	Up        upper             `yaml:"up"`
	Ints      map[int]string    `yaml:"ints"`
	Ptr       *int              `yaml:"ptr"`
	D         time.Duration     `yaml:"d"`
	Node      yaml.Node         `yaml:"node"`
	Plain     string            // 无标签：按小写字段名
	Ignored   string            `yaml:"-"`
	Map       map[string]string `yaml:"map"`
	unexposed int
}

// decodeString 解析 src 并解码进 v，返回累计的错误文本。
func decodeString(t *testing.T, src string, v any) string {
	t.Helper()
	d := newDecoder("x.yaml")
	root := d.parseDocument([]byte(src))
	if root != nil {
		d.decode(root, "", reflectValue(v))
	}
	var msgs []string
	for _, e := range d.errs {
		msgs = append(msgs, e.Error())
	}
	return strings.Join(msgs, "\n")
}

// TestStrictDecoderTypes 覆盖严格解码器支持的全部字段类型（整数各宽度、浮点、指针、时长、map、yaml.Node 等）。
func TestStrictDecoderTypes(t *testing.T) {
	var v everything
	v.Map = map[string]string{"old": "x"}
	src := "shared: s\nu8: 200\ni8: -5\nf32: 1.5\nany: {a: [1, b]}\naddr: 10.0.0.1\nup: hi\nints: {3: three}\nptr: 7\nd: 1m\nnode: [x]\nplain: p\nmap: {new: y}\n"
	if msg := decodeString(t, src, &v); msg != "" {
		t.Fatal(msg)
	}
	if v.Shared != "s" || v.U8 != 200 || v.I8 != -5 || v.F32 != 1.5 || v.Addr.String() != "10.0.0.1" || v.Up != "HI" ||
		v.Ints[3] != "three" || *v.Ptr != 7 || v.D != time.Minute || v.Node.Kind != yaml.SequenceNode || v.Plain != "p" {
		t.Fatalf("decoded %+v", v)
	}
	if len(v.Map) != 1 || v.Map["new"] != "y" {
		t.Fatalf("maps are replaced, not merged: %v", v.Map)
	}
	if m, ok := v.Any.(map[string]any); !ok || len(m["a"].([]any)) != 2 {
		t.Fatalf("any = %#v", v.Any)
	}
	v.unexposed = 1
	_ = v.unexposed
}

// TestStrictDecoderErrors 确认越界、类型不符等错误都带 文件:行:列、字段路径与原因。
func TestStrictDecoderErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"u8: 300", "x.yaml:1:5: u8: integer out of range for uint8"},
		{"u8: -1", "u8: want a non-negative integer, got an integer"},
		{"i8: 200", "i8: integer out of range for int8"},
		{"f32: [1]", "f32: want a number, got a list"},
		{"addr: [1]", "addr: want a string, got a list"},
		{"addr: nope", `addr: ParseAddr("nope")`},
		{"up: [1]", "up: cannot unmarshal"},
		{"ints: {x: y}", "ints.x: want an integer, got a string"},
		{"ints: [1]", "ints: want a mapping, got a list"},
		{"ints: {3: a, 3: b}", "ints.3: duplicate key"},
		{"? [a]\n: 1", "mapping keys must be strings, got a list"},
		{"ints: {[a]: 1}", "mapping keys must be scalars, got a list"},
		{"d: [1s]", "want a duration such as"},
		{"d: -1s", `d: duration must not be negative (got "-1s")`},
		{"[1, 2]", "want a mapping, got a list"},
		{"plain: !!binary aGk=", "plain: want a string, got a scalar !!binary"},
		{"Ignored: x", `unknown field "Ignored"`},
		{"any: !!str [", "invalid YAML"},
		{"a: b: c", "x.yaml: invalid YAML: mapping values are not allowed in this context"},
	} {
		var v everything
		if msg := decodeString(t, tc.src, &v); !strings.Contains(msg, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.src, msg, tc.want)
		}
	}
}

// TestErrorFormatting 固定 Error 在有无行号、字段路径与取值时的文本格式。
func TestErrorFormatting(t *testing.T) {
	e := &Error{File: "f.yaml", Msg: "boom"}
	if e.Error() != "matrix: f.yaml: boom" {
		t.Fatal(e.Error())
	}
	e = &Error{File: "f.yaml", Line: 2, Column: 3, Path: "a.b", Value: "v", Msg: "bad"}
	if e.Error() != `matrix: f.yaml:2:3: a.b: bad (got "v")` {
		t.Fatal(e.Error())
	}
	if got := cleanYAMLErr(yamlErr(t, "x: [")); got != "did not find expected node content" {
		t.Fatalf("cleanYAMLErr kept the prefix: %q", got)
	}
	if kindName(0) != "a scalar" || kindName(8) != "an integer" {
		t.Fatal("kindName")
	}
}

// yamlErr 返回解析 src 得到的 yaml.v3 错误。
func yamlErr(t *testing.T, src string) error {
	t.Helper()
	var x any
	err := yaml.Unmarshal([]byte(src), &x)
	if err == nil {
		t.Fatal("want a YAML error")
	}
	return err
}

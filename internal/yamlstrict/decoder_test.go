package yamlstrict

import (
	"errors"
	"github.com/vllm-cibench/cibench/field"
	"net/netip"
	"reflect"
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
	d := NewDecoder("x.yaml")
	root := d.ParseDocument([]byte(src))
	if root != nil {
		d.Decode(root, "", reflect.ValueOf(v).Elem())
	}
	var msgs []string
	for _, e := range d.Errs {
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

// TestErrorHelpers 固定 yaml.v3 错误文本的清理与节点种类的描述（Error 的文本格式由
// field 包的测试固定）。
func TestErrorHelpers(t *testing.T) {
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

// color 是测试用的枚举类型，检验 Check 钩子把非法取值记在它所在的行。
type color string

// withHooks 的 Kind 由 Custom 钩子整体接管（保存原文），Color 由 Check 钩子校验。
type withHooks struct {
	Kind  string `yaml:"kind"`
	Color color  `yaml:"color"`
	N     int    `yaml:"n"`
}

// TestHooksAndUnmarshal 覆盖 Unmarshal 的入口语义（空文档不改 out、非指针报错、
// 多条错误一次报告、文件名与行列）以及 Custom / Check 钩子。
func TestHooksAndUnmarshal(t *testing.T) {
	v := withHooks{N: 7}
	if err := Unmarshal("empty.yaml", []byte("# only a comment\n"), &v); !errors.Is(err, ErrEmpty) || err.Error() != "empty.yaml: file is empty" || v.N != 7 {
		t.Fatalf("empty document: %v %+v", err, v)
	}
	if err := Unmarshal("x.yaml", []byte("n: 1\n"), v); err == nil || !strings.Contains(err.Error(), "non-nil pointer") {
		t.Fatalf("non-pointer: %v", err)
	}
	err := Unmarshal("p.yaml", []byte("n: 1\nbogus: 2\nn: 3\ncolor: [red]\n"), &v)
	var first *field.Error
	if !errors.As(err, &first) || first.File != "p.yaml" || first.Line != 2 || first.Col != 1 || first.Field != "bogus" {
		t.Fatalf("first error: %+v (%v)", first, err)
	}
	for _, want := range []string{`p.yaml:2:1: bogus: unknown field "bogus" (known fields: color, kind, n)`, "p.yaml:3:1: n: duplicate key", "p.yaml:4:8: color: want a string, got a list"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}

	d := NewDecoder("h.yaml")
	d.Custom = func(d *Decoder, n *yaml.Node, path string, v reflect.Value) bool {
		if path != "kind" {
			return false
		}
		v.SetString("custom:" + n.Value)
		return true
	}
	d.Check = func(v reflect.Value) error {
		if c, ok := v.Addr().Interface().(*color); ok && *c != "red" {
			return errors.New("invalid color (want red)")
		}
		return nil
	}
	root := d.ParseDocument([]byte("kind: a\ncolor: blue\n"))
	var h withHooks
	d.Decode(root, "", reflect.ValueOf(&h).Elem())
	if h.Kind != "custom:a" || len(d.Errs) != 1 || d.Errs[0].Error() != `h.yaml:2:8: color: invalid color (want red) (got "blue")` {
		t.Fatalf("hooks: %+v %v", h, d.Err())
	}
	d.ErrAt("kind.deeper", "", "late check")
	if d.Errs[1].Line != 1 || d.Errs[1].Field != "kind.deeper" {
		t.Fatalf("ErrAt did not fall back to the parent path: %+v", d.Errs[1])
	}
}

// FuzzUnmarshal 把任意字节交给 Unmarshal：不得 panic 或卡死，每条错误都必须指明文件。
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{"u8: 300", "a: &a [*a, *a]\nb: *a", "ints: {3: a, 3: b}", "- [1, {2: 3}]", "map: {<<: [{a: b}]}", "any: !!binary aGk="} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v everything
		err := Unmarshal("f.yaml", data, &v)
		if err == nil || errors.Is(err, ErrEmpty) {
			return
		}
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			var se *field.Error
			if !errors.As(e, &se) || se.File != "f.yaml" {
				t.Fatalf("error without file: %v", e)
			}
		}
	})
}

// listsAndMerges 覆盖列表、布尔与合并键（<<: *anchor）。
type listsAndMerges struct {
	Names []string       `yaml:"names"`
	On    bool           `yaml:"on"`
	Base  map[string]int `yaml:"base"`
	Child struct {
		A int `yaml:"a"`
		B int `yaml:"b"`
	} `yaml:"child"`
	D time.Duration `yaml:"d"`
}

// TestListsMergesAndScalars 覆盖列表、合并键、布尔与时长的正常解码，以及它们的典型错误：
// 这些路径原先只被 matrix 的测试间接覆盖，包自己的覆盖率低于门槛。
func TestListsMergesAndScalars(t *testing.T) {
	var v listsAndMerges
	src := "names: [a, b]\non: true\nbase: &b {a: 1}\nchild:\n  <<: {a: 3}\n  b: 4\nd: 90s\n"
	if err := Unmarshal("ok.yaml", []byte(src), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Names) != 2 || v.Names[1] != "b" || !v.On || v.Base["a"] != 1 ||
		v.Child.A != 3 || v.Child.B != 4 || v.D != 90*time.Second {
		t.Fatalf("decoded %+v", v)
	}
	for _, tc := range []struct{ src, want string }{
		{"names: {a: 1}", "names: want a list, got a mapping"},
		{"names: [[x]]", "names[0]: want a string, got a list"},
		{"on: maybe", "on: want a boolean"},
		{"d: 5", "want a duration such as"},
		{"d: soon", `d: invalid duration`},
		{"child: {<<: [1]}", "child"},
		{"child: {<<: 3}", "child"},
		{"a: 1\n---\nb: 2\n", "x.yaml"},
	} {
		var v listsAndMerges
		err := Unmarshal("x.yaml", []byte(tc.src), &v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error containing %q", tc.src, err, tc.want)
		}
	}
	if err := Unmarshal("e.yaml", []byte("# nothing\n"), &v); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty document: err = %v, want ErrEmpty", err)
	}
	if err := Unmarshal("p.yaml", []byte("on: true\n"), v); err == nil {
		t.Error("non-pointer out must be rejected")
	}
}

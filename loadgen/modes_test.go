package loadgen_test

import (
	"encoding"
	"errors"
	"flag"
	"github.com/vllm-cibench/cibench/field"
	"io"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/vllm-cibench/cibench/internal/yamlstrict"
	"github.com/vllm-cibench/cibench/loadgen"
)

// modeCase 是一个枚举类型的测试用例：一个合法取值、一个非法取值与期望点名的 YAML 键。
type modeCase struct {
	field string
	new   func() encoding.TextUnmarshaler
	good  string
	bad   string
}

// modeCases 覆盖 Profile 的全部枚举字段。
var modeCases = []modeCase{
	{"backend", func() encoding.TextUnmarshaler { return new(loadgen.Backend) }, "openai", "openai_chat"},
	{"control_method", func() encoding.TextUnmarshaler { return new(loadgen.ControlMethod) }, "sweep", "ramp"},
	{"climb_mode", func() encoding.TextUnmarshaler { return new(loadgen.ClimbMode) }, "linear", "exp"},
	{"dataset_type", func() encoding.TextUnmarshaler { return new(loadgen.DatasetType) }, "custom", "longbench"},
	{"modal_type", func() encoding.TextUnmarshaler { return new(loadgen.ModalType) }, "image-text", "image"},
	{"timestamps", func() encoding.TextUnmarshaler { return new(loadgen.TimestampMode) }, "read", "wall"},
}

// TestModesUnmarshalText 验证每个枚举：合法值原样往返（UnmarshalText → MarshalText），
// 空串表示未设置，未知值在解码时就被拒绝，错误是点名 YAML 键与取值的 *field.Error。
func TestModesUnmarshalText(t *testing.T) {
	for _, c := range modeCases {
		v := c.new()
		if err := v.UnmarshalText([]byte(c.good)); err != nil {
			t.Fatalf("%s %q: %v", c.field, c.good, err)
		}
		out, err := v.(encoding.TextMarshaler).MarshalText()
		if err != nil || string(out) != c.good {
			t.Fatalf("%s: MarshalText = %q, %v; want %q", c.field, out, err, c.good)
		}
		if err := c.new().UnmarshalText(nil); err != nil {
			t.Fatalf("%s: empty means unset, got %v", c.field, err)
		}
		err = c.new().UnmarshalText([]byte(c.bad))
		var pe *field.Error
		if !errors.As(err, &pe) || pe.Field != c.field || pe.Value != c.bad || !errors.Is(err, loadgen.ErrInvalidProfile) {
			t.Fatalf("%s %q: want *field.Error naming the field and the value, got %#v", c.field, c.bad, err)
		}
	}
}

// TestModesValidateMessage 验证错误原因列出全部合法取值（与改为具名类型之前的措辞相同）。
func TestModesValidateMessage(t *testing.T) {
	for v, want := range map[interface{ Validate() error }]string{
		loadgen.Backend("x"):       `loadgen: invalid profile: backend: want "openai-chat" or "openai" (got "x")`,
		loadgen.ControlMethod("x"): `loadgen: invalid profile: control_method: want "normal", "climb" or "sweep" (got "x")`,
		loadgen.ModalType(""):      `loadgen: invalid profile: modal_type: want "text" or "image-text"`,
	} {
		if err := v.Validate(); err == nil || err.Error() != want {
			t.Errorf("%#v: got %v, want %s", v, err, want)
		}
	}
}

// TestModesYAML 验证 YAML（yaml.v3 与项目的严格解码器）在解码 Profile 时就拒绝未知取值并点名键，
// 合法取值解码成对应常量。
func TestModesYAML(t *testing.T) {
	var p loadgen.Profile
	good := "backend: openai\ncontrol_method: climb\nclimb_mode: linear\ndataset_type: random\nmodal_type: text\ntimestamps: read\n"
	if err := yamlstrict.Unmarshal("p.yaml", []byte(good), &p); err != nil {
		t.Fatal(err)
	}
	if p.Backend != loadgen.BackendCompletion || p.ControlMethod != loadgen.ControlClimb || p.ClimbMode != loadgen.ClimbLinear ||
		p.DatasetType != loadgen.DatasetRandom || p.ModalType != loadgen.ModalText || p.Timestamps != loadgen.TimestampsRead {
		t.Fatalf("%+v", p)
	}
	err := yamlstrict.Unmarshal("p.yaml", []byte("input_length: [8]\nclimb_mode: exp\n"), &p)
	var ye *field.Error
	if !errors.As(err, &ye) || ye.Line != 2 || ye.File != "p.yaml" {
		t.Fatalf("want a yamlstrict error on line 2, got %v", err)
	}
	var q loadgen.Profile
	err = yaml.Unmarshal([]byte("modal_type: video\n"), &q)
	var pe *field.Error
	if !errors.As(err, &pe) || pe.Field != "modal_type" || pe.Value != "video" {
		t.Fatalf("yaml.v3: want *field.Error for modal_type, got %v", err)
	}
	out, err := yaml.Marshal(loadgen.Profile{Backend: loadgen.BackendChat})
	if err != nil {
		t.Fatal(err)
	}
	var back loadgen.Profile
	if err := yaml.Unmarshal(out, &back); err != nil || back.Backend != loadgen.BackendChat {
		t.Fatalf("round trip: %v %+v", err, back.Backend)
	}
}

// TestModesFlag 验证枚举可直接作为 flag.TextVar：命令行程序不需要自己的取值表。
func TestModesFlag(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var b loadgen.Backend
	fs.TextVar(&b, "backend", loadgen.BackendChat, "")
	if err := fs.Parse([]string{"-backend", "openai"}); err != nil || b != loadgen.BackendCompletion {
		t.Fatalf("%v %q", err, b)
	}
	if err := fs.Parse([]string{"-backend", "grpc"}); err == nil {
		t.Fatal("flag accepted an unknown backend")
	}
}

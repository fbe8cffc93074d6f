package yamlstrict

import (
	"reflect"
	"strings"
	"testing"
)

// block 是测试用的块类型，字段与 functional.CaseParams 相同。
type block struct {
	YAML         string
	File         string
	Line, Column int
}

// holder 是带“名字 → 块”映射的配置。
type holder struct {
	Params map[string]block `yaml:"params"`
	Other  int              `yaml:"other"`
}

// TestCaptureBlocks 核对块的保存（文本、文件、行列）、按键合并（后写的覆盖同名键，其余保留）、
// null 留零值，以及不是映射的块、非标量键与重复键都是带位置的错误。
func TestCaptureBlocks(t *testing.T) {
	capture := CaptureBlocks(reflect.TypeOf(block{}))
	decode := func(file, doc string, out *holder) []string {
		d := NewDecoder(file)
		d.Custom = capture
		if root := d.ParseDocument([]byte(doc)); root != nil {
			d.Decode(root, "", reflect.ValueOf(out).Elem())
		}
		var errs []string
		for _, e := range d.Errs {
			errs = append(errs, e.Error())
		}
		return errs
	}
	var h holder
	if errs := decode("a.yaml", "params:\n  x:\n    k: 1\n    l: [a, b]\n  y:\n    k: 2\n  z: ~\nother: 3\n", &h); len(errs) != 0 {
		t.Fatal(errs)
	}
	if x := h.Params["x"]; x.YAML != "k: 1\nl: [a, b]" || x.File != "a.yaml" || x.Line != 3 || x.Column != 5 || h.Other != 3 {
		t.Fatalf("x = %+v, other %d", x, h.Other)
	}
	if z, ok := h.Params["z"]; !ok || z != (block{}) {
		t.Fatalf("null block = %+v (present %v)", z, ok)
	}
	if errs := decode("b.yaml", "params:\n  y:\n    k: 9\n", &h); len(errs) != 0 {
		t.Fatal(errs)
	}
	if h.Params["y"].YAML != "k: 9" || h.Params["y"].File != "b.yaml" || h.Params["x"].File != "a.yaml" {
		t.Fatalf("merge: %+v", h.Params)
	}
	for doc, want := range map[string]string{
		"params:\n  x: [1]\n":             "c.yaml:2:6: params.x: must be a mapping",
		"params: [1]\n":                   "c.yaml:1:9: params: want a mapping",
		"params:\n  x: {k: 1}\n  x: {}\n": "c.yaml:3:3: params.x: duplicate key",
		"params:\n  [a]: {k: 1}\n":        "mapping keys must be scalars",
	} {
		var h holder
		errs := decode("c.yaml", doc, &h)
		if len(errs) != 1 || !strings.Contains(errs[0], want) {
			t.Errorf("%q: errors %v, want %q", doc, errs, want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a type without the block fields did not panic")
		}
	}()
	CaptureBlocks(reflect.TypeOf(struct{ YAML string }{}))
}

package loadgen_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/loadgen"
)

// TestProvidersStrictErrors：providers.yaml 经共用的严格解码器读取，错误与矩阵、
// 档位等其他用户 YAML 的写法相同（文件:行:列、字段路径、原因），可用 errors.As 取出
// *field.Error，而不是 yaml.v3 的 "field x not found in type loadgen.providerYAML"。
func TestProvidersStrictErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"providers:\n  - id: p\n    bse_url: http://h/v1\n    model_name: m\n", `loadgen: my/providers.yaml:3:5: providers[0].bse_url: unknown field "bse_url"`},
		{"providers:\n  - {id: p, base_url: 'http://h/v1', model_name: 7}\n", `loadgen: my/providers.yaml:2:50: providers[0].model_name: want a string, got an integer (quote it if it is meant as text) (got "7")`},
		{"providers: {}\n", `loadgen: my/providers.yaml:1:12: providers: want a list, got a mapping`},
	} {
		_, err := loadgen.ReadProviders(strings.NewReader(tc.src), "my/providers.yaml")
		var se *field.Error
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &se) || se.File != "my/providers.yaml" {
			t.Errorf("%q:\n got %v\nwant %s", tc.src, err, tc.want)
		}
	}
	if _, err := loadgen.ReadProviders(strings.NewReader("# nothing\n"), "p.yaml"); err == nil || err.Error() != "loadgen: p.yaml: file is empty" {
		t.Errorf("empty file: %v", err)
	}
}

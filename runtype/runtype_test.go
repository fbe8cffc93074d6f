package runtype_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/runtype"
)

// TestParse 检查两个合法取值原样返回，其余取值（含大小写不同与空串）被点名拒绝。
func TestParse(t *testing.T) {
	for _, s := range []string{"pr", "daily"} {
		got, err := runtype.Parse(s)
		if err != nil || string(got) != s || !got.Valid() {
			t.Errorf("Parse(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "PR", "nightly"} {
		got, err := runtype.Parse(s)
		if !errors.Is(err, runtype.ErrInvalid) || got != "" || !strings.Contains(err.Error(), `"`+s+`"`) {
			t.Errorf("Parse(%q) = %q, %v; want ErrInvalid naming the value", s, got, err)
		}
		if runtype.Type(s).Check() == nil {
			t.Errorf("Type(%q).Check() = nil", s)
		}
	}
}

package kubestandin

import (
	"errors"
	"slices"
	"testing"

	"github.com/vllm-cibench/cibench/deploy"
)

// block 是测试用的最小 deploy.Block：Decode 把固定映射写进 out。
type block struct{ zero bool }

// IsZero 报告块是否缺省。
func (b block) IsZero() bool { return b.zero }

// Decode 把一个固定的映射写进 *map[string]any。
func (b block) Decode(out any) error {
	*(out.(*map[string]any)) = map[string]any{"manifests": []any{"a.yaml"}}
	return nil
}

// Errorf 返回一条普通错误。
func (b block) Errorf(path, value, format string, args ...any) error { return errors.New(format) }

// TestStandInsAreNamedAndNeverDeploy 检查替身登记了拆分前的全部名字，块被接受，部署时报错。
func TestStandInsAreNamedAndNeverDeploy(t *testing.T) {
	r := Modes()
	if got := r.Names(); !slices.Equal(got, []string{"external", "local", "emulator", "k8s-hybrid", "k8s-pd"}) {
		t.Fatalf("names %v", got)
	}
	m, _ := r.Lookup("k8s-pd")
	plan, err := m.Prepare(block{}, deploy.Scenario{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plan.Deployer(deploy.Runtime{}); !errors.Is(err, ErrStandIn) {
		t.Fatalf("deployer err %v, want ErrStandIn", err)
	}
}

// badBlock 的 Decode 总是失败：替身把错误原样交回（位置由加载器给出）。
type badBlock struct{ block }

// Decode 返回一个解码错误。
func (badBlock) Decode(any) error { return errors.New("k8s: want a mapping") }

// TestStandInPassesDecodeErrors 检查替身不吞掉块的解码错误。
func TestStandInPassesDecodeErrors(t *testing.T) {
	m, _ := Modes().Lookup("k8s-hybrid")
	if _, err := m.Prepare(badBlock{}, deploy.Scenario{}); err == nil || err.Error() != "k8s: want a mapping" {
		t.Fatalf("Prepare = %v", err)
	}
}

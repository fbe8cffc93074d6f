package deploy_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/vllm-cibench/cibench/deploy"
)

// block 是测试用的 deploy.Block：node 为 nil 表示场景里没有这一块。
type block struct{ node *yaml.Node }

// IsZero 报告块是否缺省。
func (b block) IsZero() bool { return b.node == nil }

// Decode 把块解码进 out（测试里用 yaml.v3 的 KnownFields 严格解码）。
func (b block) Decode(out any) error {
	if b.node == nil {
		return nil
	}
	return b.node.Decode(out)
}

// Errorf 返回带路径的错误。
func (b block) Errorf(path, value, format string, args ...any) error {
	return fmt.Errorf("%s: %s (got %q)", path, fmt.Sprintf(format, args...), value)
}

// parse 把 YAML 文本变成块。
func parse(t *testing.T, s string) block {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(s), &n); err != nil {
		t.Fatal(err)
	}
	return block{n.Content[0]}
}

// TestBuiltinModes 覆盖两种内置方式的 Prepare：必填字段、与场景模型名的一致、YAML 里的密钥被拒、
// 缺省值取场景的值，以及 Plan 在运行时把密钥交给部署器。
func TestBuiltinModes(t *testing.T) {
	sc := deploy.Scenario{Name: "s", ServedModelName: "m", HealthPath: "/health", HealthTimeout: time.Minute}
	ext, local := deploy.ExternalMode(), deploy.LocalMode()
	if _, err := ext.Prepare(block{}, sc); err == nil || !strings.Contains(err.Error(), "base_url is required") {
		t.Fatalf("external without base_url: %v", err)
	}
	if _, err := ext.Prepare(parse(t, "x: 1\n"), sc); err == nil {
		t.Fatal("external must have no block")
	}
	withURL := sc
	withURL.BaseURL = "http://127.0.0.1:9/v1"
	p, err := ext.Prepare(block{}, withURL)
	if err != nil {
		t.Fatal(err)
	}
	if ep := p.(*deploy.ExternalPlan); ep.Config.Model != "m" || ep.Config.StartupTimeout != time.Minute {
		t.Fatalf("external plan = %+v", ep.Config)
	}
	if d, err := p.Deployer(deploy.Runtime{APIKey: "k"}); err != nil || d == nil {
		t.Fatalf("external deployer: %v", err)
	}
	withURL.BaseURL = "ftp://x"
	if _, err := ext.Prepare(block{}, withURL); err == nil {
		t.Fatal("a bad base_url must be refused")
	}
	withURL.BaseURL = "http://127.0.0.1:9/v1"
	for doc, want := range map[string]string{
		"": "local block",
		"command: vllm\nserved_model_name: other\n":          "must equal served_model_name",
		"command: vllm\napi_key: sk-x\n":                     "API keys must not be written",
		"command: vllm\nhost: 127.0.0.1\nport: 0\nenv: {}\n": "",
	} {
		b := block{}
		if doc != "" {
			b = parse(t, doc)
		}
		p, err := local.Prepare(b, withURL)
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", doc, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q (plan %v)", doc, err, want, p)
		}
	}
	if _, err := local.Prepare(parse(t, "command: vllm\n"), sc); err == nil || !strings.Contains(err.Error(), "base_url is required") {
		t.Fatalf("local without base_url: %v", err)
	}
	p, err = local.Prepare(parse(t, "command: vllm\n"), withURL)
	if err != nil {
		t.Fatal(err)
	}
	if lp := p.(*deploy.LocalPlan); lp.Config.Model != "m" || lp.Config.HealthPath != "/health" || lp.Config.StartupTimeout != time.Minute {
		t.Fatalf("local plan = %+v", lp.Config)
	}
	if d, err := p.Deployer(deploy.Runtime{APIKey: "k"}); err != nil || d == nil {
		t.Fatalf("local deployer: %v", err)
	}
}

// TestModesRegistryRules 覆盖登记表：名字规则、保留块名、nil Prepare、重复、查找与块名列表。
func TestModesRegistryRules(t *testing.T) {
	prep := deploy.ExternalMode().Prepare
	for _, m := range []deploy.Mode{{Name: "Bad", Prepare: prep}, {Name: "x", Block: "mode", Prepare: prep}, {Name: "x", Block: "B", Prepare: prep}, {Name: "x"}} {
		if _, err := deploy.NewModes(m); !errors.Is(err, deploy.ErrModeName) {
			t.Errorf("NewModes(%s/%s) = %v", m.Name, m.Block, err)
		}
	}
	var r deploy.Modes
	if err := r.Register(deploy.Mode{Name: "a", Block: "shared", Prepare: prep}, deploy.Mode{Name: "b", Block: "shared", Prepare: prep}); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(deploy.Mode{Name: "a", Prepare: prep}); !errors.Is(err, deploy.ErrDuplicateMode) {
		t.Fatalf("duplicate: %v", err)
	}
	if got := strings.Join(r.Blocks(), ","); got != "shared" {
		t.Fatalf("Blocks = %s", got)
	}
	if m, ok := r.Lookup("b"); !ok || m.BlockName() != "shared" {
		t.Fatalf("Lookup = %+v %v", m, ok)
	}
	if err := r.Check("c"); !errors.Is(err, deploy.ErrUnknownMode) || !strings.Contains(err.Error(), "a, b") {
		t.Fatalf("Check = %v", err)
	}
	if err := r.Check("a"); err != nil {
		t.Fatal(err)
	}
	f := deploy.PlanFunc(func(rt deploy.Runtime) (deploy.Deployer, error) { return nil, errors.New(rt.APIKey) })
	if _, err := f.Deployer(deploy.Runtime{APIKey: "called"}); err == nil || err.Error() != "called" {
		t.Fatalf("PlanFunc: %v", err)
	}
}

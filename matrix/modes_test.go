package matrix_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/internal/kubestandin"
	"github.com/vllm-cibench/cibench/matrix"
)

// allModes 返回内置部署方式与 k8s-* 的替身（internal/kubestandin）：仓库的 configs/ 与测试树里有
// k8s 场景，而根模块的测试不得导入 Kubernetes 模块；k8s 块的真实校验在 deploy/kube 模块的测试里。
func allModes() *deploy.Modes { return kubestandin.Modes() }

// load 以全部内置部署方式与内置评测加载配置树（流水线就是这样加载的），再加上 opts。
func load(fsys fs.FS, opts ...matrix.Option) (*matrix.Matrix, error) {
	return matrix.Load(fsys, append([]matrix.Option{matrix.WithModes(allModes()), matrix.WithEvals(simpleevals.Registry())}, opts...)...)
}

// slurmConfig 是测试里团队部署方式的配置块。
type slurmConfig struct {
	Partition string `yaml:"partition"`
	GPUs      int    `yaml:"gpus"`
}

// slurmMode 是一个团队自己的部署方式：块 slurm: 解码成 slurmConfig，gpus 必须为正。
func slurmMode() deploy.Mode {
	return deploy.Mode{Name: "slurm", Prepare: func(b deploy.Block, sc deploy.Scenario) (deploy.Plan, error) {
		var c slurmConfig
		if err := b.Decode(&c); err != nil {
			return nil, err
		}
		if c.GPUs < 1 {
			return nil, b.Errorf("gpus", "0", "gpus must be at least 1")
		}
		return deploy.PlanFunc(func(deploy.Runtime) (deploy.Deployer, error) {
			return nil, errors.New("not started in this test")
		}), nil
	}}
}

// TestTeamModeFromYAML 证明团队登记的部署方式在场景 YAML 中可用：块被交给登记项，语义错误与
// 解码错误都带文件:行:列；没登记时 mode 被点名拒绝（列出已登记的方式），登记了却写了别的方式的
// 块同样被拒绝；Deploy 拿到登记项返回的 Plan。
func TestTeamModeFromYAML(t *testing.T) {
	tree := func(sc string) fstest.MapFS {
		return fstest.MapFS{
			"scenarios/s.yaml": {Data: []byte(sc)},
			"matrix.yaml":      {Data: []byte("scenarios:\n  s: {pr: {perf: {enabled: false}, accuracy: {enabled: false}}}\n")},
		}
	}
	good := "mode: slurm\nserved_model_name: m\nquant: fp8\nslurm:\n  partition: gpu\n  gpus: 8\n"
	if _, err := load(tree(good)); err == nil || !strings.Contains(err.Error(), `unknown mode "slurm"`) ||
		!strings.Contains(err.Error(), "scenarios/s.yaml:1:7") {
		t.Fatalf("unregistered mode: %v", err)
	}
	reg := allModes()
	if err := reg.Register(slurmMode()); err != nil {
		t.Fatal(err)
	}
	m, err := load(tree(good), matrix.WithModes(reg))
	if err != nil {
		t.Fatal(err)
	}
	if sc := m.Scenarios["s"]; sc.Mode != "slurm" || sc.Deploy == nil || sc.Emulated {
		t.Fatalf("scenario = %+v", sc)
	}
	for bad, want := range map[string][]string{
		"mode: slurm\nserved_model_name: m\nslurm:\n  partition: gpu\n  gpus: 0\n":     {"scenarios/s.yaml:5:9", "slurm.gpus", "gpus must be at least 1"},
		"mode: slurm\nserved_model_name: m\nslurm:\n  partiton: gpu\n  gpus: 1\n":      {"scenarios/s.yaml:4:3", "partiton"},
		"mode: slurm\nserved_model_name: m\nslurm: {gpus: 1}\nemulator: {ttft: 1ms}\n": {"scenarios/s.yaml:4:1", `emulator block is not allowed with mode "slurm"`},
		"mode: emulator\nserved_model_name: m\nslurm: {gpus: 1}\n":                     {"scenarios/s.yaml:3:1", `slurm block is not allowed with mode "emulator"`},
		"mode: slurm\nserved_model_name: m\nslurmm: {gpus: 1}\n":                       {"scenarios/s.yaml:3:1", "slurmm"},
	} {
		_, err := load(tree(bad), matrix.WithModes(reg))
		if err == nil || !errors.Is(err, matrix.ErrConfig) {
			t.Errorf("%q: err = %v", bad, err)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error lacks %q:\n%v", bad, w, err)
			}
		}
	}
}

// TestModesRegistry 覆盖登记表的规则：名字与块名的写法、保留的公共字段、重复、nil Prepare。
func TestModesRegistry(t *testing.T) {
	prep := slurmMode().Prepare
	for _, m := range []deploy.Mode{
		{Name: "", Prepare: prep},
		{Name: "Slurm", Prepare: prep},
		{Name: "slurm", Block: "Bad", Prepare: prep},
		{Name: "slurm", Block: "health", Prepare: prep},
		{Name: "slurm"},
	} {
		if _, err := deploy.NewModes(m); !errors.Is(err, deploy.ErrModeName) {
			t.Errorf("NewModes(%+v) = %v", m.Name+"/"+m.Block, err)
		}
	}
	r := deploy.DefaultModes()
	if err := r.Register(deploy.Mode{Name: "local", Prepare: prep}); !errors.Is(err, deploy.ErrDuplicateMode) {
		t.Fatalf("duplicate = %v", err)
	}
	if err := r.Check("nope"); !errors.Is(err, deploy.ErrUnknownMode) || !strings.Contains(err.Error(), "external, local") {
		t.Fatalf("Check = %v", err)
	}
	if got := strings.Join(allModes().Blocks(), ","); got != "external,local,emulator,k8s" {
		t.Fatalf("Blocks = %s", got)
	}
	var nilReg *deploy.Modes
	if _, ok := nilReg.Lookup("local"); ok || nilReg.Names() != nil {
		t.Fatal("a nil registry knows nothing")
	}
}

// TestExternalMetricsBlock：external 方式可选的 external: 块列出 base_url 后面的实例（网关、PD 代理），
// 进入部署计划；写错的角色或地址在 file:line 处被拒绝，块里别的键同样被拒绝。
func TestExternalMetricsBlock(t *testing.T) {
	tree := func(sc string) fstest.MapFS {
		return fstest.MapFS{
			"scenarios/s.yaml": {Data: []byte(sc)},
			"matrix.yaml":      {Data: []byte("scenarios:\n  s: {pr: {perf: {enabled: false}, accuracy: {enabled: false}}}\n")},
		}
	}
	head := "mode: external\nserved_model_name: m\nbase_url: http://gw:8000/v1\nexternal:\n  metrics:\n"
	m, err := load(tree(head + "    - {name: p0, role: prefill, url: \"http://10.0.0.5:6660/metrics\"}\n    - {role: decode, url: \"http://10.0.0.6:6760/metrics\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := m.Scenarios["s"].Deploy.(*deploy.ExternalPlan).Config
	if len(cfg.Metrics) != 2 || cfg.Metrics[0].Name != "p0" || cfg.Metrics[1].Role != "decode" {
		t.Fatalf("metrics %+v", cfg.Metrics)
	}
	for bad, want := range map[string][]string{
		head + "    - {role: router, url: \"http://10.0.0.5:6660/metrics\"}\n":                         {"scenarios/s.yaml", "external.metrics[0].role", "router", "want prefill, decode or empty"},
		head + "    - {url: \"10.0.0.5:6660/metrics\"}\n":                                              {"scenarios/s.yaml", "external.metrics[0].url", "no scheme"},
		"mode: external\nserved_model_name: m\nbase_url: http://gw:8000/v1\nexternal:\n  metric: []\n": {"scenarios/s.yaml:5:3", "metric"},
	} {
		_, err := load(tree(bad))
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %v, want it to contain %q", bad, err, w)
			}
		}
	}
}

// TestDeprecatedModeNames 检查为兼容保留的 matrix.Mode 与 Mode* 常量：写在 v0.1.0 之前的代码
// （比较、switch、作为字符串传给登记表）照常编译，取值与登记项的名字一致。
func TestDeprecatedModeNames(t *testing.T) {
	m, err := load(validTree())
	if err != nil {
		t.Fatal(err)
	}
	var mode matrix.Mode = m.Scenarios["emulator"].Mode
	switch mode {
	case matrix.ModeEmulator:
	default:
		t.Fatalf("emulator scenario mode %q", mode)
	}
	for _, name := range []matrix.Mode{matrix.ModeEmulator, matrix.ModeExternal, matrix.ModeLocal, matrix.ModeK8sHybrid, matrix.ModeK8sPD} {
		if _, ok := allModes().Lookup(name); !ok {
			t.Errorf("deprecated constant %q names no registered mode", name)
		}
	}
}

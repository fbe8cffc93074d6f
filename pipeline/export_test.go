package pipeline

import (
	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/matrix"
)

// SetDeployer 让本包的测试替换每个场景的部署器（例如给模拟器注入故障）。它走的是团队同样能走的
// 公开接缝 Extensions.Modes：把 o.Modes（nil 时取 DefaultModes()）的每个登记项包一层，Prepare 照常
// 解码、校验配置块，得到的 Plan 换成调用 f 的 Plan；f 拿到的场景带着原来的名字与 Plan。
// Options 因此不再需要一个只给测试用的隐藏字段。
func SetDeployer(o *Options, f func(sc *matrix.Scenario) (deploy.Deployer, error)) {
	if f == nil {
		return // nil：照常按场景部署（与以前的隐藏字段 testDeployer 为 nil 时相同）
	}
	base := o.Modes
	if base == nil {
		base = DefaultModes()
	}
	wrapped, err := deploy.NewModes()
	if err != nil {
		panic(err)
	}
	for _, name := range base.Names() {
		m, _ := base.Lookup(name)
		prepare := m.Prepare
		m.Prepare = func(b deploy.Block, dsc deploy.Scenario) (deploy.Plan, error) {
			plan, err := prepare(b, dsc)
			if err != nil {
				return nil, err
			}
			return deploy.PlanFunc(func(deploy.Runtime) (deploy.Deployer, error) {
				return f(&matrix.Scenario{Name: dsc.Name, ServedModelName: dsc.ServedModelName, Model: dsc.Model, Mode: name, Deploy: plan})
			}), nil
		}
		if err := wrapped.Register(m); err != nil {
			panic(err)
		}
	}
	o.Modes = wrapped
}

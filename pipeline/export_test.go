package pipeline

import (
	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/matrix"
)

// SetDeployer 让本包的测试替换每个场景的部署器（例如给模拟器注入故障）；它不是公开 API：
// 团队替换部署方式用 Extensions.Modes。
func SetDeployer(o *Options, f func(sc *matrix.Scenario) (deploy.Deployer, error)) {
	o.testDeployer = f
}

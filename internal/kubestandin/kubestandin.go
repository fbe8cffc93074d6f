// Package kubestandin 给根模块的测试一张“认识 k8s-hybrid 与 k8s-pd 名字”的部署方式登记表。
//
// Kubernetes 部署方式在自己的模块 github.com/vllm-cibench/cibench/deploy/kube 里：根模块的
// 任何包与测试都不得导入 Kubernetes（否则导入 cibench 的团队会被拖着升级 client-go）。可是仓库
// 自带的 configs/ 里有两个 k8s 场景，根模块里加载整棵配置树的测试（matrix 的 golden、pipeline
// 的出厂配置测试）需要这两个名字是“已登记”的。这里的替身只做一件事：把 k8s: 块当作任意映射
// 接受（不做 deploy/kube 的字段校验），Plan 在部署时明确报错，绝不假装部署成功。
//
// k8s 块的真实校验与真实部署由 deploy/kube 模块自己的测试覆盖（那里用 kube.Modes() 加载同一棵
// configs/，并在真实控制面上运行）。本包只供测试使用，不是 SDK 的一部分。
package kubestandin

import (
	"errors"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
)

// ErrStandIn 是替身方式在部署时返回的错误：根模块的测试不部署 Kubernetes 场景。
var ErrStandIn = errors.New("kubestandin: k8s modes are stand-ins in the root module's tests; the real ones are kube.Modes() in github.com/vllm-cibench/cibench/deploy/kube")

// Modes 返回 deploy.DefaultModes 加上 emulator.Mode 与 k8s-hybrid、k8s-pd 两个替身的新登记表
// （即拆分模块之前 pipeline.DefaultModes 的名字集合，顺序相同）。
func Modes() *deploy.Modes {
	r := deploy.DefaultModes()
	if err := r.Register(emulator.Mode(), standIn("k8s-hybrid"), standIn("k8s-pd")); err != nil {
		panic(err) // 名字是常量：出错是本包的缺陷
	}
	return r
}

// standIn 构造名为 name、配置块为 k8s: 的替身方式：块解码进任意映射（只检查它是 YAML 映射），
// Plan 的 Deployer 返回 ErrStandIn。
func standIn(name string) deploy.Mode {
	return deploy.Mode{Name: name, Block: "k8s", Prepare: func(b deploy.Block, _ deploy.Scenario) (deploy.Plan, error) {
		p := &Plan{Mode: name}
		if err := b.Decode(&p.Block); err != nil {
			return nil, err
		}
		return p, nil
	}}
}

// Plan 是替身方式的“计划”：方式名与原样解码的 k8s: 块（可以序列化，matrix 的 golden 记录它）。
type Plan struct {
	// Mode 是 k8s-hybrid 或 k8s-pd。
	Mode string `json:"mode"`
	// Block 是场景 YAML 中 k8s: 块的原样内容（未经 deploy/kube 校验）。
	Block map[string]any `json:"stand_in_k8s_block"`
}

// Deployer 总是返回 ErrStandIn：根模块的测试不部署 Kubernetes 场景。
func (p *Plan) Deployer(deploy.Runtime) (deploy.Deployer, error) { return nil, ErrStandIn }

package kube

import (
	"fmt"
	"io/fs"

	"github.com/vllm-cibench/cibench/deploy"
)

// 两种 Kubernetes 部署方式在场景 YAML 中的 mode 取值；它们共用配置块 k8s:（Config）。
const (
	// ModeHybrid 部署混合（非 PD 分离）实例：k8s.manifests。
	ModeHybrid = "k8s-hybrid"
	// ModePD 部署 PD 分离（prefill/decode）实例：k8s.roles（scheduler/prefill/decode）。
	ModePD = "k8s-pd"
)

// Modes 返回 k8s-hybrid 与 k8s-pd 两个登记项：reg.Register(kube.Modes()...)。配置块 k8s: 是
// Config；served_model_name、health_path、startup_timeout 缺省取场景的对应值；密钥不得写在 YAML
// 里；清单路径相对于配置目录，加载时即检查存在并解析（写错的 YAML 指出文件与文档序号）。运行时
// 未配置 log_dir 的部署把 Pod 日志、描述与事件归档到流水线给的场景日志目录。
func Modes() []deploy.Mode {
	return []deploy.Mode{mode(ModeHybrid), mode(ModePD)}
}

// mode 构造一种 Kubernetes 方式的登记项。
func mode(name string) deploy.Mode {
	return deploy.Mode{Name: name, Block: "k8s", Prepare: func(b deploy.Block, sc deploy.Scenario) (deploy.Plan, error) {
		if b.IsZero() {
			return nil, b.Errorf("", "", "k8s block (manifests, service) is required for mode %s", name)
		}
		var cfg Config
		if err := b.Decode(&cfg); err != nil {
			return nil, err
		}
		if err := sc.Inherit(b, deploy.Inherited{ModelField: "served_model_name", Model: &cfg.Model, APIKey: cfg.APIKey, HealthPath: &cfg.HealthPath, StartupTimeout: &cfg.StartupTimeout}); err != nil {
			return nil, err
		}
		if len(cfg.Manifests) == 0 && len(cfg.Roles) == 0 {
			return nil, b.Errorf("", "", "k8s needs manifests (hybrid) or roles (PD)")
		}
		if name == ModePD && len(cfg.Roles) == 0 {
			return nil, b.Errorf("roles", "", "mode k8s-pd needs k8s.roles (scheduler/prefill/decode)")
		}
		if sc.Config != nil {
			for i, m := range cfg.Manifests {
				if _, err := fs.Stat(sc.Config, m); err != nil {
					return nil, b.Errorf(fmt.Sprintf("manifests[%d]", i), m, "manifest not found in the config directory")
				}
			}
			for i, r := range cfg.Roles {
				for j, m := range r.Manifests {
					if _, err := fs.Stat(sc.Config, m); err != nil {
						return nil, b.Errorf(fmt.Sprintf("roles[%d].manifests[%d]", i, j), m, "manifest not found in the config directory")
					}
				}
			}
		}
		return &Plan{Config: cfg, fsys: sc.Config}, nil
	}}
}

// Plan 是 k8s-hybrid / k8s-pd 方式对一个场景校验后的结果：场景配置块解码出的 Config（模型名、
// 健康路径与启动超时已缺省为场景的值，不含密钥）与读取清单的配置树。
type Plan struct {
	// Config 是场景的 Kubernetes 部署配置。
	Config Config
	fsys   fs.FS
}

// Deployer 用运行时的密钥、日志目录与日志器构造部署器（不连接 API Server，Deploy 时才连接）。
// 部署失败、超时或被取消时没有 Deployment 可归档：kube 在自己的清理（删除之前）把 Pod 日志、
// 描述与事件归档到 LogDir。未配置 log_dir 时用流水线给的场景日志目录，失败的部署因此与成功的
// 一样留下产物；成功路径的 ArchiveLogs 写同一目录，Teardown 不再重复。
func (p *Plan) Deployer(rt deploy.Runtime) (deploy.Deployer, error) {
	c := p.Config
	c.APIKey = rt.APIKey
	if c.LogDir == "" {
		c.LogDir = rt.LogDir
	}
	var opts []Option
	if p.fsys != nil {
		opts = append(opts, WithFS(p.fsys))
	}
	if rt.Logger != nil {
		opts = append(opts, WithLogger(rt.Logger))
	}
	return New(c, opts...)
}

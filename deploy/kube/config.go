package kube

import (
	"errors"
	"fmt"
	"time"

	"github.com/vllm-cibench/cibench/deploy/kube/spec"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/vllm-cibench/cibench/deploy"
)

// 默认值。
const (
	// DefaultNamespace 是未配置命名空间时使用的命名空间。
	DefaultNamespace = "default"
	// DefaultPortName 是入口 Service 中承载 OpenAI API 的端口名。
	DefaultPortName = "http"
	// DefaultDeleteTimeout 是 Teardown 等待前台删除完成的上限。
	DefaultDeleteTimeout = 5 * time.Minute
	// DefaultFieldManager 是服务端 apply 的字段管理者名。
	DefaultFieldManager = "cibench"
	// DefaultPollInterval 是就绪轮询间隔。
	DefaultPollInterval = time.Second
)

// 可供调用方用 errors.Is 判断的哨兵错误。
var (
	// ErrConfig 表示配置不合法（包装 deploy.ErrConfig）。
	ErrConfig = fmt.Errorf("kube: %w", deploy.ErrConfig)
	// ErrUnreachable 表示无法连上 API Server。
	ErrUnreachable = errors.New("kube: API server unreachable")
	// ErrServiceNotFound 表示配置的入口 Service 不存在。
	ErrServiceNotFound = errors.New("kube: service not found")
	// ErrPortNotFound 表示入口 Service 中没有配置的端口名。
	ErrPortNotFound = errors.New("kube: service port not found")
	// ErrNoNodePort 表示端口没有分配 NodePort，且配置里也没有 node_port 兜底。
	ErrNoNodePort = errors.New("kube: no NodePort")
	// ErrNoNodeAddress 表示找不到任何带 InternalIP/ExternalIP 的节点。
	ErrNoNodeAddress = errors.New("kube: no node address")
	// ErrWorkloadFailed 表示某个工作负载进入了不可恢复的失败状态。
	ErrWorkloadFailed = errors.New("kube: workload failed")
	// ErrLeftovers 表示 Teardown 未能在限定时间内删除全部资源。
	ErrLeftovers = errors.New("kube: resources left after teardown")
)

// Config 描述一个 Kubernetes 场景；它是 spec.Config 的别名。类型本身放在不依赖
// client-go 的 deploy/kube/spec 包里，使只加载 YAML 的调用方（如 matrix）不必
// 连带编译数百个 k8s.io 包；本包的 New 接受它并在构造时校验。
type Config = spec.Config

// Role 是 PD 分离部署中的一个角色；它是 spec.Role 的别名。
type Role = spec.Role

// withDefaults 校验配置并返回填好默认值的副本；错误指出具体字段与取值。
// （Config 是别名，不能在本包为它声明方法，所以是普通函数。）
func withDefaults(c Config) (Config, error) {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.PortName == "" {
		c.PortName = DefaultPortName
	}
	if c.HealthPath == "" {
		c.HealthPath = deploy.DefaultHealthPath
	}
	if c.StartupTimeout == 0 {
		c.StartupTimeout = deploy.DefaultStartupTimeout
	}
	if c.DeleteTimeout == 0 {
		c.DeleteTimeout = DefaultDeleteTimeout
	}
	if c.FieldManager == "" {
		c.FieldManager = DefaultFieldManager
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.StartupTimeout < 0 || c.DeleteTimeout < 0 || c.PollInterval < 0 {
		return c, fmt.Errorf("%w: startup_timeout, delete_timeout and poll_interval must not be negative", ErrConfig)
	}
	if len(c.Manifests) == 0 && len(c.Roles) == 0 {
		return c, fmt.Errorf("%w: manifests or roles is required", ErrConfig)
	}
	if c.ServiceName == "" && c.NodePort == 0 {
		return c, fmt.Errorf("%w: service_name or node_port is required", ErrConfig)
	}
	if c.NodePort < 0 || c.NodePort > 65535 {
		return c, fmt.Errorf("%w: node_port %d out of range", ErrConfig, c.NodePort)
	}
	if err := checkSelector("pod_selector", c.PodSelector); err != nil {
		return c, err
	}
	seen := map[string]bool{}
	for i, r := range c.Roles {
		if r.Name == "" {
			return c, fmt.Errorf("%w: roles[%d].name is required", ErrConfig, i)
		}
		if seen[r.Name] {
			return c, fmt.Errorf("%w: roles[%d].name %q is duplicated", ErrConfig, i, r.Name)
		}
		seen[r.Name] = true
		if len(r.Manifests) == 0 {
			return c, fmt.Errorf("%w: roles[%d] (%s).manifests is required", ErrConfig, i, r.Name)
		}
		if err := checkSelector(fmt.Sprintf("roles[%d].pod_selector", i), r.PodSelector); err != nil {
			return c, err
		}
	}
	return c, nil
}

// checkSelector 在构造时就解析标签选择器，避免等到部署后才发现写错。
func checkSelector(field, s string) error {
	if s == "" {
		return nil
	}
	if _, err := labels.Parse(s); err != nil {
		return fmt.Errorf("%w: %s %q: %v", ErrConfig, field, s, err)
	}
	return nil
}

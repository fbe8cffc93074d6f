// Package spec 定义 Kubernetes 场景的配置类型（混合部署与 PD 分离部署），
// 不依赖 client-go 或任何 k8s.io 包。
//
// 它与 deploy/kube 分开，是为了让只需要加载与校验 YAML 的调用方（matrix、用户自己的
// 配置工具）不把 client-go 的数百个包拖进构建；deploy/kube 通过类型别名
// kube.Config = spec.Config 使用同一个类型，并在 kube.New 中做完整校验
// （包括用 apimachinery 解析标签选择器）。
package spec

import (
	"net/http"
	"time"
)

// Config 描述一个 Kubernetes 场景，由矩阵从场景 YAML 解码。YAML 由用户提供，
// 本 SDK 从不生成。混合部署只填 Manifests；PD 分离部署用 Roles 列出
// scheduler/prefill/decode 等角色，每个角色有自己的清单与就绪判断。
type Config struct {
	// Kubeconfig 是 kubeconfig 路径；空表示按 client-go 默认规则（KUBECONFIG、~/.kube/config）。
	Kubeconfig string `yaml:"kubeconfig,omitempty" json:"kubeconfig,omitempty"`
	// Context 是 kubeconfig 中的上下文名，空表示当前上下文。
	Context string `yaml:"context,omitempty" json:"context,omitempty"`
	// Namespace 是命名空间，默认 default；清单里显式写了 namespace 的对象保持不变。
	Namespace string `yaml:"namespace,omitempty" json:"namespace,omitempty"`
	// Manifests 是混合部署（或所有角色共用）的清单文件，多文档 YAML。
	Manifests []string `yaml:"manifests,omitempty" json:"manifests,omitempty"`
	// PodSelector 是标签选择器，其 Pod 必须全部 Ready（至少 MinReady 个），
	// 用于就绪无法从工作负载状态判断的自定义类型。
	PodSelector string `yaml:"pod_selector,omitempty" json:"pod_selector,omitempty"`
	// MinReady 是 PodSelector 至少需要的 Ready Pod 数，默认 1。
	MinReady int `yaml:"min_ready,omitempty" json:"min_ready,omitempty"`
	// Roles 是 PD 分离部署的角色，按顺序 apply 与等待。
	Roles []Role `yaml:"roles,omitempty" json:"roles,omitempty"`
	// ServiceName 是入口 Service（混合部署的服务或 PD 的 scheduler/proxy）。
	ServiceName string `yaml:"service_name,omitempty" json:"service_name,omitempty"`
	// PortName 是入口 Service 的端口名，默认 http。
	PortName string `yaml:"port_name,omitempty" json:"port_name,omitempty"`
	// NodePort 是兜底端口：未配置 ServiceName 或其端口没有 NodePort 时使用。
	NodePort int `yaml:"node_port,omitempty" json:"node_port,omitempty"`
	// NodeIP 直接指定访问用的节点地址，跳过节点地址解析。
	NodeIP string `yaml:"node_ip,omitempty" json:"node_ip,omitempty"`
	// Model 是服务对外的模型名（served-model-name）。
	Model string `yaml:"served_model_name,omitempty" json:"served_model_name,omitempty"`
	// APIKey 是访问密钥，不会被记录。
	APIKey string `yaml:"api_key,omitempty" json:"-"`
	// HealthPath 默认 /health。
	HealthPath string `yaml:"health_path,omitempty" json:"health_path,omitempty"`
	// StartupTimeout 是从 apply 到健康的总上限，默认 20 分钟。
	StartupTimeout time.Duration `yaml:"startup_timeout,omitempty" json:"startup_timeout,omitempty"`
	// DeleteTimeout 是 Teardown 等待删除完成的上限，默认 5 分钟。
	DeleteTimeout time.Duration `yaml:"delete_timeout,omitempty" json:"delete_timeout,omitempty"`
	// DeleteCRDs 为真时 Teardown 也删除本次 apply 的 CRD；默认保留，
	// 因为删除 CRD 会连带删除集群里所有同类对象。
	DeleteCRDs bool `yaml:"delete_crds,omitempty" json:"delete_crds,omitempty"`
	// LogDir 非空时，Teardown（包括 Deploy 失败后的清理）先把 Pod 日志与事件归档到这里。
	LogDir string `yaml:"log_dir,omitempty" json:"log_dir,omitempty"`
	// FieldManager 是服务端 apply 的字段管理者，默认 cibench。
	FieldManager string `yaml:"field_manager,omitempty" json:"field_manager,omitempty"`
	// PollInterval 是就绪轮询间隔，默认 1 秒。
	PollInterval time.Duration `yaml:"poll_interval,omitempty" json:"poll_interval,omitempty"`
	// HTTPClient 用于 /health 探测；nil 使用默认客户端。
	HTTPClient *http.Client `yaml:"-" json:"-"`
}

// Role 是 PD 分离部署中的一个角色（scheduler/proxy、prefill、decode……）。
type Role struct {
	// Name 是角色名，出现在错误与归档中。
	Name string `yaml:"name" json:"name"`
	// Manifests 是该角色的清单文件。
	Manifests []string `yaml:"manifests" json:"manifests"`
	// PodSelector 与 MinReady 同 Config 中的含义，只作用于本角色。
	PodSelector string `yaml:"pod_selector,omitempty" json:"pod_selector,omitempty"`
	// MinReady 默认 1。
	MinReady int `yaml:"min_ready,omitempty" json:"min_ready,omitempty"`
}

package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/endpoint"
)

// ErrConfig 是所有配置校验错误的哨兵，便于调用方区分“配置写错”与“运行失败”。
var ErrConfig = errors.New("deploy: invalid config")

// ExternalConfig 描述一个已在运行的服务（场景给出 base_url），由矩阵从 YAML 解码。
type ExternalConfig struct {
	// BaseURL 是主地址，如 http://127.0.0.1:9000/v1；缺少 /v1 时自动补上。
	BaseURL string `yaml:"base_url" json:"base_url"`
	// BaseURLs 是额外的实例地址（多实例轮询）；BaseURL 为空时第一个作主地址。
	BaseURLs []string `yaml:"base_urls,omitempty" json:"base_urls,omitempty"`
	// Model 是服务对外的模型名（served-model-name）。为空时 Deploy 在健康之后向
	// GET <主地址>/models 询问，取第一个模型 ID（而不是猜一个会 404 的名字）；问不到即失败，
	// 因为没有模型名的端点任何阶段都用不了。
	Model string `yaml:"served_model_name" json:"served_model_name"`
	// APIKey 是访问密钥，不会被记录。
	APIKey string `yaml:"api_key,omitempty" json:"-"`
	// HealthPath 是健康检查路径，默认 /health。
	HealthPath string `yaml:"health_path,omitempty" json:"health_path,omitempty"`
	// StartupTimeout 是等待健康的上限，默认 20 分钟。
	StartupTimeout time.Duration `yaml:"startup_timeout,omitempty" json:"startup_timeout,omitempty"`
	// SkipHealth 为真时不做健康等待（例如服务不提供 /health）。
	SkipHealth bool `yaml:"skip_health,omitempty" json:"skip_health,omitempty"`
	// HTTPClient 用于健康探测与模型名查询；nil 使用默认客户端。
	HTTPClient *http.Client `yaml:"-" json:"-"`
	// Metrics 列出要抓取 /metrics 的实例（名字、PD 角色、地址），进入端点的 Metrics：
	// base_url 是网关或 PD 代理时，阶段分解靠它按实例、按角色给出（见 endpoint.Endpoint.Metrics）。
	Metrics []MetricsInstance `yaml:"metrics,omitempty" json:"metrics,omitempty"`
}

// External 是 Deployer：不启动任何东西，只等待已有服务健康。
type External struct {
	cfg  ExternalConfig
	urls []string
}

var (
	_ Deployer   = (*External)(nil)
	_ Deployment = (*externalDeployment)(nil)
)

// NewExternal 校验配置并返回 External。地址必须是 http(s) 绝对 URL。
func NewExternal(cfg ExternalConfig) (*External, error) {
	var urls []string
	if cfg.BaseURL != "" {
		urls = append(urls, cfg.BaseURL)
	}
	urls = append(urls, cfg.BaseURLs...)
	if len(urls) == 0 {
		return nil, fmt.Errorf("%w: external: base_url is required", ErrConfig)
	}
	for i, u := range urls {
		n, err := normalizeBaseURL(u)
		if err != nil {
			return nil, fmt.Errorf("%w: external: base_url %q: %v", ErrConfig, redactURL(u), err)
		}
		urls[i] = n
	}
	if cfg.StartupTimeout < 0 {
		return nil, fmt.Errorf("%w: external: startup_timeout %v must not be negative", ErrConfig, cfg.StartupTimeout)
	}
	probe := endpoint.Endpoint{BaseURLs: urls, Model: "m", Metrics: cfg.Metrics}
	if err := probe.Validate(); err != nil {
		return nil, fmt.Errorf("%w: external: %v", ErrConfig, err)
	}
	return &External{cfg: cfg, urls: urls}, nil
}

// normalizeBaseURL 校验地址并保证以 /v1 结尾，因为下游客户端都按 OpenAI 约定拼路径。
func normalizeBaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("scheme must be http or https")
	}
	if u.Host == "" {
		return "", fmt.Errorf("missing host")
	}
	s := strings.TrimRight(raw, "/")
	if !strings.HasSuffix(s, "/v1") {
		s += "/v1"
	}
	return s, nil
}

// Deploy 等待每个实例的 /health 返回 200，全部健康后返回 Deployment。
func (x *External) Deploy(ctx context.Context) (Deployment, error) {
	if !x.cfg.SkipHealth {
		for _, u := range x.urls {
			err := WaitHealthy(ctx, HealthURL(u, x.cfg.HealthPath), HealthOptions{
				Client:  x.cfg.HTTPClient,
				Timeout: x.cfg.StartupTimeout,
			})
			if err != nil {
				return nil, fmt.Errorf("deploy: external: %w", err)
			}
		}
	}
	ep := Endpoint{
		BaseURLs: append([]string(nil), x.urls...),
		Model:    x.cfg.Model,
		APIKey:   x.cfg.APIKey,
		Metrics:  append([]MetricsInstance(nil), x.cfg.Metrics...),
	}
	if ep.Model == "" {
		m, err := discoverModel(ctx, x.cfg.HTTPClient, ep)
		if err != nil {
			return nil, fmt.Errorf("deploy: external: no served_model_name given and %w", err)
		}
		ep.Model = m
	}
	return &externalDeployment{ep: ep}, nil
}

// 模型名查询的时限与响应体上限：/v1/models 是一个很小的列表，服务不该让它变成阻塞或内存问题。
const (
	discoverTimeout = 30 * time.Second
	discoverMaxBody = 1 << 20
)

// discoverModel 读取 GET <主地址>/models 的第一个模型 ID。错误文本不含密钥，URL 中的凭据已屏蔽。
func discoverModel(ctx context.Context, client *http.Client, ep Endpoint) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, discoverTimeout)
	defer cancel()
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(ep.BaseURL(), "/")+"/models", nil)
	if err != nil {
		return "", fmt.Errorf("GET /v1/models: %s", redactURL(err.Error()))
	}
	if ep.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+ep.APIKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET /v1/models failed: %w", &redactedErr{msg: redactURL(err.Error()), err: err})
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /v1/models returned %s", resp.Status)
	}
	var body struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, discoverMaxBody)).Decode(&body); err != nil {
		return "", fmt.Errorf("GET /v1/models: %w", err)
	}
	if len(body.Data) == 0 || body.Data[0].ID == "" {
		return "", errors.New("GET /v1/models lists no model")
	}
	return body.Data[0].ID, nil
}

// redactedErr 只让屏蔽凭据后的文本出现在 Error 中，同时保留原错误链（超时、取消仍可判断）。
type redactedErr struct {
	msg string
	err error
}

// Error 返回屏蔽凭据后的文本。
func (e *redactedErr) Error() string { return e.msg }

// Unwrap 返回原错误。
func (e *redactedErr) Unwrap() error { return e.err }

// externalDeployment 不拥有任何资源，因此归档与清理都是空操作。
type externalDeployment struct{ ep Endpoint }

// Endpoint 返回配置给出的地址。
func (d *externalDeployment) Endpoint() Endpoint { return d.ep }

// ArchiveLogs 无日志可归档（进程不归我们管），只保证目录存在以便调用方统一处理。
func (d *externalDeployment) ArchiveLogs(ctx context.Context, dir string) error {
	return ensureDir(dir)
}

// Teardown 什么都不做：外部服务的生命周期不归本进程管理。
func (d *externalDeployment) Teardown(ctx context.Context) error { return nil }

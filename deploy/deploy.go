package deploy

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Endpoint 描述一个已就绪、可被测试的 OpenAI 兼容服务。
//
// APIKey 永远不会出现在 String/Format 的输出、日志或产物中；需要持久化
// Endpoint 时请使用 Redacted。
type Endpoint struct {
	// BaseURLs 是各实例的基础地址，均以 "/v1" 结尾；第一个为主地址。
	// 多实例部署（每卡一个实例、PD 入口等）在此列出全部地址，供 loadgen 轮询。
	BaseURLs []string `json:"base_urls" yaml:"base_urls"`
	// Model 是服务对外的模型名（served-model-name）。
	Model string `json:"model" yaml:"model"`
	// APIKey 是访问服务所需的密钥，空表示不需要。
	APIKey string `json:"-" yaml:"-"`
}

// BaseURL 返回主地址（第一个 BaseURLs），没有地址时返回空串。
func (e Endpoint) BaseURL() string {
	if len(e.BaseURLs) == 0 {
		return ""
	}
	return e.BaseURLs[0]
}

// Redacted 返回去掉密钥、并屏蔽 URL 中用户信息后的副本，可安全写入日志与产物。
func (e Endpoint) Redacted() Endpoint {
	out := Endpoint{Model: e.Model, BaseURLs: make([]string, len(e.BaseURLs))}
	for i, u := range e.BaseURLs {
		out.BaseURLs[i] = redactURL(u)
	}
	return out
}

// String 实现 fmt.Stringer，输出不含密钥。
func (e Endpoint) String() string {
	r := e.Redacted()
	key := "none"
	if e.APIKey != "" {
		key = "***"
	}
	return fmt.Sprintf("Endpoint{model=%s base_urls=%s api_key=%s}", r.Model, strings.Join(r.BaseURLs, ","), key)
}

// GoString 让 %#v 同样不泄露密钥。
func (e Endpoint) GoString() string { return e.String() }

// redactURL 把 scheme://user:pass@host 中的用户信息替换为 "***"。
func redactURL(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return u
	}
	rest := u[i+3:]
	slash := strings.IndexAny(rest, "/?#")
	host := rest
	if slash >= 0 {
		host = rest[:slash]
	}
	at := strings.LastIndex(host, "@")
	if at < 0 {
		return u
	}
	return u[:i+3] + "***@" + rest[at+1:]
}

// Deployer 把一个服务拉起到健康状态。Deploy 仅在服务健康（或失败）后返回；
// 失败时已启动的资源由 Deploy 自己清理，调用方拿到 error 时无需再 Teardown。
type Deployer interface {
	Deploy(ctx context.Context) (Deployment, error)
}

// Deployment 是一个正在运行的部署。
//
// 约定：Teardown 必须可重复调用（第二次起直接返回 nil），并且无论部署
// 处于何种状态都会尽力释放资源；ArchiveLogs 把日志写入 dir（不存在则创建）。
type Deployment interface {
	// Endpoint 返回可访问的服务地址。
	Endpoint() Endpoint
	// ArchiveLogs 把该部署的日志归档到目录 dir。
	ArchiveLogs(ctx context.Context, dir string) error
	// Teardown 停止并清理部署，幂等。
	Teardown(ctx context.Context) error
}

// ErrNotReady 表示在超时或 ctx 结束前服务未达到健康状态。
var ErrNotReady = errors.New("deploy: server not ready")

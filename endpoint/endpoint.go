package endpoint

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// DefaultMaxResponseBytes 是从一个端点读取的单个响应体（或单个 SSE 事件）的默认上限：64 MiB，
// 远高于任何真实回答，又使作恶的服务端无法用一个巨大的回答撑爆内存。functional、accuracy 与
// loadgen 的默认上限都取这一个值（各自的 DefaultMaxResponseBytes / DefaultMaxEventBytes）。
const DefaultMaxResponseBytes = 64 << 20

// Endpoint 描述一个已就绪、可被测试的 OpenAI 兼容服务（字段约定见包文档）。
//
// APIKey 与 HTTPClient 不参与 JSON/YAML 序列化；APIKey 永远不会出现在
// String/Format 的输出中。需要把 Endpoint 写进日志或产物时请使用 Redacted。
type Endpoint struct {
	// BaseURLs 是各实例的基础地址（通常以 "/v1" 结尾）；第一个为主地址。
	BaseURLs []string `json:"base_urls" yaml:"base_urls"`
	// Model 是服务对外的模型名（served-model-name）。
	Model string `json:"model" yaml:"model"`
	// APIKey 是访问服务所需的密钥，空表示不需要。
	APIKey string `json:"-" yaml:"-"`
	// HTTPClient 发送发往 BaseURLs 的全部请求；nil 时由各阶段自建（见包文档）。
	HTTPClient *http.Client `json:"-" yaml:"-"`
	// Metrics 列出要抓取 /metrics 的实例（名字、PD 角色、完整地址）。为空时抓取每个 BaseURLs
	// 根路径的 /metrics；客户端地址不是实例本身时（PD 的代理、网关）在这里给出后面的实例，
	// 阶段分解才能按实例、按 PD 角色给出（见 explain 包）。
	Metrics []MetricsInstance `json:"metrics,omitempty" yaml:"metrics,omitempty"`
}

// MetricsInstance 是一个导出 vLLM 指标的实例。
type MetricsInstance struct {
	// Name 是报告里的显示名，空时取 URL 的 host:port。
	Name string `json:"name,omitempty" yaml:"name,omitempty"`
	// Role 是 PD 角色："prefill"、"decode"，混合部署为空。
	Role string `json:"role,omitempty" yaml:"role,omitempty"`
	// URL 是 /metrics 的完整地址，例如 http://10.0.0.5:6660/metrics。
	URL string `json:"url" yaml:"url"`
}

// ErrInvalid 被 Validate 返回的所有错误包装，调用方可用 errors.Is 区分“端点写错了”
// 与运行中的故障。
var ErrInvalid = errors.New("invalid endpoint")

// BaseURL 返回主地址（第一个 BaseURLs），没有地址时返回空串。
func (e Endpoint) BaseURL() string {
	if len(e.BaseURLs) == 0 {
		return ""
	}
	return e.BaseURLs[0]
}

// Validate 在任何请求之前检查端点：至少一个地址，每个地址都是带主机名的绝对
// http(s) URL，模型名非空。错误包装 ErrInvalid，并点名出错的下标与（已屏蔽凭据的）取值，
// 形如 `endpoint: base_urls[1] "ftp://h/v1": scheme "ftp" is not http or https`。
func (e Endpoint) Validate() error {
	if len(e.BaseURLs) == 0 {
		return fmt.Errorf("endpoint: base_urls: %w: no base URL", ErrInvalid)
	}
	for i, raw := range e.BaseURLs {
		if why := checkURL(raw); why != "" {
			return fmt.Errorf("endpoint: base_urls[%d] %q: %w: %s", i, RedactURL(raw), ErrInvalid, why)
		}
	}
	if strings.TrimSpace(e.Model) == "" {
		return fmt.Errorf("endpoint: model: %w: empty (want the served-model-name)", ErrInvalid)
	}
	for i, m := range e.Metrics {
		if why := checkURL(m.URL); why != "" {
			return fmt.Errorf("endpoint: metrics[%d].url %q: %w: %s", i, RedactURL(m.URL), ErrInvalid, why)
		}
		if m.Role != "" && m.Role != "prefill" && m.Role != "decode" {
			return fmt.Errorf("endpoint: metrics[%d].role %q: %w: want prefill, decode or empty", i, m.Role, ErrInvalid)
		}
	}
	return nil
}

// checkURL 返回 raw 不能作为基础地址的原因，可用时返回空串。原因里不重复 raw 本身
// （调用方已用屏蔽凭据的形式写出），以免 url.Parse 的错误文本带出口令。
func checkURL(raw string) string {
	if raw == "" {
		return "empty"
	}
	// "localhost:8000/v1" 会被 url.Parse 读成 scheme "localhost"：先看有没有 "://"，
	// 说出真正的错（漏了 scheme）。
	if !strings.Contains(raw, "://") {
		return "no scheme (want http:// or https://)"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "not a URL"
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("scheme %q is not http or https", u.Scheme)
	case u.Host == "":
		return "no host"
	}
	return ""
}

// Redacted 返回去掉密钥与客户端、并屏蔽 URL 中用户信息后的副本，可安全写入日志与产物。
func (e Endpoint) Redacted() Endpoint {
	out := Endpoint{Model: e.Model, BaseURLs: make([]string, len(e.BaseURLs))}
	for i, u := range e.BaseURLs {
		out.BaseURLs[i] = RedactURL(u)
	}
	for _, m := range e.Metrics {
		m.URL = RedactURL(m.URL)
		out.Metrics = append(out.Metrics, m)
	}
	return out
}

// String 实现 fmt.Stringer，输出不含密钥与 URL 凭据。嵌入了 Endpoint 的各阶段
// Target 因此也以这一形式打印。
func (e Endpoint) String() string {
	r := e.Redacted()
	// 没有密钥时写 "no api_key"，而不是 "api_key=none"：日志与产物会再经过脱敏，脱敏器把任何
	// api_key=… 都当作密钥遮住，读的人就会以为有一个密钥被藏起来了。
	key := "no api_key"
	if e.APIKey != "" {
		key = "api_key=***"
	}
	return fmt.Sprintf("Endpoint{model=%s base_urls=%s %s}", r.Model, strings.Join(r.BaseURLs, ","), key)
}

// GoString 让 %#v 同样不泄露密钥。
func (e Endpoint) GoString() string { return e.String() }

// RedactURL 把 scheme://user:pass@host 中的用户信息替换为 "***"，其余原样保留；
// 不是 URL 的文本原样返回。错误信息里写出地址之前用它。
func RedactURL(u string) string {
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

package metrics

import (
	"context"
	"errors"
	"fmt"
	"github.com/vllm-cibench/cibench/field"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"

	"github.com/vllm-cibench/cibench/internal/retry"
)

// 推送的默认值，导出以便调用方与文档引用。
const (
	DefaultJob          = "cibench"
	DefaultPushTimeout  = 10 * time.Second
	DefaultPushRetries  = 2
	DefaultRetryBackoff = time.Second
)

// PushConfig 是 Pushgateway 推送的配置。零值不可用（URL 必填），其余字段有默认值。
// 凭据由调用方传入（示例程序从环境变量读取），库不读取环境变量，也从不记录或返回它们。
type PushConfig struct {
	// URL 是 Pushgateway 的基地址，例如 http://pushgateway:9091。
	// 不得在 URL 中携带 user:password，请用 Username/Password，以免凭据出现在错误信息里。
	URL string
	// Job 是分组键中的 job 标签，默认 DefaultJob。
	Job string
	// Timeout 是单次尝试的超时，默认 DefaultPushTimeout。
	Timeout time.Duration
	// Retries 是失败后的额外尝试次数：0 取默认 DefaultPushRetries，负数表示不重试
	// （与 functional、accuracy 的 Retries 同一语义，见 internal/retry）。
	Retries int
	// RetryBackoff 是第一次重试前的等待，之后每次翻倍，默认 DefaultRetryBackoff。
	RetryBackoff time.Duration
	// Username/Password 启用 HTTP basic auth（Username 非空时）。
	Username, Password string
	// BearerToken 非空时以 Authorization: Bearer 发送；与 basic auth 互斥。
	BearerToken string
	// Client 是发送请求的 HTTP 客户端，nil 时使用一个新的 http.Client。
	Client *http.Client
}

// Pusher 把任意 prometheus.Gatherer 的指标推送到 Pushgateway（与 client_golang 的 push 包
// 同一形状），另外加上分组键的校验、重试、超时与凭据处理。推送什么、哪类运行推送
// （需求 §7（docs/requirements.md）的"仅每日"）由调用方决定。构造后只读，可并发使用。
type Pusher struct {
	cfg    PushConfig
	client *http.Client
}

// PushError 描述一次最终失败的推送：尝试次数、最后一次的 HTTP 状态（0 表示未拿到响应）
// 与底层错误。错误信息不含凭据。
type PushError struct {
	Attempts int
	Status   int
	Err      error
}

// Error 给出尝试次数与最后的原因，驱动程序可直接写入报告。
func (e *PushError) Error() string {
	return fmt.Sprintf("metrics: push: failed after %d attempt(s): %v", e.Attempts, e.Err)
}

// Unwrap 让 errors.Is 能看到 context.DeadlineExceeded 等底层错误。
func (e *PushError) Unwrap() error { return e.Err }

// NewPusher 校验配置并补全默认值。URL 必须是带主机的 http(s) 地址且不含 userinfo。
func NewPusher(cfg PushConfig) (*Pusher, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &field.Error{Err: ErrInvalid, Field: "PushConfig.URL", Value: redactURL(cfg.URL), Reason: "must be an http(s) URL with a host"}
	}
	if u.User != nil {
		return nil, &field.Error{Err: ErrInvalid, Field: "PushConfig.URL", Value: redactURL(cfg.URL), Reason: "must not carry credentials; use Username/Password or BearerToken"}
	}
	if cfg.BearerToken != "" && cfg.Username != "" {
		return nil, &field.Error{Err: ErrInvalid, Field: "PushConfig.BearerToken", Value: "<redacted>", Reason: "basic auth and bearer token are mutually exclusive"}
	}
	if cfg.Timeout < 0 {
		return nil, &field.Error{Err: ErrInvalid, Field: "PushConfig.Timeout", Value: cfg.Timeout.String(), Reason: "must not be negative"}
	}
	if cfg.RetryBackoff < 0 {
		return nil, &field.Error{Err: ErrInvalid, Field: "PushConfig.RetryBackoff", Value: cfg.RetryBackoff.String(), Reason: "must not be negative"}
	}
	if cfg.Job == "" {
		cfg.Job = DefaultJob
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultPushTimeout
	}
	cfg.Retries = retry.Count(cfg.Retries, DefaultPushRetries)
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = DefaultRetryBackoff
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{}
	}
	return &Pusher{cfg: cfg, client: client}, nil
}

// redactURL 去掉 URL 中的 userinfo 与查询串，使错误信息可以安全地记录。
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	u.RawQuery = ""
	return u.String()
}

// statusDoer 包装 http.Client，记下最后一次响应的状态码，用于判断是否值得重试
// （push 包只返回文本错误）。
type statusDoer struct {
	client *http.Client
	status int
}

// Do 转发请求并记录状态码。
func (d *statusDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.client.Do(req)
	if err == nil {
		d.status = resp.StatusCode
	}
	return resp, err
}

// retryable 判断一次失败是否值得重试：网络错误、429 与 5xx 是暂时的；
// 其他 4xx（数据不合法、认证失败）重试也不会变好。
func retryable(status int) bool {
	return status == 0 || status == http.StatusTooManyRequests || status >= 500
}

// GroupingKey 返回一次运行在 Pushgateway 上的分组键（含 job）。同一场景每天的键相同，
// 因此 PUT 替换昨天的组；commit、run_id 等每天变化的值不在键里，而在 run_info 序列上。
func (p *Pusher) GroupingKey(info RunInfo) (map[string]string, error) {
	ri, err := info.validate()
	if err != nil {
		return nil, err
	}
	return map[string]string{
		"job": p.cfg.Job, LabelModel: ri.Model, LabelQuant: ri.Quant, LabelScenario: ri.Scenario, LabelRunType: string(ri.RunType),
	}, nil
}

// Push 用 HTTP PUT 以 info 的分组键（job、model、quant、scenario、run_type）替换 Pushgateway
// 上的整组指标，内容是 g 采集到的全部指标（通常是 NewRegistry(各阶段的 Collector...)，
// 构造时不带 ConstLabels：分组键已承载运行标签）。info 不合法返回 *field.Error 且不发出
// 任何请求；推送失败（含重试耗尽、ctx 取消）返回 *PushError。Push 不按运行类型取舍，
// 也不触碰文件。
func (p *Pusher) Push(ctx context.Context, info RunInfo, g prometheus.Gatherer) error {
	if g == nil {
		return &field.Error{Err: ErrInvalid, Field: "Push.Gatherer", Value: "<nil>", Reason: "required"}
	}
	key, err := p.GroupingKey(info)
	if err != nil {
		return err
	}
	var last error
	status := 0
	attempts, werr := retry.Do(ctx, retry.Policy{Retries: p.cfg.Retries, Backoff: p.cfg.RetryBackoff}, func(int, bool) retry.Verdict {
		status, last = p.pushOnce(ctx, g, key)
		if last == nil || ctx.Err() != nil || !retryable(status) {
			return retry.Stop
		}
		return retry.Again()
	})
	switch {
	case werr != nil:
		return &PushError{Attempts: attempts, Status: status, Err: errors.Join(last, werr)}
	case last == nil:
		return nil
	}
	return &PushError{Attempts: attempts, Status: status, Err: last}
}

// pushOnce 做一次带超时的 PUT，返回状态码（无响应时为 0）与错误。
func (p *Pusher) pushOnce(ctx context.Context, g prometheus.Gatherer, key map[string]string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	doer := &statusDoer{client: p.client}
	pp := push.New(p.cfg.URL, key["job"]).Gatherer(g).Client(doer)
	for _, l := range groupingLabels {
		pp = pp.Grouping(l, key[l])
	}
	if p.cfg.Username != "" {
		pp = pp.BasicAuth(p.cfg.Username, p.cfg.Password)
	}
	if p.cfg.BearerToken != "" {
		pp = pp.Header(http.Header{"Authorization": {"Bearer " + p.cfg.BearerToken}})
	}
	err := pp.PushContext(ctx)
	return doer.status, err
}

// 示例与驱动程序读取 Pushgateway 设置时约定的环境变量名。
const (
	EnvPushgatewayURL      = "PROM_PUSHGATEWAY_URL"
	EnvPushgatewayUsername = "PROM_PUSHGATEWAY_USERNAME"
	EnvPushgatewayPassword = "PROM_PUSHGATEWAY_PASSWORD"
	EnvPushgatewayToken    = "PROM_PUSHGATEWAY_TOKEN"
)

// PushConfigFromEnv 用 getenv（示例程序传 os.Getenv）补全 cfg：配置里已有的 URL 优先，
// 否则取 PROM_PUSHGATEWAY_URL；凭据只在 cfg 中没有时从环境取。库本身不读环境变量，
// 由调用方决定是否以及从哪里读取。
func PushConfigFromEnv(getenv func(string) string, cfg PushConfig) PushConfig {
	if cfg.URL == "" {
		cfg.URL = getenv(EnvPushgatewayURL)
	}
	if cfg.Username == "" && cfg.BearerToken == "" {
		cfg.Username, cfg.Password = getenv(EnvPushgatewayUsername), getenv(EnvPushgatewayPassword)
		cfg.BearerToken = getenv(EnvPushgatewayToken)
	}
	return cfg
}

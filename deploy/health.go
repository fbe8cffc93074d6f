package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// 健康等待的默认值。DefaultStartupTimeout 来自需求：最大启动等待 20 分钟。
const (
	// DefaultStartupTimeout 是服务从启动到 /health 返回 200 的最长等待时间。
	DefaultStartupTimeout = 20 * time.Minute
	// DefaultHealthPath 是 vLLM 暴露健康检查的路径（位于根路径而非 /v1 下）。
	DefaultHealthPath = "/health"
	// DefaultPollInterval 是首次重试前的等待；之后按指数退避增长。
	DefaultPollInterval = 100 * time.Millisecond
	// DefaultMaxPollInterval 是退避的上限，避免大模型加载 20 分钟时轮询过密或过疏。
	DefaultMaxPollInterval = 5 * time.Second
)

// HealthOptions 控制 WaitHealthy 的轮询行为；零值即默认值。
type HealthOptions struct {
	// Client 发起探测请求；nil 时使用一个单次请求超时 10 秒的客户端。
	Client *http.Client
	// Timeout 是总等待时间，0 表示 DefaultStartupTimeout。
	Timeout time.Duration
	// Interval 是首次重试间隔，0 表示 DefaultPollInterval。
	Interval time.Duration
	// MaxInterval 是退避上限，0 表示 DefaultMaxPollInterval。
	MaxInterval time.Duration
	// Abort 收到值时立即放弃等待并返回该错误（例如本地进程已提前退出），
	// 这样无需等满 20 分钟才发现服务已经死掉。
	Abort <-chan error
}

// HealthError 描述一次失败的健康等待，保留最后一次探测的结果便于排障。
type HealthError struct {
	// URL 是被探测的地址（已屏蔽用户信息）。
	URL string
	// Attempts 是探测次数。
	Attempts int
	// Last 是最后一次探测的错误或非 200 状态描述。
	Last string
	// Err 是根因：ErrNotReady 与 ctx 错误或 Abort 传来的错误的组合。
	Err error
}

// Error 实现 error，给出地址、次数与最后一次失败原因。
func (e *HealthError) Error() string {
	msg := fmt.Sprintf("deploy: wait healthy %s: %v after %d attempts", e.URL, e.Err, e.Attempts)
	if e.Last != "" {
		msg += " (last: " + e.Last + ")"
	}
	return msg
}

// Unwrap 让 errors.Is(err, ErrNotReady) 与 errors.Is(err, context.Canceled) 均可用。
func (e *HealthError) Unwrap() error { return e.Err }

// HealthURL 由以 /v1 结尾的基础地址推出健康检查地址：vLLM 的 /health
// 挂在根路径，所以先去掉 /v1 再拼上 path（为空时用 DefaultHealthPath）。
func HealthURL(baseURL, path string) string {
	if path == "" {
		path = DefaultHealthPath
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	root := strings.TrimRight(baseURL, "/")
	root = strings.TrimSuffix(root, "/v1")
	return strings.TrimRight(root, "/") + path
}

// WaitHealthy 轮询 GET url 直到返回 200，或超时、ctx 结束、Abort 触发。
//
// 失败时返回 *HealthError，它总是包装 ErrNotReady；ctx 被取消时还包装
// ctx.Err()，Abort 时包装收到的错误。轮询采用指数退避，不在首次探测前等待。
func WaitHealthy(ctx context.Context, url string, opts HealthOptions) error {
	client := opts.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultStartupTimeout
	}
	interval := opts.Interval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	maxInterval := opts.MaxInterval
	if maxInterval <= 0 {
		maxInterval = DefaultMaxPollInterval
	}
	if maxInterval < interval {
		maxInterval = interval
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	herr := &HealthError{URL: redactURL(url)}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			herr.Err = fmt.Errorf("%w: %w", ErrNotReady, ctx.Err())
			return herr
		case err := <-opts.Abort:
			if err == nil {
				err = errors.New("aborted")
			}
			herr.Err = fmt.Errorf("%w: %w", ErrNotReady, err)
			return herr
		case <-timer.C:
		}
		herr.Attempts++
		last, ok := probe(ctx, client, url)
		if ok {
			return nil
		}
		// 被截止时间打断的那次探测没有信息量，保留上一次真正的结果（如 "status 503"）。
		// 截止前一秒之内完成的也算：负载高时截止已过而 ctx 的定时器还没触发。
		if !nearDeadline(ctx) || herr.Last == "" {
			herr.Last = last
		}
		timer.Reset(interval)
		interval = min(interval*2, maxInterval)
	}
}

// nearDeadline 报告 ctx 已结束或离截止不到一秒（见 WaitHealthy 中的用法）。
func nearDeadline(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < time.Second
}

// probe 发起一次 GET；返回失败描述与是否健康。响应体被读完丢弃以复用连接。
func probe(ctx context.Context, client *http.Client, url string) (string, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err.Error(), false
	}
	resp, err := client.Do(req)
	if err != nil {
		return redactURL(err.Error()), false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("status %d", resp.StatusCode), false
	}
	return "", true
}

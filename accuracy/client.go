package accuracy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ChatConfig 描述被测的 OpenAI 兼容服务与采样参数（对应参考命令行的
// --url、--served-model-name、--max-tokens、--temperature）。
type ChatConfig struct {
	// BaseURL 形如 http://host:port/v1；请求发往 BaseURL + "/chat/completions"。
	BaseURL string
	// Model 是 served-model-name。
	Model string
	// APIKey 非空时以 Bearer 方式发送；不会出现在任何错误或日志中。
	APIKey      string
	MaxTokens   int
	Temperature float64
	// SystemMessage 非空时作为 system 消息前置（参考实现的默认采样器没有）。
	SystemMessage string
	// Timeout 是单次请求的时限，0 表示只受 ctx 约束。
	Timeout time.Duration
	// Retries 是失败后的最大重试次数（参考实现无限重试，这里必须有界）。
	Retries int
	// Backoff 是首次重试前的等待，之后每次翻倍（参考实现为 1s、2s、4s……）；0 取 1s。
	Backoff time.Duration
	// HTTPClient 为 nil 时使用 http.DefaultClient。
	HTTPClient *http.Client
}

// HTTPError 是服务返回的非 2xx 响应；Body 只保留前 512 字节。
type HTTPError struct {
	StatusCode int
	Body       string
}

// Error 输出状态码与响应体摘要。
func (e *HTTPError) Error() string {
	return fmt.Sprintf("accuracy: chat completions: HTTP %d: %s", e.StatusCode, e.Body)
}

// ErrEmptyContent 表示响应的 message.content 为 null（例如推理模型在
// max_tokens 内没有输出正文）。
var ErrEmptyContent = errors.New("accuracy: chat completions: message.content is null")

// ChatSampler 通过 /v1/chat/completions 采样，实现 Sampler；可并发使用。
//
// 错误处理与 simple-evals 的 ChatCompletionSampler 对齐：HTTP 400 视为空回复
// （不重试）；其他错误按指数退避重试，至多 Retries 次，仍失败则返回错误，
// 由 Run 以空回复计分并记录。content 为 null 时参考实现会无限重试，这里直接
// 视为空回复，避免推理模型在小 max_tokens 下卡死。
type ChatSampler struct {
	cfg      ChatConfig
	endpoint string
}

// NewChatSampler 校验配置并构造采样器。
func NewChatSampler(cfg ChatConfig) (*ChatSampler, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("accuracy: chat: base URL %q must be an absolute http(s) URL", cfg.BaseURL)
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("accuracy: chat: model (served-model-name) is required")
	}
	if cfg.MaxTokens < 0 || cfg.Retries < 0 || cfg.Timeout < 0 || cfg.Backoff < 0 {
		return nil, fmt.Errorf("accuracy: chat: negative max_tokens/retries/timeout/backoff")
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = time.Second
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	return &ChatSampler{cfg: cfg, endpoint: strings.TrimRight(cfg.BaseURL, "/") + "/chat/completions"}, nil
}

// chatRequest 是请求体；只发送参考实现发送的字段。
type chatRequest struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	Temperature float64   `json:"temperature"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
}

// chatResponse 是响应体中用到的部分。
type chatResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}

// Sample 发送请求并返回 choices[0].message.content。
func (c *ChatSampler) Sample(ctx context.Context, messages []Message) (string, error) {
	if c.cfg.SystemMessage != "" {
		messages = append([]Message{{Role: "system", Content: c.cfg.SystemMessage}}, messages...)
	}
	body, err := json.Marshal(chatRequest{Model: c.cfg.Model, Messages: messages, Temperature: c.cfg.Temperature, MaxTokens: c.cfg.MaxTokens})
	if err != nil {
		return "", fmt.Errorf("accuracy: chat: %w", err)
	}
	backoff := c.cfg.Backoff
	var lastErr error
	for attempt := 0; ; attempt++ {
		text, err := c.once(ctx, body)
		if err == nil {
			return text, nil
		}
		var he *HTTPError
		if errors.As(err, &he) && he.StatusCode == http.StatusBadRequest {
			return "", nil
		}
		if errors.Is(err, ErrEmptyContent) {
			return "", nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		lastErr = err
		if attempt >= c.cfg.Retries {
			return "", fmt.Errorf("accuracy: chat: giving up after %d attempts: %w", attempt+1, lastErr)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", ctx.Err()
		case <-t.C:
		}
		backoff *= 2
	}
}

// once 发送一次请求。
func (c *ChatSampler) once(ctx context.Context, body []byte) (string, error) {
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("accuracy: chat: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("accuracy: chat: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("accuracy: chat: read body: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		b := string(data)
		if len(b) > 512 {
			b = b[:512]
		}
		return "", &HTTPError{StatusCode: resp.StatusCode, Body: b}
	}
	var cr chatResponse
	if err := json.Unmarshal(data, &cr); err != nil {
		return "", fmt.Errorf("accuracy: chat: decode response: %w", err)
	}
	if len(cr.Choices) == 0 {
		return "", fmt.Errorf("accuracy: chat: response has no choices")
	}
	if cr.Choices[0].Message.Content == nil {
		return "", ErrEmptyContent
	}
	return *cr.Choices[0].Message.Content, nil
}

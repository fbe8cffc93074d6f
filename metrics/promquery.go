package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-cibench/cibench/internal/redact"
)

// DefaultBaselineQueryTimeout 是读取基线时每个 Prometheus 查询的时限（PromBaselineConfig.QueryTimeout
// 为 0 时）：一次读取有十几个查询，单个查询卡住不能拖住整个门禁。
const DefaultBaselineQueryTimeout = 30 * time.Second

// maxQueryResponseBytes 是一个查询响应体的上限：基线查询的结果是每个组合一条序列，
// 64 MiB 远超任何真实矩阵，超过时报错而不是无界读入。
const maxQueryResponseBytes = 64 << 20

// promQuerier 是 Prometheus HTTP API 即时查询（/api/v1/query）的最小客户端：标准库实现，
// 于是 metrics 不链接 client_golang 的查询 API 及其 JSON 库（json-iterator、reflect2 等 6 个包）。
// 请求的形状与 client_golang api/prometheus/v1 的 Query 相同：POST 表单，服务端回答 405 时
// 改用 GET（某些代理只放行 GET）；时刻写成 Unix 秒的小数。
type promQuerier struct {
	endpoint string // <URL>/api/v1/query
	client   *http.Client
	timeout  time.Duration
	// red 抹掉服务端回显的凭据（错误文本会进日志与报告）。
	red *redact.Redactor
}

// newPromQuerier 为基地址 base 创建查询客户端；rt 已带上认证头。
func newPromQuerier(base *url.URL, rt http.RoundTripper, timeout time.Duration, red *redact.Redactor) *promQuerier {
	u := *base
	u.Path = strings.TrimRight(u.Path, "/") + "/api/v1/query"
	u.RawQuery, u.Fragment = "", ""
	if timeout <= 0 {
		timeout = DefaultBaselineQueryTimeout
	}
	// 不跟随重定向之外的任何策略：Client 只用来设 Transport，时限由 ctx 给出。
	return &promQuerier{endpoint: u.String(), client: &http.Client{Transport: rt}, timeout: timeout, red: red}
}

// promResponse 是 /api/v1/query 的响应信封（成功与错误共用）。
type promResponse struct {
	Status string `json:"status"`
	Data   struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
}

// query 在时刻 at 求值 expr，返回向量结果；其他结果类型、HTTP 或 API 错误、超时与过大的
// 响应都是错误（文本里的凭据已抹掉）。
func (q *promQuerier) query(ctx context.Context, expr string, at time.Time) (model.Vector, error) {
	ctx, cancel := context.WithTimeout(ctx, q.timeout)
	defer cancel()
	form := url.Values{"query": {expr}, "time": {strconv.FormatFloat(float64(at.UnixNano())/1e9, 'f', -1, 64)}}
	status, body, err := q.do(ctx, http.MethodPost, form)
	if err == nil && status == http.StatusMethodNotAllowed {
		status, body, err = q.do(ctx, http.MethodGet, form)
	}
	if err != nil {
		return nil, err
	}
	var r promResponse
	if jerr := json.Unmarshal(body, &r); jerr != nil {
		if status/100 != 2 {
			return nil, fmt.Errorf("HTTP %d: %s", status, q.excerpt(body))
		}
		return nil, fmt.Errorf("decode response: %w", jerr)
	}
	if status/100 != 2 || r.Status != "success" {
		if r.ErrorType == "" && r.Error == "" {
			return nil, fmt.Errorf("HTTP %d: %s", status, q.excerpt(body))
		}
		return nil, fmt.Errorf("HTTP %d: %s: %s", status, q.red.String(r.ErrorType), q.red.String(r.Error))
	}
	if r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("unexpected result type %s", r.Data.ResultType)
	}
	var vec model.Vector
	if err := json.Unmarshal(r.Data.Result, &vec); err != nil {
		return nil, fmt.Errorf("decode vector: %w", err)
	}
	return vec, nil
}

// do 发送一次查询请求，返回状态码与（有上限地）读完的响应体。
func (q *promQuerier) do(ctx context.Context, method string, form url.Values) (int, []byte, error) {
	var req *http.Request
	var err error
	if method == http.MethodPost {
		req, err = http.NewRequestWithContext(ctx, method, q.endpoint, strings.NewReader(form.Encode()))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	} else {
		req, err = http.NewRequestWithContext(ctx, method, q.endpoint+"?"+form.Encode(), nil)
	}
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := q.client.Do(req)
	if err != nil {
		// 传输错误原样返回（errors.Is 能认出超时与取消）；只有文本里真有凭据时才换成抹掉后的文本。
		if s := q.red.String(err.Error()); s != err.Error() {
			return 0, nil, errors.New(s)
		}
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxQueryResponseBytes+1))
	if err != nil {
		if s := q.red.String(err.Error()); s != err.Error() {
			return 0, nil, fmt.Errorf("read response: %s", s)
		}
		return 0, nil, fmt.Errorf("read response: %w", err)
	}
	if len(body) > maxQueryResponseBytes {
		return 0, nil, fmt.Errorf("response larger than %d bytes", maxQueryResponseBytes)
	}
	return resp.StatusCode, body, nil
}

// excerpt 返回响应体的开头（至多 200 字节，凭据已抹掉），用于非 JSON 的错误响应。
func (q *promQuerier) excerpt(body []byte) string {
	if len(body) > 200 {
		body = body[:200]
	}
	return strconv.Quote(q.red.String(string(body)))
}

package emulator_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/internal/sse"
)

// emuRootURL 返回去掉 /v1 的服务根地址。
func emuRootURL(ep deploy.Endpoint) string { return strings.TrimSuffix(ep.BaseURL(), "/v1") }

// emuDo 发送请求（body 为 string 时原样发送，否则编码为 JSON），返回状态码、响应头与响应体。
func emuDo(t testing.TB, ep deploy.Endpoint, method, path string, body any) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, emuRootURL(ep)+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if ep.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+ep.APIKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, out
}

// emuPost 是 POST 的简写。
func emuPost(t testing.TB, ep deploy.Endpoint, path string, body any) (int, http.Header, []byte) {
	t.Helper()
	return emuDo(t, ep, http.MethodPost, path, body)
}

// emuObj 解析 JSON 对象。
func emuObj(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, b)
	}
	return m
}

// emuJget 按路径取值：键名或数组下标（整数）。
func emuJget(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// emuNum 把 JSON 数字转为 int。
func emuNum(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// emuStr 把 JSON 字符串取出。
func emuStr(v any) string {
	s, _ := v.(string)
	return s
}

// emuEvents 把 SSE 响应体拆成 data 负载列表。
func emuEvents(t testing.TB, body []byte) [][]byte {
	t.Helper()
	r := sse.NewReader(bytes.NewReader(body))
	var out [][]byte
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]byte(nil), ev.Data...))
	}
}

// emuChatBody 构造一个单轮 chat 请求体，extra 覆盖默认字段。
func emuChatBody(prompt string, extra map[string]any) map[string]any {
	m := map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": prompt}}, "temperature": 0}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// emuStreamChunks 发送流式请求并返回解析后的 chunk（不含 [DONE]）与是否见到 [DONE]。
func emuStreamChunks(t testing.TB, ep deploy.Endpoint, path string, body map[string]any) ([]map[string]any, bool, []byte) {
	t.Helper()
	body["stream"] = true
	st, _, raw := emuPost(t, ep, path, body)
	if st != 200 {
		t.Fatalf("status %d: %s", st, raw)
	}
	var chunks []map[string]any
	done := false
	for _, ev := range emuEvents(t, raw) {
		if string(ev) == "[DONE]" {
			done = true
			continue
		}
		chunks = append(chunks, emuObj(t, ev))
	}
	return chunks, done, raw
}

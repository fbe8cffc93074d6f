package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/internal/sse"
	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// startEmu 启动一个模拟器并在测试结束时清理。
func startEmu(t testing.TB, cfg deploy.EmulatorConfig) (*deploy.Emulator, deploy.Endpoint) {
	t.Helper()
	em, err := deploy.NewEmulator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dep, err := em.Deploy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dep.Teardown(context.Background()) })
	return em, dep.Endpoint()
}

// post 发送 JSON 请求并返回状态码、响应头与响应体。
func post(t testing.TB, ep deploy.Endpoint, path string, body any) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case string:
		rd = strings.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	url := strings.TrimSuffix(ep.BaseURL(), "/v1") + path
	req, err := http.NewRequest(http.MethodPost, url, rd)
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

// events 把 SSE 响应体拆成 data 负载列表。
func events(t testing.TB, body []byte) [][]byte {
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

func TestEmulatorSmoke(t *testing.T) {
	_, ep := startEmu(t, deploy.EmulatorConfig{Model: "m"})
	st, _, body := post(t, ep, "/v1/chat/completions", map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": "你好 hello"}}, "max_tokens": 10, "temperature": 0})
	t.Logf("%d %s", st, body)
	st, h, body := post(t, ep, "/v1/chat/completions", map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": "你好 hello"}}, "max_tokens": 5, "stream": true, "stream_options": map[string]any{"include_usage": true}, "temperature": 0})
	t.Logf("%d %v %s", st, h, body)
	_ = tokenize.Count
}

package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// 金丝雀密钥：含有在 URL、JSON、HTML、CSV 编码下都会改变的字符，任何一处只按
// 原文脱敏都会漏掉它们的编码形态。
const (
	canaryAPIKey  = `canary-API+key/0=&"<k>'1`
	canaryPGWUser = "canary-pgw-user"
	canaryPGWPass = "canary-Pass?>>~1"
	canaryPGWTok  = `canary-pgw-tok+/=&"2`
)

// canaryJSON 返回 s 作为 JSON 字符串的内容（不含引号）。
func canaryJSON(s string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s)
	out := strings.TrimSpace(b.String())
	return out[1 : len(out)-1]
}

// canaryForms 返回 s 可能出现在产物或输出中的各种编码形态（独立于 redact 包计算）。
func canaryForms(s string) map[string]string {
	var h strings.Builder
	_ = template.Must(template.New("").Parse("{{.}}")).Execute(&h, s)
	return map[string]string{
		"raw": s, "query": url.QueryEscape(s), "path": url.PathEscape(s),
		"json": canaryJSON(s, true), "json-nohtml": canaryJSON(s, false),
		"json-json": canaryJSON(canaryJSON(s, false), true), "html": h.String(),
		"csv": strings.ReplaceAll(s, `"`, `""`), "csv-json": strings.ReplaceAll(canaryJSON(s, false), `"`, `""`),
	}
}

// echoServer 是一个敌意的 OpenAI 兼容服务兼 Pushgateway：健康检查与模型列表正常，
// 其余每个请求都以 401/500 拒绝，并把收到的请求头以多种写法回显在错误体里——
// Go 的 map 写法、JSON、URL 转义，以及去掉认证方案后的裸凭据（没有任何规则能认出它，
// 只有登记过的密钥才能被遮住）。
func echoServer(t *testing.T) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			return
		case "/v1/models":
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"echo-model","object":"model"}]}`))
			return
		}
		auth := r.Header.Get("Authorization")
		_, bare, _ := strings.Cut(auth, " ")
		hdr, _ := json.Marshal(r.Header)
		msg := fmt.Sprintf("denied; headers %v; json %s; query auth=%s; you sent %s", r.Header, hdr, url.QueryEscape(auth), bare)
		body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "auth_error", "code": 401}})
		w.Header().Set("Content-Type", "application/json")
		status := http.StatusUnauthorized
		if strings.HasPrefix(r.URL.Path, "/pgw/") {
			status = http.StatusInternalServerError
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
}

// writeTree 把一个小配置树写到磁盘上（examples/ci 从目录读配置）。
func writeTree(t *testing.T, dir string) {
	t.Helper()
	// 内置样例只能打进程内模拟器；这里的目标是 -base-url，因此用仓库里的样例文件当数据目录。
	data, err := filepath.Abs("../../accuracy/simpleevals/sampledata")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"tests/perf/profiles/daily.yaml": "concurrency: [1]\ninput_length: [16]\noutput_length: [8]\nrequests_per_concurrency: 2\nwarmup: 0\n",
		"tests/accuracy/daily.yaml":      "debug: true\nmax_tokens: 16\nnum_threads: 2\nretries: 0\ndataset_path: " + data + "\ndatasets: [{name: gpqa, report_only: true, examples: 2}]\n",
		"scenarios/echo.yaml":            "mode: emulator\nserved_model_name: echo-model\napi_key_env: CANARY_KEY\n",
		"matrix.yaml":                    "scenarios:\n  echo:\n    daily: {functional: {suites: [chat_core]}}\n",
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCanarySecretsNeverLeak 以金丝雀密钥（场景 API Key、Pushgateway basic auth 口令对、
// Pushgateway bearer token）对着回显请求头的服务器跑完整的每日运行（含推送），然后在
// 每一个产物文件与捕获的 stdout/stderr 中查找每个金丝雀的每种编码形态，
// 包括 basic auth 实际发送的 base64("user:pass")。
func TestCanarySecretsNeverLeak(t *testing.T) {
	srv := echoServer(t)
	defer srv.Close()
	cfg := t.TempDir()
	writeTree(t, cfg)
	secrets := map[string]string{
		"api key":       canaryAPIKey,
		"pgw password":  canaryPGWPass,
		"pgw pair":      base64.StdEncoding.EncodeToString([]byte(canaryPGWUser + ":" + canaryPGWPass)),
		"pgw token":     canaryPGWTok,
		"bearer header": "Bearer " + canaryAPIKey,
	}
	for _, auth := range []string{"basic", "bearer"} {
		t.Run(auth, func(t *testing.T) {
			root := t.TempDir()
			getenv := func(k string) string {
				switch {
				case k == "CANARY_KEY":
					return canaryAPIKey
				case auth == "basic" && k == "PROM_PUSHGATEWAY_USERNAME":
					return canaryPGWUser
				case auth == "basic" && k == "PROM_PUSHGATEWAY_PASSWORD":
					return canaryPGWPass
				case auth == "bearer" && k == "PROM_PUSHGATEWAY_TOKEN":
					return canaryPGWTok
				}
				return ""
			}
			var stdout, stderr bytes.Buffer
			code := run([]string{"-config", cfg, "-artifacts", root, "-run-type", "daily", "-run-id", "canary",
				"-base-url", srv.URL + "/v1", "-model", "echo-model", "-push-url", srv.URL + "/pgw", "-push", "-v"}, &stdout, &stderr, getenv)
			if code != 1 {
				t.Fatalf("exit %d (want 1: every request was refused)\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
			}
			// 确认服务端的回显确实进入了产物（否则"没有泄露"什么也证明不了）。
			files := map[string][]byte{"stdout": stdout.Bytes(), "stderr": stderr.Bytes()}
			err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(p)
				files[p] = b
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			echoed := 0
			for _, b := range files {
				echoed += bytes.Count(b, []byte("you sent"))
			}
			if echoed == 0 || len(files) < 15 {
				t.Fatalf("the echo server's bodies reached no artifact (%d files)", len(files))
			}
			for what, s := range secrets {
				for form, enc := range canaryForms(s) {
					for name, b := range files {
						if bytes.Contains(b, []byte(enc)) {
							t.Errorf("%s (%s form %q) leaked into %s", what, form, enc, name)
						}
					}
				}
			}
		})
	}
}

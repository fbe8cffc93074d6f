package redact_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/url"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/internal/redact"
)

// canaryKey 含有在 URL、JSON 与 HTML 编码下都会改变的字符，逐字替换原文
// 抓不住它的编码形态。
const canaryKey = `canary-KEY+/=&"<q>'9`

// jsonInner 返回 s 作为 JSON 字符串的内容（不含两侧引号）；html 控制是否按
// Go 默认转义 & < >。
func jsonInner(s string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s)
	out := strings.TrimSpace(b.String())
	return out[1 : len(out)-1]
}

// htmlTemplate 返回 s 经 html/template 在文本上下文中转义后的样子（报告 HTML 的写法）。
func htmlTemplate(s string) string {
	var b strings.Builder
	_ = template.Must(template.New("").Parse("{{.}}")).Execute(&b, s)
	return b.String()
}

// encodings 返回服务端或本工具的写出者可能把 s 写成的全部形态。
func encodings(s string) map[string]string {
	out := map[string]string{
		"raw":          s,
		"query":        url.QueryEscape(s),
		"path":         url.PathEscape(s),
		"json":         jsonInner(s, true),
		"json-nohtml":  jsonInner(s, false),
		"json-json":    jsonInner(jsonInner(s, false), true),
		"html":         htmlTemplate(s),
		"html-json":    htmlTemplate(jsonInner(s, false)),
		"query-json":   url.QueryEscape(jsonInner(s, false)),
		"json-query":   jsonInner(url.QueryEscape(s), true),
		"html-escaped": template.HTMLEscapeString(s),
		"csv":          strings.ReplaceAll(s, `"`, `""`),
		"csv-json":     strings.ReplaceAll(jsonInner(s, false), `"`, `""`),
	}
	return out
}

// TestAddCoversEncodings：Add 登记一次，密钥的 URL、JSON（含两层嵌套）与 HTML
// 编码形态都被替换，不只是原文。
func TestAddCoversEncodings(t *testing.T) {
	r := redact.New()
	r.Add(canaryKey)
	for name, enc := range encodings(canaryKey) {
		in := "server said: " + enc + " (end)"
		got := r.String(in)
		if strings.Contains(got, enc) {
			t.Errorf("%s form %q survives: %q", name, enc, got)
		}
		if got != "server said: "+redact.Mask+" (end)" {
			t.Errorf("%s form: got %q", name, got)
		}
	}
}

// TestAddBasicAuth：登记 basic-auth 用户名与口令后，口令本身与我们发送的
// base64("user:pass")（及其各种编码形态）都被替换；用户名不是密钥，保留。
func TestAddBasicAuth(t *testing.T) {
	user, pass := "pgw-user", "pgw-Pass?>>~1"
	pair := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	if !strings.ContainsAny(pair, "+/") {
		t.Fatalf("test pair %q should contain + or / to exercise escaping", pair)
	}
	r := redact.New()
	r.AddBasicAuth(user, pass)
	for _, secret := range []string{pass, pair} {
		for name, enc := range encodings(secret) {
			got := r.String("x " + enc + " y")
			if got != "x "+redact.Mask+" y" {
				t.Errorf("%s form of %q: got %q", name, secret, got)
			}
		}
	}
	if got := r.String("user " + user); got != "user "+user {
		t.Errorf("user name must stay readable: %q", got)
	}
	// 空口令的 basic auth（只有用户名）仍然发送 base64("user:")，它也是凭据。
	r2 := redact.New()
	r2.AddBasicAuth("only-user", "")
	if got := r2.String(base64.StdEncoding.EncodeToString([]byte("only-user:"))); got != redact.Mask {
		t.Errorf("pair without password: %q", got)
	}
}

// TestAuthorizationHeaderForms：服务端把请求头回显在错误体里的常见写法，
// 不知道密钥时也要靠规则遮住 Basic/Bearer 凭据。
func TestAuthorizationHeaderForms(t *testing.T) {
	const b64 = "dXNlcjpwYXNzd29yZA=="
	cases := []struct{ in, want string }{
		// Go 的 fmt.Sprint(http.Header)。
		{"headers: map[Authorization:[Basic " + b64 + "] Accept:[*/*]]", "headers: map[Authorization:[Basic " + redact.Mask + "] Accept:[*/*]]"},
		// encoding/json 编码的 http.Header。
		{`{"Authorization":["Basic ` + b64 + `"],"Accept":["*/*"]}`, `{"Authorization":["Basic ` + redact.Mask + `"],"Accept":["*/*"]}`},
		{`{"Authorization": ["Bearer abc.def-ghi"]}`, `{"Authorization": ["Bearer ` + redact.Mask + `"]}`},
		// Python/ASGI 的头列表。
		{`[(b'authorization', b'Basic ` + b64 + `')]`, `[(b'authorization', b'Basic ` + redact.Mask + `')]`},
		{`('Authorization', 'Basic ` + b64 + `')`, `('Authorization', 'Basic ` + redact.Mask + `')`},
		// 没有分隔符的 "Authorization Basic …"。
		{"missing scope for Authorization Basic " + b64, "missing scope for Authorization Basic " + redact.Mask},
		{"Authorization Bearer tok-123456", "Authorization Bearer " + redact.Mask},
		{"authorization=Basic%20" + b64, "authorization=" + redact.Mask},
		// 不应误伤：没有凭据的普通句子。
		{"authorization failed for user bob", "authorization failed for user bob"},
		{"Authorization header missing", "Authorization header missing"},
		{"authorization, then retry", "authorization, then retry"},
		{"Authorization: Bearer abcdefgh", "Authorization: Bearer " + redact.Mask},
	}
	r := redact.New()
	for _, c := range cases {
		if got := r.String(c.in); got != c.want {
			t.Errorf("String(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

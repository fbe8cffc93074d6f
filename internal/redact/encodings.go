package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/url"
	"strings"
)

// encoders 是密钥离开进程（或被服务端回显、再被我们写进产物）时可能经过的
// 单层编码：URL 查询串与路径转义、JSON 字符串（Go 默认转义 & < >，以及不转义的
// 写法，Python json.dumps 与 SetEscapeHTML(false) 都是后者）、HTML 模板转义
// （report.html 与精度 HTML 由 html/template 渲染，"+" 会变成 &#43;）、CSV 字段里的
// 引号加倍（逐请求 CSV 的 Error 列）。
var encoders = []func(string) string{
	func(s string) string { return strings.ReplaceAll(s, `"`, `""`) },
	url.QueryEscape,
	url.PathEscape,
	func(s string) string { return jsonInner(s, true) },
	func(s string) string { return jsonInner(s, false) },
	htmlTemplateEscape,
	template.HTMLEscapeString,
}

// jsonInner 返回 s 编码为 JSON 字符串后去掉两侧引号的内容；html 为 true 时按
// encoding/json 的默认行为把 & < > 转义为 \u0026 等。
func jsonInner(s string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		return s
	}
	out := bytes.TrimSpace(b.Bytes())
	return string(out[1 : len(out)-1])
}

// htmlTemplate 是只输出 {{.}} 的模板，用来得到 html/template 在文本上下文中的转义结果
// （它比 template.HTMLEscapeString 多转义 "+" 等字符）。
var htmlTemplate = template.Must(template.New("").Parse("{{.}}"))

// htmlTemplateEscape 返回 s 经 html/template 文本上下文转义后的样子。
func htmlTemplateEscape(s string) string {
	var b strings.Builder
	if err := htmlTemplate.Execute(&b, s); err != nil {
		return s
	}
	return b.String()
}

// forms 返回 s 的原文与至多两层编码组合后的全部不同形态。两层足以覆盖
// "服务端把请求头 JSON 编码进错误体，我们再把错误体 JSON/HTML 编码进产物" 这条
// 最长的真实路径；更深的嵌套没有出现过，却会让每个密钥的形态数成倍增长。
func forms(s string) []string {
	seen := map[string]bool{s: true}
	out := []string{s}
	layer := []string{s}
	for range 2 {
		var next []string
		for _, f := range layer {
			for _, enc := range encoders {
				if e := enc(f); !seen[e] {
					seen[e] = true
					out = append(out, e)
					next = append(next, e)
				}
			}
		}
		layer = next
	}
	return out
}

// BasicAuthValue 返回 HTTP basic auth 在 Authorization 头里发送的凭据
// base64("user:pass")（RFC 7617，与 net/http 的 SetBasicAuth 相同）。
func BasicAuthValue(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

// AddBasicAuth 登记一对 HTTP basic auth 凭据：口令本身，以及我们在
// "Authorization: Basic …" 里实际发送的 base64("user:pass")——服务端回显请求头时
// 出现的是后者，只登记口令原文抓不住它。两者都按 Add 的规则连同各种编码形态一起登记。
// 用户名不是秘密，不单独登记（它仍会随 base64 一起被遮住）。user 与 pass 都为空时
// 什么也不做。
func (r *Redactor) AddBasicAuth(user, pass string) {
	if user == "" && pass == "" {
		return
	}
	r.Add(pass, BasicAuthValue(user, pass))
}

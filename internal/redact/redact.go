package redact

import (
	"bytes"
	"regexp"
	"sort"
	"sync"
)

// Mask 是替换敏感值后留下的占位符。固定文本便于在产物中搜索"哪里被脱敏过"。
const Mask = "[REDACTED]"

// MinSecretLen 是显式登记密钥的最短长度。更短的值（如 "a"）若逐字替换会把
// 整个日志打碎，且本身也不构成有效凭据，因此被忽略。
const MinSecretLen = 4

// rule 是一条基于正则的脱敏规则：repl 使用 regexp.Expand 语法，
// 保留键名等上下文，只替换值本身，方便人读日志时知道"这里原来有个 token"。
type rule struct {
	re   *regexp.Regexp
	repl []byte
	// need 是廉价的预筛：对小写化后的文本返回 false 时该规则不可能匹配，
	// 跳过正则。Go 的正则对无字面前缀、大小写不敏感的模式很慢（< 1 MB/s），
	// 而绝大多数日志行不含任何凭据线索，预筛让常见情况接近 memchr 的速度。
	need func(lower []byte) bool
}

// anyOf 返回"文本含 subs 中任一子串"的预筛。
func anyOf(subs ...string) func([]byte) bool {
	return func(lower []byte) bool {
		for _, s := range subs {
			if bytes.Contains(lower, []byte(s)) {
				return true
			}
		}
		return false
	}
}

// needKV 是键值规则的预筛：某个键名结尾（key、token、secret、password、
// passwd、-data：secretKeys 中的每个键名都以其中之一结尾）之后（跳过引号、反斜杠与空白）紧跟
// ':' 或 '='。"tokens/s"、"max_tokens" 这类日志常见词因此不会触发正则。
func needKV(lower []byte) bool {
	for _, word := range [...]string{"key", "token", "secret", "password", "passwd", "-data"} {
		w := []byte(word)
		for off := 0; ; {
			i := bytes.Index(lower[off:], w)
			if i < 0 {
				break
			}
			j := off + i + len(w)
			for j < len(lower) && (lower[j] == '"' || lower[j] == '\'' || lower[j] == '\\' || lower[j] == ' ' || lower[j] == '\t') {
				j++
			}
			if j < len(lower) && (lower[j] == ':' || lower[j] == '=') {
				return true
			}
			off = off + i + 1
		}
	}
	return false
}

// secretKeys 是其值应被视为凭据的键名（正则片段，大小写不敏感）。
const secretKeys = `(?:api[_\-]?key|x-api-key|access[_\-]?token|refresh[_\-]?token|auth[_\-]?token|id[_\-]?token|token|secret|client[_\-]?secret|password|passwd|client-key-data|client-certificate-data|private[_\-]?key)`

// defaultRules 返回内置规则。每次构造新切片，避免包级可变状态。
func defaultRules() []rule {
	// authValue 是 Authorization 规则的取值：已有的占位符整体算一个值（原样换回占位符），
	// 否则是不以 "[" 开头、到空白或分隔符为止的一段。显式密钥先于规则被替换，再脱敏一次
	// 已脱敏的文本（Finish 对其他包写出的文件再跑一遍）也常见；若占位符的 "[REDACTED"
	// 被当成值，就会留下 "Basic [REDACTED]]"。分隔符后可选的 "[" 因此是惰性的（\[??）：
	// 先试着把 "[REDACTED]" 整个当值，不行再把 "[" 当作 Go map / JSON 数组的括号。
	authValue := `(?:` + regexp.QuoteMeta(Mask) + `|[^\s"'\\,;\[\]][^\s"'\\,;\]]*)`
	return []rule{
		// PEM 私钥块：整块替换（跨行，仅在整段文本中生效）。
		{regexp.MustCompile(`(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----`), []byte(Mask), anyOf("private key-----")},
		// URL 中的 user:pass@：替换整个 userinfo，连用户名也可能是令牌。
		{regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)[^/\s@"'<>]+@`), []byte("${1}" + Mask + "@"), anyOf("@")},
		// Authorization 头（Bearer/Basic/Token/Digest 方案或裸值）。服务端回显请求头的写法
		// 五花八门：Go 的 map[Authorization:[Basic …]]、JSON 的 "Authorization":["Basic …"]、
		// Python 的 (b'authorization', b'Basic …')、嵌在 JSON 字符串里的 \"…\"，因此分隔符
		// 允许 : =（值前可有 [ 与带 b 前缀、反斜杠的引号）；逗号只在其后紧跟引号时算分隔符，
		// 以免 "authorization, then …" 这样的句子被误伤。
		{regexp.MustCompile(`(?i)(\bauthorization\\?["']?[ \t]*(?:[:=][ \t]*\[??[ \t]*(?:b?\\?["'])?|,[ \t]*b?\\?["']))((?:bearer|basic|token|digest)[ \t]+)?` + authValue), []byte("${1}${2}" + Mask), anyOf("authorization")},
		// 没有分隔符的 "Authorization Basic …"：只在紧跟认证方案名时才替换，
		// "authorization failed" 这类普通句子不受影响。
		{regexp.MustCompile(`(?i)(\bauthorization[ \t]+(?:bearer|basic|token|digest)[ \t]+)` + authValue), []byte("${1}" + Mask), anyOf("authorization")},
		// 游离的 "Bearer xxx"（如 curl -H 的拼接或错误信息里）。
		{regexp.MustCompile(`(?i)\b(bearer)[ \t]+[A-Za-z0-9\-._~+/]{8,}=*`), []byte("${1} " + Mask), anyOf("bearer")},
		// 键值形式：api_key / apiKey / token / password / kubeconfig 的 *-data 等，
		// 兼容 JSON、YAML、查询串与命令行 --api-key=xxx。引号内的值整体替换（可含空格），
		// 裸值到分隔符为止；值以 { 或 [ 开头（嵌套结构）时不动，以免破坏 JSON。
		{regexp.MustCompile(`(?i)(\b` + secretKeys + `\\?["']?[ \t]*[:=][ \t]*\\?")[^"\\\n]+`), []byte("${1}" + Mask), needKV},
		{regexp.MustCompile(`(?i)(\b` + secretKeys + `["']?[ \t]*[:=][ \t]*')[^'\n]+`), []byte("${1}" + Mask), needKV},
		{regexp.MustCompile(`(?i)(\b` + secretKeys + `\\?["']?[ \t]*[:=][ \t]*)[^\s"'\\,;&{}\[\]]+`), []byte("${1}" + Mask), needKV},
		// 命令行形式：--api-key xxx / --token xxx（以空格分隔值）。
		{regexp.MustCompile(`(?i)(--(?:api-key|token|password|secret)[ \t]+)[^\s"']+`), []byte("${1}" + Mask), anyOf("--")},
		// OpenAI 风格密钥 sk-…、HF 令牌 hf_…。
		{regexp.MustCompile(`\b(?:sk|hf)[-_][A-Za-z0-9_\-]{8,}`), []byte(Mask), anyOf("sk-", "sk_", "hf-", "hf_")},
		// JWT（Kubernetes ServiceAccount 令牌等）。
		{regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}`), []byte(Mask), anyOf("eyj")},
	}
}

// Redactor 持有脱敏规则与运行时登记的显式密钥。
//
// 并发：所有方法可被多个 goroutine 同时调用；Add 之后的调用立即生效。
type Redactor struct {
	rules []rule
	// pemBegin/pemEnd 供 Writer 逐行识别 PEM 私钥块的起止。
	pemBegin, pemEnd *regexp.Regexp

	mu      sync.RWMutex
	secrets [][]byte // 按长度降序，保证长密钥先于其前缀被替换
}

// New 创建带内置规则的 Redactor，并登记 secrets（短于 MinSecretLen 的忽略）。
func New(secrets ...string) *Redactor {
	r := &Redactor{
		rules:    defaultRules(),
		pemBegin: regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`),
		pemEnd:   regexp.MustCompile(`-----END [A-Z ]*PRIVATE KEY-----`),
	}
	r.Add(secrets...)
	return r
}

// Add 登记运行时才知道的密钥值（例如从环境变量读取的 API Key、bearer token），
// 之后所有输出中出现的该值都会被替换。登记一次即覆盖它的全部编码形态：原文、
// URL 转义（查询串与路径）、JSON 字符串转义（含两层嵌套：服务端把请求 JSON 编码进
// 错误体、我们再把错误体写进 JSON 产物）、HTML 转义（报告页面）与 CSV 引号加倍。"Bearer <key>"
// 头里发送的就是原文，因此无需另外登记；basic auth 用 AddBasicAuth。
// 空值与过短的值被忽略，重复登记无副作用。
func (r *Redactor) Add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, raw := range secrets {
		if len(raw) < MinSecretLen {
			continue
		}
		for _, s := range forms(raw) {
			dup := false
			for _, have := range r.secrets {
				if string(have) == s {
					dup = true
					break
				}
			}
			if !dup {
				r.secrets = append(r.secrets, []byte(s))
			}
		}
	}
	sort.SliceStable(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
}

// maxSecretLen 返回已登记密钥的最大长度，Writer 用它决定保留多长的尾巴，
// 以便跨 Write 调用被切开的密钥也能被识别。
func (r *Redactor) maxSecretLen() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(r.secrets) == 0 {
		return 0
	}
	return len(r.secrets[0])
}

// String 返回 s 脱敏后的副本。
func (r *Redactor) String(s string) string { return string(r.Bytes([]byte(s))) }

// Bytes 返回 b 脱敏后的内容；b 本身不被修改。先替换显式密钥再套规则，
// 这样即使密钥形态不符合任何规则（例如自定义令牌）也不会漏掉。
func (r *Redactor) Bytes(b []byte) []byte {
	out := bytes.Clone(b)
	r.mu.RLock()
	for _, s := range r.secrets {
		out = bytes.ReplaceAll(out, s, []byte(Mask))
	}
	r.mu.RUnlock()
	lower := bytes.ToLower(out)
	for _, ru := range r.rules {
		if ru.need(lower) {
			out = ru.re.ReplaceAll(out, ru.repl)
			lower = bytes.ToLower(out)
		}
	}
	return out
}

// spans 返回 b 中所有将被替换的区间（显式密钥与规则匹配），Writer 用它
// 避免在匹配中间切分缓冲区。
func (r *Redactor) spans(b []byte) [][2]int {
	var out [][2]int
	r.mu.RLock()
	for _, s := range r.secrets {
		for off := 0; ; {
			i := bytes.Index(b[off:], s)
			if i < 0 {
				break
			}
			out = append(out, [2]int{off + i, off + i + len(s)})
			off += i + len(s)
		}
	}
	r.mu.RUnlock()
	lower := bytes.ToLower(b)
	for _, ru := range r.rules {
		if !ru.need(lower) {
			continue
		}
		for _, m := range ru.re.FindAllIndex(b, -1) {
			out = append(out, [2]int{m[0], m[1]})
		}
	}
	return out
}

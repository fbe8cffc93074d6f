package report

import (
	"encoding/base64"
	"io"
	"strings"
	"sync"

	"github.com/vllm-cibench/cibench/internal/redact"
)

// Secrets 是一次运行的脱敏器：运行时读到的密钥（API Key、bearer token、basic auth
// 口令）登记在这里，之后 Run 写出的每个产物、Writer 包装的每条日志、Redact 处理的
// 每段文本里，这些值的任何编码形态都被替换为 "[REDACTED]"；另有内置规则遮住未登记的
// 常见凭据（URL 里的 user:pass@、Authorization 头的各种回显写法、sk-…、JWT、
// api_key=…、PEM 私钥等）。
//
// 它是 report 对外的唯一脱敏入口：驱动（examples/ci 或团队自己的副本）只用它，
// 不需要模块的 internal 包。零值可用（只有内置规则）。
//
// 并发：所有方法可被多个 goroutine 同时调用；Add 之后立即生效。
// 不要复制已使用的 Secrets（go vet 会指出）。
type Secrets struct {
	once sync.Once
	red  *redact.Redactor
}

// NewSecrets 返回登记了 secrets 的 Secrets（等同于零值再 Add）。
func NewSecrets(secrets ...string) *Secrets {
	s := &Secrets{}
	s.Add(secrets...)
	return s
}

// r 返回底层脱敏器，零值第一次使用时才创建，使 var s Secrets 也能直接用。
func (s *Secrets) r() *redact.Redactor {
	s.once.Do(func() {
		if s.red == nil {
			s.red = redact.New()
		}
	})
	return s.red
}

// Add 登记运行时才知道的密钥值。登记一次即覆盖它能到达产物的每种形态：原文、
// URL 查询串与路径转义、JSON 字符串转义（含两层：服务端把请求 JSON 编码进错误体、
// 我们再把它编码进 JSON 产物）、HTML 转义、CSV 引号加倍，以及它的 base64（标准与
// URL 字母表、带或不带填充：Kubernetes Secret 清单的 data 字段就是这样保存它的）。
// "Authorization: Bearer <v>" 发送的就是原文，无需另外登记；basic auth 用 AddBasicAuth。
//
// 从文件或环境变量读到的值常带首尾空白（令牌文件的结尾换行），而发出去的请求头里
// 不可能有换行，因此去掉首尾空白后的值也一并登记。短于 4 字节的值与空值被忽略
// （逐字替换它们会把日志打碎），重复登记没有副作用。应在第一次发出请求之前登记。
func (s *Secrets) Add(secrets ...string) {
	red := s.r()
	for _, v := range secrets {
		vals := []string{v}
		if t := strings.TrimSpace(v); t != v {
			vals = append(vals, t)
		}
		for _, v := range vals {
			if len(v) < redact.MinSecretLen {
				continue
			}
			// 不带填充的写法是带填充写法的前缀，登记它就遮住两者（只留下 "="），
			// 每种 base64 只需一个形态，每个形态又会展开成十几种编码，省一半开销。
			red.Add(v, base64.RawStdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v)))
		}
	}
}

// AddBasicAuth 登记一对 HTTP basic auth 凭据：口令本身，以及
// "Authorization: Basic …" 里实际发送的 base64("user:pass")（服务端回显请求头时
// 出现的是后者，只登记口令原文挡不住它），两者都连同 Add 所说的编码形态一起登记。
// 用户名不是秘密，不单独登记（它仍随 base64 一起被遮住）。user 与 pass 都为空时
// 什么也不做。
func (s *Secrets) AddBasicAuth(user, pass string) {
	if user == "" && pass == "" {
		return
	}
	s.Add(pass, redact.BasicAuthValue(user, pass))
}

// Redact 返回 text 脱敏后的副本（错误信息、门禁原因等单段文本）。
func (s *Secrets) Redact(text string) string { return s.r().String(text) }

// RedactBytes 返回 b 脱敏后的副本；b 本身不被修改。
func (s *Secrets) RedactBytes(b []byte) []byte { return s.r().Bytes(b) }

// Writer 返回写往 w 的脱敏 io.WriteCloser，用来包装日志输出（slog 处理器、
// 子进程的 stdout/stderr）。它按行缓冲、整行脱敏后再写给 w，所以被多次 Write
// 切开的密钥也能识别；没有换行的超长输出（超过 64 KiB）分段写出，切点从不落在
// 一个匹配的中间。可被多个 goroutine 共用。结束时必须 Close 以写出最后一段不带
// 换行的内容；Close 不关闭 w，之后的 Write 返回错误。
func (s *Secrets) Writer(w io.Writer) io.WriteCloser { return s.r().NewWriter(w) }

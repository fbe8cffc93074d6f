package report_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/runtype"

	"github.com/vllm-cibench/cibench/report"
)

// 测试用密钥：含有在 URL、JSON、HTML、CSV、base64 下都会改变形态的字符
// （空格、+ / = & " < > '），任何一处只按原文脱敏都会漏掉它的编码形态。
const (
	secAPIKey = `sec-API+key/0=&"<k>' 1`
	secUser   = "pgw-user"
	secPass   = "pgw-Pass?>>~1"
)

// mask 是脱敏占位符（文档约定的固定文本）。
const mask = "[REDACTED]"

// jsonInner 返回 s 作为 JSON 字符串的内容（不含两侧引号）；html 控制是否转义 & < >。
func jsonInner(s string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s)
	out := strings.TrimSpace(b.String())
	return out[1 : len(out)-1]
}

// secretForms 返回 s 能到达日志与产物的各种编码形态，独立于实现计算：
// 原文、URL 查询串/路径转义、JSON（两种 HTML 转义设置与两层嵌套）、html/template、
// CSV 引号加倍，以及 base64 的四种写法和其中带 + / = 的那种再经 URL 转义的样子。
func secretForms(s string) map[string]string {
	var h strings.Builder
	_ = template.Must(template.New("").Parse("{{.}}")).Execute(&h, s)
	std := base64.StdEncoding.EncodeToString([]byte(s))
	return map[string]string{
		"raw": s, "query": url.QueryEscape(s), "path": url.PathEscape(s),
		"json": jsonInner(s, true), "json-nohtml": jsonInner(s, false),
		"json-json": jsonInner(jsonInner(s, false), true), "html": h.String(),
		"csv": strings.ReplaceAll(s, `"`, `""`), "csv-json": strings.ReplaceAll(jsonInner(s, false), `"`, `""`),
		"base64": std, "base64url": base64.URLEncoding.EncodeToString([]byte(s)),
		"base64raw": base64.RawStdEncoding.EncodeToString([]byte(s)), "base64rawurl": base64.RawURLEncoding.EncodeToString([]byte(s)),
		"base64-query": url.QueryEscape(std),
	}
}

// basicPair 返回 basic auth 实际发送的 base64("user:pass")。
func basicPair(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

// registered 返回登记了 secAPIKey 与 basic auth 口令对的 Secrets，以及要检查的
// 全部（名称 → 形态）组合。
func registered() (*report.Secrets, map[string]string) {
	s := report.NewSecrets(secAPIKey)
	s.AddBasicAuth(secUser, secPass)
	all := map[string]string{}
	for what, v := range map[string]string{"api key": secAPIKey, "password": secPass, "basic pair": basicPair(secUser, secPass)} {
		for form, enc := range secretForms(v) {
			all[what+"/"+form] = enc
		}
	}
	return s, all
}

// TestSecretsRedactEveryEncoding 对登记过的 API Key 与 basic auth 口令对的每种编码形态
// 逐一检查 Redact：形态消失、换成占位符，两侧的普通文本原样保留（脱敏不吞上下文）。
// RedactBytes 给出同样的结果且不改动输入。
func TestSecretsRedactEveryEncoding(t *testing.T) {
	s, all := registered()
	if len(all) < 40 {
		t.Fatalf("only %d forms", len(all))
	}
	for name, enc := range all {
		in := "before " + enc + " after"
		got := s.Redact(in)
		if strings.Contains(got, enc) || !strings.Contains(got, mask) {
			t.Errorf("%s: Redact(%q) = %q", name, in, got)
		}
		if !strings.HasPrefix(got, "before ") || !strings.HasSuffix(got, " after") {
			t.Errorf("%s: context lost: %q", name, got)
		}
		b := []byte(in)
		if gb := s.RedactBytes(b); string(gb) != got || string(b) != in {
			t.Errorf("%s: RedactBytes = %q (input now %q), Redact = %q", name, gb, b, got)
		}
	}
	// 用户名不是秘密：单独出现时保留。
	if got := s.Redact("user=" + secUser); got != "user="+secUser {
		t.Errorf("user name masked: %q", got)
	}
}

// TestSecretsWriterSplitWrites 经 Writer 写出每种形态：整行一次写、在每个字节处切成
// 两次写、逐字节写，输出都必须与对整段文本 Redact 的结果逐字节相同，且不含该形态
// ——被 Write 边界切开的密钥照样被识别。最后一行不带换行，由 Close 写出。
func TestSecretsWriterSplitWrites(t *testing.T) {
	s, all := registered()
	for name, enc := range all {
		text := "log line 1\nkey " + enc + " used\ntail " + enc
		want := s.Redact(text)
		if strings.Contains(want, enc) {
			t.Fatalf("%s: Redact leaves it: %q", name, want)
		}
		check := func(how string, parts [][]byte) {
			var out bytes.Buffer
			w := s.Writer(&out)
			for _, p := range parts {
				if n, err := w.Write(p); err != nil || n != len(p) {
					t.Fatalf("%s %s: Write = %d, %v", name, how, n, err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if out.String() != want {
				t.Errorf("%s %s:\n got %q\nwant %q", name, how, out.String(), want)
			}
		}
		b := []byte(text)
		check("whole", [][]byte{b})
		for i := 1; i < len(b); i++ {
			check(fmt.Sprintf("split@%d", i), [][]byte{b[:i], b[i:]})
		}
		var bytewise [][]byte
		for i := range b {
			bytewise = append(bytewise, b[i:i+1])
		}
		check("bytewise", bytewise)
	}
}

// TestSecretsWriterLongLine 写一行远超 64 KiB 缓冲上限、没有换行的输出（Writer 必须
// 分段写出），密钥散落在各处、以 1000 字节为单位写入（密钥常被切在两次 Write 之间，
// 分段的切点也会落在它们附近）：输出与整段 Redact 的结果相同，不含任何密钥。
func TestSecretsWriterLongLine(t *testing.T) {
	s, all := registered()
	var forms []string
	for _, enc := range all {
		forms = append(forms, enc)
	}
	var line strings.Builder
	for i := 0; line.Len() < 300<<10; i++ {
		line.WriteString(strings.Repeat("x", 997+i%61))
		line.WriteString(" " + forms[i%len(forms)] + " ")
	}
	text := []byte(line.String())
	var out bytes.Buffer
	w := s.Writer(&out)
	for off := 0; off < len(text); off += 1000 {
		if _, err := w.Write(text[off:min(off+1000, len(text))]); err != nil {
			t.Fatal(err)
		}
		if off == 200<<10 && out.Len() == 0 {
			t.Fatal("Writer buffered 200 KiB without writing: the long line is not flushed in pieces")
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if want := string(s.RedactBytes(text)); out.String() != want {
		t.Fatalf("long line differs from whole-text redaction (%d vs %d bytes)", out.Len(), len(want))
	}
	for _, enc := range forms {
		if strings.Contains(out.String(), enc) {
			t.Fatalf("%q leaked", enc)
		}
	}
	if _, err := w.Write([]byte("late")); err == nil {
		t.Fatal("Write after Close succeeded")
	}
}

// TestSecretsAddDetails 钉住 Add 的边界：零值可用；从文件读到的带结尾换行的令牌，
// 去掉空白后的值（请求头里实际发送的）也被遮住；短于 4 字节的值被忽略（逐字替换会
// 打碎日志）；只有用户名的 basic auth 仍遮住 base64("user:")；两者都空时什么也不登记。
func TestSecretsAddDetails(t *testing.T) {
	var s report.Secrets
	s.Add("tok-from-file-123\n", "abc", "")
	if got := s.Redact("Authorization-ish tok-from-file-123, abc"); got != "Authorization-ish "+mask+", abc" {
		t.Errorf("got %q", got)
	}
	s.AddBasicAuth("only-user", "")
	if got := s.Redact("sent " + basicPair("only-user", "")); got != "sent "+mask {
		t.Errorf("user-only basic auth: %q", got)
	}
	s.AddBasicAuth("", "")
	if got := s.Redact("plain text stays"); got != "plain text stays" {
		t.Errorf("got %q", got)
	}
	// 内置规则对未登记的凭据同样生效。
	if got := s.Redact("GET http://u:p4ss@h/v1 Authorization: Bearer abcdefgh12345"); got != "GET http://"+mask+"@h/v1 Authorization: Bearer "+mask {
		t.Errorf("builtin rules: %q", got)
	}
}

// TestSecretsConcurrent 让登记与脱敏、Writer 写入在多个 goroutine 中同时进行
// （-race 下检查数据竞争）；全部完成后每个登记过的值都被遮住。
func TestSecretsConcurrent(t *testing.T) {
	s := report.NewSecrets()
	var out bytes.Buffer
	var mu sync.Mutex
	w := s.Writer(lockedWriter{&mu, &out})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			key := fmt.Sprintf("concurrent-key-%02d", i)
			s.Add(key)
			_ = s.Redact("x " + key)
			_, _ = fmt.Fprintf(w, "line %s\n", key)
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(out.String(), "concurrent-key") || strings.Count(out.String(), mask) != 8 {
		t.Fatalf("output:\n%s", out.String())
	}
}

// lockedWriter 给下游 buffer 加锁，以便测试结束时安全读取。
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

// Write 持锁写入。
func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestEchoedSecretsNeverReachArtifacts 是公开 API 的金丝雀测试：一个回环 HTTP 服务
// 拒绝每个请求，并把收到的请求头以多种写法回显在错误体里（Go 的 map 写法、JSON、URL
// 转义、去掉认证方案的裸凭据）。客户端带着 bearer API Key 与 basic auth 各发一次请求，
// 驱动照常把回显写进运行的各处：阶段错误、另一个包直接写进场景目录的文件、经
// Run.Create 的日志、经 Secrets.Writer 写出的控制台日志。Finish 之后每个产物与控制台
// 输出里都找不到任何密钥的任何形态，而回显确实到达了产物。
func TestEchoedSecretsNeverReachArtifacts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		_, bare, _ := strings.Cut(auth, " ")
		hdr, _ := json.Marshal(r.Header)
		msg := fmt.Sprintf("denied; headers %v; json %s; query auth=%s; you sent %s", r.Header, hdr, url.QueryEscape(auth), bare)
		body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "code": 401}})
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write(body)
	}))
	defer srv.Close()

	secrets, all := registered()
	var console bytes.Buffer
	logw := secrets.Writer(&console)
	root := t.TempDir()
	run, err := newRun(root, runtype.Daily, "echo-1", t0, report.WithSecrets(secrets))
	if err != nil {
		t.Fatal(err)
	}
	if err := run.AddScenario(report.ScenarioInfo{Name: "echo", Model: "m", Deploy: "external"}); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	var bodies []string
	for _, setAuth := range []func(*http.Request){
		func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+secAPIKey) },
		func(r *http.Request) { r.SetBasicAuth(secUser, secPass) },
	} {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		setAuth(req)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(b))
		fmt.Fprintf(logw, "request failed: %d %s\n", resp.StatusCode, b)
		if err := run.RecordError("echo", report.StagePerf, fmt.Errorf("POST %s: %d: %s", req.URL, resp.StatusCode, b)); err != nil {
			t.Fatal(err)
		}
	}
	// 回显必须真的含有凭据（否则"没有泄露"什么也证明不了）。
	if !strings.Contains(bodies[0], secretForms(secAPIKey)["json"]) || !strings.Contains(bodies[1], basicPair(secUser, secPass)) {
		t.Fatalf("the echo server did not echo the credentials:\n%s", strings.Join(bodies, "\n"))
	}
	logs, err := run.ScenarioDir("echo", report.StageLogs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logs, "client.log"), []byte(strings.Join(bodies, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := run.Create("echo/logs/driver.log")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bodies {
		// 半行半行地写，密钥常被切在两次 Write 之间。
		_, _ = io.WriteString(f, b[:len(b)/2])
		_, _ = io.WriteString(f, b[len(b)/2:]+"\n")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	gates, err := gate.Evaluate(context.Background(), gateInputs(t, run.Result()), gate.Thresholds{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Finish(context.Background(), gates, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := logw.Close(); err != nil {
		t.Fatal(err)
	}

	files := map[string][]byte{"console": console.Bytes()}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
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
	if echoed < 8 || len(files) < 8 {
		t.Fatalf("the echoed bodies reached too few artifacts (%d echoes in %d files)", echoed, len(files))
	}
	for name, enc := range all {
		for file, b := range files {
			if bytes.Contains(b, []byte(enc)) {
				t.Errorf("%s (%q) leaked into %s", name, enc, file)
			}
		}
	}
	var errs []error
	for file, b := range files {
		if strings.Contains(string(b), "Bearer "+secAPIKey[:8]) {
			errs = append(errs, fmt.Errorf("%s holds a fragment of the bearer header", file))
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

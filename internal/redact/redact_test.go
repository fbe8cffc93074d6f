package redact_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/internal/redact"
)

// TestStringPatterns 逐条检查内置规则：敏感值消失、上下文保留。
func TestStringPatterns(t *testing.T) {
	cases := []struct{ in, want string }{
		{"GET http://alice:s3cr3tpw@host:8000/v1/models", "GET http://" + redact.Mask + "@host:8000/v1/models"},
		{"dial https://tok123456@example.com/x failed", "dial https://" + redact.Mask + "@example.com/x failed"},
		{"Authorization: Bearer abcdefgh12345678", "Authorization: Bearer " + redact.Mask},
		{`{"authorization":"Basic dXNlcjpwYXNz"}`, `{"authorization":"Basic ` + redact.Mask + `"}`},
		{"curl -H 'bearer QWERTYUIOPASDF'", "curl -H 'bearer " + redact.Mask + "'"},
		{`api_key: 'EMPTYKEY'`, `api_key: '` + redact.Mask + `'`},
		{`{"apiKey": "abc123xyz"}`, `{"apiKey": "` + redact.Mask + `"}`},
		{"https://h/v1?token=zzzzzz&x=1", "https://h/v1?token=" + redact.Mask + "&x=1"},
		{"    client-key-data: LS0tLS1CRUdJTiBSU0E=", "    client-key-data: " + redact.Mask},
		{"    client-certificate-data: LS0tLS1CRUdJTg==", "    client-certificate-data: " + redact.Mask},
		{"    token: abc.def.ghi", "    token: " + redact.Mask},
		{"    password: hunter22", "    password: " + redact.Mask},
		{"vllm serve m --api-key hunter2hunter2 --port 1", "vllm serve m --api-key " + redact.Mask + " --port 1"},
		{"key is sk-proj-ABCDEFGH12345 ok", "key is " + redact.Mask + " ok"},
		{"jwt eyJhbGciOi.eyJzdWIiOiIx.SflKxwRJSMeKKF2QT4", "jwt " + redact.Mask},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\nrest", redact.Mask + "\nrest"},
		{`{"request":"{\"api_key\":\"abc123\",\"Authorization\":\"Bearer zzz\"}"}`, `{"request":"{\"api_key\":\"` + redact.Mask + `\",\"Authorization\":\"Bearer ` + redact.Mask + `\"}"}`},
		{`password: "two words"`, `password: "` + redact.Mask + `"`},
		{"Authorization: plainvalue", "Authorization: " + redact.Mask},
		{`{"token": {"a": 1}, "api_key": ""}`, `{"token": {"a": 1}, "api_key": ""}`},
		{"token=" + redact.Mask + " again", "token=" + redact.Mask + " again"},
		{`client_secret = "abc def"`, `client_secret = "` + redact.Mask + `"`},
		{"Token : xyz123", "Token : " + redact.Mask},
		{"X-Api-Key: abcd\nnext line", "X-Api-Key: " + redact.Mask + "\nnext line"},
		{"api_key=\nnot-a-secret", "api_key=\nnot-a-secret"},
		// 不应误伤的普通文本。
		{"throughput: 1234.5 tokens/s, max_tokens=128", "throughput: 1234.5 tokens/s, max_tokens=128"},
		{"max_tokens: 128 completion_tokens=5 TokenSource: usage", "max_tokens: 128 completion_tokens=5 TokenSource: usage"},
		{"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"},
		{"secretName: vllm", "secretName: vllm"},
	}
	r := redact.New()
	for _, c := range cases {
		got := r.String(c.in)
		if got != c.want {
			t.Errorf("String(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
		// 已脱敏的文本再脱敏一次不变（见 TestIdempotent）。
		if again := r.String(got); again != got {
			t.Errorf("not idempotent: String(%q) = %q", got, again)
		}
	}
}

// TestExplicitSecrets 检查运行时登记的密钥（形态不匹配任何规则）也被替换，
// 且过短的值被忽略、重复登记无副作用、长密钥优先于其前缀。
func TestExplicitSecrets(t *testing.T) {
	r := redact.New("plainvalue42", "ab")
	r.Add("plainvalue42", "plainvalue42-long", "")
	got := r.String("x plainvalue42-long y plainvalue42 ab")
	want := "x " + redact.Mask + " y " + redact.Mask + " ab"
	if got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	in := []byte("keep plainvalue42")
	_ = r.Bytes(in)
	if string(in) != "keep plainvalue42" {
		t.Fatalf("Bytes modified its input: %q", in)
	}
}

// TestWriterSplitSecrets 以随机切分写入含密钥的日志，输出必须与整体脱敏一致，
// 且不含任何密钥片段。
func TestWriterSplitSecrets(t *testing.T) {
	secret := "MyS3cretValue-0123456789"
	var lines []string
	for i := range 100 {
		switch i % 5 {
		case 0:
			lines = append(lines, "INFO request to http://u:"+secret+"@10.0.0.1:8000/v1 ok")
		case 1:
			lines = append(lines, "DEBUG header Authorization: Bearer "+secret)
		case 2:
			lines = append(lines, "plain "+secret+" in the middle")
		case 3:
			lines = append(lines, "api_key="+secret+" sk-abcdefghijk123")
		default:
			lines = append(lines, strings.Repeat("x", i))
		}
	}
	text := strings.Join(lines, "\n") + "\ntrailing " + secret
	r := redact.New(secret)
	want := r.String(text)
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 10 {
		var out bytes.Buffer
		w := r.NewWriter(&out)
		for rest := text; len(rest) > 0; {
			n := 1 + rng.IntN(min(len(rest), 40))
			if k, err := w.Write([]byte(rest[:n])); err != nil || k != n {
				t.Fatalf("Write = %d, %v", k, err)
			}
			rest = rest[n:]
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("trial %d: chunked output differs from whole-text redaction", trial)
		}
		if strings.Contains(out.String(), "S3cret") || strings.Contains(out.String(), "abcdefghijk") {
			t.Fatalf("trial %d: secret leaked", trial)
		}
	}
}

// TestWriterLongLine 检查没有换行的超长输出也被分段写出（内存有界），
// 且切点附近的密钥不泄露。
func TestWriterLongLine(t *testing.T) {
	secret := "ZZsecretZZ-9876543210"
	r := redact.New(secret)
	var out bytes.Buffer
	w := r.NewWriter(&out)
	chunk := strings.Repeat("a", 1000) + secret
	for range 120 {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if out.Len() == 0 {
		t.Fatal("nothing emitted before Close although buffer exceeded DefaultHold")
	}
	if out.Len() > 120*len(chunk) {
		t.Fatal("emitted more than written")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat(strings.Repeat("a", 1000)+redact.Mask, 120)
	if out.String() != want {
		t.Fatalf("long-line output mismatch: len %d want %d; leaked=%v", out.Len(), len(want), strings.Contains(out.String(), "secret"))
	}
}

// TestWriterPEMAcrossWrites 检查跨多次写入的 PEM 私钥块整块被替换。
func TestWriterPEMAcrossWrites(t *testing.T) {
	r := redact.New()
	var out bytes.Buffer
	w := r.NewWriter(&out)
	for _, p := range []string{"before\n-----BEGIN PRIVATE KEY-----\nMIIEv", "QIBADANBg\nkqhkiG9w0\n", "-----END PRIVATE KEY-----\nafter\n"} {
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "before\n"+redact.Mask+"\nafter\n"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}

// errWriter 总是失败，用来检查下游错误被传回。
type errWriter struct{}

// Write 总是返回错误。
func (errWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestWriterErrors 检查下游错误传递与关闭后写入的哨兵错误。
func TestWriterErrors(t *testing.T) {
	r := redact.New()
	w := r.NewWriter(errWriter{})
	if _, err := w.Write([]byte("line\n")); err == nil {
		t.Fatal("downstream error not returned")
	}
	w2 := r.NewWriter(&bytes.Buffer{})
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w2.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := w2.Write([]byte("x")); !errors.Is(err, redact.ErrClosed) {
		t.Fatalf("Write after Close = %v, want ErrClosed", err)
	}
}

// TestIdempotent 钉住"已脱敏的文本再脱敏一次不变"：Finish 会对其他包已经脱敏过的
// 文件再跑一遍，登记过的 basic auth 凭据先被显式替换、再被 Authorization 规则看到时，
// 规则曾把占位符本身当成值（它的取值字符集排除 "]" 却不排除 "["），留下
// "Basic [REDACTED]]"。
func TestIdempotent(t *testing.T) {
	r := redact.New("dXNlcjpwYXNzd29yZA==", "plain-secret-1")
	cases := []struct{ in, want string }{
		{"Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic " + redact.Mask},
		{"map[Authorization:[Basic dXNlcjpwYXNzd29yZA==]]", "map[Authorization:[Basic " + redact.Mask + "]]"},
		{"authorization basic dXNlcjpwYXNzd29yZA== tail", "authorization basic " + redact.Mask + " tail"},
		{"Authorization: plain-secret-1", "Authorization: " + redact.Mask},
		{`{"Authorization":["Bearer plain-secret-1"]}`, `{"Authorization":["Bearer ` + redact.Mask + `"]}`},
		{"Authorization: Bearer abcdefgh12345678", "Authorization: Bearer " + redact.Mask},
	}
	for _, c := range cases {
		got := r.String(c.in)
		if got != c.want {
			t.Errorf("String(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
		if again := r.String(got); again != got {
			t.Errorf("not idempotent: String(%q) = %q", got, again)
		}
	}
}

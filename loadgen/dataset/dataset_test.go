package dataset

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// TestRandomTextExactLengthAndMixed 验证随机文本长度精确、可复现、确实是中英混合。
func TestRandomTextExactLengthAndMixed(t *testing.T) {
	for _, n := range []int{1, 2, 7, 128, 2048, 4096} {
		s := RandomText(42, n)
		if got := tokenize.Count(s); got != n {
			t.Fatalf("RandomText(42, %d) has %d tokens", n, got)
		}
		if s != RandomText(42, n) {
			t.Fatal("not reproducible")
		}
	}
	s := RandomText(1, 2048)
	han, latin := 0, 0
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Han, r):
			han++
		case r >= 'a' && r <= 'z':
			latin++
		}
	}
	if han < 300 || latin < 300 {
		t.Fatalf("text not zh/en mixed: %d han, %d latin letters", han, latin)
	}
	if RandomText(1, 64) == RandomText(2, 64) {
		t.Fatal("seed ignored")
	}
}

// unquote 解码池中的 JSON 字符串。
func unquote(t *testing.T, q []byte) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPoolPrefixAndRanges 验证共享前缀、长度抖动范围、可复现性与 prompt 池上限。
func TestPoolPrefixAndRanges(t *testing.T) {
	p := Random{PrefixLength: 30, RangeRatioAbove: 0.5, RangeRatioBelow: 0.2, Seed: 9}
	pool, err := RandomPool(context.Background(), p, 100, 50, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pool.Quoted) != 50 {
		t.Fatalf("pool size %d", len(pool.Quoted))
	}
	var prefix string
	lens := map[int]bool{}
	for i, q := range pool.Quoted {
		s := unquote(t, q)
		n := tokenize.Count(s)
		if n != pool.Tokens[i] || n < 80 || n > 150 {
			t.Fatalf("prompt %d: %d tokens (recorded %d), want within [80,150]", i, n, pool.Tokens[i])
		}
		lens[n] = true
		pieces := tokenize.Split(s)
		pre := strings.Join(pieces[:30], "")
		if i == 0 {
			prefix = pre
		} else if pre != prefix {
			t.Fatalf("prompt %d does not share the 30-token prefix", i)
		}
	}
	if len(lens) < 10 {
		t.Fatalf("range ratios produced only %d distinct lengths", len(lens))
	}
	again, _ := RandomPool(context.Background(), p, 100, 50, nil)
	if string(again.Quoted[7]) != string(pool.Quoted[7]) {
		t.Fatal("pool not reproducible")
	}
	big, _ := RandomPool(context.Background(), p, 100, PoolSize*3, nil)
	if len(big.Quoted) != PoolSize {
		t.Fatalf("pool not capped: %d", len(big.Quoted))
	}
}

// bpeCounter 模拟一个与共享规则不同的服务端分词器：每个英文词算 2 个 token。
type bpeCounter struct{ calls atomic.Int64 }

// CountTokens 把长英文词算作 2 个 token，制造与共享规则的差异。
func (b *bpeCounter) CountTokens(_ context.Context, s string) (int, error) {
	b.calls.Add(1)
	n := 0
	tokenize.Walk(s, func(p string) bool {
		n++
		if strings.TrimSpace(p) != "" && p[len(p)-1] < 0x80 && len(strings.TrimSpace(p)) > 3 {
			n++
		}
		return true
	})
	return n, nil
}

// TestCalibrateAgainstServerTokenizer 验证按服务端分词器校准后 prompt 长度精确。
func TestCalibrateAgainstServerTokenizer(t *testing.T) {
	c := &bpeCounter{}
	pool, err := RandomPool(context.Background(), Random{}, 256, 20, c)
	if err != nil {
		t.Fatal(err)
	}
	exact := 0
	for i, q := range pool.Quoted {
		got, _ := c.CountTokens(context.Background(), unquote(t, q))
		if got != pool.Tokens[i] {
			t.Fatalf("prompt %d: recorded %d, server says %d", i, pool.Tokens[i], got)
		}
		if got == 256 {
			exact++
		}
	}
	if exact < 18 {
		t.Fatalf("only %d/20 prompts calibrated to exactly 256 server tokens", exact)
	}
	if !pool.Exact {
		t.Fatal("pool not marked exact")
	}
}

// failCounter 总是失败。
type failCounter struct{}

// CountTokens 总是返回错误。
func (failCounter) CountTokens(context.Context, string) (int, error) { return 0, errors.New("down") }

// TestCalibrateError 验证 /tokenize 失败时报错而不是生成长度错误的数据集。
func TestCalibrateError(t *testing.T) {
	if _, err := RandomPool(context.Background(), Random{}, 16, 2, failCounter{}); err == nil {
		t.Fatal("tokenize failure swallowed")
	}
}

// TestReadPrompts 验证 JSONL 数据集的字段别名、空行与带行号的错误。
func TestReadPrompts(t *testing.T) {
	in := `{"prompt":"a"}

{"text":"b","max_tokens":5}
{"input":"c","output_length":7}
{"question":"d"}
`
	ps, err := ReadPrompts(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Prompt{{Text: "a"}, {Text: "b", MaxTokens: 5}, {Text: "c", MaxTokens: 7}, {Text: "d"}}
	if len(ps) != len(want) {
		t.Fatalf("%+v", ps)
	}
	for i := range want {
		if ps[i] != want[i] {
			t.Fatalf("%d: %+v want %+v", i, ps[i], want[i])
		}
	}
	for _, bad := range []string{"", "{\"prompt\":\"a\"}\nnot json", `{"other":"x"}`} {
		if _, err := ReadPrompts(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	_, err = ReadPrompts(strings.NewReader("{\"prompt\":\"a\"}\n{bad"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("error does not name the line: %v", err)
	}
}

// TestImageDataURLIsPNG 验证 image-text 的图片是确定性的 PNG data URL。
func TestImageDataURLIsPNG(t *testing.T) {
	u := ImageDataURL(3, 64, 32)
	if !strings.HasPrefix(u, "data:image/png;base64,iVBORw0KGgo") {
		t.Fatalf("not a PNG data URL: %.40s", u)
	}
	if u != ImageDataURL(3, 64, 32) || u == ImageDataURL(4, 64, 32) {
		t.Fatal("image not seeded")
	}
}

// hangCounter 的每次计数都阻塞到 ctx 结束（挂起的 /tokenize 服务）。
type hangCounter struct{}

// CountTokens 等 ctx 结束后返回它的错误。
func (hangCounter) CountTokens(ctx context.Context, _ string) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// TestBuildPoolTokenizeDeadline 验证每次校准计数都有期限：计数器挂起时建池以
// context.DeadlineExceeded 失败，而不是让启动阶段无限等待。
func TestBuildPoolTokenizeDeadline(t *testing.T) {
	old := tokenizeTimeout
	tokenizeTimeout = 50 * time.Millisecond
	defer func() { tokenizeTimeout = old }()
	_, err := RandomPool(context.Background(), Random{}, 16, 40, hangCounter{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
}

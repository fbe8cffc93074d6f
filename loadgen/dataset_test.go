package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
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
	p := Profile{InputLength: []int{100}, OutputLength: []int{1}, PrefixLength: 30, RangeRatioAbove: 0.5, RangeRatioBelow: 0.2, Seed: 9}.Defaults()
	pool, err := buildPool(context.Background(), &p, 100, 50, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pool.quoted) != 50 {
		t.Fatalf("pool size %d", len(pool.quoted))
	}
	var prefix string
	lens := map[int]bool{}
	for i, q := range pool.quoted {
		s := unquote(t, q)
		n := tokenize.Count(s)
		if n != pool.tokens[i] || n < 80 || n > 150 {
			t.Fatalf("prompt %d: %d tokens (recorded %d), want within [80,150]", i, n, pool.tokens[i])
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
	again, _ := buildPool(context.Background(), &p, 100, 50, nil)
	if string(again.quoted[7]) != string(pool.quoted[7]) {
		t.Fatal("pool not reproducible")
	}
	big, _ := buildPool(context.Background(), &p, 100, poolSize*3, nil)
	if len(big.quoted) != poolSize {
		t.Fatalf("pool not capped: %d", len(big.quoted))
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
	p := Profile{InputLength: []int{256}, OutputLength: []int{1}}.Defaults()
	c := &bpeCounter{}
	pool, err := buildPool(context.Background(), &p, 256, 20, c)
	if err != nil {
		t.Fatal(err)
	}
	exact := 0
	for i, q := range pool.quoted {
		got, _ := c.CountTokens(context.Background(), unquote(t, q))
		if got != pool.tokens[i] {
			t.Fatalf("prompt %d: recorded %d, server says %d", i, pool.tokens[i], got)
		}
		if got == 256 {
			exact++
		}
	}
	if exact < 18 {
		t.Fatalf("only %d/20 prompts calibrated to exactly 256 server tokens", exact)
	}
	if !pool.exact {
		t.Fatal("pool not marked exact")
	}
}

// failCounter 总是失败。
type failCounter struct{}

// CountTokens 总是返回错误。
func (failCounter) CountTokens(context.Context, string) (int, error) { return 0, errors.New("down") }

// TestCalibrateError 验证 /tokenize 失败时报错而不是生成长度错误的数据集。
func TestCalibrateError(t *testing.T) {
	p := Profile{InputLength: []int{16}, OutputLength: []int{1}}.Defaults()
	if _, err := buildPool(context.Background(), &p, 16, 2, failCounter{}); err == nil {
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

// TestGammaMeanAndVariance 用均值与方差检验 gamma 抽样（决定开环到达间隔）。
func TestGammaMeanAndVariance(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, shape := range []float64{0.5, 1, 4} {
		const n, scale = 200000, 0.01
		sum, sq := 0.0, 0.0
		for range n {
			v := gammaSample(r, shape, scale)
			if v < 0 {
				t.Fatal("negative gap")
			}
			sum += v
			sq += v * v
		}
		mean := sum / n
		variance := sq/n - mean*mean
		if math.Abs(mean-shape*scale)/(shape*scale) > 0.02 {
			t.Errorf("shape %v: mean %v, want %v", shape, mean, shape*scale)
		}
		if want := shape * scale * scale; math.Abs(variance-want)/want > 0.05 {
			t.Errorf("shape %v: variance %v, want %v", shape, variance, want)
		}
	}
}

// TestImageDataURLIsPNG 验证 image-text 的图片是确定性的 PNG data URL。
func TestImageDataURLIsPNG(t *testing.T) {
	u := imageDataURL(3, 64, 32)
	if !strings.HasPrefix(u, "data:image/png;base64,iVBORw0KGgo") {
		t.Fatalf("not a PNG data URL: %.40s", u)
	}
	if u != imageDataURL(3, 64, 32) || u == imageDataURL(4, 64, 32) {
		t.Fatal("image not seeded")
	}
}

// TestStartOffsetClimb 验证 static / linear 爬坡中每个 worker 的启动时刻。
func TestStartOffsetClimb(t *testing.T) {
	r := &runner{p: Profile{ControlMethod: ControlClimb, GrowthRate: 2, GrowthInterval: 1000, ClimbMode: ClimbStatic}}
	got := []int64{}
	for i := range 7 {
		got = append(got, int64(r.startOffset(i, 1)))
	}
	if want := []int64{0, 1000, 1000, 2000, 2000, 3000, 3000}; !equalInts(got, want) {
		t.Fatalf("static offsets %v, want %v", got, want)
	}
	r.p.ClimbMode = ClimbLinear
	got = got[:0]
	for i := range 5 {
		got = append(got, int64(r.startOffset(i, 1)))
	}
	if want := []int64{0, 500, 1000, 1500, 2000}; !equalInts(got, want) {
		t.Fatalf("linear offsets %v, want %v", got, want)
	}
	r.p.GrowthRate = 0
	if r.startOffset(3, 2) != -1 || r.startOffset(1, 2) != 0 {
		t.Fatal("growth 0 must keep init concurrency")
	}
	r.p.ControlMethod = ControlNormal
	if r.startOffset(5, 1) != 0 {
		t.Fatal("normal mode must start all workers at once")
	}
}

// equalInts 比较两个整数切片。
func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

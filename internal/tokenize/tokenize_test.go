package tokenize_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// TestSplit 用人工可核对的例子固定分词规则。
func TestSplit(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"hello world", []string{"hello", " world"}},
		{"你好，world!", []string{"你", "好", "，", "world", "!"}},
		{"  lead", []string{"  lead"}},
		{"trail  ", []string{"trail", "  "}},
		{"it's GPU_2 テスト 한국", []string{"it's", " GPU_2", " テ", "ス", "ト", " 한", "국"}},
		{"café naïve", []string{"café", " naïve"}},
		{"a\n\nb", []string{"a", "\n\nb"}},
		{"😀x", []string{"😀", "x"}},
		{"\u00a0x", []string{"\u00a0x"}},
	}
	for _, c := range cases {
		got := tokenize.Split(c.in)
		if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
			t.Errorf("Split(%q) = %q, want %q", c.in, got, c.want)
		}
		if tokenize.Count(c.in) != len(c.want) {
			t.Errorf("Count(%q) = %d, want %d", c.in, tokenize.Count(c.in), len(c.want))
		}
		if strings.Join(got, "") != c.in {
			t.Errorf("Split(%q) does not concatenate back", c.in)
		}
	}
}

// TestIDs 确认 id 确定、在词表范围内，且前导空白不影响 id。
func TestIDs(t *testing.T) {
	ids := tokenize.IDs("hello hello  hello 世")
	if len(ids) != 4 {
		t.Fatalf("len %d", len(ids))
	}
	if ids[0] != ids[1] || ids[1] != ids[2] {
		t.Fatalf("leading space changed id: %v", ids)
	}
	for _, id := range ids {
		if id < 0 || id >= tokenize.VocabSize {
			t.Fatalf("id %d out of range", id)
		}
	}
	if tokenize.ID("  ") == tokenize.ID(" ") {
		t.Fatalf("whitespace-only pieces of different length should differ")
	}
}

// TestWalkStop 确认回调返回 false 时立即停止。
func TestWalkStop(t *testing.T) {
	n := 0
	tokenize.Walk("a b c d", func(string) bool { n++; return n < 2 })
	if n != 2 {
		t.Fatalf("walk visited %d pieces, want 2", n)
	}
}

// FuzzSplit 确认任意输入切分后可无损拼接，且每个片段都含且仅含一个非空白 token。
func FuzzSplit(f *testing.F) {
	f.Add("hello 世界, it's 2026!")
	f.Add(" \t")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		parts := tokenize.Split(s)
		if strings.Join(parts, "") != s {
			t.Fatalf("lossy split of %q: %q", s, parts)
		}
		if tokenize.Count(s) != len(parts) {
			t.Fatalf("count mismatch")
		}
		for _, p := range parts {
			if p == "" {
				t.Fatalf("empty piece in %q", parts)
			}
		}
	})
}

// BenchmarkCount 测量分词计数的速度（模拟器在每个请求上都要计数）。
func BenchmarkCount(b *testing.B) {
	s := strings.Repeat("The quick brown fox 跳过了懒狗, and then 继续前进。", 64)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = tokenize.Count(s)
	}
}

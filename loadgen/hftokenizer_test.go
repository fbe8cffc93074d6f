package loadgen_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/loadgen"
)

// loadTok 读取 testdata 中的小型 tokenizer.json。
func loadTok(t *testing.T, name string) *loadgen.HFTokenizer {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := loadgen.LoadHFTokenizer(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestHFTokenizerCounts 用手算的 BPE 结果检验 GPT-2 与 Qwen 两种预分词配置。
func TestHFTokenizerCounts(t *testing.T) {
	cases := map[string]int{
		"hello world":    5, // hello | Ġw or l d（merges: h e, l l, he ll, hell o, Ġ w, o r）
		"a  b":           4, // a | Ġ | Ġ b：空白串让出最后一个空格给下一个词
		"你好":             6, // 6 个 UTF-8 字节，没有合并
		"hello\n\nworld": 7,
		"x 12345":        7,
		"":               0,
		"trailing  ":     10, // t r a i l i n g | Ġ Ġ
	}
	for _, name := range []string{"gpt2_tiny_tokenizer.json", "qwen_tiny_tokenizer.json"} {
		tok := loadTok(t, name)
		for text, want := range cases {
			got, err := tok.CountTokens(context.Background(), text)
			if err != nil || got != want {
				t.Errorf("%s: Count(%q) = %d, %v; want %d", name, text, got, err, want)
			}
			again, _ := tok.CountTokens(context.Background(), text) // 走缓存
			if again != got {
				t.Errorf("%s: cached count differs for %q", name, text)
			}
		}
	}
}

// TestHFTokenizerRejectsUnsupported 验证不支持的模型与预分词器给出可判断的错误。
func TestHFTokenizerRejectsUnsupported(t *testing.T) {
	for _, doc := range []string{
		`{"model":{"type":"Unigram"}}`,
		`{"model":{"type":"BPE","vocab":{},"merges":[]},"pre_tokenizer":{"type":"Metaspace"}}`,
		`{"model":{"type":"BPE","vocab":{},"merges":[]}}`,
		`{"model":{"type":"BPE","vocab":{},"merges":[]},"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"(?<=a)b"}},{"type":"ByteLevel","use_regex":false}]}}`,
	} {
		if _, err := loadgen.LoadHFTokenizer(strings.NewReader(doc)); !errors.Is(err, loadgen.ErrUnsupportedTokenizer) {
			t.Errorf("%s: %v", doc, err)
		}
	}
	for _, doc := range []string{`{`, `{"model":{"type":"BPE","merges":[1]},"pre_tokenizer":{"type":"ByteLevel"}}`} {
		if _, err := loadgen.LoadHFTokenizer(strings.NewReader(doc)); err == nil || errors.Is(err, loadgen.ErrUnsupportedTokenizer) {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

// TestTargetTokenizerUsedWithoutServerTokenize 验证服务端没有 /tokenize 时用 Target.Tokenizer 校准提示长度。
func TestTargetTokenizerUsedWithoutServerTokenize(t *testing.T) {
	tok := loadTok(t, "gpt2_tiny_tokenizer.json")
	var prompts []string
	tgt := scripted(t, func(w http.ResponseWriter, body string) {
		prompts = append(prompts, body)
		sseWrite(w, contentChunk("a"), "[DONE]")
	})
	tgt.Tokenizer = tok
	_, s := runOne(t, tgt, loadgen.Profile{InputLength: []int{200}}, 4)
	if s.Failed != 0 {
		t.Fatal("failed")
	}
	// 没有 usage 时提示 token 数来自数据集，即按 tokenizer.json 校准后的计数。
	if s.AvgPromptTokens < 197 || s.AvgPromptTokens > 203 {
		t.Fatalf("avg prompt tokens %v, want ≈200 byte-level tokens", s.AvgPromptTokens)
	}
}

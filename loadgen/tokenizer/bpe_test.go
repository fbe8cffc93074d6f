package tokenizer_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/vllm-cibench/cibench/loadgen/tokenizer"
)

// loadTok 读取 testdata 中的小型 tokenizer.json。
func loadTok(t *testing.T, name string) *tokenizer.BPE {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestBPECounts 用手算的 BPE 结果检验 GPT-2 与 Qwen 两种预分词配置。
func TestBPECounts(t *testing.T) {
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

// TestBPEConcurrent 验证并发计数（loadgen 的数据集生成会并发调用）结果与串行相同；
// 在 -race 下同时检查缓存的加锁。
func TestBPEConcurrent(t *testing.T) {
	tok := loadTok(t, "gpt2_tiny_tokenizer.json")
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if n, _ := tok.CountTokens(context.Background(), "hello world"); n != 5 {
					t.Errorf("concurrent count %d, want 5", n)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestBPEWithoutRegexAndIgnoreMerges 检验 ByteLevel use_regex=false（整段不切分）与
// ignore_merges（整词在词表里时直接算一个 token）。
func TestBPEWithoutRegexAndIgnoreMerges(t *testing.T) {
	doc := `{"model":{"type":"BPE","ignore_merges":true,"vocab":{"hello":0,"h":1},"merges":[["h","e"],"l l"]},` +
		`"pre_tokenizer":{"type":"ByteLevel","use_regex":false}}`
	tok, err := tokenizer.Load(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]int{
		"hello": 1, // 整词在词表里：不走合并
		"hell":  2, // he | ll
		"a b":   3, // 不切分：a Ġ b 三个字节，没有合并
	} {
		if got, _ := tok.CountTokens(context.Background(), text); got != want {
			t.Errorf("Count(%q) = %d, want %d", text, got, want)
		}
	}
}

// TestBPERejectsUnsupported 验证不支持的模型与预分词器给出可判断的错误，损坏的文件给出别的错误。
func TestBPERejectsUnsupported(t *testing.T) {
	for _, doc := range []string{
		`{"model":{"type":"Unigram"}}`,
		`{"model":{"type":"BPE","vocab":{},"merges":[]},"pre_tokenizer":{"type":"Metaspace"}}`,
		`{"model":{"type":"BPE","vocab":{},"merges":[]}}`,
		`{"model":{"type":"BPE","vocab":{},"merges":[]},"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"(?<=a)b"}},{"type":"ByteLevel","use_regex":false}]}}`,
		`{"model":{"type":"BPE","vocab":{},"merges":[]},"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"a"}},{"type":"ByteLevel"}]}}`,
		`{"model":{"type":"BPE","vocab":{},"merges":[]},"pre_tokenizer":{"type":"Split"}}`,
	} {
		if _, err := tokenizer.Load(strings.NewReader(doc)); !errors.Is(err, tokenizer.ErrUnsupported) {
			t.Errorf("%s: %v", doc, err)
		}
	}
	for _, doc := range []string{`{`, `{"model":{"type":"BPE","merges":[1]},"pre_tokenizer":{"type":"ByteLevel"}}`} {
		if _, err := tokenizer.Load(strings.NewReader(doc)); err == nil || errors.Is(err, tokenizer.ErrUnsupported) {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

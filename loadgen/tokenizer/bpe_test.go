package tokenizer_test

import (
	"context"
	"encoding/json"
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

// byteLevelDoc 拼出一个最小但合法的字节级 BPE tokenizer.json：词表含全部 256 个字节符号与
// extra，merges 与 pre 原样放入。
func byteLevelDoc(t *testing.T, extra []string, merges, pre, more string) string {
	t.Helper()
	vocab := map[string]int{}
	n := 0
	for b := 0; b < 256; b++ {
		var s string
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			s = string(rune(b))
		} else {
			s = string(rune(256 + n))
			n++
		}
		vocab[s] = len(vocab)
	}
	for _, e := range extra {
		vocab[e] = len(vocab)
	}
	vb, err := json.Marshal(vocab)
	if err != nil {
		t.Fatal(err)
	}
	return `{` + more + `"model":{"type":"BPE","ignore_merges":true,"vocab":` + string(vb) + `,"merges":` + merges + `},"pre_tokenizer":` + pre + `}`
}

// TestBPEWithoutRegexAndIgnoreMerges 检验 ByteLevel use_regex=false（整段不切分）与
// ignore_merges（整词在词表里时直接算一个 token）。
func TestBPEWithoutRegexAndIgnoreMerges(t *testing.T) {
	doc := byteLevelDoc(t, []string{"he", "ll", "hello"}, `[["h","e"],"l l"]`, `{"type":"ByteLevel","use_regex":false}`, "")
	tok, err := tokenizer.Load(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]int{
		"hello": 1, // 整词在词表里：不走合并
		"hell":  2, // he | ll
		"a b":   3, // 不切分：a Ġ b 三个字节，没有合并
		"":      0,
	} {
		if got, _ := tok.CountTokens(context.Background(), text); got != want {
			t.Errorf("Count(%q) = %d, want %d", text, got, want)
		}
	}
}

// TestBPESplitChainAndAddedTokens 检验串联的 Split（每个作用于上一个切出的每片，匹配之间
// 没被覆盖的部分也单独成片）、Split 之后带 use_regex 的 ByteLevel、NFKC 归一化与 added token。
func TestBPESplitChainAndAddedTokens(t *testing.T) {
	pre := `{"type":"Sequence","pretokenizers":[` +
		`{"type":"Split","pattern":{"Regex":"\\p{N}{1,3}"},"behavior":"Isolated","invert":false},` +
		`{"type":"Split","pattern":{"String":"--"},"behavior":"Isolated","invert":false},` +
		`{"type":"ByteLevel","add_prefix_space":false,"use_regex":true}]}`
	more := `"normalizer":{"type":"Sequence","normalizers":[{"type":"NFKC"}]},` +
		`"added_tokens":[{"id":900,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},` +
		`{"id":901,"content":"<s>x","single_word":false,"lstrip":false,"rstrip":false,"normalized":true,"special":false}],`
	doc := byteLevelDoc(t, []string{"12", "123", "--"}, `["1 2","12 3","- -"]`, pre, more)
	tok, err := tokenizer.Load(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]int{
		"1234":   2, // 123 | 4
		"a--b":   3, // a | -- | b
		"１２３":    1, // NFKC 把全角数字变成 123
		"<s>":    1,
		"<s>x":   2, // 原文上先匹配 normalized=false 的 <s>（最左最长只在同一组内）：<s> | x
		"a<s>b":  3,
		"12 345": 5, // 12 | " " | 345：第一个 Split 切出数字，GPT-2 正则把空格单独切出；345 没有合并规则
	} {
		got, _ := tok.CountTokens(context.Background(), text)
		if got != want {
			t.Errorf("Count(%q) = %d, want %d", text, got, want)
		}
	}
}

// TestBPERejectsUnsupported 验证不能精确复现的配置给出可判断的错误，损坏的文件给出别的错误。
func TestBPERejectsUnsupported(t *testing.T) {
	split := func(re string) string {
		return `{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":` + re + `},"behavior":"Isolated","invert":false},{"type":"ByteLevel","use_regex":false}]}`
	}
	for name, doc := range map[string]string{
		"unigram":         `{"model":{"type":"Unigram"}}`,
		"metaspace":       byteLevelDoc(t, nil, `[]`, `{"type":"Metaspace"}`, ""),
		"no byte level":   `{"model":{"type":"BPE","vocab":{},"merges":[]}}`,
		"lookbehind":      byteLevelDoc(t, nil, `[]`, split(`"(?<=a)b"`), ""),
		"lookahead":       byteLevelDoc(t, nil, `[]`, split(`"a(?=b)"`), ""),
		"unicode d":       byteLevelDoc(t, nil, `[]`, split(`"\\d+"`), ""),
		"S in class":      byteLevelDoc(t, nil, `[]`, split(`"[\\S]"`), ""),
		"split no regex":  byteLevelDoc(t, nil, `[]`, `{"type":"Split"}`, ""),
		"removed":         byteLevelDoc(t, nil, `[]`, `{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"a"},"behavior":"Removed"},{"type":"ByteLevel"}]}`, ""),
		"invert":          byteLevelDoc(t, nil, `[]`, `{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"a"},"behavior":"Isolated","invert":true},{"type":"ByteLevel"}]}`, ""),
		"split after bl":  byteLevelDoc(t, nil, `[]`, `{"type":"Sequence","pretokenizers":[{"type":"ByteLevel"},{"type":"Split","pattern":{"Regex":"a"},"behavior":"Isolated"}]}`, ""),
		"prefix space":    byteLevelDoc(t, nil, `[]`, `{"type":"ByteLevel","add_prefix_space":true}`, ""),
		"digits":          byteLevelDoc(t, nil, `[]`, `{"type":"Sequence","pretokenizers":[{"type":"Digits"},{"type":"ByteLevel"}]}`, ""),
		"unknown pre":     byteLevelDoc(t, nil, `[]`, `{"type":"Sequence","pretokenizers":[{"type":"BertPreTokenizer"},{"type":"ByteLevel"}]}`, ""),
		"lowercase":       byteLevelDoc(t, nil, `[]`, `{"type":"ByteLevel"}`, `"normalizer":{"type":"Lowercase"},`),
		"lstrip":          byteLevelDoc(t, nil, `[]`, `{"type":"ByteLevel"}`, `"added_tokens":[{"content":"<mask>","lstrip":true}],`),
		"missing bytes":   `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"pre_tokenizer":{"type":"ByteLevel"}}`,
		"possessive":      byteLevelDoc(t, nil, `[]`, split(`"a++"`), ""),
		"suffix":          strings.Replace(byteLevelDoc(t, nil, `[]`, `{"type":"ByteLevel"}`, ""), `"type":"BPE",`, `"type":"BPE","end_of_word_suffix":"</w>",`, 1),
		"dropout":         strings.Replace(byteLevelDoc(t, nil, `[]`, `{"type":"ByteLevel"}`, ""), `"type":"BPE",`, `"type":"BPE","dropout":0.1,`, 1),
		"two byte levels": byteLevelDoc(t, nil, `[]`, `{"type":"Sequence","pretokenizers":[{"type":"ByteLevel"},{"type":"ByteLevel"}]}`, ""),
	} {
		if _, err := tokenizer.Load(strings.NewReader(doc)); !errors.Is(err, tokenizer.ErrUnsupported) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, doc := range map[string]string{
		"syntax":         `{`,
		"merge shape":    `{"model":{"type":"BPE","merges":[1]},"pre_tokenizer":{"type":"ByteLevel"}}`,
		"merge string":   byteLevelDoc(t, nil, `["a b c"]`, `{"type":"ByteLevel"}`, ""),
		"merge vocab":    byteLevelDoc(t, nil, `["a b"]`, `{"type":"ByteLevel"}`, ""),
		"bad normalizer": byteLevelDoc(t, nil, `[]`, `{"type":"ByteLevel"}`, `"normalizer":[1],`),
	} {
		if _, err := tokenizer.Load(strings.NewReader(doc)); err == nil || errors.Is(err, tokenizer.ErrUnsupported) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

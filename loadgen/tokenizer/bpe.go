package tokenizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// ErrUnsupported 表示 tokenizer.json 使用了本实现不支持的模型或预分词器；调用方用 errors.Is
// 区分它与文件本身损坏（JSON 语法错误、merges 形态不对）。
var ErrUnsupported = errors.New("tokenizer: unsupported tokenizer.json")

// gpt2Pattern 是 ByteLevel 预分词器 use_regex=true 时使用的 GPT-2 正则。
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// BPE 是 HuggingFace tokenizer.json 中字节级 BPE 模型（GPT-2、Qwen2/3、
// Llama-3、DeepSeek 等）的纯 Go 实现，只用于计数（不产生 id）。服务端没有
// /tokenize 时，用它把数据集长度校准到真实模型的 token 数。
//
// 不支持：SentencePiece 风格（Metaspace）BPE、Unigram/WordPiece 模型、归一化器
// （按恒等处理）、added_tokens 的特殊切分。并发安全。
type BPE struct {
	re          *regexp.Regexp // 锚定在开头的预分词正则；nil 表示不切分
	lookahead   bool           // 正则原本含 \s+(?!\S)，需要手工实现
	ranks       map[string]int // "a b" → 合并优先级
	vocab       map[string]struct{}
	ignoreMerge bool
	byteMap     [256]string
	mu          sync.Mutex
	cache       map[string]int
}

// hfJSON 是 tokenizer.json 中用到的部分。
type hfJSON struct {
	Model struct {
		Type         string            `json:"type"`
		Vocab        map[string]int    `json:"vocab"`
		Merges       []json.RawMessage `json:"merges"`
		IgnoreMerges bool              `json:"ignore_merges"`
	} `json:"model"`
	PreTokenizer *hfPre `json:"pre_tokenizer"`
}

// hfPre 是预分词器（可能是 Sequence 嵌套）。
type hfPre struct {
	Type          string                          `json:"type"`
	UseRegex      *bool                           `json:"use_regex"`
	Pattern       *struct{ Regex, String string } `json:"pattern"`
	Pretokenizers []hfPre                         `json:"pretokenizers"`
}

// Load 从 tokenizer.json 的内容构造计数器。只读一次 r，不关闭它（文件由调用方打开与关闭，
// 见 examples/bench 的 --tokenizer）。不支持的模型或预分词器返回包装了 ErrUnsupported 的错误，
// 文件本身不合法时返回带 "tokenizer: tokenizer.json:" 前缀的错误。
func Load(r io.Reader) (*BPE, error) {
	var j hfJSON
	if err := json.NewDecoder(r).Decode(&j); err != nil {
		return nil, fmt.Errorf("tokenizer: tokenizer.json: %w", err)
	}
	if j.Model.Type != "BPE" {
		return nil, fmt.Errorf("%w: model.type %q (only byte-level BPE)", ErrUnsupported, j.Model.Type)
	}
	t := &BPE{ranks: make(map[string]int, len(j.Model.Merges)), vocab: make(map[string]struct{}, len(j.Model.Vocab)),
		ignoreMerge: j.Model.IgnoreMerges, cache: map[string]int{}}
	for k := range j.Model.Vocab {
		t.vocab[k] = struct{}{}
	}
	for i, m := range j.Model.Merges {
		var s string
		var pair []string
		switch {
		case json.Unmarshal(m, &s) == nil:
		case json.Unmarshal(m, &pair) == nil && len(pair) == 2:
			s = pair[0] + " " + pair[1]
		default:
			return nil, fmt.Errorf("tokenizer: tokenizer.json: model.merges[%d] is neither \"a b\" nor [a, b]", i)
		}
		if _, dup := t.ranks[s]; !dup {
			t.ranks[s] = i
		}
	}
	pattern, byteLevel := "", false
	var walk func(p *hfPre) error
	walk = func(p *hfPre) error {
		switch p.Type {
		case "Sequence":
			for i := range p.Pretokenizers {
				if err := walk(&p.Pretokenizers[i]); err != nil {
					return err
				}
			}
		case "ByteLevel":
			byteLevel = true
			if p.UseRegex == nil || *p.UseRegex {
				if pattern != "" {
					return fmt.Errorf("%w: two splitting pre-tokenizers", ErrUnsupported)
				}
				pattern = gpt2Pattern
			}
		case "Split":
			if p.Pattern == nil || p.Pattern.Regex == "" || pattern != "" {
				return fmt.Errorf("%w: Split pre-tokenizer without a single regex", ErrUnsupported)
			}
			pattern = p.Pattern.Regex
		case "Digits", "Punctuation", "Whitespace", "WhitespaceSplit", "Metaspace":
			return fmt.Errorf("%w: pre_tokenizer %s", ErrUnsupported, p.Type)
		}
		return nil
	}
	if j.PreTokenizer != nil {
		if err := walk(j.PreTokenizer); err != nil {
			return nil, err
		}
	}
	if !byteLevel {
		return nil, fmt.Errorf("%w: no ByteLevel pre-tokenizer", ErrUnsupported)
	}
	if pattern != "" {
		const la = `\s+(?!\S)`
		if strings.Contains(pattern, la) {
			t.lookahead = true
			pattern = strings.Replace(pattern, la, `\s+`, 1)
		}
		re, err := regexp.Compile(`^(?:` + pattern + `)`)
		if err != nil {
			return nil, fmt.Errorf("%w: pre-tokenizer regex: %v", ErrUnsupported, err)
		}
		t.re = re
	}
	t.byteMap = bytesToUnicode()
	return t, nil
}

// bytesToUnicode 是 GPT-2 的字节 → 可见字符映射（与 HF ByteLevel 相同）。
func bytesToUnicode() [256]string {
	var out [256]string
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			out[b] = string(rune(b))
		} else {
			out[b] = string(rune(256 + n))
			n++
		}
	}
	return out
}

// CountTokens 返回 text 的 token 数（不含特殊 token）。
func (t *BPE) CountTokens(_ context.Context, text string) (int, error) {
	n := 0
	for _, piece := range t.split(text) {
		n += t.countPiece(piece)
	}
	return n, nil
}

// split 按预分词正则切分。Go 的 regexp 没有前瞻，`\s+(?!\S)` 按其语义手工实现：
// 后面紧跟非空白的空白串让出最后一个字符，使它附着到下一个词上。
func (t *BPE) split(s string) []string {
	if t.re == nil {
		return []string{s}
	}
	var out []string
	for len(s) > 0 {
		loc := t.re.FindStringIndex(s)
		end := 0
		if loc != nil {
			end = loc[1]
		}
		if end == 0 { // 正则不覆盖的字符：单独成片，保证前进
			_, end = utf8.DecodeRuneInString(s)
		}
		m := s[:end]
		if t.lookahead && end < len(s) && isAllSpace(m) {
			if r, _ := utf8.DecodeRuneInString(s[end:]); !unicode.IsSpace(r) {
				if _, last := utf8.DecodeLastRuneInString(m); last < len(m) {
					end -= last
					m = s[:end]
				}
			}
		}
		out = append(out, m)
		s = s[end:]
	}
	return out
}

// isAllSpace 报告 s 是否全为空白。
func isAllSpace(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) {
			return false
		}
	}
	return s != ""
}

// countPiece 对一个预分词片段做字节映射与 BPE 合并，返回 token 数（带缓存）。
func (t *BPE) countPiece(piece string) int {
	t.mu.Lock()
	if n, ok := t.cache[piece]; ok {
		t.mu.Unlock()
		return n
	}
	t.mu.Unlock()
	syms := make([]string, 0, len(piece))
	var word strings.Builder
	for i := 0; i < len(piece); i++ {
		syms = append(syms, t.byteMap[piece[i]])
		word.WriteString(t.byteMap[piece[i]])
	}
	n := 1
	if _, ok := t.vocab[word.String()]; !ok || !t.ignoreMerge {
		n = len(t.merge(syms))
	}
	t.mu.Lock()
	if len(t.cache) > 200_000 {
		t.cache = map[string]int{}
	}
	t.cache[piece] = n
	t.mu.Unlock()
	return n
}

// merge 反复合并优先级最高（rank 最小）的相邻符号对，直到没有可合并的对。
func (t *BPE) merge(syms []string) []string {
	for len(syms) > 1 {
		best, at := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := t.ranks[syms[i]+" "+syms[i+1]]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		a, b := syms[at], syms[at+1]
		out := make([]string, 0, len(syms))
		for i := 0; i < len(syms); i++ {
			if i+1 < len(syms) && syms[i] == a && syms[i+1] == b {
				out = append(out, a+b) // 同一对的所有不重叠出现从左到右一起合并（与 HF 一致）
				i++
				continue
			}
			out = append(out, syms[i])
		}
		syms = out
	}
	return syms
}

package tokenizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sync"
)

// ErrUnsupported 表示 tokenizer.json 使用了本实现不能精确复现的模型、归一化器、预分词器或
// 正则构造；调用方用 errors.Is 区分它与文件本身损坏（JSON 语法错误、merges 形态不对）。
// 本包的承诺是：要么与 Hugging Face tokenizers 逐段计数相同，要么返回 ErrUnsupported，
// 从不给出一个"差不多"的计数。
var ErrUnsupported = errors.New("tokenizer: unsupported tokenizer.json")

// gpt2Pattern 是 ByteLevel 预分词器 use_regex=true 时使用的 GPT-2 正则（HF tokenizers 的
// byte_level.rs 原文）。
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// BPE 是 HuggingFace tokenizer.json 中字节级 BPE 模型（GPT-2、Qwen2/2.5/3、Llama-3.x、
// DeepSeek-V3/R1 等）的纯 Go 实现，只用于计数（不产生 id）。服务端没有 /tokenize 时，用它
// 把数据集长度校准到真实模型的 token 数。
//
// 计数与 HF tokenizers 的 encode(text, add_special_tokens=False) 的长度相同，按同样的顺序
// 处理文本：
//  1. added_tokens：文本里出现的 added token（如 <|endoftext|>、<|im_start|>）按最左最长
//     匹配切出，各算一个 token；normalized=false 的在原文上匹配，normalized=true 的在归一化
//     后的文本上匹配；
//  2. 归一化器：NFC、NFD、NFKC、NFKD 及其 Sequence（含空 Sequence）；
//  3. 预分词器：任意个 Split（behavior=Isolated）串联，每个作用于上一个切出的每一片（DeepSeek
//     串了三个），再加 ByteLevel（use_regex=true 时再按 GPT-2 正则切一次）；正则按 Oniguruma
//     的语义翻译（Unicode 空白、`\s+(?!\S)` 前瞻，见 pretok.go）；
//  4. BPE 合并：与 HF 相同的按 (rank, 位置) 的优先队列合并，ignore_merges 时整词在词表里直接
//     算一个 token。
//
// 不加后处理器的特殊 token（BOS/EOS），因为被校准的是文本本身；聊天模板另加的 token 由服务端的
// /tokenize 或 usage 计入。
//
// 不支持（返回 ErrUnsupported）：SentencePiece 风格（Metaspace）BPE、Unigram/WordPiece
// 模型、上面以外的归一化器（Lowercase、Replace、Prepend……）与预分词器、add_prefix_space、
// Split 的其它 behavior 与 invert、语义与 Go 不同的正则构造、lstrip/rstrip/single_word 的
// added token、dropout、子词前后缀、词表缺少字节字符。并发安全。
type BPE struct {
	normalize   func(string) string // nil 表示恒等
	addedRaw    *addedTokens        // normalized=false 的 added token，在原文上匹配
	addedNorm   *addedTokens        // normalized=true 的 added token，在归一化后的文本上匹配
	splits      []*splitRegex       // 依次作用的预分词正则
	merges      map[uint64]merge    // (a<<32 | b) → 合并优先级与结果 id
	vocab       map[string]int32
	byteID      [256]int32 // 每个字节映射后的可见字符在词表里的 id
	byteMap     [256]string
	ignoreMerge bool

	mu    sync.Mutex
	cache map[string]int
}

// merge 是一条合并规则：优先级（在 merges 里的序号）与合并结果的词表 id。
type merge struct {
	rank  int32
	newID int32
}

// hfJSON 是 tokenizer.json 中用到的部分。
type hfJSON struct {
	AddedTokens []hfAdded       `json:"added_tokens"`
	Normalizer  json.RawMessage `json:"normalizer"`
	Model       struct {
		Type                    string            `json:"type"`
		Vocab                   map[string]int32  `json:"vocab"`
		Merges                  []json.RawMessage `json:"merges"`
		IgnoreMerges            bool              `json:"ignore_merges"`
		Dropout                 *float64          `json:"dropout"`
		ContinuingSubwordPrefix *string           `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string           `json:"end_of_word_suffix"`
	} `json:"model"`
	PreTokenizer *hfPre `json:"pre_tokenizer"`
}

// hfPre 是预分词器（可能是 Sequence 嵌套）。
type hfPre struct {
	Type           string  `json:"type"`
	UseRegex       *bool   `json:"use_regex"`
	AddPrefixSpace bool    `json:"add_prefix_space"`
	Behavior       string  `json:"behavior"`
	Invert         bool    `json:"invert"`
	Pattern        *hfPatt `json:"pattern"`
	Pretokenizers  []hfPre `json:"pretokenizers"`
}

// hfPatt 是 Split 的 pattern：{"Regex": "..."} 或 {"String": "..."}。
type hfPatt struct {
	Regex  *string `json:"Regex"`
	String *string `json:"String"`
}

// Load 从 tokenizer.json 的内容构造计数器。只读一次 r，不关闭它（文件由调用方打开与关闭，
// 见 examples/bench 的 --tokenizer）。不能精确复现的配置返回包装了 ErrUnsupported 的错误，
// 文件本身不合法时返回带 "tokenizer: tokenizer.json:" 前缀的错误。
func Load(r io.Reader) (*BPE, error) {
	var j hfJSON
	if err := json.NewDecoder(r).Decode(&j); err != nil {
		return nil, fmt.Errorf("tokenizer: tokenizer.json: %w", err)
	}
	m := &j.Model
	if m.Type != "BPE" {
		return nil, fmt.Errorf("%w: model.type %q (only byte-level BPE)", ErrUnsupported, m.Type)
	}
	if m.Dropout != nil && *m.Dropout > 0 {
		return nil, fmt.Errorf("%w: model.dropout %v (counts would be random)", ErrUnsupported, *m.Dropout)
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" {
		return nil, fmt.Errorf("%w: model.continuing_subword_prefix %q", ErrUnsupported, *m.ContinuingSubwordPrefix)
	}
	if m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return nil, fmt.Errorf("%w: model.end_of_word_suffix %q", ErrUnsupported, *m.EndOfWordSuffix)
	}
	t := &BPE{vocab: m.Vocab, ignoreMerge: m.IgnoreMerges, cache: map[string]int{}}
	if t.vocab == nil {
		t.vocab = map[string]int32{}
	}
	var err error
	if t.normalize, err = loadNormalizer(j.Normalizer); err != nil {
		return nil, err
	}
	byteLevel := false
	if j.PreTokenizer != nil {
		if err := t.walkPre(j.PreTokenizer, &byteLevel); err != nil {
			return nil, err
		}
	}
	if !byteLevel {
		return nil, fmt.Errorf("%w: no ByteLevel pre-tokenizer", ErrUnsupported)
	}
	if err := t.loadMerges(m.Merges); err != nil {
		return nil, err
	}
	t.byteMap = bytesToUnicode()
	for b, s := range t.byteMap {
		id, ok := t.vocab[s]
		if !ok {
			// HF 在没有 unk_token 时丢掉词表外的字符，计数会少；不猜，直接拒绝。
			return nil, fmt.Errorf("%w: model.vocab lacks the byte-level symbol %q for byte 0x%02x", ErrUnsupported, s, b)
		}
		t.byteID[b] = id
	}
	if t.addedRaw, t.addedNorm, err = loadAdded(j.AddedTokens, t.normalize); err != nil {
		return nil, err
	}
	return t, nil
}

// walkPre 按顺序展开预分词器，收集 Split 正则；byteLevel 报告是否见到 ByteLevel。
func (t *BPE) walkPre(p *hfPre, byteLevel *bool) error {
	switch p.Type {
	case "Sequence":
		for i := range p.Pretokenizers {
			if err := t.walkPre(&p.Pretokenizers[i], byteLevel); err != nil {
				return err
			}
		}
		return nil
	case "Split":
		if *byteLevel {
			// ByteLevel 之后的 Split 看到的是字节映射后的字符，不是原文。
			return fmt.Errorf("%w: Split pre-tokenizer after ByteLevel", ErrUnsupported)
		}
		if p.Behavior != "Isolated" || p.Invert {
			return fmt.Errorf("%w: Split pre-tokenizer with behavior %q, invert %v (only Isolated, false)", ErrUnsupported, p.Behavior, p.Invert)
		}
		var pattern string
		switch {
		case p.Pattern != nil && p.Pattern.Regex != nil && *p.Pattern.Regex != "":
			pattern = *p.Pattern.Regex
		case p.Pattern != nil && p.Pattern.String != nil && *p.Pattern.String != "":
			pattern = regexp.QuoteMeta(*p.Pattern.String)
		default:
			return fmt.Errorf("%w: Split pre-tokenizer without a pattern", ErrUnsupported)
		}
		s, err := compileSplit(pattern)
		if err != nil {
			return err
		}
		t.splits = append(t.splits, s)
		return nil
	case "ByteLevel":
		if *byteLevel {
			return fmt.Errorf("%w: two ByteLevel pre-tokenizers", ErrUnsupported)
		}
		*byteLevel = true
		if p.AddPrefixSpace {
			return fmt.Errorf("%w: ByteLevel pre-tokenizer with add_prefix_space", ErrUnsupported)
		}
		if p.UseRegex == nil || *p.UseRegex {
			s, err := compileSplit(gpt2Pattern)
			if err != nil {
				return err
			}
			t.splits = append(t.splits, s)
		}
		return nil
	default:
		return fmt.Errorf("%w: pre_tokenizer %q", ErrUnsupported, p.Type)
	}
}

// loadMerges 读取 merges（"a b" 或 ["a", "b"] 两种写法）。与 HF 相同：两边与合并结果都
// 必须在词表里，同一对出现多次时以最后一次的序号为准。
func (t *BPE) loadMerges(raw []json.RawMessage) error {
	t.merges = make(map[uint64]merge, len(raw))
	for i, m := range raw {
		var s string
		var pair []string
		var a, b string
		switch {
		case json.Unmarshal(m, &s) == nil:
			var ok bool
			if a, b, ok = cutSpace(s); !ok {
				return fmt.Errorf("tokenizer: tokenizer.json: model.merges[%d] %q is not \"a b\"", i, s)
			}
		case json.Unmarshal(m, &pair) == nil && len(pair) == 2:
			a, b = pair[0], pair[1]
		default:
			return fmt.Errorf("tokenizer: tokenizer.json: model.merges[%d] is neither \"a b\" nor [a, b]", i)
		}
		ida, oka := t.vocab[a]
		idb, okb := t.vocab[b]
		idn, okn := t.vocab[a+b]
		if !oka || !okb || !okn {
			return fmt.Errorf("tokenizer: tokenizer.json: model.merges[%d] %q + %q: token not in model.vocab", i, a, b)
		}
		t.merges[pairKey(ida, idb)] = merge{rank: int32(i), newID: idn}
	}
	return nil
}

// cutSpace 把 "a b" 切成两半；多于或少于一个空格时 ok 为 false。
func cutSpace(s string) (a, b string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			a, b = s[:i], s[i+1:]
			for j := 0; j < len(b); j++ {
				if b[j] == ' ' {
					return "", "", false
				}
			}
			return a, b, true
		}
	}
	return "", "", false
}

// pairKey 把两个词表 id 拼成合并表的键。
func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

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

// CountTokens 返回 text 的 token 数（不含后处理器加的特殊 token），与 HF tokenizers 的
// len(encode(text, add_special_tokens=False)) 相同。
func (t *BPE) CountTokens(_ context.Context, text string) (int, error) {
	n := 0
	t.addedRaw.split(text, func(seg string, isToken bool) {
		if isToken {
			n++
			return
		}
		if t.normalize != nil {
			seg = t.normalize(seg)
		}
		t.addedNorm.split(seg, func(s string, isToken bool) {
			if isToken {
				n++
				return
			}
			n += t.countText(s)
		})
	})
	return n, nil
}

// countText 对不含 added token 的一段归一化文本做预分词与 BPE，返回 token 数。
func (t *BPE) countText(s string) int {
	if s == "" {
		return 0
	}
	pieces := []string{s}
	var next []string
	for _, sp := range t.splits {
		next = next[:0]
		for _, p := range pieces {
			next = sp.split(p, next)
		}
		pieces, next = next, pieces
	}
	n := 0
	for _, p := range pieces {
		n += t.countPiece(p)
	}
	return n
}

// countPiece 对一个预分词片段做字节映射与 BPE 合并，返回 token 数（带缓存）。
func (t *BPE) countPiece(piece string) int {
	t.mu.Lock()
	if n, ok := t.cache[piece]; ok {
		t.mu.Unlock()
		return n
	}
	t.mu.Unlock()
	n := -1
	if t.ignoreMerge {
		var word []byte
		for i := 0; i < len(piece); i++ {
			word = append(word, t.byteMap[piece[i]]...)
		}
		if _, ok := t.vocab[string(word)]; ok {
			n = 1
		}
	}
	if n < 0 {
		n = t.mergeCount(piece)
	}
	t.mu.Lock()
	if len(t.cache) > 200_000 {
		t.cache = map[string]int{}
	}
	t.cache[piece] = n
	t.mu.Unlock()
	return n
}

package tokenizer

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// hfNorm 是 tokenizer.json 的 normalizer（可能是 Sequence 嵌套）。
type hfNorm struct {
	Type        string   `json:"type"`
	Normalizers []hfNorm `json:"normalizers"`
}

// loadNormalizer 把 normalizer 翻译成一个字符串函数；null 与空 Sequence 返回 nil（恒等）。
// 只支持四种 Unicode 规范化形式（Qwen2/2.5/3 用 NFC）；Lowercase、Replace、Prepend、Strip
// 等改变文本的归一化器返回 ErrUnsupported。
func loadNormalizer(raw json.RawMessage) (func(string) string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var n hfNorm
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("tokenizer: tokenizer.json: normalizer: %w", err)
	}
	var forms []norm.Form
	var walk func(n *hfNorm) error
	walk = func(n *hfNorm) error {
		switch n.Type {
		case "Sequence":
			for i := range n.Normalizers {
				if err := walk(&n.Normalizers[i]); err != nil {
					return err
				}
			}
		case "NFC":
			forms = append(forms, norm.NFC)
		case "NFD":
			forms = append(forms, norm.NFD)
		case "NFKC":
			forms = append(forms, norm.NFKC)
		case "NFKD":
			forms = append(forms, norm.NFKD)
		default:
			return fmt.Errorf("%w: normalizer %q", ErrUnsupported, n.Type)
		}
		return nil
	}
	if err := walk(&n); err != nil {
		return nil, err
	}
	if len(forms) == 0 {
		return nil, nil
	}
	return func(s string) string {
		for _, f := range forms {
			s = f.String(s)
		}
		return s
	}, nil
}

// hfAdded 是 added_tokens 的一项。
type hfAdded struct {
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
}

// addedTokens 按最左最长（与 HF 用的 aho-corasick LeftmostLongest 相同）在文本里找 added token。
type addedTokens struct {
	first   [256]bool         // 某个 token 以该字节开头
	byFirst map[byte][]string // 首字节 → 以它开头的 token，长的在前
}

// loadAdded 把 added_tokens 分成在原文上匹配（normalized=false）与在归一化后的文本上匹配
// （normalized=true，内容本身也先归一化）两组。lstrip/rstrip/single_word 会吞掉或要求相邻
// 空白，不支持。
func loadAdded(list []hfAdded, normalize func(string) string) (raw, normed *addedTokens, err error) {
	var rawList, normList []string
	for i, a := range list {
		if a.SingleWord || a.LStrip || a.RStrip {
			return nil, nil, fmt.Errorf("%w: added_tokens[%d] %q uses single_word/lstrip/rstrip", ErrUnsupported, i, a.Content)
		}
		if a.Content == "" {
			continue
		}
		if a.Normalized {
			c := a.Content
			if normalize != nil {
				c = normalize(c)
			}
			normList = append(normList, c)
		} else {
			rawList = append(rawList, a.Content)
		}
	}
	return newAdded(rawList), newAdded(normList), nil
}

// newAdded 为一组 token 建索引；空组返回 nil（split 原样交出整段）。
func newAdded(tokens []string) *addedTokens {
	if len(tokens) == 0 {
		return nil
	}
	a := &addedTokens{byFirst: map[byte][]string{}}
	for _, tok := range tokens {
		a.first[tok[0]] = true
		a.byFirst[tok[0]] = append(a.byFirst[tok[0]], tok)
	}
	for _, l := range a.byFirst {
		sort.SliceStable(l, func(i, j int) bool { return len(l[i]) > len(l[j]) })
	}
	return a
}

// split 把 s 切成普通文本段与 added token，按顺序交给 emit。a 为 nil 时整段是普通文本。
func (a *addedTokens) split(s string, emit func(seg string, isToken bool)) {
	if a == nil {
		emit(s, false)
		return
	}
	prev := 0
	for i := 0; i < len(s); {
		if !a.first[s[i]] {
			i++
			continue
		}
		hit := ""
		for _, tok := range a.byFirst[s[i]] {
			if strings.HasPrefix(s[i:], tok) {
				hit = tok
				break
			}
		}
		if hit == "" {
			i++
			continue
		}
		if i > prev {
			emit(s[prev:i], false)
		}
		emit(hit, true)
		i += len(hit)
		prev = i
	}
	if prev < len(s) {
		emit(s[prev:], false)
	}
}

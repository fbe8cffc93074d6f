// Package tokenize 实现 cibench 全局统一使用的确定性分词规则。
//
// 模拟器（deploy/emulator）的 /tokenize、usage 统计、max_model_len 校验，
// 以及 loadgen 在服务端不提供 /tokenize 时的估算，全部使用这一套规则，
// 从而保证“客户端数出来的 token 数”与“模拟器报告的 token 数”完全一致。
//
// 规则（刻意简单、可被人工验证）：
//   - 每个 CJK 字符（汉字、平假名、片假名、谚文）是一个 token；
//   - 每个由拉丁字母/数字/下划线/撇号组成的最长连续串（一个“词”）是一个 token；
//   - 其余每个非空白字符（标点、符号、emoji 等）各是一个 token；
//   - 空白不单独成 token，而是作为前缀附着在其后的 token 上；
//     仅当文本以空白结尾时，末尾空白单独成为一个 token。
//
// 因此 Split 返回的片段按顺序拼接后与原文逐字节相同，这一性质被模拟器
// 用于流式输出（每个 delta 恰为若干个完整 token）。
package tokenize

import (
	"hash/fnv"
	"unicode"
	"unicode/utf8"
)

// VocabSize 是 token id 的取值范围上界（不含），取 Qwen 系列词表大小，
// 仅用于让 /tokenize 返回看起来合理的 id，本身没有语义。
const VocabSize = 151936

// class 表示一个 rune 在分词规则中的类别。
type class uint8

const (
	classSpace class = iota // 空白：附着到下一个 token
	classWord               // 拉丁词字符：连续成一个 token
	classCJK                // CJK 字符：每个字符一个 token
	classOther              // 其他可见字符：每个字符一个 token
)

// classify 返回 r 的分词类别。ASCII 走快速路径，保证热路径上没有表查找。
func classify(r rune) class {
	if r < utf8.RuneSelf {
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f':
			return classSpace
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '\'':
			return classWord
		default:
			return classOther
		}
	}
	switch {
	case unicode.IsSpace(r):
		return classSpace
	case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul):
		return classCJK
	case unicode.IsLetter(r) || unicode.IsDigit(r):
		return classWord
	default:
		return classOther
	}
}

// Count 返回 s 按本包规则切分后的 token 数，不分配内存。
func Count(s string) int {
	n := 0
	Walk(s, func(string) bool { n++; return true })
	return n
}

// Split 按本包规则把 s 切成 token 片段；片段拼接后等于 s。
func Split(s string) []string {
	out := make([]string, 0, len(s)/3+1)
	Walk(s, func(p string) bool { out = append(out, p); return true })
	return out
}

// Walk 依次把 s 的每个 token 片段交给 fn，fn 返回 false 时提前停止。
// 它是 Count 与 Split 的共同实现，片段是 s 的子串，不发生复制。
func Walk(s string, fn func(piece string) bool) {
	start := 0 // 当前片段（含前导空白）的起点
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := classify(r)
		if c == classSpace {
			i += size
			continue
		}
		end := i + size
		if c == classWord {
			for end < len(s) {
				r2, s2 := utf8.DecodeRuneInString(s[end:])
				if classify(r2) != classWord {
					break
				}
				end += s2
			}
		}
		if !fn(s[start:end]) {
			return
		}
		start, i = end, end
	}
	if start < len(s) { // 以空白结尾：末尾空白单独成 token
		fn(s[start:])
	}
}

// ID 返回片段 piece 的确定性 token id（去掉前导空白后取 FNV-1a 哈希）。
func ID(piece string) int {
	j := 0
	for j < len(piece) {
		r, size := utf8.DecodeRuneInString(piece[j:])
		if classify(r) != classSpace {
			break
		}
		j += size
	}
	if j == len(piece) {
		j = 0 // 纯空白 token 用原文计算
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(piece[j:]))
	return int(h.Sum32() % VocabSize)
}

// IDs 返回 s 的全部 token id，顺序与 Split 一致。
func IDs(s string) []int {
	out := make([]int, 0, len(s)/3+1)
	Walk(s, func(p string) bool { out = append(out, ID(p)); return true })
	return out
}

package pycompat

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// spaceClass 是 Python str.isspace()（也即 re 的 \s）在 Unicode 14 下的精确集合，
// 由 python3 枚举得到；测试会在有 python3 时重新核对。
const spaceClass = `\t-\r\x{1c}-\x{20}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}`

// IsSpace 报告 r 是否为 Python 意义上的空白（str.isspace）。
// 与 unicode.IsSpace 的差别在于 U+001C..U+001F 也算空白。
func IsSpace(r rune) bool {
	switch {
	case r >= '\t' && r <= '\r', r >= 0x1c && r <= 0x20, r == 0x85, r == 0xa0, r == 0x1680:
		return true
	case r >= 0x2000 && r <= 0x200a, r == 0x2028, r == 0x2029, r == 0x202f, r == 0x205f, r == 0x3000:
		return true
	}
	return false
}

// IsDecimal 报告 r 是否匹配 Python 正则的 \d（Unicode 类别 Nd）。
func IsDecimal(r rune) bool { return unicode.Is(unicode.Nd, r) }

// IsWord 报告 r 是否匹配 Python 正则的 \w：字母、数字（L*、N*）或下划线。
func IsWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

// Strip 等价于 Python 的 s.strip()（无参数）：去掉两端的 Python 空白。
func Strip(s string) string { return strings.TrimFunc(s, IsSpace) }

// Fields 等价于 Python 的 s.split()（无参数）：按连续 Python 空白切分并丢弃空串。
func Fields(s string) []string { return strings.FieldsFunc(s, IsSpace) }

// Lower 等价于 Python 的 str.lower()：在逐字符小写之外，处理 Python 实现的
// 两个特殊规则——U+0130（İ）变为 "i̇" 两个码点，词尾的 Σ 变为 ς。
func Lower(s string) string {
	if isASCII(s) {
		return strings.ToLower(s)
	}
	runes := []rune(s)
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range runes {
		switch {
		case r == 0x130:
			b.WriteString("i\u0307")
		case r == 0x3a3:
			if finalSigma(runes, i) {
				b.WriteRune(0x3c2)
			} else {
				b.WriteRune(0x3c3)
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// isASCII 报告 s 是否全为 ASCII，用于走快速路径。
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// finalSigma 实现 CPython unicodeobject.c 的 handle_capital_sigma：
// Σ 之前（跳过 case-ignorable）有 cased 字符，之后（同样跳过）没有 cased 字符。
func finalSigma(runes []rune, i int) bool {
	j := i - 1
	for j >= 0 && caseIgnorable(runes[j]) {
		j--
	}
	if j < 0 || !cased(runes[j]) {
		return false
	}
	k := i + 1
	for k < len(runes) && caseIgnorable(runes[k]) {
		k++
	}
	return k == len(runes) || !cased(runes[k])
}

// cased 近似 Unicode 的 Cased 属性：Lu、Ll、Lt 以及 Other_Lowercase/Other_Uppercase。
func cased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

// caseIgnorable 近似 Unicode 的 Case_Ignorable 属性（Mn、Me、Cf、Lm、Sk 与若干标点）。
func caseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', '^', '`', 0xad, 0xb7, 0x2018, 0x2019, 0x2024, 0x2027:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// TranslateRegex 把 simple-evals 中的 Python 正则翻译为 Go RE2 语法：
// \s \S \d \D \w \W 换成与 Python 相同的 Unicode 字符类（在字符类内外都处理），
// 其余转义原样保留。RE2 不支持的 \b \B（Unicode 词边界）、反向引用与
// 环视会返回错误，调用方必须用代码实现这些语义。
func TranslateRegex(pattern string) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c == '[' && !inClass {
			inClass = true
			b.WriteByte(c)
			// 紧跟的 ^ 与 ] 属于字符类本身。
			if i+1 < len(pattern) && pattern[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(pattern) && pattern[i+1] == ']' {
				b.WriteString(`\]`)
				i++
			}
			continue
		}
		if c == ']' && inClass {
			inClass = false
			b.WriteByte(c)
			continue
		}
		if c == '(' && i+2 < len(pattern) && pattern[i+1] == '?' && strings.ContainsRune("=!<", rune(pattern[i+2])) && !inClass {
			return "", fmt.Errorf("pycompat: translate %q: lookaround at offset %d is not supported by RE2", pattern, i)
		}
		if c != '\\' || i+1 >= len(pattern) {
			b.WriteByte(c)
			continue
		}
		i++
		e := pattern[i]
		switch e {
		case 's', 'd', 'w':
			cls := map[byte]string{'s': spaceClass, 'd': `\p{Nd}`, 'w': `\p{L}\p{N}_`}[e]
			if inClass {
				b.WriteString(cls)
			} else {
				b.WriteString("[" + cls + "]")
			}
		case 'S', 'D', 'W':
			if inClass {
				return "", fmt.Errorf("pycompat: translate %q: negated class \\%c inside [...] at offset %d is not supported", pattern, e, i-1)
			}
			cls := map[byte]string{'S': spaceClass, 'D': `\p{Nd}`, 'W': `\p{L}\p{N}_`}[e]
			b.WriteString("[^" + cls + "]")
		case 'b', 'B':
			if inClass && e == 'b' {
				b.WriteString(`\x08`)
				continue
			}
			return "", fmt.Errorf("pycompat: translate %q: Unicode word boundary \\%c at offset %d has no RE2 equivalent", pattern, e, i-1)
		case '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return "", fmt.Errorf("pycompat: translate %q: backreference at offset %d is not supported by RE2", pattern, i-1)
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String(), nil
}

package tokenizer

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// 预分词正则的翻译。
//
// tokenizer.json 的 Split 正则由 HF tokenizers 交给 Oniguruma 编译，ByteLevel 的
// use_regex 用 GPT-2 正则，语义与 Go 的 regexp（RE2）有两处不同，本文件把它们逐一翻译，
// 翻译不了的一律报 ErrUnsupported，而不是给出错误的计数：
//
//  1. 空白类。Oniguruma 在 UTF-8 下的 \s 是 Unicode White_Space（U+0009–000D、U+0085、
//     以及 Zs/Zl/Zp 三类：U+00A0、U+1680、U+2000–200A、U+2028、U+2029、U+202F、U+205F、
//     U+3000），Go 的 \s 只认 ASCII。翻译为显式字符类 [\t-\r\x{85}\p{Z}]；\S 同理取反。
//     \d \w \b 等在两者间同样不同，出现即不支持（已知模型的正则不用它们）。
//  2. 前瞻。GPT-2 系正则的 `\s+(?!\S)` 需要前瞻，RE2 没有。它只作为顶层分支出现时可以精确
//     改写：`(?P<cibenchla>\s+)(?:\s|\z)`。回溯引擎下原分支匹配到空白串的末尾（若后面是文本
//     结尾）或让出最后一个空白字符（若后面是非空白）；改写后分组先贪婪吞下整串，再用一个
//     \s 或 \z 收尾，得到同样的分组范围，且在同一起点能否匹配的条件完全相同。Go 的
//     leftmost-first 语义与回溯引擎对分支的优先次序一致，所以整条正则的匹配起点与所选分支
//     都不变，只需把该分支的匹配终点取为分组终点。其它位置的前瞻/后顾一律不支持。

// unicodeSpace 是 Unicode White_Space 在 RE2 字符类里的写法（不含外层方括号）。
const unicodeSpace = `\t-\r\x{85}\p{Z}`

// laGroup 是改写后的前瞻分支里记录真实匹配终点的命名分组。
const laGroup = "cibenchla"

// splitRegex 是一个翻译好的预分词正则。
type splitRegex struct {
	re *regexp.Regexp
	la int // `\s+(?!\S)` 分支的分组序号；没有该分支时为 -1
}

// compileSplit 翻译并编译 Oniguruma 语法的预分词正则 pattern。
func compileSplit(pattern string) (*splitRegex, error) {
	alts, err := topLevelAlternatives(pattern)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	hasLA := false
	for i, alt := range alts {
		if i > 0 {
			b.WriteByte('|')
		}
		if alt == `\s+(?!\S)` && !hasLA {
			hasLA = true
			fmt.Fprintf(&b, `(?P<%s>[%s]+)(?:[%s]|\z)`, laGroup, unicodeSpace, unicodeSpace)
			continue
		}
		tr, err := translate(alt)
		if err != nil {
			return nil, fmt.Errorf("%w: pre-tokenizer regex %q: %v", ErrUnsupported, pattern, err)
		}
		b.WriteString(tr)
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("%w: pre-tokenizer regex %q: %v", ErrUnsupported, pattern, err)
	}
	s := &splitRegex{re: re, la: -1}
	if hasLA {
		s.la = re.SubexpIndex(laGroup)
	}
	return s, nil
}

// topLevelAlternatives 把正则按顶层（不在括号或字符类里）的 '|' 切开。
func topLevelAlternatives(p string) ([]string, error) {
	var alts []string
	depth, inClass, start := 0, false, 0
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			i++ // 跳过被转义的字符（多字节字符的后续字节不会是元字符）
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			if i+1 < len(p) && p[i+1] == '^' {
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' { // 类开头的 ']' 是字面量
				i++
			}
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("%w: pre-tokenizer regex %q: unbalanced ')'", ErrUnsupported, p)
			}
		case c == '|' && depth == 0:
			alts = append(alts, p[start:i])
			start = i + 1
		}
	}
	if depth != 0 || inClass {
		return nil, fmt.Errorf("%w: pre-tokenizer regex %q: unbalanced group or class", ErrUnsupported, p)
	}
	return append(alts, p[start:]), nil
}

// translate 把一个分支里的 \s、\S 换成 Unicode 空白类，拒绝语义与 RE2 不同的构造
// （\d \w \b \h 等转义、前瞻后顾、原子组、所有格量词、反向引用）。
func translate(p string) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '\\' && i+1 < len(p) {
			e := p[i+1]
			i++
			switch e {
			case 's':
				if inClass {
					b.WriteString(unicodeSpace)
				} else {
					b.WriteString("[" + unicodeSpace + "]")
				}
			case 'S':
				if inClass {
					return "", fmt.Errorf(`\S inside a character class`)
				}
				b.WriteString("[^" + unicodeSpace + "]")
			case 'd', 'D', 'w', 'W', 'b', 'B', 'h', 'H', 'R', 'X', 'k', 'g', 'G', 'K', 'Z', 'A', 'z', 'N', 'O', 'y', 'Y':
				return "", fmt.Errorf(`escape \%c (its Unicode meaning differs from Go's)`, e)
			case '1', '2', '3', '4', '5', '6', '7', '8', '9':
				return "", fmt.Errorf(`back reference \%c`, e)
			case 'p', 'P', 'x':
				// \p{L}、\x{85}：整个花括号一起照抄，免得其中的 '}' 被当成量词的结尾。
				b.WriteByte('\\')
				b.WriteByte(e)
				if i+1 < len(p) && p[i+1] == '{' {
					end := strings.IndexByte(p[i+1:], '}')
					if end < 0 {
						return "", fmt.Errorf(`unterminated \%c{`, e)
					}
					b.WriteString(p[i+1 : i+2+end])
					i += 1 + end
				}
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
			continue
		}
		switch {
		case inClass && c == ']':
			inClass = false
		case !inClass && c == '[':
			inClass = true
			b.WriteByte(c)
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				b.WriteString(`\]`)
				i++
			}
			if i+1 < len(p) && p[i+1] == '[' { // Oniguruma 的嵌套类与 RE2 的 [[:alpha:]] 不同
				return "", fmt.Errorf("nested character class")
			}
			continue
		case !inClass && c == '(' && strings.HasPrefix(p[i:], "(?") && len(p) > i+2:
			switch p[i+2] {
			case '=', '!', '<', '>', '~':
				return "", fmt.Errorf("lookaround or atomic group at %q", p[i:])
			}
		case !inClass && (c == '+' || c == '?' || c == '*' || c == '}') && i+1 < len(p) && p[i+1] == '+':
			return "", fmt.Errorf("possessive quantifier at %q", p[i:])
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// split 按 HF Split（behavior=Isolated, invert=false）的语义切分 s：每个匹配单独成片，
// 匹配之间未被覆盖的部分也各成一片。结果追加到 out 并返回。
func (r *splitRegex) split(s string, out []string) []string {
	prev, pos := 0, 0
	for pos < len(s) {
		m := r.re.FindStringSubmatchIndex(s[pos:])
		if m == nil {
			break
		}
		start, end := pos+m[0], pos+m[1]
		if r.la >= 0 && m[2*r.la] >= 0 {
			end = pos + m[2*r.la+1]
		}
		if end == start { // 空匹配：不成片，向前推进一个字符继续找（与 find_iter 一致）
			_, w := utf8.DecodeRuneInString(s[start:])
			pos = start + w
			continue
		}
		if start > prev {
			out = append(out, s[prev:start])
		}
		out = append(out, s[start:end])
		prev, pos = end, end
	}
	if prev < len(s) {
		out = append(out, s[prev:])
	}
	return out
}

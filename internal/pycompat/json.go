package pycompat

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Item 是有序字典中的一项；Python 3.7+ 的 dict 保持插入顺序，
// simple-evals 的结果 JSON 的键顺序由聚合时的插入顺序决定。
type Item struct {
	Key   string
	Value float64
}

// DumpsFloatDict 等价于 Python 的 json.dumps(d, indent=indent)，d 为值全为
// float 的有序 dict：默认 ensure_ascii=True，浮点用 float.__repr__，
// NaN/inf 输出为 NaN/Infinity/-Infinity，indent 时项分隔符为 ","，键分隔符为 ": "。
// indent < 0 表示不缩进（", " 与 ": "）。
func DumpsFloatDict(items []Item, indent int) string {
	if len(items) == 0 {
		return "{}"
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, it := range items {
		if i > 0 {
			if indent >= 0 {
				b.WriteByte(',')
			} else {
				b.WriteString(", ")
			}
		}
		if indent >= 0 {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(" ", indent))
		}
		b.WriteString(QuoteASCII(it.Key))
		b.WriteString(": ")
		b.WriteString(JSONFloat(it.Value))
	}
	if indent >= 0 {
		b.WriteByte('\n')
	}
	b.WriteByte('}')
	return b.String()
}

// JSONFloat 按 Python json 模块的规则输出一个 float。
func JSONFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return FloatRepr(f)
}

// QuoteASCII 等价于 Python json 的 ensure_ascii 字符串编码：
// 转义 " \ 与控制字符，非 ASCII 输出为小写十六进制的 \uXXXX（BMP 外用代理对）。
func QuoteASCII(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || (r >= 0x7f && r <= 0xffff):
				writeU(&b, r)
			case r > 0xffff:
				r -= 0x10000
				writeU(&b, 0xd800+(r>>10))
				writeU(&b, 0xdc00+(r&0x3ff))
			case r == utf8.RuneError:
				writeU(&b, r)
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// writeU 写出 \uXXXX（4 位小写十六进制），与 Python 的 ensure_ascii 一致。
func writeU(b *strings.Builder, r rune) {
	h := strconv.FormatInt(int64(r), 16)
	b.WriteString(`\u`)
	b.WriteString(strings.Repeat("0", 4-len(h)))
	b.WriteString(h)
}

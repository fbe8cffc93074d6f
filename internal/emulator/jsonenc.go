package emulator

import (
	"strconv"
	"unicode/utf8"
)

// hexDigits 用于 \u00XX 转义。
const hexDigits = "0123456789abcdef"

// AppendString 把 s 编码为 JSON 字符串字面量（含两侧引号）追加到 dst。
//
// 与 encoding/json 不同，它不转义 <、>、&（vLLM 由 pydantic 输出，同样不转义），
// 非 ASCII 字符原样以 UTF-8 输出；非法 UTF-8 字节替换为 \ufffd，U+2028/U+2029
// 转义以兼容 JavaScript 客户端。这样流式热路径无需反射与中间分配。
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	valid := utf8.ValidString(s)
	for i := 0; i < len(s); {
		c := s[i]
		if valid && c >= utf8.RuneSelf && c != 0xE2 {
			// 合法 UTF-8 中只有以 0xE2 开头的序列可能是 U+2028/U+2029，其余字节原样保留。
			i++
			continue
		}
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendFloat 以 JSON 可接受的最短形式追加浮点数（NaN/Inf 退化为 0，JSON 不能表示它们）。
func AppendFloat(dst []byte, f float64) []byte {
	if f != f || f > 1e308 || f < -1e308 {
		return append(dst, '0')
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

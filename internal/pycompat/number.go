package pycompat

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// floatSyntax 是 Python float(str) 在去掉空白、数字归一化、下划线校验之后接受的文法。
// 它排除了 Go ParseFloat 额外接受的十六进制浮点等形式。
var floatSyntax = regexp.MustCompile(`^[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))$`)

// ParseFloat 等价于 Python 的 float(s)（s 为 str）：两端 Python 空白被忽略，
// 任何 Unicode 十进制数字（如全角、阿拉伯-印度数字）按其数值处理，
// 仅允许位于数字之间的下划线，接受 inf/infinity/nan（不区分大小写）。
// 溢出返回 ±Inf（Python 同样如此）。ok=false 表示 Python 会抛 ValueError。
func ParseFloat(s string) (v float64, ok bool) {
	s = Strip(s)
	if s == "" {
		return 0, false
	}
	runes := []rune(s)
	ascii := make([]byte, 0, len(runes))
	for i, r := range runes {
		switch {
		case r == '_':
			if i == 0 || i == len(runes)-1 || !isDigitRune(runes[i-1]) || !isDigitRune(runes[i+1]) {
				return 0, false
			}
			continue
		case r < 0x80:
			ascii = append(ascii, byte(r))
		case IsDecimal(r):
			ascii = append(ascii, byte('0'+DigitValue(r)))
		default:
			return 0, false
		}
	}
	str := string(ascii)
	if !floatSyntax.MatchString(str) {
		return 0, false
	}
	f, err := strconv.ParseFloat(str, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// isDigitRune 报告 r 是否为 ASCII 或 Unicode 十进制数字（下划线两侧的要求）。
func isDigitRune(r rune) bool { return IsDecimal(r) }

// DigitValue 返回十进制数字字符 r 的数值（0-9），r 不是 Nd 时返回 -1。
// Unicode 的 Nd 字符都以 0 开头、10 个一组连续排列，因此按所在区间起点取模即可。
func DigitValue(r rune) int {
	if r >= '0' && r <= '9' {
		return int(r - '0')
	}
	for _, rg := range unicode.Nd.R16 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) && rg.Stride == 1 {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) && rg.Stride == 1 {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	return -1
}

// FloatRepr 等价于 Python 的 repr(float)/str(float)：最短往返表示；
// 十进制指数在 [-4, 16) 内用定点并保证带 ".0"，否则用 "1e-05"/"1.5e+16"
// 这种至少两位、带符号的指数。Go 的 'g' 格式在这两点上都不同。
func FloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	sign := ""
	if f < 0 {
		sign = "-"
		f = -f
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.dddde±XX
	mant, expStr, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expStr)
	decpt := exp + 1
	if decpt > -4 && decpt <= 16 {
		switch {
		case decpt <= 0:
			return sign + "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= len(digits):
			return sign + digits + strings.Repeat("0", decpt-len(digits)) + ".0"
		default:
			return sign + digits[:decpt] + "." + digits[decpt:]
		}
	}
	out := sign + digits[:1]
	if len(digits) > 1 {
		out += "." + digits[1:]
	}
	esign := "+"
	if exp < 0 {
		esign = "-"
		exp = -exp
	}
	es := strconv.Itoa(exp)
	if len(es) < 2 {
		es = "0" + es
	}
	return out + "e" + esign + es
}

// RoundNumpy 等价于对 numpy.float64 调用 round(x, decimals)：numpy 的实现是
// rint(x * 10**decimals) / 10**decimals（逢半取偶），与 Python 内置 float 的
// 正确舍入 round 并不总是相同（例如 1.115 → numpy 得 1.12，Python 得 1.11）。
// simple-evals 的 DROP 对 np.mean 的结果取 round(f1, 2)，走的正是这条路径。
func RoundNumpy(x float64, decimals int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	p := math.Pow(10, float64(decimals))
	return math.RoundToEven(x*p) / p
}

// RoundPython 等价于 Python 内置 round(float, ndigits)（ndigits >= 0）：
// 先得到正确舍入（逢半取偶作用于精确二进制值）的十进制串，再解析回 float。
func RoundPython(x float64, ndigits int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || ndigits < 0 {
		return x
	}
	v, err := strconv.ParseFloat(strconv.FormatFloat(x, 'f', ndigits, 64), 64)
	if err != nil {
		return x
	}
	return v
}

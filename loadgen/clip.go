package loadgen

import "unicode/utf8"

// validUTF8Prefix 截断到合法 UTF-8 边界，供错误信息截取使用（Record.Error 与各种协议错误只留开头）。
func validUTF8Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

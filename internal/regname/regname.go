// Package regname 是 cibench 各登记表（能力、评测、部署方式、到达过程、请求来源）共用的
// 名字规则：同一条规则、同一句错误说明，团队在哪张表上登记都不会遇到另一套写法。
package regname

import "fmt"

// Max 是名字的长度上限：名字会出现在 YAML、报告与指标标签中。
const Max = 64

// Check 校验名字：以小写字母开头，只含小写字母、数字、'_'、'-' 与 '.'，不超过 Max 个字符
// ——大小写或空白之差不该造出两个登记项。错误写明取值与规则（调用方再包上自己的哨兵）。
func Check(s string) error {
	if s == "" {
		return fmt.Errorf("empty name")
	}
	if len(s) > Max {
		return fmt.Errorf("%q is longer than %d characters", s, Max)
	}
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.')
		if !ok {
			return fmt.Errorf("%q: want a lower-case letter followed by [a-z0-9_.-]", s)
		}
	}
	return nil
}

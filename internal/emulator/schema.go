package emulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrSchema 表示无法从给定的 JSON Schema 生成值（schema 本身不是合法 JSON 等）。
var ErrSchema = errors.New("emulator: unsupported JSON schema")

// schemaMaxDepth 限制递归深度，防止自引用 schema 无限展开。
const schemaMaxDepth = 8

// GenerateJSON 按 JSON Schema（原始 JSON 文本）确定性地生成一个满足它的 JSON 值，
// 输出采用 Python json.dumps 的分隔符（", " 与 ": "），与 vLLM 结构化输出的常见形态一致。
//
// 支持：type（含数组形式）、properties/required（生成全部属性，键按字典序）、
// enum、const、$ref（#/$defs、#/definitions）、anyOf/oneOf（取第一个）、allOf（浅合并）、
// items/prefixItems/minItems/maxItems、minimum/maximum/exclusive*/multipleOf、
// minLength/maxLength、pattern（用 GenerateRegex）、常见 format。空 schema 生成 {}。
func GenerateJSON(schema json.RawMessage, seed uint64) ([]byte, error) {
	var root any = map[string]any{"type": "object"}
	if len(schema) > 0 && string(schema) != "null" {
		if err := json.Unmarshal(schema, &root); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSchema, err)
		}
	}
	g := &schemaGen{root: root, r: NewRand(seed)}
	return g.gen(nil, root, 0, ""), nil
}

// schemaGen 保存一次生成的根 schema 与随机流。
type schemaGen struct {
	root any
	r    Rand
}

// resolve 展开 $ref（只支持本文档内的 JSON Pointer）。
func (g *schemaGen) resolve(s map[string]any) map[string]any {
	for i := 0; i < schemaMaxDepth; i++ {
		ref, ok := s["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			return s
		}
		var cur any = g.root
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#"), "/") {
			if part == "" {
				continue
			}
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			m, ok := cur.(map[string]any)
			if !ok {
				return map[string]any{}
			}
			cur = m[part]
		}
		next, ok := cur.(map[string]any)
		if !ok {
			return map[string]any{}
		}
		s = next
	}
	return s
}

// gen 追加满足 schema 的值。name 是所在属性名，用于挑选更像样的字符串。
func (g *schemaGen) gen(dst []byte, schema any, depth int, name string) []byte {
	s, ok := schema.(map[string]any)
	if !ok { // true 或缺省：任意值
		return AppendString(dst, "value")
	}
	s = g.resolve(s)
	if c, ok := s["const"]; ok {
		return appendAny(dst, c)
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return appendAny(dst, e[g.r.Intn(len(e))])
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			return g.gen(dst, pickNonNull(alts, g), depth+1, name)
		}
	}
	if all, ok := s["allOf"].([]any); ok && len(all) > 0 {
		merged := map[string]any{}
		props := map[string]any{}
		var req []any
		for _, a := range append(all, s) {
			m, ok := a.(map[string]any)
			if !ok {
				continue
			}
			m = g.resolve(m)
			for k, v := range m {
				switch k {
				case "allOf":
				case "properties":
					if pm, ok := v.(map[string]any); ok {
						for pk, pv := range pm {
							props[pk] = pv
						}
					}
				case "required":
					if rl, ok := v.([]any); ok {
						req = append(req, rl...)
					}
				default:
					merged[k] = v
				}
			}
		}
		if len(props) > 0 {
			merged["properties"] = props
		}
		if len(req) > 0 {
			merged["required"] = req
		}
		return g.gen(dst, merged, depth+1, name)
	}
	typ := schemaType(s)
	if depth > schemaMaxDepth && (typ == "object" || typ == "array") {
		if typ == "object" {
			return append(dst, "{}"...)
		}
		return append(dst, "[]"...)
	}
	switch typ {
	case "object":
		return g.genObject(dst, s, depth)
	case "array":
		return g.genArray(dst, s, depth, name)
	case "integer":
		return strconv.AppendInt(dst, g.genInt(s), 10)
	case "number":
		return AppendFloat(dst, g.genNumber(s))
	case "boolean":
		return strconv.AppendBool(dst, g.r.Intn(2) == 0)
	case "null":
		return append(dst, "null"...)
	default:
		return AppendString(dst, g.genString(s, name))
	}
}

// pickNonNull 在备选 schema 中优先挑第一个不是 {"type":"null"} 的。
func pickNonNull(alts []any, g *schemaGen) any {
	for _, a := range alts {
		if m, ok := a.(map[string]any); ok && schemaType(g.resolve(m)) == "null" {
			continue
		}
		return a
	}
	return alts[0]
}

// schemaType 返回 schema 的主类型；数组形式取第一个非 null 类型，缺省时按关键字推断。
func schemaType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if str, ok := x.(string); ok && str != "null" {
				return str
			}
		}
		if len(t) > 0 {
			if str, ok := t[0].(string); ok {
				return str
			}
		}
	}
	switch {
	case s["properties"] != nil || s["required"] != nil || s["additionalProperties"] != nil:
		return "object"
	case s["items"] != nil || s["prefixItems"] != nil:
		return "array"
	case s["minimum"] != nil || s["maximum"] != nil:
		return "number"
	}
	return "string"
}

// genObject 生成对象：全部已声明属性（键按字典序，保证确定性）；
// 没有属性但要求 minProperties 时补足 "key0"… 字段。
func (g *schemaGen) genObject(dst []byte, s map[string]any, depth int) []byte {
	props, _ := s["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if rs, ok := r.(string); ok {
				if _, declared := props[rs]; !declared {
					keys = append(keys, rs)
				}
			}
		}
	}
	minProps := int(num(s["minProperties"], 0))
	dst = append(dst, '{')
	n := 0
	for _, k := range keys {
		if n > 0 {
			dst = append(dst, ", "...)
		}
		dst = AppendString(dst, k)
		dst = append(dst, ": "...)
		dst = g.gen(dst, props[k], depth+1, k)
		n++
	}
	for ; n < minProps; n++ {
		if n > 0 {
			dst = append(dst, ", "...)
		}
		dst = AppendString(dst, "key"+strconv.Itoa(n))
		dst = append(dst, ": "...)
		dst = g.gen(dst, s["additionalProperties"], depth+1, "")
	}
	return append(dst, '}')
}

// genArray 生成数组：长度为 max(minItems, 1)，不超过 maxItems。
func (g *schemaGen) genArray(dst []byte, s map[string]any, depth int, name string) []byte {
	prefix, _ := s["prefixItems"].([]any)
	n := int(num(s["minItems"], 1))
	if n < len(prefix) {
		n = len(prefix)
	}
	if n < 1 {
		n = 1
	}
	if mx, ok := s["maxItems"]; ok {
		n = min(n, int(num(mx, float64(n))))
	}
	dst = append(dst, '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		var item any = s["items"]
		if i < len(prefix) {
			item = prefix[i]
		}
		if b, ok := item.(bool); ok && !b {
			break
		}
		dst = g.gen(dst, item, depth+1, name)
	}
	return append(dst, ']')
}

// num 把 JSON 数字转成 float64，缺省返回 def。
func num(v any, def float64) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return def
}

// genInt 生成满足 minimum/maximum/exclusive*/multipleOf 的整数。
func (g *schemaGen) genInt(s map[string]any) int64 {
	lo, hi := math.Inf(-1), math.Inf(1)
	if v, ok := s["minimum"].(float64); ok {
		lo = math.Ceil(v)
	}
	if v, ok := s["exclusiveMinimum"].(float64); ok {
		lo = math.Max(lo, math.Floor(v)+1)
	}
	if v, ok := s["maximum"].(float64); ok {
		hi = math.Floor(v)
	}
	if v, ok := s["exclusiveMaximum"].(float64); ok {
		hi = math.Min(hi, math.Ceil(v)-1)
	}
	switch {
	case math.IsInf(lo, -1) && math.IsInf(hi, 1):
		lo, hi = 1, 100
	case math.IsInf(lo, -1):
		lo = hi - 100
	case math.IsInf(hi, 1):
		hi = lo + 100
	}
	if hi < lo {
		hi = lo
	}
	v := int64(lo) + int64(g.r.Intn(int(hi-lo)+1))
	if m, ok := s["multipleOf"].(float64); ok && m >= 1 && m == math.Trunc(m) {
		mi := int64(m)
		c := (int64(lo) + mi - 1) / mi * mi
		if int64(lo) <= 0 {
			c = int64(lo) / mi * mi
		}
		if float64(c) <= hi {
			v = c
		}
	}
	return v
}

// genNumber 生成满足范围约束的数（保留两位小数）。
func (g *schemaGen) genNumber(s map[string]any) float64 {
	lo, hi := 0.0, 100.0
	loSet, hiSet := false, false
	if v, ok := s["minimum"].(float64); ok {
		lo, loSet = v, true
	}
	if v, ok := s["maximum"].(float64); ok {
		hi, hiSet = v, true
	}
	if v, ok := s["exclusiveMinimum"].(float64); ok {
		lo, loSet = v+(math.Abs(v)+1)*1e-6, true
	}
	if v, ok := s["exclusiveMaximum"].(float64); ok {
		hi, hiSet = v-(math.Abs(v)+1)*1e-6, true
	}
	if loSet && !hiSet {
		hi = lo + 100
	}
	if hiSet && !loSet {
		lo = hi - 100
	}
	if m, ok := s["multipleOf"].(float64); ok && m > 0 {
		k := math.Ceil(lo / m)
		return k * m
	}
	if hi < lo {
		return lo
	}
	x := lo + (hi-lo)*g.r.Float64()
	r := math.Round(x*100) / 100
	if r < lo || r > hi {
		return x
	}
	return r
}

// genString 生成字符串：format、pattern、属性名启发，随后满足长度约束。
func (g *schemaGen) genString(s map[string]any, name string) string {
	var out string
	switch f, _ := s["format"].(string); f {
	case "date-time":
		out = "2025-01-02T03:04:05Z"
	case "date":
		out = "2025-01-02"
	case "time":
		out = "03:04:05Z"
	case "email":
		out = "user@example.com"
	case "uri", "url":
		out = "https://example.com/item"
	case "uuid":
		out = "123e4567-e89b-42d3-a456-426614174000"
	case "ipv4":
		out = "192.0.2.1"
	case "hostname":
		out = "example.com"
	default:
		if p, ok := s["pattern"].(string); ok {
			if v, err := GenerateRegex(p, g.r.Uint64()); err == nil {
				return v
			}
		}
		words := []string{"北京", "Paris", "hello", "示例", "value", "上海", "London", "测试"}
		switch strings.ToLower(name) {
		case "city", "location":
			out = []string{"北京", "Paris", "San Francisco", "上海"}[g.r.Intn(4)]
		case "unit", "units":
			out = "celsius"
		default:
			out = words[g.r.Intn(len(words))]
		}
	}
	if mn := int(num(s["minLength"], 0)); utf8.RuneCountInString(out) < mn {
		out += strings.Repeat("a", mn-utf8.RuneCountInString(out))
	}
	if mx, ok := s["maxLength"].(float64); ok && utf8.RuneCountInString(out) > int(mx) {
		out = string([]rune(out)[:int(mx)])
	}
	return out
}

// appendAny 用 Python 风格分隔符编码任意 JSON 值（enum/const 的取值）。
func appendAny(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.AppendInt(dst, int64(x), 10)
		}
		return AppendFloat(dst, x)
	case string:
		return AppendString(dst, x)
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendAny(dst, e)
		}
		return append(dst, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = AppendString(dst, k)
			dst = append(dst, ": "...)
			dst = appendAny(dst, x[k])
		}
		return append(dst, '}')
	}
	return append(dst, "null"...)
}

// GenerateRegex 生成一个完整匹配 pattern 的字符串（确定性）。支持字面量、字符类、
// 连接、选择（随机挑一支）、重复（取最小次数，至少 1 次时取 1）、分组与锚点；
// 不支持反向引用（Go 的 RE2 语法本身也不支持）。pattern 非法时返回错误。
func GenerateRegex(pattern string, seed uint64) (string, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", fmt.Errorf("emulator: invalid regex %q: %w", pattern, err)
	}
	r := NewRand(seed)
	var sb strings.Builder
	genRegex(&sb, re.Simplify(), &r, 0)
	return sb.String(), nil
}

// genRegex 递归展开正则语法树。
func genRegex(sb *strings.Builder, re *syntax.Regexp, r *Rand, depth int) {
	if depth > 50 {
		return
	}
	switch re.Op {
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			sb.WriteRune(c)
		}
	case syntax.OpCharClass:
		if len(re.Rune) >= 2 {
			k := r.Intn(len(re.Rune)/2) * 2
			lo, hi := re.Rune[k], re.Rune[k+1]
			// 优先取可打印字符。
			c := lo + rune(r.Intn(int(min(hi-lo, 25))+1))
			if c < 0x20 {
				c = max(lo, 'a')
				if c > hi {
					c = lo
				}
			}
			sb.WriteRune(c)
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		sb.WriteByte('x')
	case syntax.OpCapture:
		for _, s := range re.Sub {
			genRegex(sb, s, r, depth+1)
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			genRegex(sb, s, r, depth+1)
		}
	case syntax.OpAlternate:
		genRegex(sb, re.Sub[r.Intn(len(re.Sub))], r, depth+1)
	case syntax.OpStar, syntax.OpQuest:
		// 零次即可匹配。
	case syntax.OpPlus:
		genRegex(sb, re.Sub[0], r, depth+1)
	case syntax.OpRepeat:
		n := re.Min
		if n == 0 && re.Max != 0 {
			n = 1
		}
		for i := 0; i < n; i++ {
			genRegex(sb, re.Sub[0], r, depth+1)
		}
	}
}

package chunk

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrSyntax 表示 chunk 不是合法 JSON（在当前扫描器能识别的范围内）。
var ErrSyntax = errors.New("chunk: malformed JSON chunk")

// Fields 是一次扫描从 chunk 中取出的全部字段。字符串字段可能直接引用输入（无转义时零拷贝），
// 只在下一次 Scan 之前、且输入缓冲区未被覆盖时有效；要保留须复制。
type Fields struct {
	// HasError 表示事件是服务端的错误（{"error":…}，或旧版 vLLM 的平铺形态 "object":"error"），
	// ErrMsg 是其中的 message（可能为空）。
	HasError bool
	ErrMsg   string
	// HasChoice 表示事件带 choices；Content、Reasoning、Tools、Finish 取自第一个 choice：
	// delta/message 的 content（补全接口为 text）、reasoning（或旧名 reasoning_content）、
	// 是否有非空的 tool_calls、非 null 的 finish_reason。
	HasChoice bool
	Content   string
	Reasoning string
	Tools     bool
	Finish    string
	// HasUsage 表示事件带 usage 对象；PromptTokens、CompletionTokens 是其中的计数，
	// HasCompletion 表示 completion_tokens 存在且不为 null。
	HasUsage         bool
	PromptTokens     int64
	CompletionTokens int64
	// ReasoningTokens 是 usage.completion_tokens_details.reasoning_tokens；-1 表示没有。
	ReasoningTokens int64
	// CachedTokens 是 usage.prompt_tokens_details.cached_tokens；-1 表示没有。
	CachedTokens  int64
	HasCompletion bool
	// Choices 是本事件中每个 choice 的 index、是否带 finish_reason、是否带输出，按出现顺序；
	// 上面的 Content 等字段只取自第一个 choice。协议检查（重复的 finish、finish 之后的输出、
	// 同一事件里重复的 index）要看全部 choice。切片由 Scanner 复用。
	Choices []Choice
	// flatError 为 true 表示旧版 vLLM 的平铺错误形态（顶层 "object":"error"），flatMsg 是其顶层
	// message；Scan 结束时并入 HasError/ErrMsg。
	flatError bool
	flatMsg   string
}

// Choice 是一个 choice 在协议检查中需要的全部信息。
type Choice struct {
	Index  int64
	Finish bool // 带非 null 的 finish_reason
	Output bool // 带非空的 content / text / reasoning / tool_calls
}

// Scanner 是为 OpenAI 流式 chunk 专门写的单遍 JSON 扫描器：只识别需要的键，其余值按括号
// 深度跳过。gjson 对每个路径都从头扫描一次，在每秒数十万 chunk 的热路径上占到客户端 CPU 的
// 四分之一，所以换成这个。零值可用；内部缓冲跨调用复用，所以不是并发安全的（一个 worker 一个）。
type Scanner struct {
	s   string
	i   int
	buf []byte // 转义字符串的解码缓冲（复用）
	out Fields
	// index 是正在解析的 choice 的 index（缺省 0）
	index int64
}

// Scan 解析 s；返回的字段（指向 Scanner 内部）在下一次调用前有效。s 不是一个 JSON 对象时
// 返回 ErrSyntax（顶层不是对象、括号或引号不配对、转义或数字不合法）。
func (c *Scanner) Scan(s string) (*Fields, error) {
	c.s, c.i, c.buf = s, 0, c.buf[:0]
	c.out = Fields{ReasoningTokens: -1, CachedTokens: -1, Choices: c.out.Choices[:0]}
	c.ws()
	if err := c.object(c.top); err != nil {
		return nil, err
	}
	if c.out.flatError && !c.out.HasError {
		c.out.HasError, c.out.ErrMsg = true, c.out.flatMsg
	}
	return &c.out, nil
}

// ws 跳过空白。
func (c *Scanner) ws() {
	for c.i < len(c.s) {
		switch c.s[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// object 解析一个对象，对每个键调用 field（field 必须消费该键的值）。
func (c *Scanner) object(field func(key string) error) error {
	if c.i >= len(c.s) || c.s[c.i] != '{' {
		return ErrSyntax
	}
	c.i++
	c.ws()
	if c.i < len(c.s) && c.s[c.i] == '}' {
		c.i++
		return nil
	}
	for {
		c.ws()
		key, err := c.rawString()
		if err != nil {
			return err
		}
		c.ws()
		if c.i >= len(c.s) || c.s[c.i] != ':' {
			return ErrSyntax
		}
		c.i++
		c.ws()
		if err := field(key); err != nil {
			return err
		}
		c.ws()
		if c.i >= len(c.s) {
			return ErrSyntax
		}
		switch c.s[c.i] {
		case ',':
			c.i++
		case '}':
			c.i++
			return nil
		default:
			return ErrSyntax
		}
	}
}

// top 处理顶层键。
func (c *Scanner) top(key string) error {
	switch key {
	case "error":
		if c.peek() == 'n' {
			return c.skip()
		}
		c.out.HasError = true
		if c.peek() == '"' {
			s, err := c.str()
			c.out.ErrMsg = s
			return err
		}
		if c.peek() != '{' {
			return c.skip()
		}
		return c.object(func(k string) error {
			if k == "message" && c.peek() == '"' {
				s, err := c.str()
				c.out.ErrMsg = s
				return err
			}
			return c.skip()
		})
	case "object":
		// 热路径上这里是 "chat.completion.chunk"：只比较前缀，不解码。
		c.out.flatError = strings.HasPrefix(c.s[c.i:], `"error"`)
	case "message":
		if c.peek() == '"' {
			v, err := c.str()
			c.out.flatMsg = v
			return err
		}
	case "choices":
		if c.peek() != '[' {
			return c.skip()
		}
		c.i++
		c.ws()
		for c.i < len(c.s) && c.s[c.i] != ']' {
			var err error
			if c.peek() == '{' {
				err = c.oneChoice()
			} else {
				err = c.skip()
			}
			if err != nil {
				return err
			}
			c.ws()
			if c.i < len(c.s) && c.s[c.i] == ',' {
				c.i++
				c.ws()
			}
		}
		if c.i >= len(c.s) {
			return ErrSyntax
		}
		c.i++
		return nil
	case "usage":
		if c.peek() != '{' {
			return c.skip()
		}
		c.out.HasUsage = true
		return c.object(c.usage)
	}
	return c.skip()
}

// oneChoice 解析 choices 中的一个对象并记下它的 Choice。第一个 choice 的内容字段留在
// c.out 中；之后的 choice 借用同一组字段解析，再恢复第一个的值（转义解码只追加到 c.buf，
// 先前取出的字符串仍然有效）。
func (c *Scanner) oneChoice() error {
	o := &c.out
	first := !o.HasChoice
	content, reasoning, tools, finish := o.Content, o.Reasoning, o.Tools, o.Finish
	o.Content, o.Reasoning, o.Tools, o.Finish, c.index = "", "", false, "", 0
	err := c.object(c.choice)
	o.Choices = append(o.Choices, Choice{Index: c.index, Finish: o.Finish != "",
		Output: o.Content != "" || o.Reasoning != "" || o.Tools})
	if !first {
		o.Content, o.Reasoning, o.Tools, o.Finish = content, reasoning, tools, finish
	}
	o.HasChoice = true
	return err
}

// choice 处理一个 choice 的键。
func (c *Scanner) choice(key string) error {
	switch key {
	case "index":
		// 热路径上是一位数：直接读，免去 skip + ParseInt。
		if j := c.i + 1; j < len(c.s) && c.s[c.i] >= '0' && c.s[c.i] <= '9' && (c.s[j] < '0' || c.s[j] > '9') && c.s[j] != '.' && c.s[j] != 'e' && c.s[j] != 'E' {
			c.index = int64(c.s[c.i] - '0')
			c.i = j
			return nil
		}
		if c.peek() != 'n' {
			v, err := c.int()
			c.index = v
			return err
		}
	case "delta", "message":
		if c.peek() != '{' {
			return c.skip()
		}
		return c.object(c.message)
	case "text":
		if c.peek() == '"' {
			s, err := c.str()
			c.out.Content = s
			return err
		}
	case "finish_reason":
		if c.peek() == '"' {
			s, err := c.str()
			c.out.Finish = s
			return err
		}
	}
	return c.skip()
}

// message 处理 delta / message 的键（推理字段新旧两种名字都接受）。
func (c *Scanner) message(key string) error {
	switch key {
	case "content":
		if c.peek() == '"' {
			s, err := c.str()
			c.out.Content = s
			return err
		}
	case "reasoning", "reasoning_content":
		if c.peek() == '"' {
			s, err := c.str()
			if s != "" {
				c.out.Reasoning = s
			}
			return err
		}
	case "tool_calls":
		if c.peek() == '[' {
			start := c.i
			if err := c.skip(); err != nil {
				return err
			}
			for _, ch := range c.s[start+1 : c.i-1] {
				if ch != ' ' && ch != '\n' && ch != '\t' && ch != '\r' {
					c.out.Tools = true
					break
				}
			}
			return nil
		}
	}
	return c.skip()
}

// usage 处理 usage 对象。
func (c *Scanner) usage(key string) error {
	switch key {
	case "prompt_tokens":
		v, err := c.int()
		c.out.PromptTokens = v
		return err
	case "completion_tokens":
		if c.peek() == 'n' {
			return c.skip()
		}
		v, err := c.int()
		c.out.CompletionTokens, c.out.HasCompletion = v, true
		return err
	case "prompt_tokens_details":
		// vLLM 打开 --enable-prompt-tokens-details 时给出命中前缀缓存的 prompt token 数。
		if c.peek() != '{' {
			return c.skip()
		}
		return c.object(func(k string) error {
			if k == "cached_tokens" && c.peek() != 'n' {
				v, err := c.int()
				c.out.CachedTokens = v
				return err
			}
			return c.skip()
		})
	case "completion_tokens_details":
		if c.peek() != '{' {
			return c.skip()
		}
		return c.object(func(k string) error {
			if k == "reasoning_tokens" && c.peek() != 'n' {
				v, err := c.int()
				c.out.ReasoningTokens = v
				return err
			}
			return c.skip()
		})
	}
	return c.skip()
}

// peek 返回当前字节（越界为 0）。
func (c *Scanner) peek() byte {
	if c.i < len(c.s) {
		return c.s[c.i]
	}
	return 0
}

// int 读取一个整数（null 视为 0）。
func (c *Scanner) int() (int64, error) {
	start := c.i
	if err := c.skip(); err != nil {
		return 0, err
	}
	lit := c.s[start:c.i]
	if lit == "null" {
		return 0, nil
	}
	v, err := strconv.ParseInt(lit, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(lit, 64)
		if ferr != nil {
			return 0, ErrSyntax
		}
		return int64(f), nil
	}
	return v, nil
}

// rawString 读取一个对象键。键很短，逐字节扫描比 IndexByte 的调用开销更小；
// 含转义时退回完整解码。
func (c *Scanner) rawString() (string, error) {
	if c.i >= len(c.s) || c.s[c.i] != '"' {
		return "", ErrSyntax
	}
	for j := c.i + 1; j < len(c.s); j++ {
		switch c.s[j] {
		case '\\':
			return c.str()
		case '"':
			key := c.s[c.i+1 : j]
			c.i = j + 1
			return key, nil
		}
	}
	return "", ErrSyntax
}

// closeQuote 返回从 j 起第一个未被转义的引号位置，找不到为 -1。
func (c *Scanner) closeQuote(j int) int {
	// 多数字符串（id、model、单个 token 的 content）很短：先逐字节看 24 个字节。
	for end := min(j+24, len(c.s)); j < end; j++ {
		switch c.s[j] {
		case '"':
			return j
		case '\\':
			goto slow
		}
	}
slow:
	for {
		k := strings.IndexByte(c.s[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		bs := 0
		for p := j - 1; p >= 0 && c.s[p] == '\\'; p-- {
			bs++
		}
		if bs%2 == 0 {
			return j
		}
		j++
	}
}

// str 读取并解码一个字符串。没有转义时直接返回输入的子串；有转义时解码到共享缓冲区，
// 因此同一次扫描中最多保留一个解码结果之外的引用是安全的（每次解码追加而不覆盖）。
func (c *Scanner) str() (string, error) {
	if c.i >= len(c.s) || c.s[c.i] != '"' {
		return "", ErrSyntax
	}
	j := c.i + 1
	for j < len(c.s) && c.s[j] != '"' && c.s[j] != '\\' {
		j++
	}
	if j >= len(c.s) {
		return "", ErrSyntax
	}
	if c.s[j] == '"' {
		out := c.s[c.i+1 : j]
		c.i = j + 1
		return out, nil
	}
	start := len(c.buf)
	c.buf = append(c.buf, c.s[c.i+1:j]...)
	for j < len(c.s) {
		ch := c.s[j]
		switch {
		case ch == '"':
			c.i = j + 1
			return string(c.buf[start:]), nil
		case ch != '\\':
			c.buf = append(c.buf, ch)
			j++
			continue
		}
		if j+1 >= len(c.s) {
			return "", ErrSyntax
		}
		esc := c.s[j+1]
		j += 2
		switch esc {
		case '"', '\\', '/':
			c.buf = append(c.buf, esc)
		case 'b':
			c.buf = append(c.buf, '\b')
		case 'f':
			c.buf = append(c.buf, '\f')
		case 'n':
			c.buf = append(c.buf, '\n')
		case 'r':
			c.buf = append(c.buf, '\r')
		case 't':
			c.buf = append(c.buf, '\t')
		case 'u':
			r, n := c.hex4(j)
			if n == 0 {
				return "", ErrSyntax
			}
			j += n
			if utf16.IsSurrogate(r) {
				if j+6 <= len(c.s) && c.s[j] == '\\' && c.s[j+1] == 'u' {
					if r2, n2 := c.hex4(j + 2); n2 > 0 {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							r = d
							j += 2 + n2
						}
					}
				}
			}
			c.buf = utf8.AppendRune(c.buf, r)
		default:
			return "", ErrSyntax
		}
	}
	return "", ErrSyntax
}

// hex4 解析位置 j 起的 4 位十六进制数，返回值与消耗的字节数（失败为 0）。
func (c *Scanner) hex4(j int) (rune, int) {
	if j+4 > len(c.s) {
		return 0, 0
	}
	var r rune
	for k := j; k < j+4; k++ {
		ch := c.s[k]
		switch {
		case ch >= '0' && ch <= '9':
			r = r<<4 | rune(ch-'0')
		case ch >= 'a' && ch <= 'f':
			r = r<<4 | rune(ch-'a'+10)
		case ch >= 'A' && ch <= 'F':
			r = r<<4 | rune(ch-'A'+10)
		default:
			return 0, 0
		}
	}
	return r, 4
}

// skip 跳过一个任意 JSON 值（字符串感知的括号深度计数）。
func (c *Scanner) skip() error {
	if c.i >= len(c.s) {
		return ErrSyntax
	}
	switch c.s[c.i] {
	case '"':
		j := c.closeQuote(c.i + 1)
		if j < 0 {
			return ErrSyntax
		}
		c.i = j + 1
		return nil
	case '{', '[':
		depth := 0
		for j := c.i; j < len(c.s); j++ {
			switch c.s[j] {
			case '"':
				if j = c.closeQuote(j + 1); j < 0 {
					return ErrSyntax
				}
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					c.i = j + 1
					return nil
				}
			}
		}
		return ErrSyntax
	default:
		j := c.i
		for j < len(c.s) {
			ch := c.s[j]
			if ch == ',' || ch == '}' || ch == ']' || ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r' {
				break
			}
			j++
		}
		if j == c.i {
			return ErrSyntax
		}
		c.i = j
		return nil
	}
}

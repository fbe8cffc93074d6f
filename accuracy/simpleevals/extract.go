package simpleevals

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/vllm-cibench/cibench/internal/pycompat"
)

// QueryTemplateMultichoice 是 simple-evals common.QUERY_TEMPLATE_MULTICHOICE，逐字节相同。
const QueryTemplateMultichoice = "Answer the following multiple choice question. The last line of your response should be of the following format: 'Answer: $LETTER' (without quotes) where LETTER is one of ABCD. Think step by step before answering.\n\n{Question}\n\nA) {A}\nB) {B}\nC) {C}\nD) {D}"

// AnswerPatternMultichoice 是 GPQA 使用的 Python 正则（ANSWER_PATTERN_MULTICHOICE）。
const AnswerPatternMultichoice = `(?i)Answer[ \t]*:[ \t]*\$?([A-D])\$?`

// AnswerPattern 是 DROP 使用的 Python 正则（ANSWER_PATTERN），\s 为 Unicode 语义。
const AnswerPattern = `(?i)Answer\s*:\s*([^\n]+)`

// MultilingualAnswerPatternTemplate 是 MMLU 的多语言模板，{} 处填入 MultilingualAnswerRegexes
// 的一项。模板中的 "[ \t]" 在 Python 源码里是非原始字符串，\t 已是制表符。
const MultilingualAnswerPatternTemplate = "(?i){}[ \t]*([A-D]|[\u0623-\u062f]|[\u0985]|[\u09ac]|[\u09a1]|[\u09a2]|[\uff21]|[\uff22]|[\uff23]|[\uff24])"

// MultilingualAnswerRegexes 返回 simple-evals common.MULTILINGUAL_ANSWER_REGEXES 的副本，
// 顺序即匹配优先级（第一个命中的正则胜出）。第二项末尾是 6 个 U+200B（韩文输入法的不可见字符）。
func MultilingualAnswerRegexes() []string {
	return []string{
		`Answer\s*:`,
		"Answer\\s*:\u200b\u200b\u200b\u200b\u200b\u200b",
		`উত্তর\s*:`,
		`उत्तर\s*:`,
		`উত্তরঃ`,
		`উত্তর\s*:`,
		`Antwort\s*:`,
		`답변\s*:`,
		`정답\s*:`,
		`답\s*:`,
		`答案\s*：`,
		`答案\s*:`,
		`答\s*：`,
		`答\s*:`,
		`答复\s*：`,
		`答曰\s*：`,
		`الإجابة:`,
		`الجواب:`,
		`إجابة:`,
		`الإجابة النهائية:`,
		`الإجابة الصحيحة:`,
		`الإجابة الصحيحة هي:`,
		`الإجابة هي:`,
		`الجواب النهائي:`,
		`Respuesta\s*:`,
		`Risposta\s*:`,
		`答え\s*:`,
		`答え\s*：`,
		`回答\s*:`,
		`回答\s*：`,
		`解答\s*:`,
		`Jawaban\s*:`,
		`Réponse\s*:`,
		`Resposta\s*:`,
		`Jibu\s*:`,
		`Idahun\s*:`,
		`Ìdáhùn\s*:`,
		`Idáhùn\s*:`,
		"A\u0300m\u1ecd\u0300na\u0300\\s*:",
		`Àdáhùn\s*:`,
		"A\u0300nu\u0301go\u0323\\s*:",
		`Àṣàyàn\s*:`,
	}
}

// compilePy 把 Python 正则翻译为 RE2 后编译，错误带上原始模式。
func compilePy(pattern string) (*regexp.Regexp, error) {
	tr, err := pycompat.TranslateRegex(pattern)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(tr)
	if err != nil {
		return nil, fmt.Errorf("simpleevals: compile %q: %w", pattern, err)
	}
	return re, nil
}

// firstGroup 等价于 Python 的 re.search(...).group(1)；未命中返回 ok=false。
func firstGroup(re *regexp.Regexp, s string) (string, bool) {
	m := re.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// multichoiceExtractor 持有 MMLU 的多语言正则表（按优先级编译好）。
type multichoiceExtractor struct {
	res []*regexp.Regexp
}

// newMultichoiceExtractor 编译全部多语言正则；翻译失败说明模板被改坏，返回错误。
func newMultichoiceExtractor() (*multichoiceExtractor, error) {
	var res []*regexp.Regexp
	for _, r := range MultilingualAnswerRegexes() {
		re, err := compilePy(strings.Replace(MultilingualAnswerPatternTemplate, "{}", r, 1))
		if err != nil {
			return nil, err
		}
		res = append(res, re)
	}
	return &multichoiceExtractor{res: res}, nil
}

// extract 复刻 MMLU 的抽取循环：依次尝试各正则，第一个命中者经
// normalize_extracted_answer 后返回。
func (x *multichoiceExtractor) extract(normalized string) (string, bool) {
	for _, re := range x.res {
		if g, ok := firstGroup(re, normalized); ok {
			return NormalizeExtractedAnswer(g), true
		}
	}
	return "", false
}

// NormalizeResponse 复刻 common.normalize_response：按原顺序删除 markdown 与 LaTeX 记号，
// 使 "**Answer: B**"、"$\boxed{B}$" 之类的写法也能被正则命中。
func NormalizeResponse(s string) string {
	for _, old := range []string{"**", "$\\boxed{", "}$", "\\$", "$\\text{", "$", "\\mathrm{", "\\{", "\\text", "\\(", "\\mathbf{", "{", "\\boxed"} {
		s = strings.ReplaceAll(s, old, "")
	}
	return s
}

// NormalizeExtractedAnswer 复刻 common.normalize_extracted_answer：把阿拉伯、孟加拉
// 与全角字母换成 " A".." D" 再做 Python strip。
func NormalizeExtractedAnswer(s string) string {
	for _, p := range [][2]string{
		{"\u0623", " A"}, {"\u0628", " B"}, {"\u062c", " C"}, {"\u062f", " D"},
		{"\u0985", " A"}, {"\u09ac", " B"}, {"\u09a1", " C"}, {"\u09a2", " D"},
		{"\uff21", " A"}, {"\uff22", " B"}, {"\uff23", " C"}, {"\uff24", " D"},
	} {
		s = strings.ReplaceAll(s, p[0], p[1])
	}
	return pycompat.Strip(s)
}

// formatFields 等价于 Python 的 str.format(**fields)（只支持 {name} 与 {{ }}）：
// 一次扫描完成替换，字段值中的花括号不会被再次解释。
func formatFields(tmpl string, fields map[string]string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(tmpl); i++ {
		c := tmpl[i]
		switch {
		case c == '{' && i+1 < len(tmpl) && tmpl[i+1] == '{':
			b.WriteByte('{')
			i++
		case c == '}' && i+1 < len(tmpl) && tmpl[i+1] == '}':
			b.WriteByte('}')
			i++
		case c == '{':
			end := strings.IndexByte(tmpl[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("simpleevals: format: unclosed '{' at %d", i)
			}
			name := tmpl[i+1 : i+end]
			v, ok := fields[name]
			if !ok {
				return "", fmt.Errorf("simpleevals: format: missing field %q", name)
			}
			b.WriteString(v)
			i += end
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// FormatMultichoiceQuestion 复刻 common.format_multichoice_question。
func FormatMultichoiceQuestion(question, a, b, c, d string) string {
	s, _ := formatFields(QueryTemplateMultichoice, map[string]string{"Question": question, "A": a, "B": b, "C": c, "D": d})
	return s
}

package simpleevals

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/vllm-cibench/cibench/accuracy"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/vllm-cibench/cibench/internal/pycompat"
)

// MGSMLanguages 返回 mgsm_eval.ALL_LANGUAGES（按参考顺序）。
func MGSMLanguages() []string {
	return []string{"bn", "de", "en", "es", "fr", "ja", "ru", "sw", "te", "th", "zh"}
}

// mgsmLatin 是 LATIN_LANGUAGES，决定 group_latin / group_non_latin 分组。
var mgsmLatin = map[string]bool{"de": true, "en": true, "es": true, "fr": true, "sw": true}

// mgsmInstructions 是 LANG_TO_INSTRUCTIONS，逐字节照搬（包括原文中的错别字与标点）。
// bn 中 দেওয়ার 的 য় 在上游是单个码点 U+09DF，这里写成转义 \u09df：它有规范分解
// U+09AF U+09BC，NFC 规范化（编辑器、复制粘贴）会悄悄改写字面量，转义则不会；
// চূড়ান্ত 中的 ড় 上游本来就是 U+09A1 U+09BC 两个码点。
// testdata/reference/mgsm_upstream.json 保存上游原文，测试逐字节比较。
var mgsmInstructions = map[string]string{
	"en": "Solve this math problem. Give the reasoning steps before giving the final answer on the last line by itself in the format of \"Answer:\". Do not add anything other than the integer answer after \"Answer:\".\n\n{input}",
	"bn": "এই গণিতের সমস্যাটি সমাধান করুন। চূড়ান্ত উত্তর দেও\u09dfার আগে যুক্তিসম্পন্ন পদক্ষেপ প্রদান করুন। চূড়ান্ত উত্তরটি একক সংখ্যা হিসাবে \"উত্তর:\" এর পরে শেষ লাইনে দিন। \"উত্তর:\" এর পরে অন্য কিছু যুক্ত করবেন না।.\n\n{input}",
	"de": "Löse dieses Mathematikproblem. Gib die Schritte zur Begründung an, bevor du die endgültige Antwort in der letzten Zeile alleine im Format \"Antwort:\" gibst. Füge nichts anderes als die ganzzahlige Antwort nach \"Antwort:\" hinzu.\n\n{input}",
	"es": "Resuelve este problema matemático. Proporciona los pasos de razonamiento antes de dar la respuesta final en la última línea por sí misma en el formato de \"Respuesta:\". No añadas nada más que la respuesta entera después de \"Respuesta:\".\n\n{input}",
	"fr": "Résolvez ce problème de mathématiques. Donnez les étapes de raisonnement avant de fournir la réponse finale sur la dernière ligne elle-même dans le format de \"Réponse:\". N'ajoutez rien d'autre que la réponse entière après \"Réponse:\".\n\n{input}",
	"ja": "の数学の問題を解いてください。最終的な答えを出す前に、解答の推論過程を記述してください。そして最後の行には \"答え:\" の形式で答えを記述し、その後には整数の答え以外何も追加しないでください。\n\n{input}",
	"ru": "Решите эту математическую задачу. Объясните шаги рассуждения перед тем, как дать окончательный ответ в последней строке сам по себе в формате \"Ответ:\". Не добавляйте ничего, кроме целочисленного ответа после \"Ответ:\".\n\n{input}",
	"sw": "Suluhisha tatizo hili la hesabu. Toa hatua za mantiki kabla ya kutoa jibu la mwisho kwenye mstari wa mwisho peke yake katika muundo wa \"Jibu:\". Usiongeze chochote kingine isipokuwa jibu la integer baada ya \"Jibu:\".\n\n{input}",
	"te": "ఈ గణిత సమస్యను పరిష్కరించండి. చివరి సమాధానాన్ని ఇవ్వదానికి ముందు తర్కాత్మక అదుగులను ఇవ్వండి. చివరి పంక్తిలో మాత్రమే 'సమాధానం:' అనే ఆకారంలో చివరి సమాధానాద్ని ఇవ్వండి సమాధానం: తర్వాత పూర్ణాంక సమాధానానికి తప్పించి ఎదేనా చేర్చవద్దు.\n\n{input}",
	"th": "แก้ปัญหาคณิตศาสตร์นี้ ให้ให้ขั้นตอนการใช้เหตุผลก่อนที่จะให้คำตอบสุดท้ายในบรรทัดสุดท้ายโดยอยู่ในรูปแบบ \"คำตอบ:\" ไม่ควรเพิ่มอะไรนอกจากคำตอบที่เป็นจำนวนเต็มหลังจาก \"คำตอบ:\"\n\n{input}",
	"zh": "解决这个数学问题。在最后一行给出答案前，请提供推理步骤。最后一行应该以 \"答案: \" 的形式独立给出答案。在 \"答案：\" 后不要添加除整数答案之外的任何内容。\n\n{input}",
}

// mgsmAnswerPrefix 是 LANG_TO_ANSWER_PREFIX。
var mgsmAnswerPrefix = map[string]string{
	"en": "Answer", "bn": "উত্তর", "de": "Antwort", "es": "Respuesta", "fr": "Réponse", "ja": "答え",
	"ru": "Ответ", "sw": "Jibu", "te": "సమాధానం", "th": "คำตอบ", "zh": "答案",
}

// MGSMOptions 对应 MGSMEval.__init__ 的参数。
type MGSMOptions struct {
	// NumExamplesPerLang 是每种语言取前多少题（参考：全量 250，debug 10）；0 取 250。
	NumExamplesPerLang int
	// Languages 为空时使用全部 11 种语言。
	Languages []string
}

// mgsmItem 是一道题。
type mgsmItem struct {
	inputs, targets, lang string
}

// MGSM 复刻 simple-evals 的 MGSMEval。
type MGSM struct {
	src     accuracy.Source
	opts    MGSMOptions
	numbers *regexp.Regexp

	mu    sync.Mutex
	items []mgsmItem
}

// NewMGSM 校验语言列表并构造 MGSM 评测。
func NewMGSM(src accuracy.Source, opts MGSMOptions) (*MGSM, error) {
	if src == nil {
		return nil, fmt.Errorf("simpleevals: mgsm: nil Source")
	}
	if opts.NumExamplesPerLang == 0 {
		opts.NumExamplesPerLang = 250
	}
	if opts.NumExamplesPerLang < 0 {
		return nil, optErrf("simpleevals: mgsm: num_examples_per_lang=%d must be > 0", opts.NumExamplesPerLang)
	}
	if len(opts.Languages) == 0 {
		opts.Languages = MGSMLanguages()
	}
	for _, l := range opts.Languages {
		if !slices.Contains(MGSMLanguages(), l) {
			return nil, fmt.Errorf("simpleevals: mgsm: language %s is not a valid language. It should be one in %v", l, MGSMLanguages())
		}
	}
	re, err := compilePy(`\d+\.?\d*`)
	if err != nil {
		return nil, err
	}
	return &MGSM{src: src, opts: opts, numbers: re}, nil
}

// Name 返回 "mgsm"。
func (g *MGSM) Name() string { return "mgsm" }

// readLang 复刻 get_lang_examples：按 "\n" 切行，Python strip 后按制表符恰好分成两列；
// 目标值含小数点时报错。
func (g *MGSM) readLang(ctx context.Context, lang string) ([]mgsmItem, error) {
	name := FileMGSM(lang)
	rc, err := g.src.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("simpleevals: %s: %w", name, err)
	}
	var items []mgsmItem
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	sc.Split(splitLF)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := pycompat.Strip(sc.Text())
		parts := strings.Split(line, "\t")
		if len(parts) != 2 {
			return nil, fmt.Errorf("simpleevals: %s line %d: want 2 tab-separated fields, got %d", name, lineNo, len(parts))
		}
		if strings.Contains(parts[1], ".") {
			return nil, fmt.Errorf("simpleevals: %s line %d: targets %s contains a decimal point", name, lineNo, parts[1])
		}
		items = append(items, mgsmItem{inputs: parts[0], targets: parts[1], lang: lang})
	}
	return items, nil
}

// splitLF 只按 "\n" 切行（Python 对二进制文件逐行迭代的规则），保留 "\r" 交给 strip。
func splitLF(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// Examples 按语言顺序拼接每种语言的前 N 题。
func (g *MGSM) Examples(ctx context.Context) ([]accuracy.Example, error) {
	var items []mgsmItem
	for _, lang := range g.opts.Languages {
		li, err := g.readLang(ctx, lang)
		if err != nil {
			return nil, err
		}
		items = append(items, li[:min(len(li), g.opts.NumExamplesPerLang)]...)
	}
	exs := make([]accuracy.Example, len(items))
	for i, it := range items {
		prompt := strings.ReplaceAll(mgsmInstructions[it.lang], "{input}", it.inputs)
		exs[i] = accuracy.Example{Index: i, ID: fmt.Sprintf("mgsm/%s/%d", it.lang, i), Samples: 1, Messages: []accuracy.Message{{Role: "user", Content: prompt}}}
	}
	g.mu.Lock()
	g.items = items
	g.mu.Unlock()
	return exs, nil
}

// ParseMGSMAnswer 复刻 parse_answer：前缀之后的文本去掉逗号，取最后一个
// \d+\.?\d*（Unicode 数字）并去掉末尾的小数点。
func (g *MGSM) ParseMGSMAnswer(answer, prefix string) string {
	if !strings.Contains(answer, prefix) {
		return ""
	}
	parts := strings.Split(answer, prefix)
	text := pycompat.Strip(parts[len(parts)-1])
	nums := g.numbers.FindAllString(strings.ReplaceAll(text, ",", ""), -1)
	if len(nums) == 0 {
		return ""
	}
	return strings.TrimRight(nums[len(nums)-1], ".")
}

// scoreMGSM 复刻 score_mgsm：预测含小数点时去掉末尾的 0 与小数点，再去逗号比较。
func scoreMGSM(target, prediction string) bool {
	if strings.Contains(prediction, ".") {
		prediction = strings.TrimRight(strings.TrimRight(prediction, "0"), ".")
	}
	return strings.ReplaceAll(target, ",", "") == strings.ReplaceAll(prediction, ",", "")
}

// Score 按语言前缀抽取数字；指标为 {语言: 分数, group_latin|group_non_latin: 分数}。
func (g *MGSM) Score(_ context.Context, ex accuracy.Example, responses []string) (accuracy.SingleResult, error) {
	g.mu.Lock()
	items := g.items
	g.mu.Unlock()
	if ex.Index < 0 || ex.Index >= len(items) {
		return accuracy.SingleResult{}, accuracy.ErrNotLoaded
	}
	it := items[ex.Index]
	resp := first(responses)
	extracted := g.ParseMGSMAnswer(resp, mgsmAnswerPrefix[it.lang])
	score := 0.0
	if scoreMGSM(it.targets, extracted) {
		score = 1
	}
	group := "group_non_latin"
	if mgsmLatin[it.lang] {
		group = "group_latin"
	}
	return accuracy.SingleResult{
		Index: ex.Index, ID: ex.ID, Score: score,
		Metrics: accuracy.Metrics{{Name: it.lang, Value: score}, {Name: group, Value: score}},
		Prompt:  promptText(ex), Response: resp, Responses: responses,
		ExtractedAnswer: extracted, CorrectAnswer: it.targets,
	}, nil
}

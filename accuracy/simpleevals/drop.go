package simpleevals

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"github.com/vllm-cibench/cibench/accuracy"
	"regexp"
	"strings"
	"sync"

	"github.com/vllm-cibench/cibench/internal/pycompat"
	"github.com/vllm-cibench/cibench/internal/pyrandom"
)

// DROPOptions 对应 DropEval.__init__ 的参数。
type DROPOptions struct {
	// NumExamples > 0 时用 random.Random(42).sample 抽取测试子集（debug 为 10）。
	NumExamples int
	// TrainSamplesPerPrompt 是每个提示中的示例数，0 取 3。
	TrainSamplesPerPrompt int
}

// dropSample 是 DROP jsonl 中用到的字段。
type dropSample struct {
	Context    string `json:"context"`
	Completion string `json:"completion"`
	RefText    string `json:"ref_text"`
}

// DROP 复刻 simple-evals 的 DropEval。
//
// 参考实现在线程池里对一个共享的 random.Random(42) 调用 sample 选示例，
// 因此多线程时示例选择取决于调度顺序；这里在 Examples 中按样本顺序预先
// 抽取，等价于 Python 单线程（环境变量 debug 置位）时的确定性结果。
type DROP struct {
	src    accuracy.Source
	opts   DROPOptions
	answer *regexp.Regexp

	mu    sync.Mutex
	tests []dropSample
}

// NewDROP 构造 DROP 评测。
func NewDROP(src accuracy.Source, opts DROPOptions) (*DROP, error) {
	if src == nil {
		return nil, fmt.Errorf("simpleevals: drop: nil Source")
	}
	if opts.TrainSamplesPerPrompt == 0 {
		opts.TrainSamplesPerPrompt = 3
	}
	if opts.NumExamples < 0 || opts.TrainSamplesPerPrompt < 0 {
		return nil, optErrf("simpleevals: drop: num_examples=%d train_samples_per_prompt=%d must be >= 0", opts.NumExamples, opts.TrainSamplesPerPrompt)
	}
	re, err := compilePy(AnswerPattern)
	if err != nil {
		return nil, err
	}
	return &DROP{src: src, opts: opts, answer: re}, nil
}

// Name 返回 "drop"。
func (d *DROP) Name() string { return "drop" }

// readJSONLGz 读取 gzip 压缩的 jsonl，每个非空行一个对象。
func readJSONLGz(ctx context.Context, src accuracy.Source, name string) ([]dropSample, error) {
	rc, err := src.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		return nil, fmt.Errorf("simpleevals: %s: %w", name, err)
	}
	defer zr.Close()
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	var out []dropSample
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var s dropSample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, fmt.Errorf("simpleevals: %s line %d: %w", name, line, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("simpleevals: %s: %w", name, err)
	}
	return out, nil
}

// Examples 读取训练集与开发集，按参考实现抽样并构造提示。
func (d *DROP) Examples(ctx context.Context) ([]accuracy.Example, error) {
	train, err := readJSONLGz(ctx, d.src, FileDROPTrain)
	if err != nil {
		return nil, err
	}
	tests, err := readJSONLGz(ctx, d.src, FileDROPDev)
	if err != nil {
		return nil, err
	}
	ids := make([]int, len(tests))
	for i := range ids {
		ids[i] = i
	}
	if d.opts.NumExamples > 0 {
		ids, err = pyrandom.New(42).SampleIndices(len(tests), d.opts.NumExamples)
		if err != nil {
			return nil, fmt.Errorf("simpleevals: drop: sample %d test examples: %w", d.opts.NumExamples, err)
		}
	}
	picked := make([]dropSample, len(ids))
	for i, id := range ids {
		picked[i] = tests[id]
	}
	tests = picked
	rng := pyrandom.New(42)
	exs := make([]accuracy.Example, len(tests))
	for i, ex := range tests {
		stuffing, err := pyrandom.Sample(rng, train, d.opts.TrainSamplesPerPrompt)
		if err != nil {
			return nil, fmt.Errorf("simpleevals: drop: sample %d train examples: %w", d.opts.TrainSamplesPerPrompt, err)
		}
		exs[i] = accuracy.Example{Index: i, ID: fmt.Sprintf("drop/dev%d", ids[i]), Samples: 1, Messages: []accuracy.Message{{Role: "user", Content: dropPrompt(stuffing, ex)}}}
	}
	d.mu.Lock()
	d.tests = tests
	d.mu.Unlock()
	return exs, nil
}

// dropPrompt 逐字节复刻 DropEval.__call__ 中拼接提示的过程（包括结尾的换行与 20 个空格）。
func dropPrompt(stuffing []dropSample, test dropSample) string {
	var b strings.Builder
	b.WriteString("You will be asked to read a passage and answer a question. Some examples of passages and Q&A are provided below.")
	b.WriteString("\n\n# Examples")
	for _, s := range stuffing {
		b.WriteString("\n---\n" + s.Context + " ")
		b.WriteString(s.Completion + "\n")
	}
	b.WriteString("\n# Your Task\n")
	b.WriteString("\n---\n" + test.Context + " ")
	b.WriteString("\n\nThink step by step, then write a line of the form \"Answer: $ANSWER\" at the end of your response.\n" + strings.Repeat(" ", 20))
	return b.String()
}

// Score 复刻 DROP 的评分：抽取 "Answer:" 之后的文本（未命中则用整段回复），
// 计算对各参考答案的 EM/F1 最大值，score 为任一参考答案模糊匹配。
func (d *DROP) Score(_ context.Context, ex accuracy.Example, responses []string) (accuracy.SingleResult, error) {
	d.mu.Lock()
	tests := d.tests
	d.mu.Unlock()
	if ex.Index < 0 || ex.Index >= len(tests) {
		return accuracy.SingleResult{}, accuracy.ErrNotLoaded
	}
	t := tests[ex.Index]
	resp := first(responses)
	extracted, ok := firstGroup(d.answer, resp)
	if !ok {
		extracted = resp
	}
	correct := strings.Split(t.RefText, "|")
	em, f1 := DropMetric(extracted, correct)
	score := 0.0
	for _, c := range correct {
		if FuzzyMatch(extracted, c) {
			score = 1
			break
		}
	}
	cj, _ := json.Marshal(correct)
	return accuracy.SingleResult{
		Index: ex.Index, ID: ex.ID, Score: score,
		Metrics: accuracy.Metrics{{Name: "em_score", Value: em}, {Name: "f1_score", Value: f1}},
		Prompt:  promptText(ex), Response: extracted, Responses: responses,
		ExtractedAnswer: extracted, CorrectAnswer: string(cj),
	}, nil
}

// DropMetric 复刻 drop_metric：对每个非空参考答案计算 (EM, F1) 并分别取最大值。
// 全部参考答案为空时 Python 会因 max([]) 抛错，这里返回 (0, 0)。
func DropMetric(sample string, reference []string) (em, f1 float64) {
	seen := false
	for _, ans := range reference {
		if pycompat.Strip(ans) == "" {
			continue
		}
		e, f := dropMetrics(sample, ans)
		if !seen || e > em {
			em = e
		}
		if !seen || f > f1 {
			f1 = f
		}
		seen = true
	}
	return em, f1
}

// dropMetrics 复刻 get_drop_metrics 在预测与参考均为单个字符串时的结果：
// 只有一个 bag，匈牙利匹配退化为 1×1，F1 经 numpy 的 round(·, 2)。
func dropMetrics(predicted, gold string) (em, f1 float64) {
	pn := normalizeAnswer(predicted)
	gn := normalizeAnswer(gold)
	if pn == gn {
		em = 1
	}
	pb := bag(pn)
	gb := bag(gn)
	score := 0.0
	if matchNumbersIfPresent(gb, pb) {
		score = computeF1(pb, gb)
	}
	// np.mean 对单元素数组得到 0.0 + score == score；round 作用在 numpy.float64 上。
	return em, pycompat.RoundNumpy(score, 2)
}

// bag 等价于 set(normalized_span.split())。
func bag(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range pycompat.Fields(s) {
		out[w] = true
	}
	return out
}

// computeF1 复刻 _compute_f1（结果乘以 100），运算顺序与 Python 相同以保证逐位一致。
func computeF1(pred, gold map[string]bool) float64 {
	inter := 0
	for w := range gold {
		if pred[w] {
			inter++
		}
	}
	precision, recall := 1.0, 1.0
	if len(pred) > 0 {
		precision = float64(inter) / float64(len(pred))
	}
	if len(gold) > 0 {
		recall = float64(inter) / float64(len(gold))
	}
	f1 := 0.0
	if !(precision == 0 && recall == 0) {
		f1 = (2 * precision * recall) / (precision + recall)
	}
	return f1 * 100
}

// matchNumbersIfPresent 复刻 _match_numbers_if_present：参考答案含数字时，
// 预测必须至少含其中一个（按字符串比较）。
func matchNumbersIfPresent(gold, pred map[string]bool) bool {
	hasGold := false
	for w := range gold {
		if isNumber(w) {
			hasGold = true
			if pred[w] {
				return true
			}
		}
	}
	return !hasGold
}

// isNumber 等价于 _is_number：Python float(text) 是否成功。
func isNumber(s string) bool {
	_, ok := pycompat.ParseFloat(s)
	return ok
}

// punctuation 是 Python string.punctuation。
const punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// removePunc 删除 string.punctuation 中的字符。
func removePunc(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 && strings.ContainsRune(punctuation, r) {
			return -1
		}
		return r
	}, s)
}

// normalizeAnswer 复刻 _normalize_answer：按空格或连字符切分，每个 token 依次
// lower → 去标点（非数字时）→ 数字规范化 → 去冠词 → 空白规整，再用空格连接。
func normalizeAnswer(text string) string {
	var parts []string
	for _, tok := range splitSpaceHyphen(text) {
		t := pycompat.Lower(tok)
		if !isNumber(t) {
			t = removePunc(t)
		}
		if v, ok := pycompat.ParseFloat(t); ok {
			t = pycompat.FloatRepr(v)
		}
		t = strings.Join(pycompat.Fields(removeArticles(t)), " ")
		if pycompat.Strip(t) != "" {
			parts = append(parts, t)
		}
	}
	return pycompat.Strip(strings.Join(parts, " "))
}

// splitSpaceHyphen 等价于 re.split(" |-", text)：保留空串。
func splitSpaceHyphen(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '-' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// normalizeFuzzy 复刻 drop_eval.normalize（模糊匹配用）。
func normalizeFuzzy(s string) string {
	s = removePunc(pycompat.Lower(s))
	s = removeArticles(s)
	return strings.Join(pycompat.Fields(s), " ")
}

// FuzzyMatch 复刻 fuzzy_match：归一化后任一为空则要求相等，否则互为子串即匹配。
func FuzzyMatch(s1, s2 string) bool {
	a, b := normalizeFuzzy(s1), normalizeFuzzy(s2)
	if a == "" || b == "" {
		return a == b
	}
	return strings.Contains(b, a) || strings.Contains(a, b)
}

// removeArticles 等价于 re.sub(r"\b(a|an|the)\b", " ", text)，其中 \b 是 Python 的
// Unicode 词边界（\w 为字母、数字、下划线）。RE2 的 \b 只认 ASCII，故手工扫描：
// 在每个位置按 a、an、the 的顺序尝试（与回溯引擎的分支顺序一致），
// 命中后从匹配末尾继续。
func removeArticles(text string) string {
	rs := []rune(text)
	word := func(i int) bool { return i >= 0 && i < len(rs) && pycompat.IsWord(rs[i]) }
	boundary := func(i int) bool { return word(i-1) != word(i) }
	var b strings.Builder
	for i := 0; i < len(rs); {
		matched := 0
		if boundary(i) {
			for _, alt := range []string{"a", "an", "the"} {
				ar := []rune(alt)
				if i+len(ar) <= len(rs) && string(rs[i:i+len(ar)]) == alt && boundary(i+len(ar)) {
					matched = len(ar)
					break
				}
			}
		}
		if matched > 0 {
			b.WriteByte(' ')
			i += matched
			continue
		}
		b.WriteRune(rs[i])
		i++
	}
	return b.String()
}

package simpleevals

import (
	"context"
	"fmt"
	"github.com/vllm-cibench/cibench/accuracy"
	"regexp"
	"sync"
	"unicode/utf8"

	"github.com/vllm-cibench/cibench/internal/pyrandom"
)

// GPQAOptions 对应 GPQAEval.__init__ 的参数。
type GPQAOptions struct {
	// NRepeats 是每题重复次数（参考实现全量为 10，debug 为 1）；0 取 1。
	NRepeats int
	// Variant 是数据变体，默认 "diamond"（文件 gpqa_diamond.csv）。
	Variant string
	// NumExamples > 0 时用 random.Random(0).sample 抽取子集，此时 NRepeats 必须为 1。
	NumExamples int
}

// gpqaItem 是一个展开（含重复）后的 GPQA 样本及其选项排列。
type gpqaItem struct {
	row    csvRow
	rowID  int // 在 CSV 中的行号（0 起，不含表头），便于审计
	repeat int
	perm   []int
}

// GPQA 复刻 simple-evals 的 GPQAEval。
type GPQA struct {
	src  accuracy.Source
	opts GPQAOptions
	re   *regexp.Regexp

	mu    sync.Mutex
	items []gpqaItem
}

// NewGPQA 校验参数并构造 GPQA 评测；与 Python 相同，抽子集时只允许 1 次重复。
func NewGPQA(src accuracy.Source, opts GPQAOptions) (*GPQA, error) {
	if src == nil {
		return nil, fmt.Errorf("simpleevals: gpqa: nil Source")
	}
	if opts.NRepeats == 0 {
		opts.NRepeats = 1
	}
	if opts.NRepeats < 0 || opts.NumExamples < 0 {
		return nil, optErrf("simpleevals: gpqa: n_repeats=%d num_examples=%d must be >= 0", opts.NRepeats, opts.NumExamples)
	}
	if opts.NumExamples > 0 && opts.NRepeats != 1 {
		return nil, optErrf("simpleevals: gpqa: n_repeats=%d: n_repeats only supported for num_examples (use n_repeats 1 with --examples)", opts.NRepeats)
	}
	if opts.Variant == "" {
		opts.Variant = "diamond"
	}
	re, err := compilePy(AnswerPatternMultichoice)
	if err != nil {
		return nil, err
	}
	return &GPQA{src: src, opts: opts, re: re}, nil
}

// Name 返回 "gpqa"。
func (g *GPQA) Name() string { return "gpqa" }

// gpqaCols 是 GPQA CSV 中用到的列。
var gpqaCols = []string{"Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3"}

// Examples 复刻构造函数中的抽样顺序：同一个 random.Random(0) 先 sample 子集，
// 再为展开后的每个样本依次 sample(range(4), 4) 得到选项排列。
func (g *GPQA) Examples(ctx context.Context) ([]accuracy.Example, error) {
	rows, err := readCSV(ctx, g.src, "gpqa_"+g.opts.Variant+".csv", gpqaCols)
	if err != nil {
		return nil, err
	}
	rng := pyrandom.New(0)
	rowIDs := make([]int, len(rows))
	for i := range rowIDs {
		rowIDs[i] = i
	}
	if g.opts.NumExamples > 0 {
		rowIDs, err = rng.SampleIndices(len(rows), g.opts.NumExamples)
		if err != nil {
			return nil, fmt.Errorf("simpleevals: gpqa: sample %d of %d rows: %w", g.opts.NumExamples, len(rows), err)
		}
	}
	var items []gpqaItem
	for r := 0; r < g.opts.NRepeats; r++ {
		for _, id := range rowIDs {
			items = append(items, gpqaItem{row: rows[id], rowID: id, repeat: r})
		}
	}
	exs := make([]accuracy.Example, len(items))
	for i := range items {
		perm, _ := rng.SampleIndices(4, 4)
		items[i].perm = perm
		choices := g.choices(items[i])
		prompt := FormatMultichoiceQuestion(items[i].row["Question"], choices[0], choices[1], choices[2], choices[3])
		exs[i] = accuracy.Example{Index: i, ID: fmt.Sprintf("gpqa/row%d#r%d", items[i].rowID, items[i].repeat), Messages: []accuracy.Message{{Role: "user", Content: prompt}}, Samples: 1}
	}
	g.mu.Lock()
	g.items = items
	g.mu.Unlock()
	return exs, nil
}

// choices 返回按排列重排后的四个选项。
func (g *GPQA) choices(it gpqaItem) [4]string {
	base := [4]string{it.row["Correct Answer"], it.row["Incorrect Answer 1"], it.row["Incorrect Answer 2"], it.row["Incorrect Answer 3"]}
	var out [4]string
	for i, p := range it.perm {
		out[i] = base[p]
	}
	return out
}

// Score 用 ANSWER_PATTERN_MULTICHOICE 抽取字母并与正确选项比较；指标 chars 为回复的字符数。
func (g *GPQA) Score(_ context.Context, ex accuracy.Example, responses []string) (accuracy.SingleResult, error) {
	g.mu.Lock()
	items := g.items
	g.mu.Unlock()
	if ex.Index < 0 || ex.Index >= len(items) {
		return accuracy.SingleResult{}, accuracy.ErrNotLoaded
	}
	it := items[ex.Index]
	choices := g.choices(it)
	correct := ""
	// Python 的 choices.index 返回第一个相等的选项，重复选项时同样取第一个。
	for i, c := range choices {
		if c == it.row["Correct Answer"] {
			correct = string("ABCD"[i])
			break
		}
	}
	resp := first(responses)
	extracted, _ := firstGroup(g.re, resp)
	score := 0.0
	if extracted != "" && extracted == correct {
		score = 1
	}
	return accuracy.SingleResult{
		Index: ex.Index, ID: ex.ID, Score: score,
		Metrics: accuracy.Metrics{{Name: "chars", Value: float64(utf8.RuneCountInString(resp))}},
		Prompt:  promptText(ex), Response: resp, Responses: responses,
		ExtractedAnswer: extracted, CorrectAnswer: correct,
	}, nil
}

// first 返回第一条回复（没有时为空串）。
func first(rs []string) string {
	if len(rs) == 0 {
		return ""
	}
	return rs[0]
}

// promptText 返回样本最后一条消息的正文，用于审计输出。
func promptText(ex accuracy.Example) string {
	if len(ex.Messages) == 0 {
		return ""
	}
	return ex.Messages[len(ex.Messages)-1].Content
}

package simpleevals

import (
	"context"
	"fmt"
	"github.com/vllm-cibench/cibench/accuracy"
	"sync"

	"github.com/vllm-cibench/cibench/internal/pyrandom"
)

// MMLUOptions 对应 MMLUEval.__init__ 的参数。
type MMLUOptions struct {
	// NumExamples > 0 时用 random.Random(0).sample 抽取子集（debug 为 1）。
	NumExamples int
	// Language 为 "" 或 "EN-US" 时读 mmlu.csv，否则读 mmlu_<Language>.csv。
	Language string
}

// MMLU 复刻 simple-evals 的 MMLUEval（多语言正则版本），按学科类别给出分项指标。
type MMLU struct {
	src  accuracy.Source
	opts MMLUOptions
	x    *multichoiceExtractor

	mu   sync.Mutex
	rows []csvRow
}

// NewMMLU 构造 MMLU 评测并编译多语言正则表。
func NewMMLU(src accuracy.Source, opts MMLUOptions) (*MMLU, error) {
	if src == nil {
		return nil, fmt.Errorf("simpleevals: mmlu: nil Source")
	}
	if opts.NumExamples < 0 {
		return nil, optErrf("simpleevals: mmlu: num_examples=%d must be >= 0", opts.NumExamples)
	}
	x, err := newMultichoiceExtractor()
	if err != nil {
		return nil, err
	}
	return &MMLU{src: src, opts: opts, x: x}, nil
}

// Name 返回 "mmlu"。
func (m *MMLU) Name() string { return "mmlu" }

// file 返回数据文件名。
func (m *MMLU) file() string {
	if m.opts.Language == "" || m.opts.Language == "EN-US" {
		return FileMMLU
	}
	return "mmlu_" + m.opts.Language + ".csv"
}

// Examples 读取 CSV 并按参考实现抽样。
func (m *MMLU) Examples(ctx context.Context) ([]accuracy.Example, error) {
	rows, err := readCSV(ctx, m.src, m.file(), []string{"Question", "A", "B", "C", "D", "Answer", "Subject"})
	if err != nil {
		return nil, err
	}
	ids := make([]int, len(rows))
	for i := range ids {
		ids[i] = i
	}
	if m.opts.NumExamples > 0 {
		ids, err = pyrandom.New(0).SampleIndices(len(rows), m.opts.NumExamples)
		if err != nil {
			return nil, fmt.Errorf("simpleevals: mmlu: sample %d: %w", m.opts.NumExamples, err)
		}
	}
	picked := make([]csvRow, len(ids))
	for i, id := range ids {
		picked[i] = rows[id]
	}
	rows = picked
	exs := make([]accuracy.Example, len(rows))
	for i, r := range rows {
		exs[i] = accuracy.Example{Index: i, ID: fmt.Sprintf("mmlu/row%d", ids[i]), Samples: 1, Messages: []accuracy.Message{{Role: "user",
			Content: FormatMultichoiceQuestion(r["Question"], r["A"], r["B"], r["C"], r["D"])}}}
	}
	m.mu.Lock()
	m.rows = rows
	m.mu.Unlock()
	return exs, nil
}

// Score 先 normalize_response，再依次尝试多语言正则；指标为 {类别: 分数}。
func (m *MMLU) Score(_ context.Context, ex accuracy.Example, responses []string) (accuracy.SingleResult, error) {
	m.mu.Lock()
	rows := m.rows
	m.mu.Unlock()
	if ex.Index < 0 || ex.Index >= len(rows) {
		return accuracy.SingleResult{}, accuracy.ErrNotLoaded
	}
	row := rows[ex.Index]
	resp := NormalizeResponse(first(responses))
	extracted, ok := m.x.extract(resp)
	score := 0.0
	if ok && extracted == row["Answer"] {
		score = 1
	}
	cat, found := subjectCategory[row["Subject"]]
	if !found {
		cat = "other"
	}
	return accuracy.SingleResult{
		Index: ex.Index, ID: ex.ID, Score: score, Metrics: accuracy.Metrics{{Name: cat, Value: score}},
		Prompt: promptText(ex), Response: resp, Responses: responses,
		ExtractedAnswer: extracted, CorrectAnswer: row["Answer"],
	}, nil
}

// subjectCategory 是 mmlu_eval.subject2category，逐项照搬。
var subjectCategory = map[string]string{
	"abstract_algebra": "stem", "anatomy": "other", "astronomy": "stem", "business_ethics": "other",
	"clinical_knowledge": "other", "college_biology": "stem", "college_chemistry": "stem",
	"college_computer_science": "stem", "college_mathematics": "stem", "college_medicine": "other",
	"college_physics": "stem", "computer_security": "stem", "conceptual_physics": "stem",
	"econometrics": "social_sciences", "electrical_engineering": "stem", "elementary_mathematics": "stem",
	"formal_logic": "humanities", "global_facts": "other", "high_school_biology": "stem",
	"high_school_chemistry": "stem", "high_school_computer_science": "stem",
	"high_school_european_history": "humanities", "high_school_geography": "social_sciences",
	"high_school_government_and_politics": "social_sciences", "high_school_macroeconomics": "social_sciences",
	"high_school_mathematics": "stem", "high_school_microeconomics": "social_sciences",
	"high_school_physics": "stem", "high_school_psychology": "social_sciences", "high_school_statistics": "stem",
	"high_school_us_history": "humanities", "high_school_world_history": "humanities", "human_aging": "other",
	"human_sexuality": "social_sciences", "international_law": "humanities", "jurisprudence": "humanities",
	"logical_fallacies": "humanities", "machine_learning": "stem", "management": "other", "marketing": "other",
	"medical_genetics": "other", "miscellaneous": "other", "moral_disputes": "humanities",
	"moral_scenarios": "humanities", "nutrition": "other", "philosophy": "humanities", "prehistory": "humanities",
	"professional_accounting": "other", "professional_law": "humanities", "professional_medicine": "other",
	"professional_psychology": "social_sciences", "public_relations": "social_sciences",
	"security_studies": "social_sciences", "sociology": "social_sciences", "us_foreign_policy": "social_sciences",
	"virology": "other", "world_religions": "humanities",
}

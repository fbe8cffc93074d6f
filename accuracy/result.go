package accuracy

// SingleResult 是单个样本的评分结果，对应 simple-evals 的 SingleEvalResult。
type SingleResult struct {
	Score   float64            `json:"score"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// 以下字段用于 HTML/JSONL 审计
	Prompt          string `json:"prompt"`
	Response        string `json:"response"`
	ExtractedAnswer string `json:"extracted_answer"`
	CorrectAnswer   string `json:"correct_answer"`
}

// EvalResult 是一次评测的聚合结果，对应 simple-evals 的 EvalResult：
// Score 为全部样本分数的均值，Metrics 含各指标均值与 ":std"（总体标准差）。
type EvalResult struct {
	Dataset  string             `json:"dataset"`
	Model    string             `json:"model"`
	Score    float64            `json:"score"`
	Metrics  map[string]float64 `json:"metrics"`
	Examples int                `json:"examples"`
}

package accuracy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Message 是一条对话消息，对应 simple-evals 的 {"role", "content"}。
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Metric 是一个具名指标值。用切片而不是 map 保存，是因为 Python dict 的
// 插入顺序决定了结果 JSON 的键顺序，必须原样保留。
type Metric struct {
	Name  string
	Value float64
}

// Metrics 是保持插入顺序的指标列表，JSON 编码为对象（键序即插入序）。
type Metrics []Metric

// Get 返回名为 name 的指标值；不存在时 ok 为 false。
func (m Metrics) Get(name string) (v float64, ok bool) {
	for _, x := range m {
		if x.Name == name {
			return x.Value, true
		}
	}
	return 0, false
}

// MarshalJSON 以对象形式按插入顺序编码，便于人工审计 JSONL。
func (m Metrics) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, x := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(x.Name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(x.Value)
		if err != nil {
			return nil, fmt.Errorf("accuracy: metric %q: %w", x.Name, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON 解码对象并保留键的出现顺序，使离线重评分得到相同的键序。
func (m *Metrics) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("accuracy: metrics: %w", err)
	}
	if tok == nil {
		*m = nil
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("accuracy: metrics: want object, got %v", tok)
	}
	var out Metrics
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return fmt.Errorf("accuracy: metrics: %w", err)
		}
		var v float64
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("accuracy: metrics: key %v: %w", kt, err)
		}
		out = append(out, Metric{Name: kt.(string), Value: v})
	}
	*m = out
	return nil
}

// SingleResult 是单个样本的评分结果，对应 simple-evals 的 SingleEvalResult，
// 并附带 HTML/JSONL 审计所需的全部原文，使一次运行可以离线复核与重评分。
type SingleResult struct {
	// Index 是样本在 Eval.Examples 返回序列中的下标。
	Index int `json:"index"`
	// ID 是便于阅读的样本标识（如 "gpqa/17#r3"）。
	ID    string  `json:"id"`
	Score float64 `json:"score"`
	// Metrics 是本样本贡献给聚合的指标（不含 score），顺序即 Python 的插入顺序。
	Metrics Metrics `json:"metrics"`
	// Prompt 是发送给模型的用户消息全文。
	Prompt string `json:"prompt"`
	// Response 是用于展示的回复（MMLU 为归一化后的文本，DROP 为抽取出的答案，
	// 与 Python 的 HTML 一致）；Responses 是模型返回的原始文本，重评分只用它。
	Response        string   `json:"response"`
	Responses       []string `json:"responses"`
	ExtractedAnswer string   `json:"extracted_answer"`
	CorrectAnswer   string   `json:"correct_answer"`
	// Error 非空表示至少一个请求失败（重试后仍失败、HTTP 400、空回复），按 simple-evals
	// 的做法计分（400 计为 "No response (bad request)."，其余为空串）；文本已脱敏。
	// ErrorClass 是它的分类（见 ErrorClass），FailedRequests 是本样本失败的请求数。
	Error          string `json:"error,omitempty"`
	ErrorClass     string `json:"error_class,omitempty"`
	FailedRequests int    `json:"failed_requests,omitempty"`
	// Instances 与 Responses 一一对应：给出该回复（或最终失败）的实例地址（已屏蔽凭据）。
	// 只在采样器把请求分到多个实例时填写（见 ChatSampler）。
	Instances []string `json:"instances,omitempty"`
}

// InstanceStats 是一个实例（Target.BaseURLs 之一）在一次评测中收到的请求尝试。
// 重试会换到下一个实例，所以一个实例的故障即使被别的实例上的重试挽回了结论，
// 也在这里按分类留下记录，不会无声消失。
type InstanceStats struct {
	// BaseURL 是实例地址（已屏蔽 URL 中的凭据）。
	BaseURL string `json:"base_url"`
	// Attempts 是发往该实例的请求尝试数（含重试）；Failed 是其中失败的次数，
	// FailedClasses 按 ErrorClass 计数。
	Attempts      int            `json:"attempts"`
	Failed        int            `json:"failed"`
	FailedClasses map[string]int `json:"failed_classes,omitempty"`
}

// EvalResult 是一次评测的聚合结果，对应 simple-evals 的 EvalResult：
// Score 为全部样本分数的均值；Metrics 含其余各指标的均值以及
// "<name>:std"（含 "score:std"）总体标准差，不含 "score" 本身。
type EvalResult struct {
	Dataset  string             `json:"dataset"`
	Model    string             `json:"model"`
	Score    float64            `json:"score"`
	Metrics  map[string]float64 `json:"metrics"`
	Examples int                `json:"examples"`
	// MetricOrder 是 Metrics 的键在 Python 结果 JSON 中的顺序（score 固定在最后）。
	MetricOrder []string `json:"metric_order,omitempty"`
	// Planned 是计划评测的样本数；Partial 为 true 表示运行被取消，只聚合了已完成的样本。
	Planned int  `json:"planned"`
	Partial bool `json:"partial,omitempty"`
	// Requests 是发出的采样请求数（HumanEval 每题 5 个）；Errors 是其中失败的请求数
	// （重试后仍失败、HTTP 400、null 或空的 content），ErrorClasses 按分类计数。
	Requests     int            `json:"requests"`
	Errors       int            `json:"errors"`
	ErrorClasses map[string]int `json:"error_classes,omitempty"`
	// Instances 按 BaseURLs 的顺序给出每个实例收到与失败的尝试数；只在采样器把请求分到
	// 多个实例时填写（见 ChatSampler），单实例时与 Requests/Errors 重复，省略。
	Instances []InstanceStats `json:"instances,omitempty"`
	// Source 记录评分所用数据的来源与每个文件的 sha256。
	Source   *DataSource `json:"source,omitempty"`
	Started  time.Time   `json:"started"`
	Finished time.Time   `json:"finished"`
	// Singles 是逐样本结果，体积大，只写入 JSONL/HTML，不随 EvalResult 序列化。
	Singles []SingleResult `json:"-"`
}

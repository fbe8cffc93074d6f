package functional

import "time"

// Status 是一个用例的结果状态。
type Status string

// 用例状态取值。跳过（能力不支持）不是失败。
const (
	StatusPass Status = "pass"
	StatusFail Status = "fail"
	StatusSkip Status = "skip"
)

// Result 是单个用例的执行结果。
type Result struct {
	CaseID   string        `json:"case_id"`
	Suite    string        `json:"suite"`
	Status   Status        `json:"status"`
	Reason   string        `json:"reason,omitempty"` // 失败或跳过的原因
	Duration time.Duration `json:"duration_ns"`
	Request  string        `json:"request,omitempty"`  // 失败时的请求体（已脱敏）
	Response string        `json:"response,omitempty"` // 失败时截断后的响应
	// Want/Got 是 T.Expect 记录的期望与实际值（仅结构化断言失败时有）。
	Want string `json:"want,omitempty"`
	Got  string `json:"got,omitempty"`
}

// Err 把失败结果转换为 *Failure（可用 errors.As 取出），非失败结果返回 nil。
func (r Result) Err() error {
	if r.Status != StatusFail {
		return nil
	}
	f := &Failure{Case: r.CaseID, Want: r.Want, Got: r.Got}
	if f.Want == "" {
		f.Want, f.Got = "pass", r.Reason
	}
	return f
}

// SuiteSummary 是一个套件的汇总。
type SuiteSummary struct {
	Suite     string  `json:"suite"`
	Total     int     `json:"total"`
	Passed    int     `json:"passed"`
	Failed    int     `json:"failed"`
	Skipped   int     `json:"skipped"`
	PassRatio float64 `json:"pass_ratio"` // passed / (total − skipped)；全部跳过时为 1
}

// Report 是一次功能测试的完整结果。
type Report struct {
	Model    string         `json:"model"`
	Started  time.Time      `json:"started"`
	Duration time.Duration  `json:"duration_ns"`
	Results  []Result       `json:"results"`
	Suites   []SuiteSummary `json:"suites"`
}

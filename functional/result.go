package functional

import (
	"fmt"
	"strings"
	"time"
)

// Status 是一个用例的结果状态。
type Status string

// 用例状态取值。
//   - skip：场景声明该能力不存在（Requires 的 Feature 未开启、Capability 声明为
//     unsupported，或配置没有给出用例需要的值），用例没有发请求；
//   - unsupported：能力声明为 probe，服务端以参数拒绝（400/404/405/422/501）回答，
//     报告写明“不支持”而不是“通过”；
//   - cancelled：运行被取消（作业超时、中断），用例没有得出结论——门禁把它算作失败；
//   - fail：断言不成立，或被声明支持的能力遭拒绝，或任何故障（401/403/429/5xx、传输错误、超时）。
const (
	StatusPass        Status = "pass"
	StatusFail        Status = "fail"
	StatusSkip        Status = "skip"
	StatusUnsupported Status = "unsupported"
	StatusCancelled   Status = "cancelled"
)

// Failing 报告该状态是否让门禁失败：fail 与 cancelled（没有结论不等于通过）。
func (s Status) Failing() bool { return s == StatusFail || s == StatusCancelled }

// NotRun 报告该状态是否表示按声明未执行（skip 与 unsupported），它们不进入通过率。
func (s Status) NotRun() bool { return s == StatusSkip || s == StatusUnsupported }

// Result 是单个用例的执行结果。
type Result struct {
	CaseID string `json:"case_id"`
	Suite  string `json:"suite"`
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"` // 失败或跳过的原因
	// Class 是失败（fail 与 cancelled）的故障类别（见 Class 常量）：http_429、timeout、
	// too_large、server_error、protocol、assertion……；其他状态为空。
	Class    Class         `json:"class,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	Request  string        `json:"request,omitempty"`  // 失败时的请求体（已脱敏）
	Response string        `json:"response,omitempty"` // 失败时截断后的响应
	// What、Want、Got 是 T.Expect 记录的被比较的东西、期望值与实际值（仅结构化断言失败时有；
	// Want 与 Got 同一格式，可以直接比较）。
	What string `json:"what,omitempty"`
	Want string `json:"want,omitempty"`
	Got  string `json:"got,omitempty"`
	// Retried 是本用例中因传输错误、5xx 或 429 而重发的尝试次数（任何状态都记录）。
	// 重试后才通过的用例不是干净的通过：在一个测服务器的 CI 里，不稳定的服务本身就是发现。
	Retried int `json:"retried,omitempty"`
	// RetryReasons 是每次被重试的尝试的结果（"POST /v1/chat/completions: HTTP 503"），
	// 按发生顺序，至多 MaxRetryReasons 项（已脱敏）。
	RetryReasons []string `json:"retry_reasons,omitempty"`
}

// MaxRetryReasons 是 Result.RetryReasons 保留的最多条数（Retried 仍是完整计数）。
const MaxRetryReasons = 8

// PassedAfterRetry 报告用例是否只在重试之后才通过。
func (r Result) PassedAfterRetry() bool { return r.Status == StatusPass && r.Retried > 0 }

// RetryNote 返回"passed after retry: N retried attempt(s): …"一行说明（JUnit、HTML、
// 终端摘要共用），没有重试时为空。
func (r Result) RetryNote() string {
	if r.Retried == 0 {
		return ""
	}
	head := "retried"
	if r.PassedAfterRetry() {
		head = "passed after retry"
	}
	note := fmt.Sprintf("%s: %d retried attempt(s)", head, r.Retried)
	if len(r.RetryReasons) > 0 {
		note += ": " + strings.Join(r.RetryReasons, "; ")
	}
	return note
}

// Err 把失败结果转换为 *Failure（可用 errors.As 取出），非失败结果返回 nil。
func (r Result) Err() error {
	if r.Status != StatusFail {
		return nil
	}
	f := &Failure{Case: r.CaseID, What: r.What, Want: r.Want, Got: r.Got}
	if f.Want == "" {
		f.Want, f.Got = "pass", r.Reason
	}
	return f
}

// SuiteSummary 是一个套件的汇总。
type SuiteSummary struct {
	Suite       string `json:"suite"`
	Total       int    `json:"total"`
	Passed      int    `json:"passed"`
	Failed      int    `json:"failed"`
	Skipped     int    `json:"skipped"`
	Unsupported int    `json:"unsupported,omitempty"`
	Cancelled   int    `json:"cancelled,omitempty"`
	// PassedAfterRetry 是 Passed 中只在重试之后才通过的用例数（见 Result.PassedAfterRetry）。
	PassedAfterRetry int `json:"passed_after_retry,omitempty"`
	// Ran 是应当得出结论的用例数：total − skipped − unsupported（cancelled 计入，
	// 所以被取消的用例拉低通过率）。
	Ran int `json:"ran"`
	// PassRatio = passed / ran；ran 为 0（没有执行任何用例）时为 nil——没有执行的
	// 套件没有通过率，而不是 1。
	PassRatio *float64 `json:"pass_ratio,omitempty"`
}

// Report 是一次功能测试的完整结果。
type Report struct {
	Model string `json:"model"`
	// Selection 是选出这些用例的模式（Catalog.Select 的参数）；空表示全部。门禁据此
	// 判断基线中通过的用例“消失”是否在本次范围内（见 Matches）。
	Selection []string       `json:"selection,omitempty"`
	Started   time.Time      `json:"started"`
	Duration  time.Duration  `json:"duration_ns"`
	Results   []Result       `json:"results"`
	Suites    []SuiteSummary `json:"suites"`
}

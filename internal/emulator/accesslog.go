package emulator

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// AccessEntry 是一条访问记录。刻意不含请求头与请求体，因此不可能泄露 API key。
type AccessEntry struct {
	Time             time.Time     `json:"time"`
	Method           string        `json:"method"`
	Path             string        `json:"path"`
	Status           int           `json:"status"`
	Stream           bool          `json:"stream"`
	PromptTokens     int           `json:"prompt_tokens"`
	CompletionTokens int           `json:"completion_tokens"`
	Duration         time.Duration `json:"duration_ns"`
	Fault            string        `json:"fault,omitempty"`
}

// AccessLog 保存最近 capacity 条访问记录（环形缓冲）以及全量汇总计数，
// 使长时间压测的内存占用有界。
//
// 并发约定：全部方法并发安全。
type AccessLog struct {
	mu       sync.Mutex
	ring     []AccessEntry
	next     int
	full     bool
	total    int
	byStatus map[int]int
	byPath   map[string]int
	prompt   int64
	compl    int64
}

// NewAccessLog 返回容量为 capacity 条的访问日志。
func NewAccessLog(capacity int) *AccessLog {
	if capacity < 1 {
		capacity = 1
	}
	return &AccessLog{ring: make([]AccessEntry, capacity), byStatus: map[int]int{}, byPath: map[string]int{}}
}

// Add 记录一条访问。
func (l *AccessLog) Add(e AccessEntry) {
	l.mu.Lock()
	l.ring[l.next] = e
	l.next++
	if l.next == len(l.ring) {
		l.next, l.full = 0, true
	}
	l.total++
	l.byStatus[e.Status]++
	l.byPath[e.Path]++
	l.prompt += int64(e.PromptTokens)
	l.compl += int64(e.CompletionTokens)
	l.mu.Unlock()
}

// Entries 按时间顺序返回缓冲区中的记录副本。
func (l *AccessLog) Entries() []AccessEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.full {
		return append([]AccessEntry(nil), l.ring[:l.next]...)
	}
	out := append([]AccessEntry(nil), l.ring[l.next:]...)
	return append(out, l.ring[:l.next]...)
}

// WriteLog 以文本行写出缓冲区中的记录（类似常见 HTTP 访问日志）。
func (l *AccessLog) WriteLog(w io.Writer) error {
	for _, e := range l.Entries() {
		fault := ""
		if e.Fault != "" {
			fault = " fault=" + e.Fault
		}
		if _, err := fmt.Fprintf(w, "%s %s %s %d stream=%t prompt_tokens=%d completion_tokens=%d duration=%s%s\n",
			e.Time.UTC().Format(time.RFC3339Nano), e.Method, e.Path, e.Status, e.Stream,
			e.PromptTokens, e.CompletionTokens, e.Duration, fault); err != nil {
			return err
		}
	}
	return nil
}

// Summary 是访问日志的全量汇总。
type Summary struct {
	Model            string         `json:"model"`
	Requests         int            `json:"requests"`
	ByStatus         map[int]int    `json:"by_status"`
	ByPath           map[string]int `json:"by_path"`
	PromptTokens     int64          `json:"prompt_tokens"`
	CompletionTokens int64          `json:"completion_tokens"`
}

// Summary 返回全量汇总的副本。
func (l *AccessLog) Summary(model string) Summary {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := Summary{Model: model, Requests: l.total, ByStatus: map[int]int{}, ByPath: map[string]int{},
		PromptTokens: l.prompt, CompletionTokens: l.compl}
	for k, v := range l.byStatus {
		s.ByStatus[k] = v
	}
	for k, v := range l.byPath {
		s.ByPath[k] = v
	}
	return s
}

// WriteSummary 以缩进 JSON 写出汇总。
func (l *AccessLog) WriteSummary(w io.Writer, model string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(l.Summary(model))
}

// Package scripted 是精度测试共用的确定性“模型”：读懂 simpleevals 合成样例数据的题目，
// 按提示文本的哈希选择回答风格，经真实的 HTTP 往返覆盖每条答案抽取路径。
// 它只供 accuracy 与 accuracy/simpleevals 的测试使用（internal 包，外部不可导入）；
// 核心的桩件测试与数据集的金标准测试共用这一个，而不是各自维护一份副本。
package scripted

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Model 是一个确定性的“模型”：读懂合成样例数据的题目，算出正确答案，
// 再按提示文本的哈希选择一种回答风格，使每条抽取路径（加粗、$\boxed{}$、小写、
// 制表符、全角字母、中文“答案：”、无答案、错误答案……）都被真实的 HTTP 往返覆盖。
type Model struct {
	mu       sync.Mutex
	requests int
	seen     map[string]int
	// Fail 非 nil 且返回非 0 时以该状态码回复（用于 400/500 测试）；n 是从 1 起的请求序号。
	Fail func(n int, prompt string) int
}

// hashStyle 返回 prompt 的哈希对 n 取模，用于挑选回答风格。
func hashStyle(prompt string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(prompt))
	return int(h.Sum32() % uint32(n))
}

var (
	lampRe   = regexp.MustCompile(`lamp \d+ glows (\w+)\.`)
	optionRe = regexp.MustCompile(`(?m)^([A-D])\) (.*)$`)
	sumRe    = regexp.MustCompile(`What is (\d+) \+ (\d+)\?`)
	beadsRe  = regexp.MustCompile(`holds (\d+) rows of (\d+) beads`)
	dropRe   = regexp.MustCompile(`(?s)# Your Task\n\n---\nPassage: .*?The (\w+) scored (\d+) goals in the first half and (\d+) in the second half\.\nQuestion: (.*?)\n`)
	exprRe   = regexp.MustCompile(`def (\w+)\(x: int\):\n    """\[synthetic\] Return (.*?) for the integer x\.`)
)

// answer 根据提示构造回复文本。
func (m *Model) answer(prompt string) string {
	switch {
	case strings.HasPrefix(prompt, "Answer the following multiple choice question"):
		correct := "A"
		if mm := lampRe.FindStringSubmatch(prompt); mm != nil {
			for _, o := range optionRe.FindAllStringSubmatch(prompt, -1) {
				if o[2] == mm[1] {
					correct = o[1]
				}
			}
		} else if mm := sumRe.FindStringSubmatch(prompt); mm != nil {
			a, _ := strconv.Atoi(mm[1])
			b, _ := strconv.Atoi(mm[2])
			for _, o := range optionRe.FindAllStringSubmatch(prompt, -1) {
				if o[2] == strconv.Itoa(a+b) {
					correct = o[1]
				}
			}
		}
		wrong := string("ABCD"[(strings.Index("ABCD", correct)+1)%4])
		full := string(rune('Ａ' + rune(correct[0]-'A')))
		styles := []string{
			"Thinking step by step.\nAnswer: " + correct,
			"**Answer: " + correct + "**",
			"The final choice is $\\boxed{" + correct + "}$.\nAnswer: $\\boxed{" + correct + "}$",
			"answer: " + strings.ToLower(correct),
			"Answer:\t" + correct,
			"Answer: " + full,
			"经过分析，答案：" + correct,
			"I cannot decide between the options.",
			"Answer: " + wrong,
			"Answer\u00a0: " + correct,
		}
		return styles[hashStyle(prompt, len(styles))]
	case strings.Contains(prompt, "beads") || strings.Contains(prompt, "tiles"):
		n := 1200
		if mm := beadsRe.FindStringSubmatch(prompt); mm != nil {
			a, _ := strconv.Atoi(mm[1])
			b, _ := strconv.Atoi(mm[2])
			n = a * b
		}
		s := strconv.Itoa(n)
		styles := []string{
			"Multiply rows by columns.\nAnswer: " + s,
			"Answer: " + s + ".00",
			"Answer: 1,200 beads in total? No: " + s,
			"答案：" + s,
			"Antwort: " + s,
			"Respuesta: " + s,
			"I do not know.",
			"Answer: " + s + "1",
		}
		return styles[hashStyle(prompt, len(styles))]
	case strings.Contains(prompt, "# Your Task"):
		mm := dropRe.FindStringSubmatch(prompt)
		if mm == nil {
			return "Answer: unknown"
		}
		first, _ := strconv.Atoi(mm[2])
		second, _ := strconv.Atoi(mm[3])
		var ans string
		switch mm[4] {
		case "How many goals did they score in total?":
			ans = strconv.Itoa(first + second)
		case "Which team scored?":
			ans = "The " + mm[1] + "."
		default:
			ans = strconv.Itoa(first)
		}
		styles := []string{"Reading the passage.\nAnswer: " + ans, "answer:   " + ans + " goals", ans, "Answer: none of these"}
		return styles[hashStyle(prompt, len(styles))]
	case strings.Contains(prompt, "fully implement the function"):
		mm := exprRe.FindStringSubmatch(prompt)
		if mm == nil {
			return "pass"
		}
		styles := []string{
			"```python\ndef " + mm[1] + "(x: int):\n    return " + mm[2] + "\n```",
			"    return " + mm[2] + "\n",
			"```python\ndef " + mm[1] + "(x: int):\n    return None\n```",
			"```python\ndef " + mm[1] + "(x: int):\n    while True:\n        pass\n```",
			"```python\ndef " + mm[1] + "(x: int):\n    import socket\n    socket.create_connection(('127.0.0.1', 9))\n```",
		}
		return styles[(hashStyle(prompt, len(styles))+m.attempt(prompt))%len(styles)]
	}
	return "I have no idea."
}

// attempt 返回同一提示此前被请求的次数，使 HumanEval 的 5 次采样得到不同
// 但可复现的回复（同一样本的采样是串行的）。
func (m *Model) attempt(prompt string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[string]int{}
	}
	n := m.seen[prompt]
	m.seen[prompt]++
	return n
}

// ServeHTTP 实现 /v1/chat/completions 的最小子集，校验请求字段。
func (m *Model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Model       string  `json:"model"`
		Temperature float64 `json:"temperature"`
		MaxTokens   int     `json:"max_tokens"`
		Messages    []struct {
			Role, Content string
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 || req.Model != "scripted" {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	prompt := req.Messages[len(req.Messages)-1].Content
	if m.Fail != nil {
		m.mu.Lock()
		m.requests++
		n := m.requests
		m.mu.Unlock()
		if code := m.Fail(n, prompt); code != 0 {
			http.Error(w, `{"error":"injected"}`, code)
			return
		}
	}
	text, _ := json.Marshal(m.answer(prompt))
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}]}`, text)
}

// Serve 在 127.0.0.1 随机端口上启动脚本化模型，返回 OpenAI 兼容的根地址（…/v1）；
// 服务在测试结束时关闭。
func Serve(t testing.TB, m *Model) string {
	t.Helper()
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

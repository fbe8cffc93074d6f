package functional

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vllm-cibench/cibench/internal/junit"
)

// WriteJSON 把报告以缩进 JSON 写入 w。
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("functional: write json: %w", err)
	}
	return nil
}

// ReadJSON 读回 WriteJSON 写出的报告，供报告与指标模块离线处理。
func ReadJSON(rd io.Reader) (Report, error) {
	var r Report
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return Report{}, fmt.Errorf("functional: read json: %w", err)
	}
	return r, nil
}

// WriteJUnit 把报告写成 JUnit XML（每个套件一个 testsuite）；失败用例的正文包含
// 脱敏请求与截断响应，通过的用例把说明放在 system-out。
func WriteJUnit(w io.Writer, r Report) error {
	out := junit.Suites{Name: "functional/" + r.Model, Time: junit.Seconds(r.Duration.Seconds())}
	idx := map[string]int{}
	var suites []junit.Suite
	var suiteTime []time.Duration
	for _, res := range r.Results {
		i, ok := idx[res.Suite]
		if !ok {
			i = len(suites)
			idx[res.Suite] = i
			suites = append(suites, junit.Suite{Name: res.Suite})
			suiteTime = append(suiteTime, 0)
		}
		c := junit.Case{Name: res.CaseID, Classname: "functional." + res.Suite, Time: junit.Seconds(res.Duration.Seconds())}
		switch res.Status {
		case StatusFail:
			// type 是故障类别（http_429、timeout、too_large、assertion……），工具据此分类。
			c.Failure = &junit.Message{Message: res.Reason, Type: string(res.Class), Body: "request:\n" + res.Request + "\n\nresponse:\n" + res.Response}
		case StatusCancelled:
			// 被取消的用例没有结论：在 JUnit 中是失败（type=cancelled），不是跳过。
			c.Failure = &junit.Message{Message: res.Reason, Type: string(StatusCancelled)}
		case StatusSkip:
			c.Skipped = &junit.Message{Message: res.Reason}
		case StatusUnsupported:
			c.Skipped = &junit.Message{Message: "unsupported: " + res.Reason, Type: string(StatusUnsupported)}
		default:
			c.SystemOut = res.Reason
		}
		if note := res.RetryNote(); note != "" {
			// 重试后才通过（或重试后仍失败）写进 system-out：JUnit 没有"不稳定的通过"这一状态。
			c.SystemOut = strings.TrimSpace(note + "\n" + c.SystemOut)
		}
		suites[i].Add(c)
		suiteTime[i] += res.Duration
	}
	for i, s := range suites {
		s.Time = junit.Seconds(suiteTime[i].Seconds())
		out.Add(s)
	}
	if err := junit.Write(w, out); err != nil {
		return fmt.Errorf("functional: write junit: %w", err)
	}
	return nil
}

// WriteTable 把报告写成便于终端阅读的表格：每个套件一行（通过/失败/跳过/不支持/
// 取消/通过率，没有执行任何用例时通过率为 "-"），随后列出每个未通过的用例及原因。
func WriteTable(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SUITE\tTOTAL\tPASS\tFAIL\tSKIP\tUNSUP\tCANCEL\tPASS RATIO")
	for _, s := range r.Suites {
		ratio := "-"
		if s.PassRatio != nil {
			ratio = fmt.Sprintf("%.2f", *s.PassRatio)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", s.Suite, s.Total, s.Passed, s.Failed, s.Skipped, s.Unsupported, s.Cancelled, ratio)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("functional: write table: %w", err)
	}
	for _, res := range r.Results {
		if res.Status == StatusPass {
			continue
		}
		status := strings.ToUpper(string(res.Status))
		if res.Status == StatusFail && res.Class != "" {
			status += " [" + string(res.Class) + "]"
		}
		if _, err := fmt.Fprintf(w, "%-4s %s: %s\n", status, res.CaseID, res.Reason); err != nil {
			return fmt.Errorf("functional: write table: %w", err)
		}
	}
	return nil
}

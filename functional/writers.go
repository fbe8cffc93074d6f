package functional

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
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

// junitSuites 等 JUnit XML 结构与 Jenkins/GitLab 接受的通用格式一致：
// 每个套件一个 <testsuite>，每个用例一个 <testcase>，失败为 <failure>，跳过为 <skipped>。
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

// junitSuite 是一个 <testsuite>。
type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

// junitCase 是一个 <testcase>。
type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// junitMessage 是 <failure>/<skipped> 的内容。
type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit 把报告写成 JUnit XML；失败用例的正文包含脱敏请求与截断响应。
func WriteJUnit(w io.Writer, r Report) error {
	out := junitSuites{Name: "functional/" + r.Model, Time: seconds(r.Duration.Seconds())}
	idx := map[string]int{}
	var suiteTime []time.Duration
	for _, res := range r.Results {
		i, ok := idx[res.Suite]
		if !ok {
			i = len(out.Suites)
			idx[res.Suite] = i
			out.Suites = append(out.Suites, junitSuite{Name: res.Suite})
			suiteTime = append(suiteTime, 0)
		}
		s := &out.Suites[i]
		c := junitCase{Name: res.CaseID, Classname: "functional." + res.Suite, Time: seconds(res.Duration.Seconds())}
		switch res.Status {
		case StatusFail:
			c.Failure = &junitMessage{Message: res.Reason, Body: "request:\n" + res.Request + "\n\nresponse:\n" + res.Response}
			s.Failures++
			out.Failures++
		case StatusSkip:
			c.Skipped = &junitMessage{Message: res.Reason}
			s.Skipped++
			out.Skipped++
		default:
			c.SystemOut = res.Reason
		}
		s.Tests++
		out.Tests++
		suiteTime[i] += res.Duration
		s.Time = seconds(suiteTime[i].Seconds())
		s.Cases = append(s.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("functional: write junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("functional: write junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// seconds 以 JUnit 习惯的三位小数秒格式化。
func seconds(v float64) string { return fmt.Sprintf("%.3f", v) }

// WriteTable 把报告写成便于终端阅读的表格：每个套件一行（通过/失败/跳过/通过率），
// 随后列出每个失败与跳过的用例及原因。
func WriteTable(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SUITE\tTOTAL\tPASS\tFAIL\tSKIP\tPASS RATIO")
	for _, s := range r.Suites {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.2f\n", s.Suite, s.Total, s.Passed, s.Failed, s.Skipped, s.PassRatio)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("functional: write table: %w", err)
	}
	for _, res := range r.Results {
		if res.Status == StatusPass {
			continue
		}
		if _, err := fmt.Fprintf(w, "%-4s %s: %s\n", strings.ToUpper(string(res.Status)), res.CaseID, res.Reason); err != nil {
			return fmt.Errorf("functional: write table: %w", err)
		}
	}
	return nil
}

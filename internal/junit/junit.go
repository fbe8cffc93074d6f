// Package junit 是 JUnit XML（Jenkins / GitLab / GitHub 各插件通用的 Ant 方言）的最小
// 子集：testsuites / testsuite / testcase 与 failure / skipped / system-out。
// functional（单个模型的功能报告）与 report（整次 CI 运行：功能用例 + 门禁）共用它，
// 两者写出的 XML 因此结构一致。
//
// 用法：逐个 Suite.Add 用例，Suites.Add 套件（合计随之累加），最后 Write。
package junit

import (
	"encoding/xml"
	"fmt"
	"io"
)

// Counts 是 testsuites 与 testsuite 共有的计数属性（嵌入两者，encoding/xml 把嵌入
// 字段当作外层字段输出，属性顺序不变）。
type Counts struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Skipped  int `xml:"skipped,attr"`
}

// Suites 是根元素 testsuites；计数是全部套件之和（由 Add 维护）。
type Suites struct {
	XMLName xml.Name `xml:"testsuites"`
	Name    string   `xml:"name,attr"`
	Counts
	Time   string  `xml:"time,attr"`
	Suites []Suite `xml:"testsuite"`
}

// Suite 是一个 testsuite 元素；计数由 Add 维护。
type Suite struct {
	Name string `xml:"name,attr"`
	Counts
	Time      string `xml:"time,attr"`
	Timestamp string `xml:"timestamp,attr,omitempty"`
	Cases     []Case `xml:"testcase"`
}

// Case 是一个 testcase 元素；Failure 与 Skipped 至多一个非 nil（都为 nil 即通过）。
type Case struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	Time      string   `xml:"time,attr"`
	Failure   *Message `xml:"failure,omitempty"`
	Skipped   *Message `xml:"skipped,omitempty"`
	SystemOut string   `xml:"system-out,omitempty"`
}

// Message 是 failure / skipped 元素：message 属性给一行摘要，正文给细节。
type Message struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

// Add 把用例追加到套件并计入统计。
func (s *Suite) Add(c Case) {
	s.Tests++
	switch {
	case c.Failure != nil:
		s.Failures++
	case c.Skipped != nil:
		s.Skipped++
	}
	s.Cases = append(s.Cases, c)
}

// Add 把套件追加到根元素并累加合计。
func (r *Suites) Add(s Suite) {
	r.Tests += s.Tests
	r.Failures += s.Failures
	r.Errors += s.Errors
	r.Skipped += s.Skipped
	r.Suites = append(r.Suites, s)
}

// Seconds 把秒数格式化为 JUnit 的 time 属性（三位小数）。
func Seconds(f float64) string { return fmt.Sprintf("%.3f", f) }

// Write 写出 XML 声明、缩进两格的文档与结尾换行。
func Write(w io.Writer, r Suites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

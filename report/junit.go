package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"sort"

	"github.com/vllm-cibench/cibench/functional"
)

// junitSuites 等 junit* 类型是 JUnit XML（Jenkins/GitLab/GitHub 插件通用的
// Ant 方言）的最小子集：testsuites/testsuite/testcase 与 failure/skipped。
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

// junitSuite 是一个 testsuite 元素。
type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

// junitCase 是一个 testcase 元素；Failure 与 Skipped 至多一个非 nil。
type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// junitMessage 是 failure/skipped 元素：message 属性给一行摘要，正文给细节。
type junitMessage struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

// add 把用例计入 suite 的统计。
func (s *junitSuite) add(c junitCase) {
	s.Tests++
	switch {
	case c.Failure != nil:
		s.Failures++
	case c.Skipped != nil:
		s.Skipped++
	}
	s.Cases = append(s.Cases, c)
}

// seconds 把秒数格式化为 JUnit 的 time 属性。
func seconds(f float64) string { return fmt.Sprintf("%.3f", f) }

// WriteJUnit 把功能用例（每个场景×套件一个 testsuite）与全部门禁（一个
// "gates" testsuite，无基线与跳过记为 skipped）写成 JUnit XML。
// 部署等阶段失败没有用例可列，它们以 stage 门禁的形式出现在 gates 中。
func WriteJUnit(w io.Writer, res Result) error {
	root := junitSuites{Name: fmt.Sprintf("cibench %s %s", res.RunType, res.RunID)}
	total := 0.0
	for _, sc := range res.Scenarios {
		if sc.Functional == nil {
			continue
		}
		bySuite := map[string]*junitSuite{}
		var order []string
		for _, r := range sc.Functional.Results {
			s, ok := bySuite[r.Suite]
			if !ok {
				s = &junitSuite{Name: sc.Name + "/functional/" + r.Suite, Timestamp: sc.Functional.Started.UTC().Format("2006-01-02T15:04:05")}
				bySuite[r.Suite] = s
				order = append(order, r.Suite)
			}
			c := junitCase{Name: r.CaseID, Classname: sc.Name + ".functional." + r.Suite, Time: seconds(r.Duration.Seconds())}
			switch r.Status {
			case functional.StatusFail:
				body := r.Reason
				if r.Request != "" {
					body += "\n\nrequest:\n" + r.Request
				}
				if r.Response != "" {
					body += "\n\nresponse:\n" + r.Response
				}
				c.Failure = &junitMessage{Message: r.Reason, Type: "fail", Body: body}
			case functional.StatusSkip:
				c.Skipped = &junitMessage{Message: r.Reason}
			}
			s.add(c)
			total += r.Duration.Seconds()
		}
		for _, name := range order {
			s := bySuite[name]
			d := 0.0
			for _, r := range sc.Functional.Results {
				if r.Suite == name {
					d += r.Duration.Seconds()
				}
			}
			s.Time = seconds(d)
			root.Suites = append(root.Suites, *s)
		}
	}
	if len(res.Gates) > 0 {
		gs := junitSuite{Name: "gates", Time: seconds(0)}
		gates := append([]Gate(nil), res.Gates...)
		sort.SliceStable(gates, func(i, j int) bool { return gates[i].Scenario < gates[j].Scenario })
		for _, g := range gates {
			c := junitCase{Name: g.Name, Classname: g.Scenario + ".gates." + string(g.Kind), Time: seconds(0), SystemOut: gateLine(g)}
			switch g.Verdict {
			case VerdictFail:
				c.Failure = &junitMessage{Message: g.Reason, Type: string(g.Kind), Body: gateLine(g)}
			case VerdictNoBaseline, VerdictSkipped:
				c.Skipped = &junitMessage{Message: string(g.Verdict) + ": " + g.Reason}
			}
			gs.add(c)
		}
		root.Suites = append(root.Suites, gs)
	}
	for _, s := range root.Suites {
		root.Tests += s.Tests
		root.Failures += s.Failures
		root.Skipped += s.Skipped
	}
	root.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("report: junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(root); err != nil {
		return fmt.Errorf("report: junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("report: junit: %w", err)
	}
	return nil
}

// gateLine 把门禁的数值写成一行：当前值、基线、变化与阈值。
func gateLine(g Gate) string {
	s := fmt.Sprintf("%s %s: current=%s", g.Scenario, g.Name, formatMetric(g.Metric, g.Current))
	if g.Baseline != nil {
		s += " baseline=" + formatMetric(g.Metric, *g.Baseline)
	}
	if g.DeltaPct != nil {
		s += fmt.Sprintf(" delta=%+.1f%%", *g.DeltaPct)
	}
	return s + " verdict=" + string(g.Verdict)
}

// formatMetric 按指标类型格式化数值（秒数带单位，比例以百分比显示）。
func formatMetric(metric string, v float64) string {
	switch metric {
	case MetricTTFTP99, MetricE2EP99:
		if v < 0 {
			return "n/a"
		}
		if v < 1 {
			return fmt.Sprintf("%.1fms", v*1000)
		}
		return fmt.Sprintf("%.3fs", v)
	case MetricFailRate:
		return fmt.Sprintf("%.2f%%", v*100)
	case MetricQPS:
		return fmt.Sprintf("%.2f", v)
	case MetricScore:
		return fmt.Sprintf("%.4f", v)
	default:
		return fmt.Sprintf("%g", v)
	}
}

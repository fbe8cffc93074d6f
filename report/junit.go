package report

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/internal/junit"
)

// WriteJUnit 把各阶段的测试套件（rs 中 JUnit 钩子给出的，例如功能用例每个场景×套件一个
// testsuite）与全部门禁（一个 "gates" testsuite，无基线与跳过记为 skipped）写成 JUnit XML。
// 部署等阶段失败没有用例可列，它们以 stage 门禁的形式出现在 gates 中。
// 某个渲染器出错时其余阶段与门禁照常写出，错误（写明阶段）在写完之后返回。
func WriteJUnit(w io.Writer, res Result, rs ...Renderer) error {
	root := junit.Suites{Name: fmt.Sprintf("cibench %s %s", res.RunType, res.RunID)}
	total := 0.0
	var errs []error
	for _, sc := range res.Scenarios {
		for _, rd := range rs {
			if rd.JUnit == nil {
				continue
			}
			suites, err := rd.JUnit(sc)
			if err != nil {
				errs = append(errs, fmt.Errorf("report: junit: %s: %w", rd.Name, err))
				continue
			}
			for _, s := range suites {
				root.Add(junitSuite(s))
				total += s.Seconds
			}
		}
	}
	if len(res.Gates) > 0 {
		gs := junit.Suite{Name: "gates", Time: junit.Seconds(0)}
		gates := append([]gate.Gate(nil), res.Gates...)
		sort.SliceStable(gates, func(i, j int) bool { return gates[i].Scenario < gates[j].Scenario })
		for _, g := range gates {
			c := junit.Case{Name: g.Name, Classname: g.Scenario + ".gates." + string(g.Kind), Time: junit.Seconds(0), SystemOut: gateLine(g)}
			switch g.Verdict {
			case gate.VerdictFail:
				c.Failure = &junit.Message{Message: g.Reason, Type: string(g.Kind), Body: gateLine(g)}
			case gate.VerdictNoBaseline, gate.VerdictSkipped, gate.VerdictInterrupted:
				c.Skipped = &junit.Message{Message: string(g.Verdict) + ": " + g.Reason}
			}
			gs.Add(c)
		}
		root.Add(gs)
	}
	root.Time = junit.Seconds(total)
	if err := junit.Write(w, root); err != nil {
		return fmt.Errorf("report: junit: %w", err)
	}
	return errors.Join(errs...)
}

// gateLine 把门禁的数值写成一行：当前值、基线、变化与阈值。
func gateLine(g gate.Gate) string {
	s := fmt.Sprintf("%s %s: current=%s", g.Scenario, g.Name, FormatMetric(g.Metric, g.Current))
	if g.Baseline != nil {
		s += " baseline=" + FormatMetric(g.Metric, *g.Baseline)
	}
	if g.DeltaPct != nil {
		s += fmt.Sprintf(" delta=%+.1f%%", *g.DeltaPct)
	}
	if g.Interval != nil {
		s += fmt.Sprintf(" interval=[%+.1f%%,%+.1f%%]@%s%%", g.Interval.LoPct, g.Interval.HiPct, strconv.FormatFloat(g.Interval.Level*100, 'f', -1, 64))
		if iv, _ := g.Evidence(); g.Interval.PointPct != nil && strings.Contains(iv, "pooled samples") {
			// 区间属于合并样本的统计量、不包含上面的 delta：写出区间自己的点估计，机器读的一行也不自相矛盾。
			s += fmt.Sprintf(" interval_point=%+.1f%%(%s)", *g.Interval.PointPct, "pooled samples")
		}
	}
	if g.Quantile > 0 && g.Quantile != 0.99 {
		s += " quantile=" + gate.QuantileName(g.Quantile)
	}
	if g.Samples != nil {
		s += fmt.Sprintf(" samples=%d/%d", g.Samples.Current, g.Samples.Baseline)
	}
	if g.Support == gate.SupportInsufficient {
		s += " support=" + gate.SupportInsufficient
	}
	if g.Mode != "" {
		s += " mode=" + g.Mode
	}
	return s + " verdict=" + string(g.Verdict)
}

// FormatMetric 按门禁指标类型格式化数值（秒数带单位，比例以百分比显示），报告各处
// （门禁表、JUnit、各阶段的 HTML 片段）用同一种写法。
func FormatMetric(metric string, v float64) string {
	switch metric {
	case gate.MetricTTFTP99, gate.MetricE2EP99:
		if v < 0 {
			return "n/a"
		}
		// 数字与单位之间一个空格，全报告一致（"45.6 ms"，不是 "45.6ms"）。
		if v < 1 {
			return fmt.Sprintf("%.1f ms", v*1000)
		}
		return fmt.Sprintf("%.3f s", v)
	case gate.MetricFailRate:
		return fmt.Sprintf("%.2f%%", v*100)
	case gate.MetricQPS:
		return fmt.Sprintf("%.2f req/s", v)
	case gate.MetricScore:
		return fmt.Sprintf("%.4f", v)
	default:
		return fmt.Sprintf("%g", v)
	}
}

// Package compare 比较任意两次运行（两个 vLLM 版本、两种加速卡、两套配置……）：读两个运行目录
// （参考驱动写出的 summary.json 及其分节文件，可以来自不同机器），逐场景、逐组合、逐指标给出
// 变化、置信区间、按需求阈值的判定，以及时间花在哪个阶段（explain 包的归因），写成同一张文本表
// 与 HTML 报告（带基线/当前的阶段堆叠图）。两侧各自标注场景、模型、量化、硬件、部署方式与提交。
//
// 判定与 PR 门禁是同一段代码：A 作为基线（gate.FromRun），B 的场景交给 gate.Evaluate，于是区间
// （自助法、Welch 位移）、样本支撑与归因都与门禁一致；不同的是这里比较的是任意两次运行，而不是
// “最近一次每日运行”。命令行入口是 examples/compare。
package compare

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/explain"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/perfreport"
)

// Options 调整比较。零值可用。
type Options struct {
	// Thresholds 是判定列所用的阈值；零值取 gate.DefaultThresholds（PR 门禁的阈值）。
	Thresholds gate.Thresholds
	// Pairs 把 B 的场景名映射到 A 的场景名。为空时同名的场景配对；两侧各只有一个场景时
	// 它们配对（名字不同也可以：例如 vllm-0.9 与 vllm-0.10 两个场景文件）。
	Pairs map[string]string
}

// Side 是比较一侧的标注：运行与场景的身份。
type Side struct {
	Dir      string    `json:"dir,omitempty"`
	RunID    string    `json:"run_id"`
	RunType  string    `json:"run_type"`
	Commit   string    `json:"commit,omitempty"`
	Branch   string    `json:"branch,omitempty"`
	Started  time.Time `json:"started"`
	Scenario string    `json:"scenario"`
	Model    string    `json:"model,omitempty"`
	Quant    string    `json:"quant,omitempty"`
	Deploy   string    `json:"deploy,omitempty"`
	Hardware string    `json:"hardware,omitempty"`
}

// Label 返回一行标注，例如 "run 20261127-0801 (daily) commit abc123, scenario emu, model m, hardware emulator (CPU), deploy emulator"。
func (s Side) Label() string {
	l := fmt.Sprintf("run %s (%s)", s.RunID, s.RunType)
	if s.Commit != "" {
		l += " commit " + s.Commit
	}
	if s.Branch != "" {
		l += " on " + s.Branch
	}
	l += ", scenario " + s.Scenario
	for _, kv := range [][2]string{{"model", s.Model}, {"quant", s.Quant}, {"hardware", s.Hardware}, {"deploy", s.Deploy}} {
		v := kv[1]
		if v == "" {
			v = "not recorded"
		}
		l += ", " + kv[0] + " " + v
	}
	return l
}

// Pair 是一对配对的场景。
type Pair struct {
	A Side `json:"a"`
	B Side `json:"b"`
}

// Row 是一个组合的一项指标：A 的值、B 的值、变化、区间、判定与归因。
type Row struct {
	Pair        int                  `json:"pair"` // Comparison.Pairs 的下标
	Combination string               `json:"combination"`
	Key         gate.Key             `json:"key"`
	Metric      string               `json:"metric"`
	A           *float64             `json:"a,omitempty"`
	B           float64              `json:"b"`
	DeltaPct    *float64             `json:"delta_pct,omitempty"`
	Interval    *gate.Interval       `json:"interval,omitempty"`
	Verdict     gate.Verdict         `json:"verdict"`
	Reason      string               `json:"reason,omitempty"`
	Attribution string               `json:"attribution,omitempty"`
	Explain     *explain.Explanation `json:"explain,omitempty"`
	// Scenario 是 B 一侧的场景名；Limit、Quantile、Statistic、Shift 是判定的其余证据（同 gate.Gate 的
	// 同名字段）。比较页据它们把区间写成与报告相同的样子，并给出与报告相同的一行结论（Headline）。
	Scenario  string      `json:"scenario,omitempty"`
	Limit     float64     `json:"limit,omitempty"`
	Quantile  float64     `json:"quantile,omitempty"`
	Statistic string      `json:"statistic,omitempty"`
	Shift     *gate.Shift `json:"shift,omitempty"`
}

// Gate 把这一行还原成它所来自的性能门禁（只含比较记下的字段），报告的格式化函数
// （gate.Gate.Evidence、report.Headline）因此对两处给出同一串文字。
func (r Row) Gate() gate.Gate {
	k := r.Key
	return gate.Gate{Kind: gate.KindPerformance, Scenario: r.Scenario, Name: "perf/" + r.Key.String() + "/" + r.Metric, Metric: r.Metric,
		Key: &k, Current: r.B, Baseline: r.A, DeltaPct: r.DeltaPct, Limit: r.Limit, Verdict: r.Verdict, Reason: r.Reason,
		Quantile: r.Quantile, Interval: r.Interval, Statistic: r.Statistic, Shift: r.Shift, Explain: r.Explain, Attribution: r.Attribution}
}

// Comparison 是 Runs 的结果。
type Comparison struct {
	Pairs []Pair `json:"pairs"`
	Rows  []Row  `json:"rows"`
	// Unmatched 列出没有配对的场景（只在一侧出现）。
	Unmatched []string `json:"unmatched,omitempty"`
	// Thresholds 是判定所用的门禁设置，ThresholdsFrom 说明它从哪里来（基线运行记下的、调用方给的，
	// 或默认值）：同一对运行在报告与比较页上的区间与判定因此一致，页面写明用了哪一套。
	Thresholds     gate.Thresholds `json:"gate_thresholds"`
	ThresholdsFrom string          `json:"gate_thresholds_from"`
}

// ErrNothingToCompare 表示两次运行没有可配对的场景。
var ErrNothingToCompare = errors.New("compare: no scenario pairs")

// Dirs 读两个运行目录（report.Load）并比较：B 相对 A。
func Dirs(ctx context.Context, dirA, dirB string, opt Options) (*Comparison, error) {
	a, err := report.Load(os.DirFS(dirA))
	if err != nil {
		return nil, fmt.Errorf("compare: %s: %w", dirA, err)
	}
	b, err := report.Load(os.DirFS(dirB))
	if err != nil {
		return nil, fmt.Errorf("compare: %s: %w", dirB, err)
	}
	c, err := Runs(ctx, a, b, opt)
	if c != nil {
		for i := range c.Pairs {
			c.Pairs[i].A.Dir, c.Pairs[i].B.Dir = dirA, dirB
		}
	}
	return c, err
}

// Runs 比较两次运行的性能结果：B 相对 A（A 是基线）。没有可配对的场景时返回 ErrNothingToCompare。
func Runs(ctx context.Context, a, b report.Result, opt Options) (*Comparison, error) {
	rs := []report.Renderer{perfreport.Renderer()}
	inA, errA := a.GateInputs(rs...)
	inB, errB := b.GateInputs(rs...)
	if err := errors.Join(errA, errB); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	pairs := pairUp(a, b, opt.Pairs)
	if len(pairs) == 0 {
		return nil, fmt.Errorf("%w: A has %s, B has %s (pass Options.Pairs to pair different names)",
			ErrNothingToCompare, names(a), names(b))
	}
	c := &Comparison{Thresholds: opt.Thresholds, ThresholdsFrom: "Options.Thresholds"}
	if opt.Thresholds == (gate.Thresholds{}) {
		// 默认用基线一侧（A）运行时记下的门禁设置：与那次运行的报告同一口径（同样的置信水平、判定方式）。
		if a.Thresholds != nil {
			c.Thresholds, c.ThresholdsFrom = *a.Thresholds, "recorded in run "+string(a.RunID)+" (A)"
		} else {
			c.ThresholdsFrom = "defaults (run " + string(a.RunID) + " recorded no gate settings)"
		}
	}
	opt.Thresholds = c.Thresholds
	usedA, usedB := map[int]bool{}, map[int]bool{}
	for _, p := range pairs {
		usedA[p[0]], usedB[p[1]] = true, true
		sa, sb := a.Scenarios[p[0]], b.Scenarios[p[1]]
		pi := len(c.Pairs)
		c.Pairs = append(c.Pairs, Pair{A: side(a, sa), B: side(b, sb)})
		base := gate.FromRun(gate.Run{RunID: a.RunID, Scenarios: []gate.Scenario{inA[p[0]]}})
		src := gate.SourceFunc(func(ctx context.Context, k gate.Key) (gate.Baseline, bool, error) {
			k.Scenario, k.Model, k.Quant = sa.Name, "", ""
			return base.Lookup(ctx, k)
		})
		cur := inB[p[1]]
		cur.Errors, cur.Functional, cur.Accuracy = nil, nil, nil // 只比较性能
		gates, err := gate.Evaluate(ctx, []gate.Scenario{cur}, opt.Thresholds, src)
		if err != nil {
			return c, fmt.Errorf("compare: %w", err)
		}
		for _, g := range gates {
			if g.Kind != gate.KindPerformance || g.Metric == gate.MetricFailRate || g.Key == nil {
				continue
			}
			c.Rows = append(c.Rows, Row{Pair: pi, Combination: g.Key.String(), Key: *g.Key, Metric: g.Metric, A: g.Baseline,
				B: g.Current, DeltaPct: g.DeltaPct, Interval: g.Interval, Verdict: g.Verdict, Reason: g.Reason,
				Attribution: g.Attribution, Explain: g.Explain, Scenario: g.Scenario, Limit: g.Limit, Quantile: g.Quantile,
				Statistic: g.Statistic, Shift: g.Shift})
		}
	}
	for i, sc := range a.Scenarios {
		if !usedA[i] {
			c.Unmatched = append(c.Unmatched, "A: "+sc.Name)
		}
	}
	for i, sc := range b.Scenarios {
		if !usedB[i] {
			c.Unmatched = append(c.Unmatched, "B: "+sc.Name)
		}
	}
	// 按数值排序（c4、c8、c16，与报告一致），不是按组合名的字典序（c16、c4、c8）；同一组合内
	// 指标按 TTFT、E2E、QPS 的顺序。
	metricOrder := map[string]int{gate.MetricTTFTP99: 0, gate.MetricE2EP99: 1, gate.MetricQPS: 2}
	sort.SliceStable(c.Rows, func(i, j int) bool {
		x, y := c.Rows[i], c.Rows[j]
		switch {
		case x.Pair != y.Pair:
			return x.Pair < y.Pair
		case x.Key.InputLength != y.Key.InputLength:
			return x.Key.InputLength < y.Key.InputLength
		case x.Key.OutputLength != y.Key.OutputLength:
			return x.Key.OutputLength < y.Key.OutputLength
		case x.Key.Concurrency != y.Key.Concurrency:
			return x.Key.Concurrency < y.Key.Concurrency
		case x.Key.Backend != y.Key.Backend:
			return x.Key.Backend < y.Key.Backend
		}
		return metricOrder[x.Metric] < metricOrder[y.Metric]
	})
	return c, nil
}

// Summary 是比较的一句总结："3 of 9 combinations failed (pair 1: …)"：一个组合有任何一项指标越过
// 门禁阈值就算失败。
func (c *Comparison) Summary() string {
	failed, total := c.combos()
	s := fmt.Sprintf("%d of %d combinations failed", len(failed), total)
	if len(failed) > 0 {
		s += ": " + strings.Join(failed[:min(3, len(failed))], ", ")
		if len(failed) > 3 {
			s += ", …"
		}
	}
	return s
}

// Headline 是比较页最上面的一行，与运行报告的第一行同一写法："FAIL 1 of 2 combinations failed — "
// 加第一个失败行的 report.Headline（对象、指标、变化、限值、时间花在哪里）；没有失败时是
// "PASS 0 of 2 combinations failed"。
func (c *Comparison) Headline() string {
	for _, r := range c.Rows {
		if r.Verdict == gate.VerdictFail {
			failed, total := c.combos()
			return fmt.Sprintf("FAIL %d of %d combinations failed — %s", len(failed), total, report.Headline(r.Gate()))
		}
	}
	_, total := c.combos()
	return fmt.Sprintf("PASS 0 of %d combinations failed", total)
}

// combos 返回失败的组合名（按行的顺序，每个一次）与组合总数：一个组合有任何一项指标失败就算失败。
// Summary 与 Headline 共用这一个数法。
func (c *Comparison) combos() (failed []string, total int) {
	all, bad := map[[2]string]bool{}, map[[2]string]bool{}
	for _, r := range c.Rows {
		k := [2]string{strconv.Itoa(r.Pair), r.Combination}
		all[k] = true
		if r.Verdict == gate.VerdictFail && !bad[k] {
			bad[k] = true
			failed = append(failed, r.Combination)
		}
	}
	return failed, len(all)
}

// pairUp 返回配对的场景下标 (A, B)：先按 m（B → A），再同名，最后两侧各只有一个场景时配对。
func pairUp(a, b report.Result, m map[string]string) [][2]int {
	idx := func(r report.Result, name string) int {
		for i, sc := range r.Scenarios {
			if sc.Name == name {
				return i
			}
		}
		return -1
	}
	var out [][2]int
	for j, sb := range b.Scenarios {
		name := sb.Name
		if v, ok := m[name]; ok {
			name = v
		}
		if i := idx(a, name); i >= 0 {
			out = append(out, [2]int{i, j})
		}
	}
	if len(out) == 0 && len(a.Scenarios) == 1 && len(b.Scenarios) == 1 {
		out = append(out, [2]int{0, 0})
	}
	return out
}

// names 列出一次运行的场景名（错误信息用）。
func names(r report.Result) string {
	if len(r.Scenarios) == 0 {
		return "no scenarios"
	}
	s := ""
	for i, sc := range r.Scenarios {
		if i > 0 {
			s += ", "
		}
		s += sc.Name
	}
	return s
}

// side 返回一侧的标注。
func side(r report.Result, sc report.Scenario) Side {
	return Side{RunID: r.RunID, RunType: string(r.RunType), Commit: r.Commit, Branch: r.Branch, Started: r.Started,
		Scenario: sc.Name, Model: sc.Model, Quant: sc.Quant, Deploy: sc.Deploy, Hardware: sc.Hardware}
}

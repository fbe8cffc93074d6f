package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/perfreport"
	"github.com/vllm-cibench/cibench/runtype"
)

// 阶段时长估算（issue 29 第 4 部分）：-plan 与每次运行开始时，按同一场景上一次运行的
// 实测（各阶段耗时、各组合的平均 E2E）估算每个阶段的时长；性能阶段用 loadgen.EstimateProfile
// 按档位（含 max_duration 预算）推演，没有上一次运行时在性能阶段开始前做一次短校准。估算
// 超过阶段超时或作业超时时，在任何东西运行之前说出来，并给出放得下的 max_duration。

// stageEstimate 是一个阶段的估算。Known 为 false 表示没有依据（没有上一次运行）。
type stageEstimate struct {
	Stage    string
	Known    bool
	Duration time.Duration
	Timeout  time.Duration
	Source   string
	// Advice 非空时说明放不下以及什么能放下。
	Advice string
}

// previousRun 是同一场景上一次运行的可用数据。
type previousRun struct {
	RunID  string
	Stages map[string]time.Duration // 阶段 → 耗时（只取状态 ok 的阶段）
	Rows   []loadgen.Summary
}

// findPrevious 在产物根目录的 pr/ 与 daily/ 下找 scenario 最近的运行：阶段耗时取同运行类型最近
// 一次有该场景的运行（没有时取另一类型的），压测行取最近一次有压测行的运行。运行目录名以 UTC 时间
// 开头（newRunID），按名字倒序读，找齐即停，所以产物再多也只读最近的几个 summary.json。读不到时返回 nil。
func findPrevious(root string, rt matrix.RunType, scenario string) *previousRun {
	if root == "" {
		return nil
	}
	fsys := os.DirFS(root)
	type dir struct {
		name string
		rt   matrix.RunType
	}
	var dirs []dir
	for _, t := range []matrix.RunType{runtype.PR, runtype.Daily} {
		entries, err := fs.ReadDir(fsys, string(t))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, dir{e.Name(), t})
			}
		}
	}
	sort.SliceStable(dirs, func(i, j int) bool { return dirs[i].name > dirs[j].name })
	var same, other, rows *previousRun
	for _, d := range dirs {
		if same != nil && rows != nil {
			break
		}
		raw, err := fs.ReadFile(fsys, path.Join(string(d.rt), d.name, "summary.json"))
		if err != nil {
			continue
		}
		var res report.Result
		if json.Unmarshal(raw, &res) != nil {
			continue
		}
		for _, sc := range res.Scenarios {
			if sc.Name != scenario {
				continue
			}
			p := &previousRun{RunID: res.RunID, Stages: map[string]time.Duration{}}
			for _, st := range sc.Stages {
				if st.Status == report.StageOK && st.Duration > 0 {
					p.Stages[string(st.Stage)] = time.Duration(st.Duration * float64(time.Second))
				}
			}
			p.Rows, _ = perfreport.Rows(sc)
			switch {
			case d.rt == rt && same == nil:
				same = p
			case d.rt != rt && other == nil:
				other = p
			}
			if rows == nil && len(p.Rows) > 0 {
				rows = p
			}
		}
	}
	best := same
	if best == nil {
		best = other
	}
	if best == nil {
		return nil
	}
	if len(best.Rows) == 0 && rows != nil {
		// 性能行可能来自另一次（例如上一次 PR 只跑了功能阶段）。
		best.Rows = rows.Rows
	}
	return best
}

// speedFrom 由压测汇总行得到速度模型：实测过的组合用它的平均 E2E；没测过的用线性模型，
// TTFT 取最接近的输入长度的平均 TTFT，ITL 取全部行平均 TPOT 的中位数。没有可用的行时 ok 为 false。
func speedFrom(rows []loadgen.Summary) (loadgen.Speed, bool) {
	type key struct{ in, out, c int }
	e2e := map[key][]float64{}
	ttftByIn := map[int][]float64{}
	var tpot []float64
	for _, r := range rows {
		if r.E2E.Count == 0 {
			continue
		}
		k := key{r.InputLength, r.OutputLength, r.Concurrency}
		e2e[k] = append(e2e[k], float64(r.E2E.Avg))
		if r.TTFT.Count > 0 {
			ttftByIn[r.InputLength] = append(ttftByIn[r.InputLength], float64(r.TTFT.Avg))
		}
		if r.TPOT.Count > 0 {
			tpot = append(tpot, float64(r.TPOT.Avg))
		}
	}
	if len(e2e) == 0 {
		return loadgen.Speed{}, false
	}
	itl := time.Duration(medianOf(tpot))
	return loadgen.Speed{
		ITL: itl,
		E2E: func(in, out, c int) time.Duration {
			if xs, ok := e2e[key{in, out, c}]; ok {
				return time.Duration(medianOf(xs))
			}
			best, dist := 0.0, math.MaxInt
			for i, xs := range ttftByIn {
				if d := abs(i - in); d < dist {
					best, dist = medianOf(xs), d
				}
			}
			return time.Duration(best) + time.Duration(max(out-1, 0))*itl
		},
	}, true
}

// medianOf 返回中位数（空切片为 0）；会重排 xs。
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// abs 返回整数的绝对值。
func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// perfEstimate 按速度估算场景的全部性能档位，返回总时长、建议（放不下时）与说明。
func perfEstimate(p *matrix.ScenarioPlan, speed loadgen.Speed, source string) stageEstimate {
	est := stageEstimate{Stage: string(report.StagePerf), Known: true, Timeout: p.Perf.Timeout, Source: source}
	var advice []string
	for _, np := range p.Perf.Profiles {
		e, err := loadgen.EstimateProfile(np.Profile, speed)
		if err != nil {
			est.Known = false
			est.Source = fmt.Sprintf("profile %s not estimated: %v", np.Name, err)
			return est
		}
		est.Duration += e.Duration
		if e.Duration > p.Perf.Timeout {
			share := p.Perf.Timeout * 9 / 10 / time.Duration(len(p.Perf.Profiles))
			fit, ok, _ := loadgen.FitBudget(np.Profile, speed, share)
			switch {
			case ok && fit > 0:
				advice = append(advice, fmt.Sprintf("profile %s: max_duration %v would fit (about %v; each combination keeps its concurrency, fewer requests)",
					np.Name, fit.Round(time.Second), share.Round(time.Second)))
			default:
				advice = append(advice, fmt.Sprintf("profile %s cannot fit even with a budget: one request per worker in each of its %d groups already takes %v; "+
					"reduce concurrency, lengths or epochs, or raise the perf timeout", np.Name, len(e.Groups), e.Floor.Round(time.Minute)))
			}
		}
	}
	est.Advice = strings.Join(advice, "; ")
	return est
}

// estimates 返回场景各启用阶段的估算：功能与精度取上一次运行的耗时，性能按速度推演。
func (d *driver) estimates(p *matrix.ScenarioPlan) []stageEstimate {
	root := d.o.BaselineArtifacts
	if root == "" {
		root = d.o.Artifacts
	}
	prev := findPrevious(root, d.o.RunType, p.Scenario.Name)
	var out []stageEstimate
	fromPrev := func(stage string, timeout time.Duration) stageEstimate {
		e := stageEstimate{Stage: stage, Timeout: timeout}
		if prev != nil {
			if dur, ok := prev.Stages[stage]; ok {
				e.Known, e.Duration, e.Source = true, dur, "run "+prev.RunID
			}
		}
		if !e.Known {
			e.Source = "no previous run of this scenario"
		}
		return e
	}
	if p.Functional.Enabled {
		out = append(out, fromPrev(string(report.StageFunctional), p.Functional.Timeout))
	}
	if p.Perf.Enabled && len(p.Perf.Profiles) > 0 {
		e := stageEstimate{Stage: string(report.StagePerf), Timeout: p.Perf.Timeout, Source: "no previous run of this scenario: calibrated when the perf stage starts"}
		if prev != nil {
			if sp, ok := speedFrom(prev.Rows); ok {
				e = perfEstimate(p, sp, "speed measured in run "+prev.RunID)
			}
		}
		out = append(out, e)
	}
	if p.Accuracy.Enabled {
		out = append(out, fromPrev(string(report.StageAccuracy), p.Accuracy.Timeout))
	}
	for i := range out {
		e := &out[i]
		if e.Known && e.Duration > e.Timeout && e.Advice == "" {
			e.Advice = fmt.Sprintf("the %s stage took %v last time, beyond its %v timeout", e.Stage, e.Duration.Round(time.Second), e.Timeout)
		}
	}
	return out
}

// formatEstimates 把估算写成一行一个阶段（-plan 与运行开始时的日志共用），并报告作业是否放得下。
func formatEstimates(es []stageEstimate, job time.Duration) []string {
	var lines []string
	var total time.Duration
	known := true
	for _, e := range es {
		if !e.Known {
			known = false
			lines = append(lines, fmt.Sprintf("  estimate %-10s unknown (%s)", e.Stage, e.Source))
			continue
		}
		total += e.Duration
		verdict := "fits"
		if e.Duration > e.Timeout {
			verdict = "DOES NOT FIT"
		}
		line := fmt.Sprintf("  estimate %-10s %v of %v timeout: %s (%s)", e.Stage, e.Duration.Round(time.Second), e.Timeout, verdict, e.Source)
		if e.Advice != "" {
			line += "; " + e.Advice
		}
		lines = append(lines, line)
	}
	if known && len(es) > 0 {
		verdict := "fits"
		if total > job {
			verdict = "DOES NOT FIT"
		}
		lines = append(lines, fmt.Sprintf("  estimate %-10s %v of %v job timeout: %s", "total", total.Round(time.Second), job, verdict))
	}
	return lines
}

// logEstimates 在运行开始前为每个场景记录估算；放不下的阶段记 WARN。
func (d *driver) logEstimates() {
	for i := range d.plans {
		p := &d.plans[i]
		es := d.estimates(p)
		for _, e := range es {
			attrs := []any{"scenario", p.Scenario.Name, "stage", e.Stage, "timeout", e.Timeout, "source", e.Source}
			switch {
			case !e.Known:
				d.log.Info("stage estimate unknown", attrs...)
			case e.Duration > e.Timeout:
				d.log.Warn("stage cannot finish inside its timeout", append(attrs, "estimate", e.Duration.Round(time.Second), "advice", e.Advice)...)
			default:
				d.log.Info("stage estimate", append(attrs, "estimate", e.Duration.Round(time.Second))...)
			}
		}
	}
}

// calibrate 在没有上一次运行时测一次服务端的速度：最短与最长的输入各一个流式请求（32 个输出
// token，ignore_eos），由首个内容 chunk 与最后一个 chunk 的时刻得到 TTFT 随输入长度的斜率与 ITL。
// 直接发两个请求，不抓 /metrics（服务端的 /metrics 不可用时也不拖慢性能阶段），不写任何产物。
// 提示由重复的英文词组成，长度按一个词一个 token 估计（只用于估时，不影响压测）。
func calibrate(ctx context.Context, target loadgen.Target, prof loadgen.Profile) (loadgen.Speed, error) {
	p := prof.WithDefaults()
	lo, hi := p.InputLength[0], p.InputLength[0]
	for _, in := range p.InputLength {
		lo, hi = min(lo, in), max(hi, in)
	}
	probe := func(in int) (ttft, itl time.Duration, err error) {
		return streamProbe(ctx, target, p.Backend, in, 32)
	}
	t1, itl, err := probe(lo)
	if err != nil {
		return loadgen.Speed{}, err
	}
	s := loadgen.Speed{TTFT: t1, ITL: itl}
	if hi > lo {
		t2, _, err := probe(hi)
		if err != nil {
			return loadgen.Speed{}, err
		}
		s.PrefillPerToken = max(0, (t2-t1)/time.Duration(hi-lo))
		s.TTFT = max(0, t1-time.Duration(lo)*s.PrefillPerToken)
	}
	return s, nil
}

// streamProbe 发一个流式请求（in 个词的提示、out 个输出 token、ignore_eos），返回首个内容 chunk
// 的时刻（TTFT）与之后相邻 chunk 的平均间隔。响应体上限 4 MiB，期限由调用方的 ctx 给出。
func streamProbe(ctx context.Context, target loadgen.Target, backend loadgen.Backend, in, out int) (time.Duration, time.Duration, error) {
	prompt := strings.TrimSpace(strings.Repeat("hello ", max(in, 1)))
	body := map[string]any{"model": target.Model, "max_tokens": out, "ignore_eos": true, "stream": true, "temperature": 0}
	path := "/completions"
	if backend == loadgen.BackendChat {
		path = "/chat/completions"
		body["messages"] = []map[string]string{{"role": "user", "content": prompt}}
	} else {
		body["prompt"] = prompt
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return 0, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(target.BaseURLs[0], "/")+path, bytes.NewReader(raw))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if target.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+target.APIKey)
	}
	hc := target.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("calibration request: HTTP %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 4<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var first, last time.Time
	chunks := 0
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data:") || strings.Contains(line, "[DONE]") {
			continue
		}
		if !strings.Contains(line, `"content":"`) && !strings.Contains(line, `"text":"`) && !strings.Contains(line, `"reasoning`) {
			continue
		}
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		last = now
		chunks++
	}
	if first.IsZero() {
		return 0, 0, errors.New("calibration request: no content chunk")
	}
	itl := time.Duration(0)
	if chunks > 1 {
		itl = last.Sub(first) / time.Duration(chunks-1)
	}
	return first.Sub(start), itl, nil
}

// calibrateIfUnknown 在性能阶段开始时，若没有上一次运行可供估算，就校准一次服务端速度并
// 记录估算；估算超过阶段超时时记 WARN（给出放得下的 max_duration）。校准失败只记日志。
//
// profiles 是团队的 PerfShapers 改写之后、真正要跑的档位：设置了 Source（embeddings、rerank……）或
// Pacer 的档位，时长不由 chat 流式的速度决定，不校准——也就不向一个可能只有 embeddings 的服务发 chat 请求。
func (d *driver) calibrateIfUnknown(ctx context.Context, p *matrix.ScenarioPlan, target loadgen.Target, profiles []loadgen.Profile) {
	for _, e := range d.estimates(p) {
		if e.Stage == string(report.StagePerf) && e.Known {
			return
		}
	}
	if len(profiles) == 0 {
		return
	}
	for _, prof := range profiles {
		if prof.Source != nil || prof.Pacer != nil {
			return
		}
		if _, err := loadgen.EstimateProfile(prof, loadgen.Speed{}); err != nil {
			return // 扫描、开环、轨迹：时长不由服务端速度决定
		}
	}
	// 校准最多占性能阶段超时的十分之一（且不超过 30 s）：挂住的服务端不能让它吃掉整个阶段。
	cctx, cancel := context.WithTimeout(ctx, min(30*time.Second, p.Perf.Timeout/10))
	defer cancel()
	speed, err := calibrate(cctx, target, profiles[0])
	if err != nil {
		d.log.Warn("perf calibration failed; no duration estimate", "scenario", p.Scenario.Name, "err", d.red.Redact(err.Error()))
		return
	}
	e := perfEstimate(p, speed, fmt.Sprintf("calibrated: TTFT %v + %v/input token, ITL %v", speed.TTFT.Round(time.Millisecond),
		speed.PrefillPerToken, speed.ITL.Round(100*time.Microsecond)))
	attrs := []any{"scenario", p.Scenario.Name, "estimate", e.Duration.Round(time.Second), "timeout", e.Timeout, "source", e.Source}
	if e.Duration > e.Timeout {
		d.log.Warn("perf stage cannot finish inside its timeout", append(attrs, "advice", e.Advice)...)
		return
	}
	d.log.Info("perf stage estimate", attrs...)
}

package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// 扫描的默认参数。每级 10 秒、至少 20 个请求：足以让超载时的排队（积压随时间
// 线性增长）显现在 TTFT/E2E 上；二分到 5% 的精度通常需要 8–12 级，即两分钟左右，
// 远低于 10 分钟的默认预算。
const (
	DefaultSweepStartRate    = 1.0
	DefaultSweepMaxRate      = 1024.0
	DefaultSweepGrowth       = 2.0
	DefaultSweepPrecision    = 0.05
	DefaultSweepStepDuration = 10 * time.Second
	DefaultSweepMinRequests  = 20
	DefaultSweepBudget       = 10 * time.Minute
	DefaultSweepAttainment   = 0.95
)

// 扫描结束的原因（SweepResult.Stop）。
const (
	SweepStopConverged   = "converged"    // 通过与失败的速率之差已不超过 precision
	SweepStopMaxRate     = "max_rate"     // max_rate 仍然满足 SLO：容量至少是它
	SweepStopStartFailed = "start_failed" // 起始速率就不满足：容量低于 start_rate
	SweepStopBudget      = "budget"       // 下一级会超出时间预算
)

// SweepConfig 是容量扫描的参数（Profile.Sweep，YAML 键 sweep:）。零值字段取默认值。
type SweepConfig struct {
	// StartRate 是第一级的到达速率（请求/秒），默认 1。
	StartRate float64 `yaml:"start_rate"`
	// MaxRate 是速率上限，默认 1024：达到它仍满足 SLO 时以 max_rate 结束。
	MaxRate float64 `yaml:"max_rate"`
	// Growth 是尚未遇到失败时每级的倍数，默认 2。
	Growth float64 `yaml:"growth"`
	// Precision 是二分的相对精度：(失败速率 − 通过速率)/通过速率 ≤ Precision 时结束，默认 0.05。
	Precision float64 `yaml:"precision"`
	// StepDuration 是每级的计划时长，请求数 = max(MinRequests, ⌈速率 × 时长⌉)，默认 10s。
	StepDuration time.Duration `yaml:"step_duration"`
	// MinRequests 是每级的最少请求数，默认 20。
	MinRequests int `yaml:"min_requests"`
	// Budget 是整个扫描（每个输入×输出×并发组合）的时间预算，默认 10m：
	// 预计下一级会超出预算时停止；运行中的一级在预算耗尽时被中断并丢弃。
	Budget time.Duration `yaml:"budget"`
	// Attainment 是一级算作"满足 SLO"所需的达标比例（满足全部 goodput SLO 的请求 / 发出的请求），默认 0.95。
	Attainment float64 `yaml:"attainment"`
	// MaxFailRate 是一级允许的失败率，默认 0：出现任何错误即视为超出容量。
	MaxFailRate float64 `yaml:"max_fail_rate"`
}

// withDefaults 返回填好默认值的副本。
func (c SweepConfig) withDefaults() SweepConfig {
	if c.StartRate == 0 {
		c.StartRate = DefaultSweepStartRate
	}
	if c.MaxRate == 0 {
		c.MaxRate = max(DefaultSweepMaxRate, c.StartRate)
	}
	if c.Growth == 0 {
		c.Growth = DefaultSweepGrowth
	}
	if c.Precision == 0 {
		c.Precision = DefaultSweepPrecision
	}
	if c.StepDuration == 0 {
		c.StepDuration = DefaultSweepStepDuration
	}
	if c.MinRequests == 0 {
		c.MinRequests = DefaultSweepMinRequests
	}
	if c.Budget == 0 {
		c.Budget = DefaultSweepBudget
	}
	if c.Attainment == 0 {
		c.Attainment = DefaultSweepAttainment
	}
	return c
}

// validateSweep 校验 control_method: sweep 的参数（Profile.Validate 调用）。
func (p Profile) validateSweep() error {
	c := p.Sweep.withDefaults()
	switch {
	case c.StartRate < 0 || math.IsInf(c.StartRate, 0) || math.IsNaN(c.StartRate):
		return invalid("sweep.start_rate", c.StartRate, "must be > 0")
	case c.MaxRate < c.StartRate:
		return invalid("sweep.max_rate", c.MaxRate, fmt.Sprintf("must be >= start_rate %g", c.StartRate))
	case c.Growth <= 1:
		return invalid("sweep.growth", c.Growth, "must be > 1")
	case c.Precision <= 0 || c.Precision >= 1:
		return invalid("sweep.precision", c.Precision, "must be in (0, 1)")
	case c.StepDuration < 0:
		return invalid("sweep.step_duration", c.StepDuration, "must be > 0")
	case c.MinRequests < 1:
		return invalid("sweep.min_requests", c.MinRequests, "must be >= 1")
	case c.Budget < 0:
		return invalid("sweep.budget", c.Budget, "must be > 0")
	case c.Attainment <= 0 || c.Attainment > 1:
		return invalid("sweep.attainment", c.Attainment, "must be in (0, 1]")
	case c.MaxFailRate < 0 || c.MaxFailRate >= 1:
		return invalid("sweep.max_fail_rate", c.MaxFailRate, "must be in [0, 1)")
	case p.RequestRate != 0:
		return invalid("request_rate", p.RequestRate, "must be unset with control_method sweep (the sweep chooses the rate)")
	}
	slo, err := ParseGoodput(p.Goodput)
	if err != nil {
		return err
	}
	if slo.TTFT == 0 && slo.E2E == 0 {
		// 超载时积压的是排队时间，它只出现在 TTFT 与 E2E 上；只约束 TPOT 的 SLO 看不到超载。
		return invalid("goodput", p.Goodput, `sweep needs a ttft or e2e SLO, e.g. "ttft:2000,e2e:60000"`)
	}
	return nil
}

// SweepStep 是扫描中的一级。
type SweepStep struct {
	// OfferedRate 是这一级的开环到达速率（请求/秒）。
	OfferedRate float64
	// Summary 是这一级的完整汇总（ControlMethod 为 sweep，Round 为级序号，1 起）。
	Summary Summary
	// Attainment 是满足全部 SLO 的请求占发出请求的比例。
	Attainment float64
	// Pass 报告这一级是否满足 SLO 且错误率不超限；Reason 说明未满足的原因。
	Pass   bool
	Reason string
}

// SweepResult 是一个（输入 × 输出 × 并发上限）组合的容量扫描结论。
type SweepResult struct {
	InputLength  int
	OutputLength int
	// Concurrency 是客户端并发上限，0 表示不限（纯开环）。
	Concurrency int
	Backend     string
	Provider    string
	// SLO 是 goodput 目标（与 Profile.Goodput 同写法），Target 是要求的达标比例。
	SLO    string
	Target float64
	// Steps 按执行顺序排列。
	Steps []SweepStep
	// MaxSustainableRate 是满足 SLO 的最高到达速率（请求/秒）；起始速率就不满足时为 0。
	MaxSustainableRate float64
	// MaxGoodput 是各级中测得的最高 goodput（请求/秒）。
	MaxGoodput float64
	// KneeRate 是 goodput 曲线的拐点（goodput 最高的一级，见 kneeRate）；
	// 曲线上没有出现饱和（没有失败的级）时为 0。
	KneeRate float64
	// Stop 是结束原因（SweepStop*），Started 与 Elapsed 是开始时刻与总耗时。
	Stop    string
	Started time.Time
	Elapsed time.Duration
}

// Curve 返回按到达速率升序排列的各级（同一速率只保留最后一次）。
func (s SweepResult) Curve() []SweepStep {
	by := map[float64]SweepStep{}
	for _, st := range s.Steps {
		by[st.OfferedRate] = st
	}
	out := make([]SweepStep, 0, len(by))
	for _, st := range by {
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].OfferedRate < out[j].OfferedRate })
	return out
}

// RunSweep 执行 control_method 为 sweep 的 Profile 并返回每个组合的扫描结论；
// 逐请求记录与每级汇总照常交给 obs（可为 nil），每个组合的结论交给 obs.OnSweepEnd。
// 它等价于 Run 加上收集 OnSweepEnd（与 obs 用 Tee 组合，obs 的钩子一个不少）。
func RunSweep(ctx context.Context, target Target, profile Profile, obs *Observer) ([]SweepResult, error) {
	if profile.ControlMethod != ControlSweep {
		return nil, invalid("control_method", profile.ControlMethod, "RunSweep needs control_method sweep")
	}
	var results []SweepResult
	collect := &Observer{OnSweepEnd: func(res SweepResult) error {
		results = append(results, res)
		return nil
	}}
	_, err := Run(ctx, target, profile, Tee(obs, collect))
	return results, err
}

// sweepAll 对每个输入 × 输出 × 并发组合做一次扫描，返回全部级的汇总行。
func (r *runner) sweepAll(ctx context.Context, inputs []int) ([]Summary, error) {
	var out []Summary
	gi := 0
	for _, in := range inputs {
		for _, outLen := range r.p.OutputLength {
			for _, c := range r.p.Concurrency {
				res, err := r.sweep(ctx, in, outLen, c, &gi)
				for _, st := range res.Steps {
					out = append(out, st.Summary)
				}
				if err != nil {
					return out, err
				}
				if r.obs.OnSweepEnd != nil {
					if err := r.obs.OnSweepEnd(res); err != nil {
						return out, fmt.Errorf("loadgen: observer: sweep end: %w", err)
					}
				}
			}
		}
	}
	return out, nil
}

// sweep 扫描一个组合：先按 Growth 倍增到第一次失败，再在最高通过与最低失败之间二分，
// 直到相对差不超过 Precision、到达 MaxRate 或预算用尽。每一级都是一个普通的开环分组
// （runGroup），所以时延口径、逐请求记录与 /metrics 差值与其他控制方式完全一致。
func (r *runner) sweep(ctx context.Context, in, outLen, conc int, gi *int) (SweepResult, error) {
	cfg := r.p.Sweep.withDefaults()
	res := SweepResult{InputLength: in, OutputLength: outLen, Concurrency: conc, Backend: string(r.p.Backend), Provider: r.t.Provider,
		SLO: strings.Join(r.p.Goodput, ","), Target: cfg.Attainment, Started: time.Now()}
	deadline := res.Started.Add(cfg.Budget)
	bctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	lo, hi := 0.0, math.Inf(1)
	rate := cfg.StartRate
	var lastDrain time.Duration
	for step := 1; ; step++ {
		n := max(cfg.MinRequests, int(math.Ceil(rate*cfg.StepDuration.Seconds())))
		est := time.Duration(float64(n)/rate*float64(time.Second)) + lastDrain
		if time.Now().Add(est).After(deadline) {
			res.Stop = SweepStopBudget
			break
		}
		g := Group{Index: *gi, InputLength: in, OutputLength: outLen, Concurrency: conc, Round: step}
		*gi++
		r.p.RequestRate = rate
		s, err := r.runGroup(bctx, g, n, conc, step == 1)
		r.p.RequestRate = 0
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) && bctx.Err() != nil {
				res.Stop = SweepStopBudget // 预算在这一级中途用尽：丢弃不完整的一级
				break
			}
			return finishSweep(res, lo), err
		}
		st := judgeStep(s, rate, cfg, r.slo)
		res.Steps = append(res.Steps, st)
		lastDrain = s.E2E.P99
		if st.Pass {
			lo = rate
		} else {
			hi = rate
		}
		switch {
		case lo == 0 && !st.Pass:
			res.Stop = SweepStopStartFailed
		case math.IsInf(hi, 1) && lo >= cfg.MaxRate:
			res.Stop = SweepStopMaxRate
		case !math.IsInf(hi, 1) && (hi-lo)/lo <= cfg.Precision:
			res.Stop = SweepStopConverged
		}
		if res.Stop != "" {
			break
		}
		if math.IsInf(hi, 1) {
			rate = min(rate*cfg.Growth, cfg.MaxRate)
		} else {
			rate = (lo + hi) / 2
		}
	}
	return finishSweep(res, lo), nil
}

// finishSweep 填写最大可持续速率、最高 goodput 与拐点。
func finishSweep(res SweepResult, lo float64) SweepResult {
	res.MaxSustainableRate = lo
	res.Elapsed = time.Since(res.Started)
	for _, st := range res.Steps {
		res.MaxGoodput = max(res.MaxGoodput, st.Summary.Goodput)
	}
	res.KneeRate = kneeRate(res.Curve())
	return res
}

// judgeStep 判断一级是否在容量之内：失败率不超过 MaxFailRate，且满足全部 SLO 的
// 请求占发出请求的比例不低于 Attainment。
func judgeStep(s Summary, rate float64, cfg SweepConfig, slo SLO) SweepStep {
	st := SweepStep{OfferedRate: rate, Summary: s}
	good := 0.0
	if s.Goodput > 0 {
		good = math.Round(s.Goodput * s.TotalTime.Seconds())
	}
	if s.NumPrompts > 0 {
		st.Attainment = good / float64(s.NumPrompts)
	}
	switch {
	case s.NumPrompts == 0:
		st.Reason = "no request completed"
	case s.FailRate > cfg.MaxFailRate+1e-12:
		st.Reason = fmt.Sprintf("fail rate %.2f%% above %.2f%% (%s)", s.FailRate*100, cfg.MaxFailRate*100, classList(s.FailureClasses))
	case st.Attainment < cfg.Attainment-1e-12:
		st.Reason = fmt.Sprintf("SLO attainment %.1f%% below %.1f%% (ttft p99 %s, e2e p99 %s)", st.Attainment*100, cfg.Attainment*100,
			s.TTFT.P99.Round(time.Millisecond), s.E2E.P99.Round(time.Millisecond))
	default:
		st.Pass = true
	}
	return st
}

// classList 把失败分类写成 "timeout=3 http=1"（按名字排序）。
func classList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// kneeRate 返回 goodput 曲线的拐点：goodput 最高的那一级的到达速率。开环超载时
// 积压让越来越多的请求违反 SLO，goodput 在容量附近达到峰值后回落（而不是像闭环那样
// 走平），所以峰值处就是"再加负载也换不来更多合格请求"的拐点；常用的 Kneedle
// 假设曲线单调饱和，对这种先升后降的曲线会选到最低的一级。只有曲线上既有通过、又有
// 失败的级（确实看到了饱和）时才有意义，否则返回 0。
func kneeRate(curve []SweepStep) float64 {
	saturated, passed := false, false
	for _, st := range curve {
		saturated = saturated || !st.Pass
		passed = passed || st.Pass
	}
	if !saturated || !passed {
		return 0
	}
	best, knee := math.Inf(-1), 0.0
	for _, st := range curve {
		if st.Summary.Goodput > best {
			best, knee = st.Summary.Goodput, st.OfferedRate
		}
	}
	return knee
}

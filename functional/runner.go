package functional

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/vllm-cibench/cibench/internal/retry"
)

// Options 是 Runner 的执行参数（带 yaml 标签，可放进配置文件）。
type Options struct {
	// RequestTimeout 是单个 HTTP 请求（含读完响应体）的超时；0 时取 Config.Request.Timeout
	// （Config 为 nil 时 120s）。
	RequestTimeout time.Duration `yaml:"request_timeout" json:"request_timeout"`
	// Retries 是传输错误、5xx 与 429 的重试次数：0 取默认 2，负数表示不重试
	// （与 metrics 推送、accuracy 的 Retries 同一语义，见 internal/retry）。
	Retries int `yaml:"retries" json:"retries"`
	// MaxRetryAfter 是 429 的 Retry-After 愿意等待的上限，默认 10s；服务端要求等得
	// 更久时不再重试，用例以写明 Retry-After 的失败结束（而不是把作业拖到超时）。
	MaxRetryAfter time.Duration `yaml:"max_retry_after" json:"max_retry_after"`
	// RetryBackoff 是第 k 次重试前等待 k*RetryBackoff，默认 200ms。
	RetryBackoff time.Duration `yaml:"retry_backoff" json:"retry_backoff"`
	// MaxResponseBytes 是单个响应体（含整个 SSE 流）与单个 SSE 事件的字节上限，默认
	// DefaultMaxResponseBytes（64 MiB）；超过时用例以 too_large 失败，内存由配置而不是
	// 服务端决定。0 时取 Config.Request.MaxResponseBytes；负数表示不限。
	MaxResponseBytes int64 `yaml:"max_response_bytes" json:"max_response_bytes"`
	// Parallelism 是同时执行的用例数上限，默认 8。
	Parallelism int `yaml:"parallelism" json:"parallelism"`
	// Config 是套件参数；nil 表示 DefaultConfig。
	Config *Config `yaml:"-" json:"-"`
	// Features 是 Target.Features 与套件参数中 requires 可以引用的能力登记表；nil 表示
	// DefaultFeatures。用了厂商能力的调用方传入登记过它的同一张表（见 NewCatalog）。
	Features *Features `yaml:"-" json:"-"`
	// Now 是时钟，nil 表示 time.Now；测试可注入固定时钟。
	Now func() time.Time `yaml:"-" json:"-"`
}

// DefaultOptions 返回需求 §4（docs/requirements.md）的默认值：120 秒超时、重试 2 次。
func DefaultOptions() Options {
	return Options{RequestTimeout: 120 * time.Second, Retries: 2, RetryBackoff: 200 * time.Millisecond, MaxRetryAfter: 10 * time.Second,
		MaxResponseBytes: DefaultMaxResponseBytes, Parallelism: 8}
}

// withDefaults 补齐零值字段。
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Features == nil {
		o.Features = DefaultFeatures()
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = d.RequestTimeout
	}
	o.Retries = retry.Count(o.Retries, d.Retries)
	if o.RetryBackoff == 0 {
		o.RetryBackoff = d.RetryBackoff
	}
	if o.MaxRetryAfter == 0 {
		o.MaxRetryAfter = d.MaxRetryAfter
	}
	if o.Parallelism == 0 {
		o.Parallelism = d.Parallelism
	}
	if o.MaxResponseBytes == 0 {
		o.MaxResponseBytes = d.MaxResponseBytes
	} else if o.MaxResponseBytes < 0 {
		o.MaxResponseBytes = 0
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Runner 对一个 Target 执行用例。Runner 可被多个 goroutine 同时调用 Run。
type Runner struct {
	target Target
	opts   Options
	cfg    Config
}

// NewRunner 校验 target 与 opts 并返回 Runner。
func NewRunner(target Target, opts Options) (*Runner, error) {
	if err := target.Validate(opts.Features); err != nil {
		return nil, err
	}
	if c := opts.Config; c != nil {
		// 调用方没有显式给出的界限取套件配置（request.yaml）中的值。
		if opts.RequestTimeout == 0 {
			opts.RequestTimeout = c.Request.Timeout
		}
		if opts.MaxResponseBytes == 0 {
			opts.MaxResponseBytes = c.Request.MaxResponseBytes
		}
	}
	o := opts.withDefaults()
	if o.RequestTimeout < 0 {
		return nil, fmt.Errorf("functional: new runner: request_timeout %v must be > 0", o.RequestTimeout)
	}
	if o.Parallelism < 1 {
		return nil, fmt.Errorf("functional: new runner: parallelism %d must be >= 1", o.Parallelism)
	}
	cfg := DefaultConfig()
	if o.Config != nil {
		cfg = *o.Config
	}
	if err := cfg.Validate(o.Features); err != nil {
		return nil, fmt.Errorf("functional: new runner: %w", err)
	}
	return &Runner{target: target, opts: o, cfg: cfg}, nil
}

// Run 以至多 Parallelism 个并发执行 cases（Isolated 的用例在其后逐个单独执行；服务声明了
// batch_invariant: supported 时它们与其它用例一起并发），所有用例结束后
// 返回报告；结果顺序与 cases 相同。
// ctx 取消后，进行中的请求随之中断，这些用例以及尚未开始的用例记为 cancelled
// （原因写明被取消；门禁把它算作失败），返回的 error 为 ctx.Err()；其他情况下
// error 为 nil，用例失败只体现在报告里。
//
// 运行任何用例之前，声明了 Case.Params 的用例的参数块（Options.Config 的 params.<ID>）先被严格
// 校验：有错时一个用例也不运行，返回空报告与包装 ErrParams 的错误（带文件:行:列）。
func (r *Runner) Run(ctx context.Context, cases []Case) (Report, error) {
	var perrs []error
	for _, c := range cases {
		if err := checkCaseParams(r.cfg.Params, c); err != nil {
			perrs = append(perrs, err)
		}
	}
	if len(perrs) > 0 {
		return Report{Model: r.target.Model}, fmt.Errorf("functional: run: %w", errors.Join(perrs...))
	}
	start := r.opts.Now()
	results := make([]Result, len(cases))
	notStarted := func(i int) Result {
		return Result{CaseID: cases[i].ID, Suite: cases[i].Suite, Status: StatusCancelled, Class: ClassCancelled, Reason: "run cancelled before start: " + context.Cause(ctx).Error()}
	}
	// 服务停止回答时（见 liveness）其余用例立即失败、进行中的被取消，阶段在几秒内结束，而不是每个用例
	// 各等满自己的超时与重试。rctx 只为此取消；调用方的 ctx 取消仍按上面的 cancelled 处理。
	lv := newLiveness(r.opts.Now)
	rctx, rcancel := context.WithCancelCause(ctx)
	defer rcancel(nil)
	dead := func(i int) Result {
		return Result{CaseID: cases[i].ID, Suite: cases[i].Suite, Status: StatusFail, Class: ClassUnresponsive, Reason: lv.unresponsive() + "; not run"}
	}
	one := func(i int) Result {
		switch {
		case ctx.Err() != nil:
			return notStarted(i)
		case lv.unresponsive() != "":
			return dead(i)
		}
		res := r.runOne(rctx, cases[i], lv)
		if lv.unresponsive() != "" && ctx.Err() == nil && res.Status == StatusFail && res.Class == ClassCancelled {
			// 判定之后被取消的在途用例：原因是服务无响应，不是运行被取消。
			res.Class, res.Reason = ClassUnresponsive, lv.unresponsive()+"; cancelled: "+res.Reason
		}
		if res.Status == StatusCancelled && ctx.Err() == nil && lv.unresponsive() != "" {
			res.Status, res.Class, res.Reason = StatusFail, ClassUnresponsive, lv.unresponsive()+"; cancelled"
		}
		return res
	}
	// 用例从不返回错误（失败只进报告），所以这里只用 errgroup 的并发上限；
	// ctx 取消后还没拿到名额的用例记为未开始即取消。
	// 服务声明了批不变（batch_invariant: supported，如模拟器或 VLLM_BATCH_INVARIANT=1）时，同批的其它
	// 请求不改变它的回答：Isolated 的用例不必等别的用例跑完再逐个运行，和其它用例一起并发。
	isolate := r.target.Support(CapBatchInvariant) != SupportSupported
	var g errgroup.Group
	g.SetLimit(r.opts.Parallelism)
	for i := range cases {
		if cases[i].Isolated && isolate {
			continue
		}
		if ctx.Err() != nil {
			results[i] = notStarted(i)
			continue
		}
		if lv.unresponsive() != "" {
			results[i] = dead(i)
			continue
		}
		g.Go(func() error {
			results[i] = one(i)
			if lv.unresponsive() != "" {
				rcancel(errServerUnresponsive)
			}
			return nil
		})
	}
	_ = g.Wait()
	// 需要固定批的用例在其它用例全部结束后逐个运行（Case.Isolated）：服务端上只有它自己的请求。
	for i := range cases {
		if !cases[i].Isolated || !isolate {
			continue
		}
		results[i] = one(i)
	}
	rep := Report{Model: r.target.Model, Started: start, Duration: r.opts.Now().Sub(start), Results: results}
	rep.Suites = Summarize(results)
	return rep, ctx.Err()
}

// errServerUnresponsive 是服务被判为无响应时取消在途用例的原因。
var errServerUnresponsive = errors.New("functional: server unresponsive")

// runOne 在独立 goroutine 中执行一个用例，使 Fatalf/Skipf 的 runtime.Goexit
// 只结束该用例。
func (r *Runner) runOne(ctx context.Context, c Case, lv *liveness) Result {
	res := Result{CaseID: c.ID, Suite: c.Suite}
	for _, f := range c.Requires {
		// 没登记的能力名多半是拼写错误：记为失败并列出登记过的名字，而不是永远“未开启”地跳过。
		if err := r.opts.Features.Check(f); err != nil {
			res.Status, res.Class, res.Reason = StatusFail, ClassAssertion, "case requires an unregistered feature: "+err.Error()
			return res
		}
		if !r.target.Has(f) {
			res.Status, res.Reason = StatusSkip, fmt.Sprintf("feature %q not enabled for this scenario", f)
			return res
		}
	}
	t := newT(c.ID, r.target, &r.cfg, r.opts)
	t.params = c.Params
	if ct, ok := t.hc.Transport.(*caseTransport); ok {
		ct.heard = lv.heard
	}
	began := r.opts.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				t.record(ClassPanic, fmt.Sprintf("case panicked: %v", p))
			}
		}()
		c.Run(ctx, t)
	}()
	<-done
	res.Duration = r.opts.Now().Sub(began)
	res.Status, res.Class, res.Reason = t.outcome()
	res.Reason = redact(res.Reason, r.target.APIKey)
	if ctx.Err() == nil {
		// 结局交给无响应判定：超时或传输故障、其间没听到服务端一个字节的用例记一次，其余结局清零。
		lv.ended(c.ID, began, res.Class)
	}
	res.Retried, res.RetryReasons = t.rec.retries()
	for i := range res.RetryReasons {
		res.RetryReasons[i] = redact(res.RetryReasons[i], r.target.APIKey)
	}
	if (res.Status == StatusFail || res.Status == StatusUnsupported) && ctx.Err() != nil {
		// 取消打断的用例没有结论：不是 skip（会让门禁通过），也不是普通失败（原因是
		// 取消而不是服务端）。已经记录的失败原因保留在后面，便于排查。
		why := "run cancelled: " + context.Cause(ctx).Error()
		if res.Status == StatusFail && res.Reason != "" {
			why += " (after: " + res.Reason + ")"
		}
		res.Status, res.Class, res.Reason = StatusCancelled, ClassCancelled, why
	}
	if res.Status == StatusFail {
		res.Request, res.Response = t.rec.snapshot()
		if f := t.structured(); f != nil {
			res.What, res.Want, res.Got = f.What, f.Want, redact(f.Got, r.target.APIKey)
		}
		res.Request = redact(res.Request, r.target.APIKey)
		res.Response = redact(res.Response, r.target.APIKey)
	}
	return res
}

// redact 从记录中抹掉密钥（以防服务端把它回显在错误信息里）。
func redact(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "***")
}

// Summarize 按套件首次出现的顺序汇总结果；通过率 = passed / ran，
// ran = total − skipped − unsupported；ran 为 0 时没有通过率（nil）。
func Summarize(results []Result) []SuiteSummary {
	var order []string
	by := map[string]*SuiteSummary{}
	for _, r := range results {
		s, ok := by[r.Suite]
		if !ok {
			s = &SuiteSummary{Suite: r.Suite}
			by[r.Suite] = s
			order = append(order, r.Suite)
		}
		s.Total++
		switch r.Status {
		case StatusPass:
			s.Passed++
			if r.Retried > 0 {
				s.PassedAfterRetry++
			}
		case StatusFail:
			s.Failed++
		case StatusSkip:
			s.Skipped++
		case StatusUnsupported:
			s.Unsupported++
		case StatusCancelled:
			s.Cancelled++
		}
	}
	out := make([]SuiteSummary, 0, len(order))
	for _, name := range order {
		s := by[name]
		s.Ran = s.Total - s.Skipped - s.Unsupported
		if s.Ran > 0 {
			r := float64(s.Passed) / float64(s.Ran)
			s.PassRatio = &r
		}
		out = append(out, *s)
	}
	return out
}

// Failed 返回报告中失败用例的 ID（按报告顺序），不含 cancelled（见 Failing）。
func (r Report) Failed() []string {
	var out []string
	for _, res := range r.Results {
		if res.Status == StatusFail {
			out = append(out, res.CaseID)
		}
	}
	return out
}

// Count 返回状态为 s 的用例数。
func (r Report) Count(s Status) int {
	n := 0
	for _, res := range r.Results {
		if res.Status == s {
			n++
		}
	}
	return n
}

// Result 返回 ID 为 id 的结果。
func (r Report) Result(id string) (Result, bool) {
	i := slices.IndexFunc(r.Results, func(x Result) bool { return x.CaseID == id })
	if i < 0 {
		return Result{}, false
	}
	return r.Results[i], true
}

package accuracy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// Options 控制 Run 的并发与进度回调。
type Options struct {
	// Threads 是同时进行的样本数（参考 --num-threads）；0 取 50（map_with_progress 的默认值）。
	Threads int
	// Model 写入结果的 Model 字段（served-model-name）。
	Model string
	// Progress 在每个样本完成后被调用（串行调用，不会并发），done 从 1 计到 total。
	Progress func(done, total int)
	// Now 返回当前时间，用于 Started/Finished；nil 取 time.Now。
	Now func() time.Time
	// Redact 在错误文本写进结果之前脱敏（nil 表示原样保留）。
	Redact func(string) string
}

// Run 用 sampler 评测 e 的全部样本并按 simple-evals 聚合。
//
// 并发契约：Run 启动至多 Threads 个 worker，全部在返回前结束；样本顺序与
// Examples 一致（与 ThreadPool.imap 的有序结果相同）。采样失败的请求以采样器
// 返回的文本计分（见 Sampler），计入 Errors 与 ErrorClasses。ctx 被取消时停止派发，已完成的样本照常聚合，返回的结果
// Partial=true，同时返回包装了 ctx.Err() 的错误——调用方应照常写出部分结果。
// Eval.Score 返回的错误（基础设施故障）会中止整个运行。
func Run(ctx context.Context, sampler Sampler, e Eval, opts Options) (EvalResult, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	if e == nil || sampler == nil {
		return EvalResult{}, fmt.Errorf("accuracy: run: nil Eval or Sampler")
	}
	res := EvalResult{Dataset: e.Name(), Model: opts.Model, Started: now()}
	exs, err := e.Examples(ctx)
	if err != nil {
		return res, fmt.Errorf("accuracy: %s: load examples: %w", e.Name(), err)
	}
	res.Planned = len(exs)
	threads := opts.Threads
	if threads <= 0 {
		threads = 50
	}
	threads = min(threads, max(len(exs), 1))

	var urls []string
	if tr, ok := sampler.(tracer); ok && len(tr.instanceURLs()) > 1 {
		urls = tr.instanceURLs()
		res.Instances = make([]InstanceStats, len(urls))
		for i, u := range urls {
			res.Instances[i].BaseURL = u
		}
	}
	results := make([]*scored, len(exs))
	var (
		mu   sync.Mutex
		done int
	)
	// 服务停止回答时（见 silence）不再派发样本、取消进行中的样本，它们在最后记为 unresponsive 的失败：
	// 一个死锁的服务不能让阶段等满每个样本的超时与重试。tctx 只为此取消。
	sl := &silence{limit: max(3, threads)}
	tctx, tcancel := context.WithCancelCause(ctx)
	defer tcancel(nil)
	// 至多 threads 个样本同时进行；第一个评分错误取消其余样本（errgroup 的语义）。
	// 因取消（父 ctx 或此前的评分错误）而失败的样本不是评分错误，也不计入结果。
	g, runCtx := errgroup.WithContext(tctx)
	g.SetLimit(threads)
	for i := range exs {
		if runCtx.Err() != nil {
			break
		}
		g.Go(func() error {
			if runCtx.Err() != nil {
				return nil
			}
			sr, err := runOne(runCtx, sampler, e, exs[i], opts.Redact, urls)
			if err != nil {
				if runCtx.Err() != nil {
					return nil
				}
				return err
			}
			if sl.observe(sr) {
				tcancel(errUnresponsive)
			}
			mu.Lock()
			defer mu.Unlock()
			results[i] = &sr
			done++
			if opts.Progress != nil {
				opts.Progress(done, len(exs))
			}
			return nil
		})
	}
	scoreErr := g.Wait()
	if reason := sl.reason(); reason != "" && scoreErr == nil && ctx.Err() == nil {
		// 判定之后没有发出或被取消的样本：按失败的请求计分（回复为空串，与采样失败相同），分类 unresponsive。
		for i, ex := range exs {
			if results[i] != nil {
				continue
			}
			n := max(ex.Samples, 1)
			sr, err := e.Score(ctx, ex, make([]string, n))
			if err != nil {
				scoreErr = err
				break
			}
			sr.Error, sr.ErrorClass, sr.FailedRequests = reason+"; not answered", classUnresponsive, n
			results[i] = &scored{SingleResult: sr, requests: n, classes: map[string]int{classUnresponsive: n}}
		}
	}

	for _, r := range results {
		if r != nil {
			res.Singles = append(res.Singles, r.SingleResult)
			res.Requests += r.requests
			res.Errors += r.FailedRequests
			for cls, n := range r.classes {
				if res.ErrorClasses == nil {
					res.ErrorClasses = map[string]int{}
				}
				res.ErrorClasses[cls] += n
			}
			for _, a := range r.attempts {
				is := &res.Instances[a.instance]
				is.Attempts++
				if a.class != "" {
					is.Failed++
					if is.FailedClasses == nil {
						is.FailedClasses = map[string]int{}
					}
					is.FailedClasses[a.class]++
				}
			}
		}
	}
	res.Examples = len(res.Singles)
	res.Score, res.Metrics, res.MetricOrder = aggregate(res.Singles)
	res.Finished = now()
	res.Partial = res.Examples < res.Planned
	switch {
	case scoreErr != nil:
		return res, fmt.Errorf("accuracy: %s: score: %w", e.Name(), scoreErr)
	case ctx.Err() != nil:
		return res, fmt.Errorf("accuracy: %s: cancelled after %d/%d examples: %w", e.Name(), res.Examples, res.Planned, ctx.Err())
	}
	return res, nil
}

// classUnresponsive 是服务被判为无响应之后、没有得到回答的样本的错误分类。
const classUnresponsive = "unresponsive"

// errUnresponsive 是判定无响应时取消进行中样本的原因。
var errUnresponsive = errors.New("accuracy: server unresponsive")

// silence 在一次 Run 中判断被测服务是否已经停止回答：一个样本的全部请求都以超时或传输故障失败，
// 记一次“没有回答”；任何一个请求成功（或以别的分类失败，例如 400），计数清零。接连 limit 次
// （max(3, 线程数)：所有线程都在同一段时间里等到超时）即判定无响应。一个偶尔超时、其余照常回答的
// 慢服务不会触发（成功的请求夹在中间）。方法可并发调用。
type silence struct {
	mu     sync.Mutex
	limit  int
	run    []string
	tipped string
}

// observe 记下一个已完成的样本；返回 true 表示这个样本使服务被判定为无响应（只返回一次）。
func (s *silence) observe(sr scored) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tipped != "" {
		return false
	}
	silent := sr.FailedRequests == sr.requests && sr.requests > 0
	for cls := range sr.classes {
		if cls != "timeout" && cls != "transport" {
			silent = false
		}
	}
	if !silent {
		s.run = s.run[:0]
		return false
	}
	s.run = append(s.run, sr.ID)
	if len(s.run) < s.limit {
		return false
	}
	s.tipped = fmt.Sprintf("server unresponsive since example %s (%d examples in a row got no answer: every request ended in a timeout or transport fault)", s.run[0], len(s.run))
	return true
}

// reason 返回判定的原因；还没有判定时为空。
func (s *silence) reason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tipped
}

// scored 是一个样本的评分结果加上只用于聚合的请求计数与（多实例时）每次尝试。
type scored struct {
	SingleResult
	requests int
	classes  map[string]int
	attempts []attempt
}

// runOne 为一个样本取得全部回复并评分；ctx 取消时返回错误，样本不计入结果。
// 采样失败时使用采样器返回的文本（ChatSampler 对 400 返回参考实现的固定回复，
// 其余为空串）计分，并把失败计入本样本的 FailedRequests 与分类计数。urls 非空
// （采样器分到多个实例）时还记下每次尝试的实例与每个回复来自哪个实例。
func runOne(ctx context.Context, sampler Sampler, e Eval, ex Example, red func(string) string, urls []string) (scored, error) {
	n := max(ex.Samples, 1)
	responses := make([]string, n)
	out := scored{requests: n}
	var instances []string
	var errText, errClass string
	for i := 0; i < n; i++ {
		var text string
		var err error
		if urls != nil {
			var tries []attempt
			text, tries, err = sampler.(tracer).sampleTraced(ctx, ex.Messages)
			out.attempts = append(out.attempts, tries...)
			last := ""
			if len(tries) > 0 {
				last = urls[tries[len(tries)-1].instance]
			}
			instances = append(instances, last)
		} else {
			text, err = sampler.Sample(ctx, ex.Messages)
		}
		if ctx.Err() != nil {
			return scored{}, ctx.Err()
		}
		if err != nil {
			cls := ErrorClass(err)
			if out.classes == nil {
				out.classes = map[string]int{}
			}
			out.classes[cls]++
			out.FailedRequests++
			if errText == "" {
				errText, errClass = err.Error(), cls
				if red != nil {
					errText = red(errText)
				}
			}
		}
		responses[i] = text
	}
	sr, err := e.Score(ctx, ex, responses)
	if err != nil {
		return scored{}, err
	}
	sr.Error, sr.ErrorClass, sr.FailedRequests, sr.Instances = errText, errClass, out.FailedRequests, instances
	out.SingleResult = sr
	return out, nil
}

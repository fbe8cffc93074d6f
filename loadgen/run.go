package loadgen

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/vllm-cibench/cibench/internal/redact"
	"github.com/vllm-cibench/cibench/internal/rxstamp"
	"github.com/vllm-cibench/cibench/loadgen/dataset"
	"github.com/vllm-cibench/cibench/loadgen/internal/h1"
	"github.com/vllm-cibench/cibench/loadgen/servermetrics"
)

// ErrInvalidTarget 表示 Target 缺少必要字段。
var ErrInvalidTarget = errors.New("loadgen: invalid target")

// ErrUnreachable 表示运行开始前的能力探测连不上服务（传输层错误：拒绝连接、DNS、超时）；
// 分片合并据此把缺失的分片记为 LossUnreachable。
var ErrUnreachable = errors.New("loadgen: server unreachable")

// ErrUnresponsive 表示服务在运行中途停止回答：接连 unresponsiveAfter 个请求以 timeout、idle_timeout
// 或 transport 结束，其间没有任何请求完成（成功、4xx、5xx 都算完成，都会清零计数）。这时在途的请求被
// 取消，本组没有结果的请求记为 ErrClassUnresponsive 的失败（每个计划的请求都有结局），这一行标为
// 不完整（不会成为基线），后面的分组不再运行，Run 返回包装它的错误。没有它，一个死锁的服务让其余每个
// 请求都等满自己的超时：出厂的 120 秒超时、并发 1 时一个 PR 分组要 30 多分钟。
var ErrUnresponsive = errors.New("loadgen: server unresponsive")

// unresponsiveAfter 是判定服务停止回答所需的、接连没有回答的请求数。一个慢请求（或一个超时）不会触发。
const unresponsiveAfter = 3

// runner 是一次 Run 的共享状态。除 obsMu 保护的部分外，运行期间只读。
type runner struct {
	t        Target
	p        Profile
	client   *http.Client
	h1       *h1.Pool // 生成请求的专用 HTTP/1.1 传输；nil 表示走 client（见 loadgen/internal/h1）
	urls     []string // 每个实例的请求地址
	slo      SLO
	tmpl     *bodyTemplate
	counter  dataset.TokenCounter
	pools    map[int]*dataset.Pool
	images   []string
	scraper  *servermetrics.Scraper
	stream   bool
	maxConc  int
	obs      Observer                // 调用方 Observer 的副本；OnTimeline 只在 Profile.BucketInterval > 0 时保留
	obsMu    sync.Mutex              // 串行化 worker 与采样 goroutine 上的钩子调用（见 Observer 的并发约定）
	red      *redact.Redactor        // 服务端文本（错误信息）在写入记录前经它脱敏
	base     *servermetrics.Snapshot // 运行开始前的 /metrics（任何请求之前）
	served   atomic.Int64            // 本次运行中服务端已成功完成的请求数（含探测与预热）
	lastProg time.Time
	sh       *shardRun // 非 nil 时只执行 Profile 的一片（见 RunShard）
	// budgetEnd 是 Profile.MaxDuration 的截止时刻（零值表示不限）；groupsLeft 是尚未开始的组数。
	budgetEnd  time.Time
	groupsLeft int
	// src 是 Profile.Source（nil 表示内置请求）。
	src *Source
}

// Run 按 Profile 依次执行全部分组（输入长度 × 输出长度 × 并发 × 轮次），
// 每组结束返回一行汇总；逐请求记录、分组边界、时间线与进度流式交给 obs 的钩子
// （obs 可为 nil），从不在内存中保留。
//
// 并发约定：Run 自己启动并回收全部 goroutine，返回时没有遗留；obs 的钩子
// 由 Run 串行调用（哪个 goroutine、能否阻塞、错误如何处理见 Observer）。ctx 取消时
// 在途请求被中断并计为 canceled，Run 返回已完成分组的汇总与 ctx 的错误。
func Run(ctx context.Context, target Target, profile Profile, obs *Observer) ([]Summary, error) {
	return run(ctx, target, profile, obs, nil)
}

// run 是 Run 与 RunShard 的共同实现；sh 为 nil 时执行整个 Profile。
func run(ctx context.Context, target Target, profile Profile, obs *Observer, sh *shardRun) ([]Summary, error) {
	p := profile.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := target.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidTarget, err)
	}
	slo, _ := ParseGoodput(p.Goodput) // 已在 Validate 中校验
	r := &runner{t: target, p: p, slo: slo, obs: obs.orZero(), pools: map[int]*dataset.Pool{}, stream: *p.Stream, sh: sh}
	if p.BucketInterval <= 0 {
		r.obs.OnTimeline = nil // 没有采样间隔就没有时间线
	}
	for _, c := range p.Concurrency {
		r.maxConc = max(r.maxConc, c)
	}
	r.client = target.HTTPClient
	if r.client == nil {
		r.client = newHTTPClient(max(r.maxConc, 64), p.Timestamps == TimestampsKernel)
		defer r.client.CloseIdleConnections()
	}
	path := "/completions"
	if p.Backend == BackendChat {
		path = "/chat/completions"
	}
	if p.Source != nil {
		// 团队的请求来源：自己的路径与请求体；一次性 JSON 的端点不流式。
		path, r.src = p.Source.Path, p.Source
		r.stream = r.stream && p.Source.Generative
	}
	for _, b := range target.BaseURLs {
		r.urls = append(r.urls, strings.TrimSuffix(b, "/")+path)
	}
	if target.HTTPClient == nil {
		r.h1 = h1.NewPool(r.urls, target.APIKey, r.stream, p.Timestamps == TimestampsKernel, max(r.maxConc, 64)*2)
		if r.h1 != nil {
			defer r.h1.Close()
		}
	}
	r.red = secretRedactor(target.APIKey)
	if len(target.Metrics) > 0 {
		ins := make([]servermetrics.Instance, len(target.Metrics))
		for i, m := range target.Metrics {
			ins[i] = servermetrics.Instance{Name: m.Name, Role: m.Role, URL: m.URL}
		}
		r.scraper = servermetrics.NewInstanceScraper(r.client, ins, r.auxTimeout(), int64(p.MaxEventBytes))
	} else {
		r.scraper = servermetrics.NewScraper(r.client, target.BaseURLs, r.auxTimeout(), int64(p.MaxEventBytes))
	}
	r.base = r.scraper.Scrape(ctx)
	if err := r.prepare(ctx); err != nil {
		return nil, err
	}

	inputs := p.InputLength
	if p.DatasetType == DatasetCustom && len(inputs) == 0 {
		inputs = []int{0}
	}
	if p.ControlMethod == ControlSweep {
		return r.sweepAll(ctx, inputs)
	}
	if p.MaxDuration > 0 {
		r.budgetEnd = time.Now().Add(p.MaxDuration)
		gi := 0
		for range inputs {
			for range p.OutputLength {
				for range p.Concurrency {
					for range p.Epochs {
						if r.sh.runs(gi) {
							r.groupsLeft++
						}
						gi++
					}
				}
			}
		}
	}
	var out []Summary
	gi := 0
	for _, in := range inputs {
		for _, outLen := range p.OutputLength {
			for ci, c := range p.Concurrency {
				n := pick(p.NumRequests, ci, max(c, 1)*p.RequestsPerConcurrency)
				initC := pick(p.InitConcurrency, ci, c)
				for round := 1; round <= p.Epochs; round++ {
					g := Group{Index: gi, InputLength: in, OutputLength: outLen, Concurrency: c, Round: round}
					gi++
					if !r.sh.runs(g.Index) {
						continue // 分片限定了分组（Shard.Groups）
					}
					s, err := r.runGroup(ctx, g, n, initC, round == 1)
					if err != nil {
						if s.Incomplete {
							out = append(out, s)
						}
						return out, err
					}
					out = append(out, s)
				}
			}
		}
	}
	return out, nil
}

// newHTTPClient 创建为压测调优的客户端：连接池容量覆盖最大并发，关闭压缩
// （SSE 需要逐块到达），不设整体超时（由每个请求的 ctx 控制）。kernel 为 true 时
// 连接带内核接收时间戳（Linux），响应数据的到达时刻因此不含客户端的调度滞后，见 Record。
func newHTTPClient(conns int, kernel bool) *http.Client {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	dial := d.DialContext
	if kernel {
		dial = rxstamp.DialContext(d)
	}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dial,
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns * 2,
		MaxConnsPerHost:     0,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		WriteBufferSize:     8 << 10,
		ReadBufferSize:      16 << 10, // 每个连接一份；2000 个并发流时内存随它线性增长
		// 响应头上限与 h1 传输相同（h1.MaxHeaderBytes），超过时记为 too_large。
		MaxResponseHeaderBytes: h1.MaxHeaderBytes,
	}
	return &http.Client{Transport: tr}
}

// auxTimeout 是不生成 token 的小请求（/tokenize、/metrics）的超时：
// min(Timeout, IdleTimeout, 10s)。它们在空闲的服务上是毫秒级的，静默的服务不能拖住运行。
func (r *runner) auxTimeout() time.Duration {
	return min(r.p.Timeout, r.p.IdleTimeout, 10*time.Second)
}

// newExchange 创建一个带本次运行约束（静默超时、事件上限、脱敏）的 worker 请求状态。
func (r *runner) newExchange() *exchange {
	x := newExchange()
	if r.p.IdleTimeout < r.p.Timeout {
		x.idle = r.p.IdleTimeout
	}
	x.maxEvent, x.red, x.h1.Pool = r.p.MaxEventBytes, r.red, r.h1
	x.oneShot = r.src != nil && !r.src.Generative
	return x
}

// secretRedactor 返回脱敏器：除内置规则（Authorization 头、Bearer、sk-… 等）外，登记 API key
// 的原文，以及它在请求里可能被编码成的形式——key 与 "Bearer key" 的各种 base64。
// 服务端把请求头回显进错误体时，这些形式都不会进入记录与产物。
func secretRedactor(key string) *redact.Redactor {
	if key == "" {
		return redact.New()
	}
	secrets := []string{key}
	for _, v := range []string{key, "Bearer " + key} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			secrets = append(secrets, enc.EncodeToString([]byte(v)))
		}
	}
	return redact.New(secrets...)
}

// prepare 探测服务能力：stream_options 是否被接受（400 时降级）、/tokenize 是否可用。
// 探测请求不计入任何统计。
func (r *runner) prepare(ctx context.Context) error {
	if r.src != nil {
		return nil // 请求体由 Source 生成：没有模板、没有数据集、不探测 usage 选项与分词
	}
	level := usageContinuous
	if !*r.p.ContinuousUsageStats {
		level = usageFinal
	}
	for ; ; level++ {
		tmpl, err := newBodyTemplate(r.t.Model, &r.p, level)
		if err != nil {
			return err
		}
		r.tmpl = tmpl
		if !r.stream || level == usageNone {
			break
		}
		status, err := r.probe(ctx)
		if err != nil {
			return err
		}
		if status != http.StatusBadRequest {
			break
		}
	}
	if r.p.DatasetType == DatasetRandom {
		r.counter = r.probeTokenize(ctx)
		if r.counter == nil && r.t.Tokenizer != nil {
			r.counter = r.t.Tokenizer
		}
	}
	if r.p.ModalType == ModalImageText {
		for i := range 4 {
			r.images = append(r.images, dataset.ImageDataURL(uint64(r.p.Seed)+uint64(i), r.p.ImageWidth, r.p.ImageHeight))
		}
	}
	return nil
}

// probe 发一个极短的请求，只关心状态码；传输错误意味着服务不可达，直接报错。
func (r *runner) probe(ctx context.Context) (int, error) {
	body := r.tmpl.build(nil, []byte(`"hi"`), r.imageOrEmpty(0), 1)
	ctx, cancel := context.WithTimeout(ctx, r.p.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.urls[0], bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("loadgen: probe: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if r.t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+r.t.APIKey)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%w: probe %s (timeout %s): %w", ErrUnreachable, r.urls[0], r.p.Timeout, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, int64(r.p.MaxEventBytes)))
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		r.served.Add(1)
	}
	return resp.StatusCode, nil
}

// imageOrEmpty 返回第 i 张图片（image-text 模态），否则为空。
func (r *runner) imageOrEmpty(i int) string {
	if len(r.images) == 0 {
		if r.p.ModalType == ModalImageText {
			return dataset.ImageDataURL(0, 1, 1)
		}
		return ""
	}
	return r.images[i%len(r.images)]
}

// serverCounter 用 vLLM 的 POST /tokenize 计数。每次调用受 timeout 约束，响应体不超过 maxBody。
type serverCounter struct {
	client  *http.Client
	url     string
	model   string
	apiKey  string
	timeout time.Duration
	maxBody int64
}

// CountTokens 调用 /tokenize；非 200、超时或响应缺少 count 时报错。
func (c *serverCounter) CountTokens(ctx context.Context, text string) (int, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	q, _ := jsonString(text)
	mq, _ := jsonString(c.model)
	body := append(append(append(append([]byte(`{"model":`), mq...), `,"prompt":`...), q...), `,"add_special_tokens":false}`...)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return 0, err
	}
	if int64(len(b)) > c.maxBody {
		return 0, fmt.Errorf("POST %s: response larger than %d bytes", c.url, c.maxBody)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("POST %s: HTTP %d", c.url, resp.StatusCode)
	}
	cnt := gjson.GetBytes(b, "count")
	if !cnt.Exists() {
		return 0, fmt.Errorf("POST %s: response has no count", c.url)
	}
	return int(cnt.Int()), nil
}

// probeTokenize 检查服务端 /tokenize 是否可用；不可用时返回 nil（退回共享规则估算）。
func (r *runner) probeTokenize(ctx context.Context) dataset.TokenCounter {
	base := strings.TrimSuffix(strings.TrimSuffix(r.t.BaseURLs[0], "/"), "/v1")
	c := &serverCounter{client: r.client, url: base + "/tokenize", model: r.t.Model, apiKey: r.t.APIKey,
		timeout: r.auxTimeout(), maxBody: int64(r.p.MaxEventBytes)}
	if _, err := c.CountTokens(ctx, "hello 你好"); err != nil {
		return nil
	}
	return c
}

// pool 返回输入长度 inputLen 的 prompt 池（跨分组复用，保证同种子同长度同内容）。
func (r *runner) pool(ctx context.Context, inputLen, n int) (*dataset.Pool, error) {
	if r.src != nil {
		return &dataset.Pool{}, nil
	}
	if pl, ok := r.pools[inputLen]; ok && (pl.Complete || len(pl.Quoted) >= min(n, dataset.PoolSize)) && r.p.DatasetType != DatasetPrefixRepetition {
		return pl, nil
	}
	pl, err := buildPool(ctx, &r.p, inputLen, n, r.counter)
	if err != nil {
		return nil, err
	}
	r.pools[inputLen] = pl
	return pl, nil
}

// job 是一个待发请求：组内序号与意图发送时刻（零值表示"槽位空出即发"）。
type job struct {
	idx      int
	intended time.Time
}

// groupRun 是一个分组执行期间的共享状态。
type groupRun struct {
	g       Group
	pool    *dataset.Pool
	shards  shardSet
	warmup  bool
	total   int // 本进程要完成的请求数
	global  int // 整组（全部分片）的请求数；未分片时等于 total
	done    atomic.Int64
	sent    atomic.Int64 // 已发出的请求数（时间线的 Started）
	failed  atomic.Int64
	active  atomic.Int64
	outRng  uint64 // 输出长度抖动的种子
	cancel  context.CancelCauseFunc
	started time.Time
	// turns 非 nil 时按轮次累计多轮会话的请求；cachedN/cachedT 累计成功请求的 cached_tokens
	turns            *turnStats
	cachedN, cachedT atomic.Int64
	// stopAt 是本组的预算截止时刻（Profile.MaxDuration；零值表示不限）：之后 worker 不再发出
	// 新请求（每个 worker 至少一个）；budgetHit 记录是否因此少发了请求。
	stopAt    time.Time
	budgetHit atomic.Bool
	// classMu 保护 classes：失败请求按 ErrorClass 计数（只在失败时加锁）
	classMu sync.Mutex
	classes map[string]int
	// silent 是接连没有回答（timeout、idle_timeout、transport）的请求数，任何完成清零；到 unresponsiveAfter
	// 时 tripped 置位并以 ErrUnresponsive 取消本组（只一次）。
	silent  atomic.Int64
	tripped atomic.Bool
}

// noAnswer 报告一个失败类别是否意味着服务没有回答：超时、流中途静默、连接层错误。HTTP 状态码、
// 流内错误、截断等都是服务的回答，不计入。
func noAnswer(class string) bool {
	return class == ErrClassTimeout || class == ErrClassIdleTimeout || class == ErrClassTransport
}

// heard 按一个请求的结局更新"服务停止回答"的计数：没有回答时加一，到 unresponsiveAfter 时以
// ErrUnresponsive 取消本组；有任何回答时清零。被取消的请求（运行或本组已取消）不算。
func (gr *groupRun) heard(rec *Record) {
	switch {
	case rec.ErrorClass == ErrClassCanceled:
	case noAnswer(rec.ErrorClass):
		if n := gr.silent.Add(1); n >= unresponsiveAfter && gr.tripped.CompareAndSwap(false, true) && gr.cancel != nil {
			gr.cancel(fmt.Errorf("%w since request %d of group %s: %d requests in a row got no answer (last: %s: %s)",
				ErrUnresponsive, rec.Index, groupName(gr.g), n, rec.ErrorClass, rec.Error))
		}
	default:
		gr.silent.Store(0)
	}
}

// groupName 是分组的短名 "in128-out128-c8 round 1"，用在错误里。
func groupName(g Group) string {
	return fmt.Sprintf("in%d-out%d-c%d round %d", g.InputLength, g.OutputLength, g.Concurrency, g.Round)
}

// fillUnresponsive 把本组没有结局的请求（没发出的、发出后被取消的）记为 ErrClassUnresponsive 的失败，
// 计入统计与失败分类：服务停止回答之后，每个计划的请求仍有一个结局，失败率如实是它们的比例。
func (gr *groupRun) fillUnresponsive(slo SLO) {
	missing := gr.total - int(gr.done.Load())
	if missing <= 0 {
		return
	}
	now := time.Now()
	rec := &Record{Group: gr.g, OK: false, ErrorClass: ErrClassUnresponsive, Sent: now, Intended: now, TTFT: -1, TPOT: -1, FirstToSecond: -1, ClientLag: -1}
	for range missing {
		gr.shards[0].observe(rec, slo)
	}
	gr.done.Add(int64(missing))
	gr.failed.Add(int64(missing))
	gr.classMu.Lock()
	if gr.classes == nil {
		gr.classes = map[string]int{}
	}
	gr.classes[ErrClassUnresponsive] += missing
	gr.classMu.Unlock()
}

// runGroup 执行一组：预热（仅第一轮）→ 抓取 /metrics → 施压 → 再抓取 → 汇总。
func (r *runner) runGroup(ctx context.Context, g Group, n, initC int, first bool) (Summary, error) {
	pool, err := r.pool(ctx, g.InputLength, n+r.p.Warmup)
	if err != nil {
		return Summary{}, err
	}
	if first && r.sh.part(r.p.Warmup) > 0 {
		wg := &groupRun{g: g, pool: pool, shards: newShardSet(), warmup: true, total: r.sh.part(r.p.Warmup), global: r.p.Warmup}
		wc := max(1, min(g.Concurrency, r.p.Warmup))
		if err := r.drive(ctx, wg, wc, wc, 0); err != nil {
			return Summary{}, err
		}
	}
	before := r.scraper.Settled(ctx, r.base, r.served.Load())
	if err := r.alignStart(ctx, g.Index); err != nil {
		return Summary{}, err
	}
	g.Start = time.Now()
	if r.obs.OnGroupStart != nil {
		if err := r.obs.OnGroupStart(g); err != nil {
			return Summary{}, fmt.Errorf("loadgen: observer: group start: %w", err)
		}
	}
	gr := &groupRun{g: g, pool: pool, shards: newShardSet(), total: r.sh.part(n), global: n, started: g.Start}
	if !r.budgetEnd.IsZero() {
		// 本组分到剩余预算的 1/剩余组数：前面的组超出的部分由后面的组分摊。
		slice := max(0, r.budgetEnd.Sub(g.Start)) / time.Duration(max(1, r.groupsLeft))
		gr.stopAt = g.Start.Add(slice)
		r.groupsLeft--
	}
	turns := r.sessionPlan(gr)
	dctx, dcancel := context.WithCancelCause(ctx)
	defer dcancel(nil)
	var tl *timeline
	if r.obs.OnTimeline != nil {
		tl = r.startTimeline(dctx, dcancel, gr, before, g.Concurrency, initC, r.p.RequestRate)
	}
	peak := r.scraper.StartPeak(dctx, before)
	defer peak.Finish(nil) // 提前返回的路径也回收采样 goroutine（Finish 可重复调用）
	var derr error
	if turns != nil {
		derr = r.driveSessions(dctx, gr, g.Concurrency, turns)
	} else {
		derr = r.drive(dctx, gr, g.Concurrency, initC, r.p.RequestRate)
	}
	if tl != nil {
		tl.finish(dctx)
		if derr == nil {
			derr = context.Cause(dctx) // OnTimeline 在最后一行出错
		}
	}
	interrupted := derr != nil && ctx.Err() != nil
	unresponsive := !interrupted && errors.Is(derr, ErrUnresponsive)
	if derr != nil && !unresponsive && (!interrupted || gr.done.Load() == 0) {
		return Summary{}, derr
	}
	if unresponsive {
		// 服务停止回答：其余请求记为 unresponsive 的失败，行照样写出（标为不完整），不再等一个不回答的
		// 服务的 /metrics 静下来。
		gr.fillUnresponsive(r.slo)
	}
	// 被中断的组保留已测部分：汇总中断前完成的请求并标为不完整，仍交给接收方写出。
	tot := gr.shards.total()
	var after *servermetrics.Snapshot
	if !interrupted && !unresponsive {
		after = r.scraper.Settled(ctx, r.base, r.served.Load())
	}
	s := r.summary(g)
	s.Planned, s.Epochs = n, r.p.Epochs
	s.BudgetLimited = gr.budgetHit.Load()
	tot.fill(&s, r.slo)
	applyServer(&s, before, after)
	r.applyWorkload(&s, gr, before, after, peak.Finish(after))
	s.Phases = phaseBreakdown(tot, before, after, peak)
	s.Incomplete = interrupted || unresponsive
	if len(gr.classes) > 0 {
		s.FailureClasses = gr.classes
	}
	r.capture(g, tot, before, after, gr.classes, interrupted, func(c *Summary) {
		c.Planned, c.Epochs, c.BudgetLimited = s.Planned, s.Epochs, s.BudgetLimited
	})
	if r.obs.OnGroupEnd != nil {
		if err := r.obs.OnGroupEnd(s); err != nil {
			s.Incomplete = false // 没有写出的行不交给调用方
			return s, fmt.Errorf("loadgen: observer: group end: %w", err)
		}
	}
	return s, derr
}

// summary 返回只填好分组键与配置列的汇总行。
func (r *runner) summary(g Group) Summary {
	s := Summary{
		ExecutionTime: g.Start, InputLength: g.InputLength, OutputLength: g.OutputLength,
		Concurrency: g.Concurrency, Round: g.Round, Provider: r.t.Provider, Backend: r.p.BackendName(),
		Temperature: *r.p.Temperature, TopK: *r.p.TopK, TopP: *r.p.TopP,
		ControlMethod: string(r.p.ControlMethod), ConcurrencyBackend: ConcurrencyBackend, DatasetType: string(r.p.DatasetType),
	}
	if r.p.ControlMethod == ControlClimb {
		s.GrowthRate = r.p.GrowthRate
	}
	return s
}

// startOffset 返回第 i 个 worker（0 起）在爬坡模式下的启动延迟：前 initC 个立即启动；
// static 每个间隔整批增加 growth_rate 个，linear 把这一批均匀铺开在间隔内。
func (r *runner) startOffset(i, initC int) time.Duration {
	if r.p.ControlMethod != ControlClimb || i < initC || r.p.GrowthRate <= 0 {
		if r.p.ControlMethod == ControlClimb && r.p.GrowthRate <= 0 && i >= initC {
			return -1 // 不增长：永远不启动
		}
		return 0
	}
	k := i - initC + 1 // 第 k 个追加的 worker
	iv := r.p.GrowthInterval
	if r.p.ClimbMode == ClimbLinear {
		return time.Duration(float64(iv) * float64(k) / float64(r.p.GrowthRate))
	}
	steps := (k + r.p.GrowthRate - 1) / r.p.GrowthRate
	return time.Duration(steps) * iv
}

// drive 以 conc 个 worker（爬坡时按 startOffset 逐步启动）完成 gr.total 个请求。
// rate>0 时由一个调度 goroutine 按 gamma 间隔产生到达时刻（开环），否则闭环。
// conc 为 0（仅开环）表示不限并发：每个到达一个 goroutine。
func (r *runner) drive(ctx context.Context, gr *groupRun, conc, initC int, rate float64) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	gr.cancel = cancel
	gr.outRng = uint64(r.p.Seed)*31 + uint64(gr.g.Index)
	if initC <= 0 || initC > conc {
		initC = conc
	}
	var jobs chan job
	var next atomic.Int64
	var wg sync.WaitGroup
	// exhausted 在所有请求都已被领取后关闭，让尚在等待爬坡时刻的 worker 立即退出，
	// 否则一组很快做完的请求也要等到最后一个 worker 的启动时刻（每日档可达数十秒）。
	exhausted := make(chan struct{})
	var once sync.Once
	markExhausted := func() { once.Do(func() { close(exhausted) }) }
	ts := gr.pool.Trace
	if gr.warmup {
		ts = nil // 预热不按时刻表：闭环发出轨迹开头的几条
	}
	switch {
	case ts != nil && conc == 0:
		// 轨迹、不限并发：调度 goroutine 到点直接为每个到达启动一个 goroutine，少一次经 channel
		// 的交接（忙机器上每次交接都是一次调度延迟，直接计入发出滞后）。
		wg.Go(func() {
			var inner sync.WaitGroup
			r.dispatchSchedule(ctx, gr, ts, func(j job) bool {
				inner.Go(func() {
					x := r.newExchange()
					r.one(ctx, gr, x, j.idx%len(gr.shards), j)
					x.h1.Release()
				})
				return true
			})
			inner.Wait()
		})
	case ts != nil:
		jobs = make(chan job, 1024)
		wg.Go(func() {
			defer close(jobs)
			r.dispatchSchedule(ctx, gr, ts, func(j job) bool {
				select {
				case jobs <- j:
					return true
				case <-ctx.Done():
					return false
				}
			})
		})
	case rate > 0:
		jobs = make(chan job, 1024)
		wg.Go(func() { r.dispatch(ctx, gr, rate, jobs) })
	}
	if jobs != nil && conc == 0 {
		// 不限并发：每个到达一个 goroutine。
		wg.Go(func() {
			var inner sync.WaitGroup
			for j := range jobs {
				inner.Go(func() {
					x := r.newExchange()
					r.one(ctx, gr, x, j.idx%len(gr.shards), j)
					x.h1.Release()
				})
			}
			inner.Wait()
		})
	} else {
		for _, i := range r.workerIDs(conc) {
			off := r.startOffset(i, initC)
			if off < 0 {
				continue
			}
			wg.Go(func() {
				if off > 0 && !sleepUntil(ctx, off, exhausted) {
					return
				}
				x := r.newExchange()
				defer x.h1.Release()
				shard := i % len(gr.shards)
				did := 0
				for {
					if did > 0 && gr.overBudget() {
						markExhausted()
						return
					}
					did++
					var j job
					if jobs != nil {
						var ok bool
						select {
						case j, ok = <-jobs:
							if !ok {
								markExhausted()
								return
							}
						case <-ctx.Done():
							return
						}
					} else {
						idx := int(next.Add(1) - 1)
						if idx >= gr.total || ctx.Err() != nil {
							markExhausted()
							return
						}
						j = job{idx: r.sh.global(idx)}
					}
					r.one(ctx, gr, x, shard, j)
				}
			})
		}
	}
	wg.Wait()
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return c
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return nil
}

// dispatch 产生开环到达：间隔服从 shape=burstiness、scale=1/(rate·burstiness) 的 gamma 分布
// （burstiness=1 即泊松）。意图时刻按计划表计算，不受 worker 是否空闲影响，
// 因此排队时间会如实计入时延（避免协调遗漏）。
func (r *runner) dispatch(ctx context.Context, gr *groupRun, rate float64, jobs chan<- job) {
	defer close(jobs)
	rng := rand.New(rand.NewPCG(uint64(r.p.Seed), 0xa771+uint64(gr.g.Index)))
	start := time.Now()
	at := time.Duration(0)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var pacer Pacer
	if r.p.Pacer != nil {
		pacer = r.p.Pacer(gr.g, rate)
	}
	for i := range gr.global {
		if i > 0 && gr.overBudget() {
			return
		}
		if pacer != nil {
			wait, stop := pacer.Pace(at, uint64(i))
			if stop {
				return
			}
			at += max(wait, 0)
		} else if i > 0 {
			at += time.Duration(gammaSample(rng, r.p.Burstiness, 1/(rate*r.p.Burstiness)) * float64(time.Second))
		}
		if !r.sh.mine(i) {
			continue // 同一张时刻表里属于其他分片的到达
		}
		intended := start.Add(at)
		if d := time.Until(intended); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			}
		}
		select {
		case jobs <- job{idx: i, intended: intended}:
		case <-ctx.Done():
			return
		}
	}
}

// gammaSample 用 Marsaglia–Tsang 方法抽取 Gamma(shape, scale)；shape<1 时用 boost 变换。
func gammaSample(r *rand.Rand, shape, scale float64) float64 {
	if shape < 1 {
		u := r.Float64()
		return gammaSample(r, shape+1, scale) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v * scale
		}
	}
}

// sleepUntil 等待 d；ctx 结束或 stop 关闭时提前返回 false。stop 可以为 nil（永不关闭）。
func sleepUntil(ctx context.Context, d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
}

// one 发出并记录一个请求。
func (r *runner) one(ctx context.Context, gr *groupRun, x *exchange, shard int, j job) {
	if j.intended.IsZero() {
		j.intended = time.Now()
	}
	if r.src != nil {
		var tokens int
		x.body, tokens = r.src.Body(x.body[:0], gr.g, j.idx)
		r.exchangeAndRecord(ctx, gr, x, shard, j, tokens)
		return
	}
	pl := gr.pool
	var prompt []byte
	var tokens, maxTok int
	x.session = ""
	if pl.Trace != nil {
		// 轨迹回放：prompt 按序号现生成（块文本有缓存），生成耗时计入发出滞后（SlotWait）。
		x.prompt, tokens, maxTok = pl.Trace.Prompt(x.prompt, j.idx)
		prompt, x.session = x.prompt, pl.Trace.Session(j.idx)
	} else {
		pi := j.idx % len(pl.Quoted)
		prompt, tokens, maxTok = pl.Quoted[pi], pl.Tokens[pi], gr.g.OutputLength
		if pl.MaxTokens != nil && pl.MaxTokens[pi] > 0 {
			maxTok = pl.MaxTokens[pi]
		} else if r.p.OutputRangeRatioAbove > 0 || r.p.OutputRangeRatioBelow > 0 {
			rng := rand.New(rand.NewPCG(gr.outRng, uint64(j.idx)))
			maxTok = dataset.Jitter(rng, maxTok, r.p.OutputRangeRatioBelow, r.p.OutputRangeRatioAbove)
		}
	}
	x.body = r.tmpl.build(x.body, prompt, r.imageOrEmpty(j.idx), maxTok)
	r.exchangeAndRecord(ctx, gr, x, shard, j, tokens)
}

// exchangeAndRecord 发出 x.body 中已拼好的请求，把结果计入分组统计并交给 sink。
// tokens 是 prompt 的已知 token 数（服务端没有回 usage 时作为 PromptTokens）。
func (r *runner) exchangeAndRecord(ctx context.Context, gr *groupRun, x *exchange, shard int, j job, tokens int) {
	// 实例按组内全局序号轮流选，而不是按本进程的发送次序：分片各自只发一部分序号，
	// 按序号选实例让 N 个分片合起来与单进程打到每个实例上的请求完全相同（issue 22）。
	inst := j.idx % len(r.urls)
	gr.active.Add(1)
	gr.sent.Add(1)
	x.send(ctx, r.client, r.urls[inst], r.t.APIKey, r.stream, j.intended, r.p.Timeout)
	gr.active.Add(-1)
	rec := &x.rec
	rec.Group, rec.Index, rec.Instance, rec.Warmup, rec.Intended = gr.g, j.idx, inst, gr.warmup, j.intended
	rec.SessionID, rec.Turn = x.session, x.turn
	if rec.OK {
		r.served.Add(1)
	}
	gr.heard(rec)
	if rec.PromptTokens == 0 && rec.OK {
		rec.PromptTokens = tokens
	}
	if gr.warmup {
		return
	}
	// 运行被取消时在途请求的记录照常写出（canceled），但它们没有被测完，不计入统计。
	if rec.ErrorClass != ErrClassCanceled {
		gr.shards[shard].observe(rec, r.slo)
		if gr.turns != nil {
			gr.turns.observe(rec)
		}
		if rec.OK && rec.CachedTokens >= 0 {
			gr.cachedN.Add(1)
			gr.cachedT.Add(int64(rec.CachedTokens))
		}
		gr.done.Add(1)
		if !rec.OK {
			gr.failed.Add(1)
			gr.classMu.Lock()
			if gr.classes == nil {
				gr.classes = map[string]int{}
			}
			gr.classes[rec.ErrorClass]++
			gr.classMu.Unlock()
		}
	}
	if r.obs.OnRecord == nil && r.obs.OnProgress == nil {
		return
	}
	r.obsMu.Lock()
	var err error
	if r.obs.OnRecord != nil {
		err = r.obs.OnRecord(rec)
	}
	if err == nil && r.obs.OnProgress != nil {
		if now := time.Now(); now.Sub(r.lastProg) >= 250*time.Millisecond || int(gr.done.Load()) == gr.total {
			r.lastProg = now
			el := now.Sub(gr.started).Seconds()
			p := Progress{Group: gr.g, Done: int(gr.done.Load()), Total: gr.total, Failed: int(gr.failed.Load()), Active: int(gr.active.Load())}
			if el > 0 {
				p.Rate = float64(p.Done) / el
			}
			r.obs.OnProgress(p)
		}
	}
	r.obsMu.Unlock()
	if err != nil {
		gr.cancel(fmt.Errorf("loadgen: observer: record: %w", err))
	}
}

// overBudget 报告本组的预算是否已到（Profile.MaxDuration）；到了时记下本组被截短。
func (gr *groupRun) overBudget() bool {
	if gr.stopAt.IsZero() || time.Now().Before(gr.stopAt) {
		return false
	}
	if int(gr.sent.Load()) < gr.total {
		gr.budgetHit.Store(true)
	}
	return true
}

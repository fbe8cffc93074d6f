package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/internal/redact"
	"github.com/vllm-cibench/cibench/runtype"

	"github.com/prometheus/common/model"

	"github.com/vllm-cibench/cibench/loadgen"
)

// DefaultBaselineWindow 是在 Prometheus 中回看最近一次每日值的窗口：比一周多一天，
// 使周末停跑或 Pushgateway 丢失状态后仍能找到上一次每日结果。
const DefaultBaselineWindow = 8 * 24 * time.Hour

// ErrNoBaseline 表示没有找到任何可比较的每日结果（新场景、窗口内没有每日运行、CSV 为空）。
var ErrNoBaseline = errors.New("metrics: baseline: no daily result found")

// dailyReader 把按场景读取汇总行的函数（PromBaseline.ReadDaily、CSVBaseline.ReadDaily）
// 适配为 gate.DailyReader：ErrNoBaseline 视为"没有基线"而非错误，汇总行逐字段转换为
// gate.PerfRow。聚合与按组合挑选由 gate.PerScenario 完成——基线只有 gate.Baseline 一种。
func dailyReader(read func(ctx context.Context, info RunInfo) (RunInfo, []loadgen.Summary, error)) gate.DailyReader {
	return func(ctx context.Context, id gate.ScenarioID) (gate.DailyRows, bool, error) {
		ri, rows, err := read(ctx, RunInfo{Model: id.Model, Quant: id.Quant, Scenario: id.Scenario, RunType: runtype.Daily})
		switch {
		case errors.Is(err, ErrNoBaseline):
			return gate.DailyRows{}, false, nil
		case err != nil:
			return gate.DailyRows{}, false, err
		}
		out := gate.DailyRows{RunID: ri.RunID, Rows: make([]gate.PerfRow, len(rows))}
		for i, s := range rows {
			out.Rows[i] = gate.PerfRow{Backend: s.Backend, ControlMethod: s.ControlMethod, InputLength: s.InputLength,
				OutputLength: s.OutputLength, Concurrency: s.Concurrency, TTFT: gateLatency(s.TTFT), E2E: gateLatency(s.E2E),
				QPS: s.QPS, FailRate: s.FailRate, Succeeded: int64(s.Succeeded), Time: s.ExecutionTime, Phases: s.Phases,
				OutputThroughput: s.OutputTokenThroughput}
		}
		return out, true, nil
	}
}

// gateLatency 逐字段转换时延摘要。
func gateLatency(l loadgen.Latency) gate.Latency {
	return gate.Latency{Count: l.Count, P50: l.P50, P75: l.P75, P90: l.P90, P95: l.P95, P99: l.P99, Min: l.Min, Max: l.Max, Avg: l.Avg}
}

// PromBaselineConfig 配置从 Prometheus 读取基线。凭据由调用方传入，从不记录。
type PromBaselineConfig struct {
	// URL 是 Prometheus 的基地址，例如 http://prometheus:9090。
	URL string
	// Prefix 与推送时的 Options.Prefix 相同。
	Prefix string
	// Window 是回看窗口，默认 DefaultBaselineWindow。
	Window time.Duration
	// Client 的 Transport 用于发请求，nil 时使用 http.DefaultTransport。
	Client *http.Client
	// Username/Password（basic auth）或 BearerToken，二选一。
	Username, Password string
	BearerToken        string
	// Now 返回查询的求值时刻，nil 时为 time.Now；测试用它把时间固定下来。
	Now func() time.Time
	// QueryTimeout 是每个查询的时限，默认 DefaultBaselineQueryTimeout（调用方的 ctx 更早到期时以它为准）。
	QueryTimeout time.Duration
}

// PromBaseline 通过 Prometheus HTTP API 的即时查询（/api/v1/query，标准库实现，见 promQuerier）读取
// 同一场景最近一次每日运行的全部压测指标，重建为 loadgen.Summary（ReadDaily），
// 并以 gate.Source 的形状给出基线（Lookup：每个场景只查询一次并缓存）。
type PromBaseline struct {
	api    *promQuerier
	prefix string
	window time.Duration
	now    func() time.Time
	src    gate.Source
}

var _ gate.Source = (*PromBaseline)(nil)

// authTransport 给每个请求加上 basic auth 或 bearer 头，凭据只存在于内存。
type authTransport struct {
	next               http.RoundTripper
	user, pass, bearer string
}

// RoundTrip 复制请求后加认证头，不修改调用方的请求。
func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	if t.bearer != "" {
		r.Header.Set("Authorization", "Bearer "+t.bearer)
	} else if t.user != "" {
		r.SetBasicAuth(t.user, t.pass)
	}
	return t.next.RoundTrip(r)
}

// NewPromBaseline 校验配置并创建读取器。
func NewPromBaseline(cfg PromBaselineConfig) (*PromBaseline, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, &field.Error{Err: ErrInvalid, Field: "PromBaselineConfig.URL", Value: redactURL(cfg.URL), Reason: "must be an http(s) URL with a host and without credentials"}
	}
	if cfg.BearerToken != "" && cfg.Username != "" {
		return nil, &field.Error{Err: ErrInvalid, Field: "PromBaselineConfig.BearerToken", Value: "<redacted>", Reason: "basic auth and bearer token are mutually exclusive"}
	}
	if cfg.Window < 0 {
		return nil, &field.Error{Err: ErrInvalid, Field: "PromBaselineConfig.Window", Value: cfg.Window.String(), Reason: "must not be negative"}
	}
	if cfg.QueryTimeout < 0 {
		return nil, &field.Error{Err: ErrInvalid, Field: "PromBaselineConfig.QueryTimeout", Value: cfg.QueryTimeout.String(), Reason: "must not be negative"}
	}
	prefix, err := normalizePrefix(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultBaselineWindow
	}
	var rt http.RoundTripper = http.DefaultTransport
	if cfg.Client != nil && cfg.Client.Transport != nil {
		rt = cfg.Client.Transport
	}
	if cfg.BearerToken != "" || cfg.Username != "" {
		rt = &authTransport{next: rt, user: cfg.Username, pass: cfg.Password, bearer: cfg.BearerToken}
	}
	red := redact.New(cfg.BearerToken, cfg.Password)
	red.AddBasicAuth(cfg.Username, cfg.Password)
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	b := &PromBaseline{api: newPromQuerier(u, rt, cfg.QueryTimeout, red), prefix: prefix, window: cfg.Window, now: now}
	b.src = gate.PerScenario(dailyReader(b.ReadDaily))
	return b, nil
}

// Lookup 实现 gate.Source：key 所属场景（model、quant、scenario）最近一次每日运行中
// 同组合的各轮聚合成的基线。没有每日结果时 found 为 false；查询失败时返回错误。
//
// 并发：可被多个 goroutine 同时调用。
func (b *PromBaseline) Lookup(ctx context.Context, key gate.Key) (gate.Baseline, bool, error) {
	return b.src.Lookup(ctx, key)
}

// promQuote 把字符串写成 PromQL 字符串字面量（双引号，转义反斜杠与引号）。
func promQuote(s string) string { return strconv.Quote(s) }

// selector 返回限定到该场景每日运行的标签选择器。
func (b *PromBaseline) selector(ri RunInfo) string {
	return fmt.Sprintf(`{%s=%s,%s=%s,%s=%s,%s="daily"}`,
		LabelModel, promQuote(ri.Model), LabelQuant, promQuote(ri.Quant), LabelScenario, promQuote(ri.Scenario), LabelRunType)
}

// query 执行 last_over_time(name{sel}[window])，返回向量结果。
func (b *PromBaseline) query(ctx context.Context, expr string) (model.Vector, error) {
	vec, err := b.api.query(ctx, expr, b.now())
	if err != nil {
		return nil, fmt.Errorf("metrics: baseline: query %s: %w", expr, err)
	}
	return vec, nil
}

// latest 查询一个指标族每条序列的最近值：windowed 为假时是普通即时查询（只看 5 分钟回看，
// 代价小，Pushgateway 仍在暴露上次每日结果时就够了）；为真时是窗口内的 last_over_time
// （Pushgateway 重启丢了数据时才需要，要读整个窗口的样本）。
func (b *PromBaseline) latest(ctx context.Context, name, sel string, windowed bool) (model.Vector, error) {
	if !windowed {
		return b.query(ctx, MetricName(b.prefix, name)+sel)
	}
	return b.query(ctx, fmt.Sprintf("last_over_time(%s%s[%s])", MetricName(b.prefix, name), sel, model.Duration(b.window)))
}

// comboKey 是序列按组合（含轮次）分组的键。
type comboKey [8]string

// keyOf 从序列标签取出组合键，顺序与 comboLabels 一致。
func keyOf(m model.Metric) comboKey {
	var k comboKey
	for i, l := range comboLabels {
		k[i] = string(m[model.LabelName(l)])
	}
	return k
}

// summaryFor 从组合键建立一个汇总行骨架：标签转回字段，数值分布先置为"不可测"。
func summaryFor(k comboKey) (loadgen.Summary, error) {
	ints := make([]int, 0, 5)
	for _, i := range []int{2, 3, 4, 6, 7} { // input_len output_len concurrency growth_rate round
		n, err := strconv.Atoi(k[i])
		if err != nil {
			return loadgen.Summary{}, fmt.Errorf("metrics: baseline: label %s=%q: %w", comboLabels[i], k[i], err)
		}
		ints = append(ints, n)
	}
	return loadgen.Summary{
		Backend: k[0], DatasetType: k[1], InputLength: ints[0], OutputLength: ints[1], Concurrency: ints[2],
		ControlMethod: k[5], GrowthRate: ints[3], Round: ints[4],
		Goodput: -1, CompletionTokens: loadgen.Unmeasured(), SpecAcceptRate: loadgen.Unmeasured(),
	}, nil
}

// ReadDaily 读取 info 所指场景（model、quant、scenario，run_type 固定为 daily）最近一次
// 每日运行的全部压测指标，返回确定了 commit/branch/run_id 的 RunInfo 与重建的汇总行。先用即时查询读 Pushgateway 当前仍在暴露的值；一条都没有时
// （例如 Pushgateway 重启丢了状态）再在窗口内用 last_over_time 找。仍没有返回 ErrNoBaseline。
// 因为分组键不含 commit/run_id，同一组合只有一条序列，其最近值就是上一次每日运行的值。
func (b *PromBaseline) ReadDaily(ctx context.Context, info RunInfo) (RunInfo, []loadgen.Summary, error) {
	info.RunType = runtype.Daily
	ri, err := info.validate()
	if err != nil {
		return info, nil, err
	}
	out, rows, err := b.read(ctx, ri, false)
	if errors.Is(err, ErrNoBaseline) {
		out, rows, err = b.read(ctx, ri, true)
	}
	return out, rows, err
}

// read 按一种查询方式（即时或窗口）读取全部指标族并重建汇总行。
func (b *PromBaseline) read(ctx context.Context, ri RunInfo, windowed bool) (RunInfo, []loadgen.Summary, error) {
	sel := b.selector(ri)
	rows := map[comboKey]*loadgen.Summary{}
	// row 返回（必要时创建）该序列所属组合的汇总行。
	row := func(m model.Metric) (*loadgen.Summary, error) {
		k := keyOf(m)
		if s, ok := rows[k]; ok {
			return s, nil
		}
		s, err := summaryFor(k)
		if err != nil {
			return nil, err
		}
		rows[k] = &s
		return &s, nil
	}
	for _, sc := range scalarSpecs {
		vec, err := b.latest(ctx, sc.name, sel, windowed)
		if err != nil {
			return ri, nil, err
		}
		for _, smp := range vec {
			s, err := row(smp.Metric)
			if err != nil {
				return ri, nil, err
			}
			sc.set(s, float64(smp.Value))
		}
	}
	for _, d := range distSpecs {
		if err := b.readDist(ctx, d, sel, windowed, row); err != nil {
			return ri, nil, err
		}
	}
	if len(rows) == 0 {
		if windowed {
			return ri, nil, fmt.Errorf("%w: %s within %s", ErrNoBaseline, sel, model.Duration(b.window))
		}
		return ri, nil, fmt.Errorf("%w: %s currently exposed", ErrNoBaseline, sel)
	}
	if err := b.readPerfInfo(ctx, sel, windowed, rows); err != nil {
		return ri, nil, err
	}
	if err := b.readRunInfo(ctx, sel, &ri); err != nil {
		return ri, nil, err
	}
	perf := make([]loadgen.Summary, 0, len(rows))
	for _, s := range rows {
		perf = append(perf, *s)
	}
	sortSummaries(perf)
	return ri, perf, nil
}

// sortSummaries 按组合与轮次排序，使结果稳定、便于比较与测试。
func sortSummaries(ss []loadgen.Summary) {
	sort.Slice(ss, func(i, j int) bool {
		a, b := ss[i], ss[j]
		switch {
		case a.Backend != b.Backend:
			return a.Backend < b.Backend
		case a.InputLength != b.InputLength:
			return a.InputLength < b.InputLength
		case a.OutputLength != b.OutputLength:
			return a.OutputLength < b.OutputLength
		case a.Concurrency != b.Concurrency:
			return a.Concurrency < b.Concurrency
		default:
			return a.Round < b.Round
		}
	})
}

// readDist 读取一个分布的分位点、_count 与 min/max/avg，写回对应汇总行。
func (b *PromBaseline) readDist(ctx context.Context, d distSpec, sel string, windowed bool, row func(model.Metric) (*loadgen.Summary, error)) error {
	// set 把一个统计量写回时延或数值分布；时延以出现任何统计量为"可测"。
	set := func(m model.Metric, st stat, v float64) error {
		s, err := row(m)
		if err != nil {
			return err
		}
		if d.lat != nil {
			setLatencyStat(d.lat(s), st, v)
		} else {
			*valuesStat(d.val(s), st) = v
		}
		return nil
	}
	vec, err := b.latest(ctx, d.name, sel, windowed)
	if err != nil {
		return err
	}
	for _, smp := range vec {
		q, err := strconv.ParseFloat(string(smp.Metric[LabelQuantile]), 64)
		if err != nil {
			continue
		}
		for i, want := range quantiles {
			if q == want {
				if err := set(smp.Metric, stat(i), float64(smp.Value)); err != nil {
					return err
				}
			}
		}
	}
	for _, st := range []stat{statMin, statMax, statAvg} {
		vec, err := b.latest(ctx, d.statName(st), sel, windowed)
		if err != nil {
			return err
		}
		for _, smp := range vec {
			if err := set(smp.Metric, st, float64(smp.Value)); err != nil {
				return err
			}
		}
	}
	vec, err = b.latest(ctx, d.name+"_count", sel, windowed)
	if err != nil {
		return err
	}
	for _, smp := range vec {
		s, err := row(smp.Metric)
		if err != nil {
			return err
		}
		if d.lat != nil {
			d.lat(s).Count = int64(smp.Value)
		} else {
			d.val(s).Count = int64(smp.Value)
		}
	}
	return nil
}

// readPerfInfo 从 perf_info 恢复 provider、采样参数与 token 来源（只补已有的组合）。
func (b *PromBaseline) readPerfInfo(ctx context.Context, sel string, windowed bool, rows map[comboKey]*loadgen.Summary) error {
	vec, err := b.latest(ctx, NamePerfInfo, sel, windowed)
	if err != nil {
		return err
	}
	for _, smp := range vec {
		s, ok := rows[keyOf(smp.Metric)]
		if !ok {
			continue
		}
		m := smp.Metric
		s.Provider = string(m["provider"])
		s.TokenSource = string(m["token_source"])
		s.ConcurrencyBackend = string(m["concurrency_backend"])
		s.Temperature, _ = strconv.ParseFloat(string(m["temperature"]), 64)
		s.TopP, _ = strconv.ParseFloat(string(m["top_p"]), 64)
		s.TopK, _ = strconv.Atoi(string(m["top_k"]))
	}
	return nil
}

// readRunInfo 确定基线运行的 commit/branch/run_id。run_info 每次运行都是一条新序列，
// 窗口内可能有好几条；对每条序列求其最后一个样本的时间戳
// （max_over_time(timestamp(...)[window:step])，序列很少，代价小），取最新的一条。
func (b *PromBaseline) readRunInfo(ctx context.Context, sel string, ri *RunInfo) error {
	// 子查询步长取窗口的万分之一（至少 1s）：步点按绝对时间对齐，步长太粗会漏掉最近一步之后才出现的序列。
	res := (b.window / 10000).Truncate(time.Millisecond)
	if res < time.Second {
		res = time.Second
	}
	// "or timestamp(...)" 补上刚出现、还没落到任何步点上的当前序列。
	name := MetricName(b.prefix, NameRunInfo) + sel
	vec, err := b.query(ctx, fmt.Sprintf("max_over_time(timestamp(%s)[%s:%s]) or timestamp(%s)", name, model.Duration(b.window), model.Duration(res), name))
	if err != nil {
		return err
	}
	var best *model.Sample
	for _, smp := range vec {
		if best == nil || smp.Value > best.Value {
			best = smp
		}
	}
	if best != nil {
		m := best.Metric
		ri.Commit, ri.Branch, ri.RunID, ri.ModelRaw = string(m[LabelCommit]), string(m[LabelBranch]), string(m[LabelRunID]), string(m[LabelModelRaw])
	}
	return nil
}

// trimSpace 去掉 CSV 单元格两端空白（含 BOM），便于读取手工编辑过的文件。
func trimSpace(s string) string { return strings.TrimSpace(strings.TrimPrefix(s, "\ufeff")) }

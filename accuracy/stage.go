package accuracy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/accuracy/external"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/internal/redact"
)

// Target 是被测服务：嵌入的 endpoint.Endpoint（地址、模型、密钥、HTTP 客户端，约定见
// endpoint 包文档）。部署得到的端点原样放进来：Target{Endpoint: ep}；本包因此不依赖 deploy。
//
// 本包对嵌入字段的用法：RunStage 与 ChatSampler 把请求按轮询分发到全部 BaseURLs，重试换到
// 下一个实例；外部评测得到主地址 {base_url} 与全部地址 {base_urls}（见 external.Config）。
// APIKey 以 Bearer 方式发给服务，对外部评测只经环境变量 OPENAI_API_KEY 传给子进程，不出现在
// 命令行中。HTTPClient 只用于请求模型（下载数据集用 StageOptions.DownloadClient），nil 时使用
// 基于 http.DefaultTransport 的新客户端。
type Target struct {
	endpoint.Endpoint
}

// StageOptions 是 RunStage 的运行环境（配置之外、由调用方决定的部分）。
type StageOptions struct {
	// Source 是数据来源；nil 时按 Config 与 Evals 的默认数据构造（见 Config.OpenSource）。
	// 给出 Source 时调用方自己负责它与目标相容。
	Source Source
	// Emulated 为 true 表示目标是进程内模拟器：只有这时才允许 dataset: builtin-sample。
	Emulated bool
	// CacheDir 是 Config.CacheDir 为空时使用的下载缓存目录（通常是用户缓存目录下的
	// cibench/simple-evals）；两者都为空时不缓存。
	CacheDir string
	// Interpreter 是执行模型生成代码的命令（如 ["python3"]，交给 EvalOptions.Interpreter）；
	// 为空时需要它的评测（humaneval）被跳过并说明原因。
	Interpreter []string
	// Create 为结果文件（"{stem}.json"、".html"、".jsonl"）打开写入目标；nil 表示不写文件。
	Create func(name string) (io.WriteCloser, error)
	// ExternalDir 非空时运行 Config.External 中的外部评测，各自的输出放在其下的子目录。
	ExternalDir string
	// Logs 接收外部评测子进程的输出，nil 丢弃。
	Logs io.Writer
	// Progress 在每个样本完成后调用（同一数据集内串行）。
	Progress func(dataset string, done, total int)
	// DownloadClient 用于下载数据集（不用于请求模型：那是 Target.HTTPClient），nil 取
	// http.DefaultClient（时限来自 Config.DownloadTimeout，经 ctx 施加）。测试用它模拟断网。
	DownloadClient *http.Client
	// Now 是时钟，nil 取 time.Now。
	Now func() time.Time
	// Label 是写进结果与文件名的模型名（如 simple-evals 的 --model）；空时用 Target.Model。
	Label string
	// Evals 是 datasets[].name 的登记表（校验、构造评测与默认数据来源都用它），必填：
	// 内置评测是 simpleevals.Registry()，团队在上面（或在 NewRegistry() 上）登记自己的评测，
	// 并把同一张表交给 matrix.WithEvals，让 YAML 认识它。
	Evals *Registry
}

// StageResult 是一次精度阶段的全部结果；失败不会中断其余数据集（需求：失败继续）。
type StageResult struct {
	// Results、Gates 与 Verdicts 一一对应：Gates[i] 是 Results[i] 的门禁设置，
	// Verdicts[i] 是 Gate(Gates[i], Results[i])。
	Results  []EvalResult
	Gates    []DatasetConfig
	Verdicts []Verdict
	// Skipped 记录被跳过的数据集及原因（如缺少 python3）。
	Skipped map[string]string
	// Errors 记录每个出错数据集的错误（部分结果仍在 Results 中）。
	Errors map[string]error
}

// Passed 报告所有已判定的数据集是否都通过，且没有出错的数据集。
func (s StageResult) Passed() bool {
	if len(s.Errors) > 0 {
		return false
	}
	for _, v := range s.Verdicts {
		if !v.Pass {
			return false
		}
	}
	return true
}

// RunStage 按 Config 对目标服务依次评测全部数据集（CI 的精度阶段，examples/ci 与
// examples/accuracy 共用这一条路径）：校验配置与目标、构造采样器与数据来源，逐个
// 运行、记录数据来源、写出结果文件、用 Gate 判定；单个数据集失败只记录在 Errors 中，
// 继续下一个；构造函数返回包装 ErrSkip 的错误时该数据集记入 Skipped。配置无效（包装
// ErrConfig，包括 o.Evals 为 nil）或 ctx 被取消时返回错误（已完成的部分仍在返回值中）。
func RunStage(ctx context.Context, cfg Config, t Target, o StageOptions) (StageResult, error) {
	out := StageResult{Skipped: map[string]string{}, Errors: map[string]error{}}
	evals := o.Evals
	if evals == nil {
		return out, optErrf("accuracy: StageOptions.Evals is nil (pass simpleevals.Registry() for the built-in evals, or your own registry)")
	}
	if err := cfg.Validate(evals); err != nil {
		return out, err
	}
	if o.Source == nil {
		if err := cfg.CheckTarget(o.Emulated); err != nil {
			return out, err
		}
	}
	cfg = cfg.WithDefaults()
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	src := o.Source
	if src == nil {
		var err error
		if src, err = cfg.OpenSource(evals.Data(), o.DownloadClient, o.CacheDir); err != nil {
			return out, err
		}
	}
	sampler, err := NewChatSampler(ChatConfig{Endpoint: t.Endpoint, MaxTokens: cfg.MaxTokens, Temperature: cfg.Temperature, Timeout: cfg.RequestTimeout, Retries: cfg.Retries, MaxBodyBytes: cfg.MaxResponseBytes,
		ExtraBody: cfg.ExtraBody})
	if err != nil {
		return out, err
	}
	scrub := newScrubber(t.APIKey)
	label := o.Label
	if label == "" {
		label = t.Model
	}
	for _, d := range cfg.Datasets {
		rec := newRecorder(src)
		e, err := evals.New(d.Name, rec, EvalOptions{Debug: cfg.Debug, Examples: d.Examples, NRepeats: d.NRepeats, Interpreter: o.Interpreter})
		if errors.Is(err, ErrSkip) {
			out.Skipped[d.Name] = strings.TrimPrefix(err.Error(), ErrSkip.Error()+": ")
			continue
		}
		if err != nil {
			out.Errors[d.Name] = err
			continue
		}
		name := d.Name
		progress := func(done, total int) {
			if o.Progress != nil {
				o.Progress(name, done, total)
			}
		}
		res, runErr := Run(ctx, sampler, e, Options{Threads: cfg.NumThreads, Model: label, Progress: progress, Now: o.Now, Redact: scrub.String})
		res.Source = rec.snapshot()
		if runErr != nil {
			out.Errors[d.Name] = runErr
		}
		if res.Planned == 0 && runErr != nil {
			if ctx.Err() != nil {
				return out, runErr
			}
			continue
		}
		scrub.result(&res)
		out.Results = append(out.Results, res)
		out.Gates = append(out.Gates, d)
		out.Verdicts = append(out.Verdicts, Gate(d, res))
		if o.Create != nil {
			if err := writeResultFiles(o.Create, FileStem(d.Name, label, res.Started), res); err != nil {
				out.Errors[d.Name] = errors.Join(out.Errors[d.Name], err)
			}
		}
		if ctx.Err() != nil {
			return out, fmt.Errorf("accuracy: stage cancelled: %w", ctx.Err())
		}
	}
	if o.ExternalDir != "" {
		for _, x := range cfg.External {
			ev, err := external.New(x, filepath.Join(o.ExternalDir, x.Name), o.Logs)
			if err != nil {
				out.Errors[x.Name] = err
				continue
			}
			xr, err := ev.Run(ctx, t.Endpoint)
			if err != nil {
				out.Errors[x.Name] = err
				continue
			}
			res := EvalResult{Dataset: xr.Dataset, Model: xr.Model, Score: xr.Score, Metrics: map[string]float64{},
				Examples: 1, Planned: 1, MetricOrder: []string{"score"}, Started: xr.Started, Finished: xr.Finished}
			g := DatasetConfig{Name: res.Dataset, Metric: "score", Threshold: x.Threshold, ReportOnly: x.ReportOnly, MaxErrorRate: new(float64)}
			out.Results = append(out.Results, res)
			out.Gates = append(out.Gates, g)
			out.Verdicts = append(out.Verdicts, Gate(g, res))
		}
	}
	return out, nil
}

// OpenSource 按配置与登记表的默认数据 d（Registry.Data）构造数据来源，从不在来源之间退回：
//   - dataset: builtin-sample → d.Sample（调用方须先用 CheckTarget 确认目标是模拟器）；
//   - dataset_path → 本地目录；
//   - dataset_url → 该镜像地址下的全部文件；
//   - 都没有 → d 的下载地址（内置评测是 simple-evals 自己读取的上游公共地址），
//     下载一次后缓存在 cache_dir（为空时用 defaultCache）。d 没有下载地址时返回的来源
//     在打开文件时失败（包装 ErrDatasetUnavailable）：不读数据的评测照常运行。
func (c Config) OpenSource(d Data, client *http.Client, defaultCache string) (Source, error) {
	cache := c.CacheDir
	if cache == "" {
		cache = defaultCache
	}
	var h *HTTPSource
	var err error
	switch {
	case c.Dataset == BuiltinSample:
		if d.Sample == nil {
			return nil, cfgErr("dataset", BuiltinSample, "the eval registry has no built-in sample data")
		}
		return d.Sample, nil
	case c.DatasetPath != "":
		st, err := os.Stat(c.DatasetPath)
		if err != nil || !st.IsDir() {
			return nil, fmt.Errorf("%w: dataset_path %s: not a directory", ErrDatasetUnavailable, c.DatasetPath)
		}
		abs, _ := filepath.Abs(c.DatasetPath)
		return FSSource{FS: os.DirFS(c.DatasetPath), Label: abs}, nil
	case c.DatasetURL != "":
		h, err = NewHTTPSource(c.DatasetURL, cache, nil, client)
	case d.BaseURL == "" && len(d.URLs) == 0:
		return noSource{}, nil
	default:
		h, err = NewHTTPSource(d.BaseURL, cache, d.URLs, client)
	}
	if err != nil {
		return nil, err
	}
	h.Timeout, h.MaxBytes = c.DownloadTimeout, c.MaxDownloadBytes
	return h, nil
}

// scrubber 把配置的 API Key 的各种编码从结果文本中替换掉：服务可能在回复或错误里
// 回显它，而 JSONL/HTML 会原样保存这些文本。
type scrubber struct{ r *strings.Replacer }

// newScrubber 为 key 构造 scrubber；key 为空时什么也不做。
func newScrubber(key string) scrubber {
	forms := secretForms(key)
	if len(forms) == 0 {
		return scrubber{}
	}
	// 长的形式先替换（Replacer 按参数顺序匹配同一位置）。
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	for _, f := range forms {
		pairs = append(pairs, f, redact.Mask)
	}
	return scrubber{strings.NewReplacer(pairs...)}
}

// String 返回 s 脱敏后的文本。
func (s scrubber) String(v string) string {
	if s.r == nil {
		return v
	}
	return s.r.Replace(v)
}

// result 就地脱敏结果中的全部逐样本文本。
func (s scrubber) result(res *EvalResult) {
	if s.r == nil {
		return
	}
	for i := range res.Singles {
		sr := &res.Singles[i]
		sr.Prompt, sr.Response, sr.ExtractedAnswer, sr.CorrectAnswer, sr.Error =
			s.String(sr.Prompt), s.String(sr.Response), s.String(sr.ExtractedAnswer), s.String(sr.CorrectAnswer), s.String(sr.Error)
		for j := range sr.Responses {
			sr.Responses[j] = s.String(sr.Responses[j])
		}
	}
}

// writeResultFiles 写出一个结果的 .json、.html、.jsonl。
func writeResultFiles(create func(string) (io.WriteCloser, error), stem string, res EvalResult) error {
	for _, f := range []struct {
		ext   string
		write func(io.Writer) error
	}{
		{".json", func(w io.Writer) error { return WriteJSON(w, res) }},
		{".html", func(w io.Writer) error { return WriteHTML(w, res) }},
		{".jsonl", func(w io.Writer) error { return WriteJSONL(w, res.Singles) }},
	} {
		w, err := create(stem + f.ext)
		if err != nil {
			return fmt.Errorf("accuracy: create %s%s: %w", stem, f.ext, err)
		}
		werr := f.write(w)
		if cerr := w.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("accuracy: write %s%s: %w", stem, f.ext, werr)
		}
	}
	return nil
}

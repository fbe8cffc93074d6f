package accuracy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
)

// StageOptions 是 RunStage 的运行环境（配置之外、由调用方决定的部分）。
type StageOptions struct {
	// Source 是数据来源；nil 时按 Config 的 dataset_path/dataset_url/cache_dir 构造，
	// 三者都为空则使用内置合成样例数据（SampleData）。
	Source Source
	// Interpreter 是 HumanEval 的执行命令（如 ["python3"]）；为空时跳过 HumanEval 并说明原因。
	Interpreter []string
	// Create 为结果文件（"{stem}.json"、".html"、".jsonl"）打开写入目标；nil 表示不写文件。
	Create func(name string) (io.WriteCloser, error)
	// ExternalDir 非空时运行 Config.External 中的外部评测，各自的输出放在其下的子目录。
	ExternalDir string
	// Logs 接收外部评测子进程的输出，nil 丢弃。
	Logs io.Writer
	// Progress 在每个样本完成后调用（同一数据集内串行）。
	Progress func(dataset string, done, total int)
	// HTTPClient 用于请求模型与下载数据，nil 取 http.DefaultClient。
	HTTPClient *http.Client
}

// StageResult 是一次精度阶段的全部结果；失败不会中断其余数据集（规格：失败继续）。
type StageResult struct {
	Results  []EvalResult
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

// RunStage 按 Config 对目标服务依次评测全部数据集（CI 的精度阶段）：构造采样器与数据来源，
// 逐个运行、写出结果文件、按阈值判定；单个数据集失败只记录在 Errors 中，继续下一个。
// 只有配置无效或 ctx 被取消时返回错误（此时已完成的部分仍在返回值中）。
func RunStage(ctx context.Context, cfg Config, t Target, o StageOptions) (StageResult, error) {
	out := StageResult{Skipped: map[string]string{}, Errors: map[string]error{}}
	if err := cfg.Validate(); err != nil {
		return out, err
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
		if src, err = cfg.source(o.HTTPClient); err != nil {
			return out, err
		}
	}
	sampler, err := NewChatSampler(ChatConfig{BaseURL: t.BaseURL, Model: t.Model, APIKey: t.APIKey, MaxTokens: cfg.MaxTokens,
		Temperature: cfg.Temperature, Timeout: cfg.RequestTimeout, Retries: cfg.Retries, HTTPClient: o.HTTPClient})
	if err != nil {
		return out, err
	}
	for _, d := range cfg.Datasets {
		e, err := NewEval(d.Name, src, EvalOptions{Debug: cfg.Debug, Examples: d.Examples, NRepeats: d.NRepeats, Interpreter: o.Interpreter})
		if errors.Is(err, ErrNoPython) {
			out.Skipped[d.Name] = "python3 interpreter not available (humaneval executes generated code)"
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
		res, runErr := Run(ctx, sampler, e, Options{Threads: cfg.NumThreads, Model: t.Model, Progress: progress})
		if runErr != nil {
			out.Errors[d.Name] = runErr
		}
		if res.Planned == 0 && runErr != nil {
			if ctx.Err() != nil {
				return out, runErr
			}
			continue
		}
		out.Results = append(out.Results, res)
		out.Verdicts = append(out.Verdicts, Gate(d, res))
		if o.Create != nil {
			if err := writeResultFiles(o.Create, FileStem(d.Name, t.Model, res.Started), res); err != nil {
				out.Errors[d.Name] = errors.Join(out.Errors[d.Name], err)
			}
		}
		if ctx.Err() != nil {
			return out, fmt.Errorf("accuracy: stage cancelled: %w", ctx.Err())
		}
	}
	if o.ExternalDir != "" {
		for _, x := range cfg.External {
			ev, err := NewSubprocess(x, filepath.Join(o.ExternalDir, x.Name), o.Logs)
			if err != nil {
				out.Errors[x.Name] = err
				continue
			}
			res, err := ev.Evaluate(ctx, t)
			if err != nil {
				out.Errors[x.Name] = err
				continue
			}
			out.Results = append(out.Results, res)
			out.Verdicts = append(out.Verdicts, Gate(DatasetConfig{Name: res.Dataset, Threshold: x.Threshold}, res))
		}
	}
	return out, nil
}

// source 按配置构造数据来源：本地目录优先，其次 URL（带缓存），都没有则用内置样例数据。
func (c Config) source(client *http.Client) (Source, error) {
	var ss Sources
	if c.DatasetPath != "" {
		ss = append(ss, FSSource{FS: os.DirFS(c.DatasetPath), Label: c.DatasetPath})
	}
	if c.DatasetURL != "" {
		h, err := NewHTTPSource(c.DatasetURL, c.CacheDir, DefaultURLs(), client)
		if err != nil {
			return nil, err
		}
		ss = append(ss, h)
	}
	if len(ss) == 0 {
		return SampleData(), nil
	}
	return ss, nil
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

package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/metrics"
	"github.com/vllm-cibench/cibench/report"
)

// functional 运行场景选中的功能用例，写出 JSON 与 JUnit，并把报告交给 report。
// 用例失败不是阶段错误（由功能门禁判定）；只有无法执行时才返回错误。
func (d *driver) functional(ctx context.Context, p *matrix.ScenarioPlan, ep deploy.Endpoint) error {
	sc := p.Scenario
	cfg := p.Functional.Config
	cfg.Reasoning.AllowEmpty = cfg.Reasoning.AllowEmpty || sc.Reasoning.AllowEmpty
	cat, err := functional.NewCatalog(cfg)
	if err != nil {
		return err
	}
	cases, err := cat.Select(p.Functional.Select...)
	if err != nil {
		return err
	}
	target := functional.Target{BaseURLs: ep.BaseURLs, Model: ep.Model, APIKey: ep.APIKey, ReasoningKeys: sc.Reasoning.Keys}
	for _, f := range sc.Features {
		if ff := functional.Feature(f); ff.Known() {
			target.Features = append(target.Features, ff)
		}
	}
	opts := functional.DefaultOptions()
	opts.Config = &cfg
	opts.Now = d.now
	runner, err := functional.NewRunner(target, opts)
	if err != nil {
		return err
	}
	rep, runErr := runner.Run(ctx, cases)
	if len(rep.Results) > 0 || runErr == nil {
		if err := d.run.RecordFunctional(sc.Name, rep); err != nil {
			return errors.Join(runErr, err)
		}
		if err := d.writeWith(path.Join(sc.Name, string(report.StageFunctional), "junit.xml"), func(w io.Writer) error { return functional.WriteJUnit(w, rep) }); err != nil {
			return errors.Join(runErr, err)
		}
	}
	return runErr
}

// perf 依次运行场景的每个性能档位：逐请求与汇总 CSV 按 acs-bench 命名写进
// <scenario>/perf/<档位名>/，汇总行交给 report 参与性能门禁。
func (d *driver) perf(ctx context.Context, p *matrix.ScenarioPlan, ep deploy.Endpoint) error {
	sc := p.Scenario
	target := loadgen.Target{BaseURLs: ep.BaseURLs, Model: ep.Model, APIKey: ep.APIKey, Provider: sc.Name}
	var errs []error
	for _, np := range p.Perf.Profiles {
		prof := np.Profile.Defaults()
		dir := path.Join(sc.Name, string(report.StagePerf), np.Name)
		sink, err := metrics.NewArtifactSink(metrics.ArtifactNames{Provider: sc.Name, ControlMethod: prof.ControlMethod, Time: d.now()},
			func(name string) (io.WriteCloser, error) { return d.run.Create(path.Join(dir, name)) })
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rows, runErr := loadgen.Run(ctx, target, np.Profile, sink)
		if err := sink.Close(); err != nil {
			errs = append(errs, fmt.Errorf("profile %s: close CSV: %w", np.Name, err))
		}
		if len(rows) > 0 {
			if err := d.run.RecordPerf(sc.Name, rows); err != nil {
				errs = append(errs, err)
			}
		}
		if runErr != nil {
			errs = append(errs, fmt.Errorf("profile %s: %w", np.Name, runErr))
		}
		d.log.Info("perf profile finished", "scenario", sc.Name, "profile", np.Name, "rows", len(rows))
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

// accuracy 对每份精度配置中的每个数据集运行 simple-evals 兼容评测（以及配置的
// 外部评测），结果按 {dataset}_{model}_{ts}.json/.html 写进 <scenario>/accuracy/。
func (d *driver) accuracy(ctx context.Context, p *matrix.ScenarioPlan, ep deploy.Endpoint) error {
	sc := p.Scenario
	var errs []error
	for _, na := range p.Accuracy.Configs {
		cfg := na.Config.WithDefaults()
		actx := ctx
		if cfg.Timeout > 0 {
			var cancel context.CancelFunc
			actx, cancel = context.WithTimeout(ctx, cfg.Timeout)
			defer cancel()
		}
		src, err := accuracySource(cfg)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sampler, err := accuracy.NewChatSampler(accuracy.ChatConfig{
			BaseURL: ep.BaseURL(), Model: ep.Model, APIKey: ep.APIKey, MaxTokens: cfg.MaxTokens,
			Temperature: cfg.Temperature, Timeout: cfg.RequestTimeout, Retries: cfg.Retries,
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, ds := range cfg.Datasets {
			if err := d.evalDataset(actx, sc, na.Name, cfg, ds, src, sampler, ep); err != nil {
				errs = append(errs, fmt.Errorf("%s/%s: %w", na.Name, ds.Name, err))
			}
			if actx.Err() != nil {
				break
			}
		}
		for _, ext := range cfg.External {
			if err := d.evalExternal(actx, sc, ext, ep); err != nil {
				errs = append(errs, fmt.Errorf("%s/%s: %w", na.Name, ext.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// accuracySource 按配置选择数据来源：本地目录、下载地址，或内置的合成样例
// （没有网络与数据集的机器上也能跑通流程；分数不代表模型能力）。
func accuracySource(cfg accuracy.Config) (accuracy.Source, error) {
	switch {
	case cfg.DatasetPath != "":
		return accuracy.FSSource{FS: os.DirFS(cfg.DatasetPath), Label: cfg.DatasetPath}, nil
	case cfg.DatasetURL != "":
		return accuracy.NewHTTPSource(cfg.DatasetURL, cfg.CacheDir, nil, nil)
	}
	return accuracy.SampleData(), nil
}

// evalDataset 评测一个数据集并写出 JSON、HTML 与逐样本 JSONL。
func (d *driver) evalDataset(ctx context.Context, sc *matrix.Scenario, cfgName string, cfg accuracy.Config, ds accuracy.DatasetConfig, src accuracy.Source, sampler accuracy.Sampler, ep deploy.Endpoint) error {
	e, err := accuracy.NewEval(ds.Name, src, accuracy.EvalOptions{Debug: cfg.Debug, Examples: ds.Examples, NRepeats: ds.NRepeats})
	if err != nil {
		return err
	}
	res, runErr := accuracy.Run(ctx, sampler, e, accuracy.Options{Threads: cfg.NumThreads, Model: ep.Model, Now: d.now})
	if res.Dataset == "" && runErr != nil {
		return runErr
	}
	stem := path.Join(sc.Name, string(report.StageAccuracy), cfgName, accuracy.FileStem(ds.Name, ep.Model, d.now()))
	errs := []error{runErr,
		d.writeWith(stem+".json", func(w io.Writer) error { return accuracy.WriteJSON(w, res) }),
		d.writeWith(stem+".html", func(w io.Writer) error { return accuracy.WriteHTML(w, res) }),
		d.writeWith(stem+".jsonl", func(w io.Writer) error { return accuracy.WriteJSONL(w, res.Singles) }),
	}
	if res.Errors > 0 {
		// simple-evals 把请求失败的样本按空回复计分：分数因此失真，必须让人看见。
		errs = append(errs, fmt.Errorf("%d of %d samples failed after retries and were scored as empty responses", res.Errors, res.Examples))
	}
	threshold := ds.Threshold
	if ds.Metric != "" && ds.Metric != "score" {
		// report 以 Score 比较阈值；其他指标时把该指标作为分数交给门禁。
		if v, ok := res.Metrics[ds.Metric]; ok {
			res.Score = v
		}
	}
	errs = append(errs, d.run.RecordAccuracy(sc.Name, report.Accuracy{Result: res, Threshold: threshold}))
	d.log.Info("accuracy finished", "scenario", sc.Name, "dataset", ds.Name, "score", res.Score, "examples", res.Examples)
	return errors.Join(errs...)
}

// evalExternal 运行一个外部评测（OpenCompass、MME……）子进程。
func (d *driver) evalExternal(ctx context.Context, sc *matrix.Scenario, ext accuracy.ExternalConfig, ep deploy.Endpoint) error {
	dir, err := d.run.ScenarioDir(sc.Name, report.StageAccuracy)
	if err != nil {
		return err
	}
	logs, err := d.run.Create(path.Join(sc.Name, string(report.StageAccuracy), ext.Name+".log"))
	if err != nil {
		return err
	}
	defer logs.Close()
	sp, err := accuracy.NewSubprocess(ext, path.Join(dir, ext.Name), logs)
	if err != nil {
		return err
	}
	res, err := sp.Evaluate(ctx, accuracy.Target{BaseURL: ep.BaseURL(), Model: ep.Model, APIKey: ep.APIKey})
	if err != nil {
		return err
	}
	return d.run.RecordAccuracy(sc.Name, report.Accuracy{Result: res, Threshold: ext.Threshold})
}

// writeWith 把 fn 的输出原子地写进运行目录中的 rel（经脱敏）。
func (d *driver) writeWith(rel string, fn func(io.Writer) error) error {
	w, err := d.run.Create(rel)
	if err != nil {
		return err
	}
	if err := fn(w); err != nil {
		_ = w.Close()
		return err
	}
	return w.Close()
}

// push 把每个场景的结果推送到 Pushgateway（仅每日运行；未配置地址时跳过并说明）。
// 推送失败记为该场景的 push 阶段错误：每日看板缺数据必须让人看见。
func (d *driver) push(ctx context.Context) {
	if d.o.PushURL == "" {
		if d.o.RequirePush {
			for _, sc := range d.run.Result().Scenarios {
				d.recordError(sc.Name, report.Stage("push"), errors.New("-push given but no Pushgateway URL (-push-url or PROM_PUSHGATEWAY_URL)"))
			}
			return
		}
		d.log.Info("daily run: no Pushgateway configured (PROM_PUSHGATEWAY_URL), metrics not pushed")
		return
	}
	pcfg := d.o.PushAuth
	pcfg.URL, pcfg.Options = d.o.PushURL, d.o.PushOptions
	pusher, err := metrics.NewPusher(pcfg)
	if err != nil {
		d.log.Error("pushgateway config invalid", "err", d.red.String(err.Error()))
		return
	}
	for _, sc := range d.run.Result().Scenarios {
		res := metrics.Results{
			Info: metrics.RunInfo{Model: sc.Model, Quant: sc.Quant, Scenario: sc.Name, RunType: string(d.o.RunType),
				Commit: d.o.Commit, Branch: d.o.Branch, RunID: d.runID},
			Perf:       sc.Perf,
			Functional: sc.Functional,
		}
		for _, a := range sc.Accuracy {
			res.Accuracy = append(res.Accuracy, a.Result)
		}
		if s := d.m.Scenarios[sc.Name]; s != nil {
			res.Info.ModelRaw = s.Model
		}
		if err := pusher.Push(ctx, res); err != nil {
			d.recordError(sc.Name, report.Stage("push"), err)
			continue
		}
		d.pushed = append(d.pushed, res)
		d.log.Info("pushed metrics", "scenario", sc.Name)
	}
}

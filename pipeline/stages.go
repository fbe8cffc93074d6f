package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/metrics"
	"github.com/vllm-cibench/cibench/metrics/accuracymetrics"
	"github.com/vllm-cibench/cibench/metrics/functionalmetrics"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/accuracyreport"
	"github.com/vllm-cibench/cibench/report/functionalreport"
	"github.com/vllm-cibench/cibench/report/perfreport"
)

// functional 运行场景选中的功能用例，写出 JSON 与 JUnit，并把报告交给 report。
// 用例失败不是阶段错误（由功能门禁判定）；只有无法执行时才返回错误。
func (d *driver) functional(ctx context.Context, p *matrix.ScenarioPlan, ep deploy.Endpoint) error {
	sc := p.Scenario
	cfg := p.Functional.Config
	cfg.Reasoning.AllowEmpty = cfg.Reasoning.AllowEmpty || sc.Reasoning.AllowEmpty
	cat, err := functional.NewCatalog(cfg, d.o.Features)
	if err != nil {
		return err
	}
	for _, c := range d.o.Cases {
		if err := cat.Add(c); err != nil {
			return err
		}
	}
	cases, err := cat.Select(p.Functional.Select...)
	if err != nil {
		return err
	}
	opts := functional.DefaultOptions()
	// 单个请求的超时与响应大小上限来自 tests/functional/request.yaml（矩阵配置树的一部分）。
	opts.RequestTimeout, opts.MaxResponseBytes = cfg.Request.Timeout, cfg.Request.MaxResponseBytes
	opts.Config = &cfg
	opts.Features = d.o.Features
	opts.Now = d.now
	runner, err := functional.NewRunner(sc.FunctionalTarget(ep), opts)
	if err != nil {
		return err
	}
	rep, runErr := runner.Run(ctx, cases)
	// 记下选择模式：下一次运行的门禁据此判断基线中通过的用例“消失”是否在范围内。
	rep.Selection = append([]string(nil), p.Functional.Select...)
	if len(rep.Results) > 0 || runErr == nil {
		if err := functionalreport.Record(d.run, sc.Name, rep); err != nil {
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
	target := loadgen.Target{Endpoint: ep, Provider: sc.Name}
	// 团队的 PerfShapers 在档位运行前改写它（到达过程、请求来源……）；YAML 给不出的东西由此进来。
	// 先改写全部档位再校准：校准看的是真正要跑的档位（一个 embeddings 档位不该先发一个 chat 请求）。
	shaped := make([]loadgen.Profile, len(p.Perf.Profiles))
	shapeErrs := make([]error, len(p.Perf.Profiles))
	for i, np := range p.Perf.Profiles {
		shaped[i], shapeErrs[i] = d.shape(sc.Name, np.Name, ep.Model, path.Join(sc.Name, string(report.StagePerf), np.Name), np.Profile)
	}
	d.calibrateIfUnknown(ctx, p, target, shaped)
	var errs []error
	for i, np := range p.Perf.Profiles {
		dir := path.Join(sc.Name, string(report.StagePerf), np.Name)
		if shapeErrs[i] != nil {
			errs = append(errs, shapeErrs[i])
			continue
		}
		np.Profile = shaped[i]
		prof := np.Profile.WithDefaults()
		sink, err := metrics.NewArtifactSink(metrics.ArtifactNames{Provider: sc.Name, ControlMethod: prof.ControlMethod, Time: d.now()},
			func(name string) (io.WriteCloser, error) { return d.run.Create(path.Join(dir, name)) })
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// 团队的导出器经 loadgen.Tee 与内置 CSV 并列收到全部事件（扫描与分片运行也是）。
		team, closeTeam, err := d.exporters(sc.Name, np.Name, ep.Model, func(name string) (io.WriteCloser, error) { return d.run.Create(path.Join(dir, name)) })
		if err != nil {
			errs = append(errs, fmt.Errorf("profile %s: %w", np.Name, err))
		}
		if prof.ControlMethod == loadgen.ControlSweep {
			errs = append(errs, d.sweep(ctx, sc.Name, np.Name, dir, target, np.Profile, sink, team)...)
			errs = append(errs, closeTeam(np.Name)...)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		// 采样器在写 CSV 的同时保留有界的逐请求样本，性能门禁据此给出置信区间。
		// 时间线行在写 timeline_*.csv 的同时保留一份交给报告画图（行数 = 运行时长 / bucket_interval）。
		coll := perfreport.NewSampleCollector(prof.BackendName(), string(prof.ControlMethod), 0)
		var timeline []loadgen.Timeline
		keep := &loadgen.Observer{OnTimeline: func(t loadgen.Timeline) error { timeline = append(timeline, t); return nil }}
		var rows []loadgen.Summary
		var runErr error
		if p.Perf.Shards > 1 {
			// 分片运行的记录在各分片进程里，这里没有逐请求样本：门禁退回需求规则（无区间）。
			rows, runErr = runShardedPerf(ctx, target, np.Profile, p.Perf.Shards, loadgen.Tee(sink.Observer(), team))
		} else {
			rows, runErr = loadgen.Run(ctx, target, np.Profile, loadgen.Tee(sink.Observer(), keep, coll.Observer(), team))
		}
		if err := sink.Close(); err != nil {
			errs = append(errs, fmt.Errorf("profile %s: close CSV: %w", np.Name, err))
		}
		errs = append(errs, closeTeam(np.Name)...)
		if len(rows) > 0 {
			if err := perfreport.RecordRows(d.run, sc.Name, rows); err != nil {
				errs = append(errs, err)
			}
			if err := perfreport.RecordSamples(d.run, sc.Name, coll.Samples()); err != nil {
				errs = append(errs, err)
			}
		}
		if len(timeline) > 0 {
			if err := perfreport.RecordTimeline(d.run, sc.Name, timeline); err != nil {
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
		if errors.Is(runErr, loadgen.ErrUnresponsive) {
			// 服务在运行中途停止回答：其余档位不再各等一遍超时，逐个写明没有运行、为什么。
			for _, rest := range p.Perf.Profiles[i+1:] {
				errs = append(errs, fmt.Errorf("profile %s not run: the server stopped answering during profile %s", rest.Name, np.Name))
			}
			break
		}
	}
	return errors.Join(errs...)
}

// sweep 运行一个容量扫描档位：每级的逐请求与汇总 CSV 照常写出，另外每次扫描写一份
// 逐级 CSV（sweep_*.csv）、整个档位写一份容量汇总 CSV（capacity_*.csv，每次扫描一行），
// 结论交给 report（HTML 图表、summary.json）与每日推送（capacity_requests_per_second）。
// 各级的汇总行不进入性能门禁：它们的到达速率各不相同。
func (d *driver) sweep(ctx context.Context, scenario, profile, dir string, target loadgen.Target, prof loadgen.Profile, sink *metrics.ArtifactSink, team *loadgen.Observer) []error {
	var errs []error
	results, runErr := loadgen.RunSweep(ctx, target, prof, loadgen.Tee(sink.Observer(), team))
	if err := sink.Close(); err != nil {
		errs = append(errs, fmt.Errorf("profile %s: close CSV: %w", profile, err))
	}
	ts := d.now().Format(metrics.ArtifactTimeLayout)
	for _, r := range results {
		name := fmt.Sprintf("sweep_%s_input%d_output%d_concurrency%d_%s.csv", scenario, r.InputLength, r.OutputLength, r.Concurrency, ts)
		if err := d.writeWith(path.Join(dir, name), func(w io.Writer) error { return loadgen.WriteSweepCSV(w, r) }); err != nil {
			errs = append(errs, err)
		}
		d.log.Info("capacity sweep finished", "scenario", scenario, "profile", profile, "input", r.InputLength, "output", r.OutputLength,
			"max_sustainable_rps", r.MaxSustainableRate, "knee_rps", r.KneeRate, "steps", len(r.Steps), "stop", r.Stop)
	}
	if len(results) > 0 {
		if err := d.writeWith(path.Join(dir, "capacity_"+scenario+"_"+ts+".csv"), func(w io.Writer) error { return loadgen.WriteCapacityCSV(w, results) }); err != nil {
			errs = append(errs, err)
		}
		if err := perfreport.RecordCapacity(d.run, scenario, results); err != nil {
			errs = append(errs, err)
		}
	}
	if runErr != nil {
		errs = append(errs, fmt.Errorf("profile %s: %w", profile, runErr))
	}
	return errs
}

// accuracy 对每份精度配置运行 accuracy.RunStage（与 examples/accuracy 同一条路径：
// 数据来源、采样、计分、记录数据来源、门禁都在那里），结果按
// {dataset}_{model}_{ts}.json/.html/.jsonl 写进 <scenario>/accuracy/<配置名>/，
// 外部评测的输出写进 <scenario>/accuracy/ 下各自的子目录。门禁由 report 用同一个
// accuracy.Gate 判定；数据集无法评测，或失败请求比例超过 max_error_rate 时，
// 本阶段本身也记为失败。
func (d *driver) accuracy(ctx context.Context, p *matrix.ScenarioPlan, ep deploy.Endpoint) error {
	sc := p.Scenario
	var errs []error
	for _, na := range p.Accuracy.Configs {
		var logs io.WriteCloser
		extDir := ""
		if len(na.Config.External) > 0 {
			dir, err := d.run.ScenarioDir(sc.Name, report.StageAccuracy)
			if err == nil {
				logs, err = d.run.Create(path.Join(sc.Name, string(report.StageAccuracy), na.Name, "external.log"))
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			extDir = filepath.Join(dir, na.Name)
		}
		dir := path.Join(sc.Name, string(report.StageAccuracy), na.Name)
		res, runErr := accuracy.RunStage(ctx, na.Config, accuracy.Target{Endpoint: ep}, accuracy.StageOptions{
			Emulated:       d.emulated(sc),
			CacheDir:       d.accuracyCache(),
			DownloadClient: d.o.AccuracyDownloadClient,
			Create:         func(name string) (io.WriteCloser, error) { return d.run.Create(path.Join(dir, name)) },
			ExternalDir:    extDir,
			Logs:           logs,
			Now:            d.now,
			Evals:          d.o.Evals,
		})
		if logs != nil {
			_ = logs.Close()
		}
		for i, r := range res.Results {
			g, v := res.Gates[i], res.Verdicts[i]
			rate := 0.0
			if g.MaxErrorRate != nil {
				rate = *g.MaxErrorRate
			}
			if err := accuracyreport.Record(d.run, sc.Name, accuracyreport.Result{Result: r, Threshold: g.Threshold, Metric: g.Metric, MaxErrorRate: rate}); err != nil {
				errs = append(errs, err)
			}
			if v.ErrorRateExceeded {
				errs = append(errs, fmt.Errorf("%s/%s: %s", na.Name, r.Dataset, v.Reason))
			}
			data := "external"
			if r.Source != nil {
				data = r.Source.Kind + " " + r.Source.Location
			}
			d.log.Info("accuracy finished", "scenario", sc.Name, "config", na.Name, "dataset", r.Dataset, "score", r.Score,
				"examples", r.Examples, "failed_requests", r.Errors, "data", data)
			// 多实例时重试换到下一个实例，一个实例的故障可能被挽回而不进入 failed_requests：逐实例说出来。
			for _, is := range r.Instances {
				if is.Failed > 0 {
					d.log.Warn("accuracy instance had failed attempts", "scenario", sc.Name, "config", na.Name, "dataset", r.Dataset,
						"instance", is.BaseURL, "failed", is.Failed, "attempts", is.Attempts, "classes", is.FailedClasses)
				}
			}
		}
		names := make([]string, 0, len(res.Errors))
		for n := range res.Errors {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			err := res.Errors[n]
			if errors.Is(err, accuracy.ErrDatasetUnavailable) {
				// 拿不到数据时告诉用户三条出路：把文件放进缓存目录、在配置里指向本地数据、
				// 或者这次不跑精度。功能与性能阶段不受影响，照常运行并报告。
				err = fmt.Errorf("%w; pre-fill the cache directory %s with the simple-evals files (or set dataset_path in tests/accuracy/%s.yaml), or run without the accuracy stage (Selection.Stages: functional, perf; in examples/ci: -stages functional,perf)",
					err, d.accuracyCacheLabel(), na.Name)
			}
			errs = append(errs, fmt.Errorf("%s/%s: %w", na.Name, n, err))
		}
		for n, why := range res.Skipped {
			d.log.Warn("accuracy dataset skipped", "scenario", sc.Name, "config", na.Name, "dataset", n, "reason", why)
		}
		if runErr != nil {
			errs = append(errs, fmt.Errorf("%s: %w", na.Name, runErr))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

// emulated 报告场景的目标是否是进程内模拟器：只有这时 dataset: builtin-sample 才合法。
// 用 -base-url 改指的模拟器场景打的是真实服务，不算。
func (d *driver) emulated(sc *matrix.Scenario) bool {
	return sc.Emulated && d.o.BaseURL == ""
}

// accuracyCache 返回精度数据的下载缓存目录：Options.AccuracyCacheDir 或用户缓存目录下的
// cibench/simple-evals；两者都拿不到时为空（不缓存，每次下载）。
func (d *driver) accuracyCache() string {
	if d.o.AccuracyCacheDir != "" {
		return d.o.AccuracyCacheDir
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "cibench", "simple-evals")
	}
	return ""
}

// realAccuracyData 处理"把默认流水线改指真实服务"：-base-url 把模拟器场景打到一个真实服务上时，
// 矩阵为进程内模拟器写的精度 override（dataset: builtin-sample、分数不设门禁——模拟器的回答
// 是占位文字）不再适用——合成样例绝不给真实服务打分，但用户第一次对真实服务运行也不该是一个
// 配置错误。于是这些精度配置退回 tests/accuracy/ 下未叠加 override 的同名配置（需求的 PR/每日
// 配置：simple-evals 真实数据与它的分数阈值；上游公共地址下载一次后进缓存，拿不到时精度阶段
// 失败并写明文件、缓存路径与跳过的参数），并在日志里说明。其他模式的场景写了 builtin-sample
// 仍由 checkAccuracyTargets 拒绝：那是用户明确为真实服务写下的配置错误，不替他改。
func (d *driver) realAccuracyData() {
	if d.o.BaseURL == "" {
		return
	}
	for i := range d.plans {
		p := &d.plans[i]
		if !p.Scenario.Emulated {
			continue
		}
		for j := range p.Accuracy.Configs {
			na := &p.Accuracy.Configs[j]
			if na.Config.Dataset != accuracy.BuiltinSample {
				continue
			}
			base, ok := d.m.Accuracy[na.Name]
			if !ok || base.Dataset == accuracy.BuiltinSample {
				// 配置文件本身就写了内置样例：没有可退回的真实数据配置，交给 checkAccuracyTargets 报错。
				continue
			}
			na.Config = base
			d.log.Info("accuracy uses the unmodified config with simple-evals data: the emulator override (built-in sample) only scores the in-process emulator",
				"scenario", p.Scenario.Name, "config", na.Name, "base_url", d.o.BaseURL, "cache", d.accuracyCache())
		}
	}
}

// accuracyCacheLabel 返回写进错误信息的缓存目录；没有缓存目录时说明如何给一个。
func (d *driver) accuracyCacheLabel() string {
	if c := d.accuracyCache(); c != "" {
		return c
	}
	return "(none: no user cache directory; set HOME or XDG_CACHE_HOME)"
}

// checkAccuracyTargets 在任何部署之前检查每个要运行的精度配置与其目标相容
// （内置样例只能打进程内模拟器），错误写明场景、配置名与改法。
func (d *driver) checkAccuracyTargets() error {
	if !d.selected(report.StageAccuracy) {
		return nil
	}
	var errs []error
	for _, p := range d.plans {
		if !p.Accuracy.Enabled {
			continue
		}
		for _, na := range p.Accuracy.Configs {
			if err := na.Config.CheckTarget(d.emulated(p.Scenario)); err != nil {
				why := "scenario mode is " + string(p.Scenario.Mode)
				if d.o.BaseURL != "" {
					why = "-base-url " + d.o.BaseURL + " points the scenario at a real server"
				}
				errs = append(errs, fmt.Errorf("scenario %s, accuracy config %s (%s): %w; or run without the accuracy stage (Selection.Stages: functional, perf; in examples/ci: -stages functional,perf)", p.Scenario.Name, na.Name, why, err))
			}
		}
	}
	return errors.Join(errs...)
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
				d.recordError(sc.Name, report.Stage("push"), errors.New("Outputs.RequirePush is set but Outputs.PushURL is empty (in examples/ci: -push needs -push-url or PROM_PUSHGATEWAY_URL)"))
			}
			return
		}
		d.log.Info("daily run: no Pushgateway configured (PROM_PUSHGATEWAY_URL), metrics not pushed")
		return
	}
	pcfg := d.o.PushAuth
	pcfg.URL = d.o.PushURL
	pusher, err := metrics.NewPusher(pcfg)
	if err != nil {
		d.log.Error("pushgateway config invalid", "err", d.red.Redact(err.Error()))
		return
	}
	for _, sc := range d.run.Result().Scenarios {
		info := metrics.RunInfo{Model: sc.Model, Quant: sc.Quant, Scenario: sc.Name, RunType: d.o.RunType,
			Commit: d.o.Commit, Branch: d.o.Branch, RunID: d.runID}
		if s := d.m.Scenarios[sc.Name]; s != nil {
			info.ModelRaw = s.Model
		}
		perf, capacity, fn, acc, err := stageResults(sc)
		if err != nil {
			d.recordError(sc.Name, report.Stage("push"), err)
			continue
		}
		// 每个阶段的结果由它自己的 Collector 导出，注册进同一个 Gatherer 一次推送（整组替换）；
		// 不带常量标签：分组键承载 model、quant、scenario、run_type。
		var extra []prometheus.Collector
		if d.o.Collectors != nil {
			// 团队的 collector 与内置的注册进同一个 pedantic 注册表：名字冲突、不一致的指标在推送前被拒绝。
			extra, err = d.o.Collectors(sc)
		}
		var reg prometheus.Gatherer
		if err == nil {
			reg, err = stageGatherer(info, d.o.PushOptions, perf, capacity, fn, acc, extra...)
		}
		if err == nil {
			err = pusher.Push(ctx, info, reg)
		}
		if err != nil {
			d.recordError(sc.Name, report.Stage("push"), err)
			continue
		}
		d.log.Info("pushed metrics", "scenario", sc.Name)
	}
}

// stageResults 读出场景中内置阶段的结果（各阶段报告子包的分节），交给各自的 Collector。
func stageResults(sc report.Scenario) (perf []loadgen.Summary, capacity []loadgen.SweepResult, fn *functional.Report, acc []accuracy.EvalResult, err error) {
	if perf, err = perfreport.Rows(sc); err != nil {
		return
	}
	if capacity, err = perfreport.Capacity(sc); err != nil {
		return
	}
	if fn, err = functionalreport.Report(sc); err != nil {
		return
	}
	rs, err := accuracyreport.Results(sc)
	for _, a := range rs {
		acc = append(acc, a.Result)
	}
	return
}

// stageGatherer 为一个场景的各阶段结果构造各自的 Collector（运行身份、压测与容量、功能、精度），
// 注册进一个 pedantic 注册表交给 Pusher。需求 §7（docs/requirements.md）的"仅每日推送"由调用方（Run 只在每日运行
// 调用 push）负责，metrics 本身不按运行类型取舍。
func stageGatherer(info metrics.RunInfo, opts metrics.Options, perf []loadgen.Summary, capacity []loadgen.SweepResult,
	fn *functional.Report, acc []accuracy.EvalResult, extra ...prometheus.Collector) (prometheus.Gatherer, error) {
	ic, err := metrics.NewRunInfoCollector(info, opts)
	if err != nil {
		return nil, err
	}
	pc, err := metrics.NewPerfCollector(perf, capacity, opts)
	if err != nil {
		return nil, err
	}
	fc, err := functionalmetrics.NewCollector(fn, opts)
	if err != nil {
		return nil, err
	}
	ac, err := accuracymetrics.NewCollector(acc, opts)
	if err != nil {
		return nil, err
	}
	return metrics.NewRegistry(append([]prometheus.Collector{ic, pc, fc, ac}, extra...)...)
}

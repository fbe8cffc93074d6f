package pipeline

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/accuracyreport"
	"github.com/vllm-cibench/cibench/report/functionalreport"
)

// stageTiming 是一个阶段在 deployment.json 中的记录。
type stageTiming struct {
	Stage    report.Stage `json:"stage"`
	Status   string       `json:"status"` // ok | failed | skipped | interrupted（report.StageStatus 的取值）
	Started  time.Time    `json:"started"`
	Duration float64      `json:"duration_seconds"`
	Timeout  float64      `json:"timeout_seconds,omitempty"`
	Error    string       `json:"error,omitempty"`
}

// deploymentRecord 是每个场景的运行清单 <scenario>/deploy/deployment.json：
// 场景、实际访问的地址（已去掉密钥）与各阶段耗时。
type deploymentRecord struct {
	Scenario  string           `json:"scenario"`
	RunType   string           `json:"run_type"`
	Mode      string           `json:"mode"`
	Model     string           `json:"model"`
	Quant     string           `json:"quant"`
	Features  []string         `json:"features,omitempty"`
	OnFailure string           `json:"on_failure"`
	External  bool             `json:"external_override,omitempty"`
	Endpoint  *deploy.Endpoint `json:"endpoint,omitempty"`
	Stages    []stageTiming    `json:"stages"`
	Started   time.Time        `json:"started"`
	Finished  time.Time        `json:"finished"`
	Teardown  string           `json:"teardown"`
}

// runScenario 对一个场景执行 部署 → 功能 → 性能 → 精度，最后无论如何都归档日志并清理。
func (d *driver) runScenario(ctx context.Context, p *matrix.ScenarioPlan) {
	sc := p.Scenario
	d.addScenario(p)
	rec := &deploymentRecord{
		Scenario: sc.Name, RunType: string(p.RunType), Mode: string(sc.Mode), Model: sc.ServedModelName,
		Quant: string(sc.Quant), OnFailure: string(p.OnFailure), External: d.o.BaseURL != "", Started: d.now().UTC(),
	}
	for _, f := range sc.Features {
		rec.Features = append(rec.Features, string(f))
	}
	log := d.log.With("scenario", sc.Name)
	log.Info("scenario started", "mode", sc.Mode, "model", sc.ServedModelName)

	// 部署：超时取健康等待时限（部署器自己也会按它等待），再留一点余量。
	var dep deploy.Deployment
	d.stage(ctx, rec, report.StageDeploy, sc.Health.Timeout+time.Minute, func(ctx context.Context) error {
		var err error
		dep, err = d.deploy(ctx, sc)
		return err
	})
	if dep == nil {
		for _, st := range []report.Stage{report.StageFunctional, report.StagePerf, report.StageAccuracy} {
			d.mark(rec, stageTiming{Stage: st, Status: string(report.StageSkipped), Error: "no deployment"})
		}
		for _, ts := range d.o.TeamStages {
			d.mark(rec, stageTiming{Stage: ts.Name, Status: string(report.StageSkipped), Error: "no deployment"})
		}
		d.finishRecord(rec)
		if p.OnFailure == matrix.OnFailureAbort {
			d.abort = true
		}
		return
	}
	ep := dep.Endpoint()
	if key := d.keys[sc.Name]; key != "" && ep.APIKey == "" {
		ep.APIKey = key
	}
	red := ep.Redacted()
	rec.Endpoint = &red
	log.Info("deployed", "endpoint", ep.String())
	_ = d.run.WriteJSON(path.Join(sc.Name, string(report.StageDeploy), "deployment.json"), rec)

	defer func() {
		// 清理在不受取消影响的 ctx 中进行：Ctrl-C 之后更要把资源释放掉。
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
		defer cancel()
		d.teardown(tctx, sc.Name, dep, rec)
		d.finishRecord(rec)
	}()

	type stageRun struct {
		stage   report.Stage
		enabled bool
		timeout time.Duration
		fn      func(context.Context) error
	}
	stages := []stageRun{
		{report.StageFunctional, p.Functional.Enabled, p.Functional.Timeout, func(ctx context.Context) error { return d.functional(ctx, p, ep) }},
		{report.StagePerf, p.Perf.Enabled && len(p.Perf.Profiles) > 0, p.Perf.Timeout, func(ctx context.Context) error { return d.perf(ctx, p, ep) }},
		{report.StageAccuracy, p.Accuracy.Enabled && len(p.Accuracy.Configs) > 0, p.Accuracy.Timeout, func(ctx context.Context) error { return d.accuracy(ctx, p, ep) }},
	}
	// 团队阶段排在内置阶段之后，与它们走同一条路径（选择、on_failure、超时、状态记录）。
	for _, ts := range d.o.TeamStages {
		timeout := ts.Timeout
		if timeout == 0 {
			timeout = DefaultTeamStageTimeout
		}
		stages = append(stages, stageRun{ts.Name, true, timeout, func(ctx context.Context) error {
			return ts.Run(ctx, StageRun{Scenario: sc.Name, Endpoint: ep, Report: d.run})
		}})
	}
	stop := false
	for _, s := range stages {
		if d.o.StageTimeout > 0 {
			s.timeout = d.o.StageTimeout
		}
		skipped := string(report.StageSkipped)
		switch {
		case !d.selected(s.stage):
			d.mark(rec, stageTiming{Stage: s.stage, Status: skipped, Error: "not selected (-stages)"})
			continue
		case !s.enabled:
			d.mark(rec, stageTiming{Stage: s.stage, Status: skipped, Error: "disabled in matrix"})
			continue
		case stop || ctx.Err() != nil:
			why := "skipped after an earlier failure (on_failure: " + string(p.OnFailure) + ")"
			if ctx.Err() != nil {
				why = fmt.Sprintf("not run: %v", context.Cause(ctx))
			}
			d.mark(rec, stageTiming{Stage: s.stage, Status: skipped, Error: why})
			continue
		}
		ev := StageEvent{Scenario: sc.Name, Stage: s.stage, Endpoint: ep}
		if d.o.Hooks.StageStart != nil {
			d.o.Hooks.StageStart(ctx, ev)
		}
		fn := s.fn
		if tu, ok := dep.(deploy.StageTuner); ok {
			// 部署按阶段调整自己（模拟器：功能阶段用更短的注入时延）；调整失败就是这个阶段失败。
			st, run := s.stage, s.fn
			fn = func(ctx context.Context) error {
				if err := tu.TuneStage(ctx, string(st)); err != nil {
					return fmt.Errorf("tune the deployment for stage %s: %w", st, err)
				}
				return run(ctx)
			}
		}
		failed := d.stage(ctx, rec, s.stage, s.timeout, fn)
		if d.o.Hooks.StageDone != nil {
			last := rec.Stages[len(rec.Stages)-1]
			ev.Status, ev.Duration = report.StageStatus(last.Status), time.Duration(last.Duration*float64(time.Second))
			if last.Error != "" {
				ev.Err = errors.New(last.Error)
			}
			d.o.Hooks.StageDone(ctx, ev)
		}
		if failed {
			switch p.OnFailure {
			case matrix.OnFailureNextScenario:
				stop = true
			case matrix.OnFailureAbort:
				stop, d.abort = true, true
			}
		}
	}
}

// selected 报告阶段是否在 -stages 的选择之内（未选择即全部）。
func (d *driver) selected(st report.Stage) bool {
	if len(d.o.Stages) == 0 {
		return true
	}
	for _, s := range d.o.Stages {
		if s == st {
			return true
		}
	}
	return false
}

// stage 在带超时的 ctx 中执行 fn，记录耗时与结果；返回阶段是否失败。
// 阶段错误写进报告（成为 stage 门禁），但不会中断后续阶段——是否继续由调用方按
// on_failure 决定。
func (d *driver) stage(ctx context.Context, rec *deploymentRecord, st report.Stage, timeout time.Duration, fn func(context.Context) error) bool {
	start := d.now()
	sctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("%s stage timed out after %v", st, timeout))
	defer cancel()
	d.log.Info("stage started", "scenario", rec.Scenario, "stage", st, "timeout", timeout)
	err := fn(sctx)
	if err == nil && sctx.Err() != nil {
		err = context.Cause(sctx)
	}
	t := stageTiming{Stage: st, Status: string(report.StageOK), Started: start.UTC(), Duration: d.now().Sub(start).Seconds(), Timeout: timeout.Seconds()}
	if err != nil {
		// 超时或取消时写明原因（阶段超时、作业超时、中断信号），而不只是 "context deadline exceeded"。
		if cause := context.Cause(sctx); sctx.Err() != nil && cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%v)", err, cause)
		}
		t.Error = d.red.Redact(err.Error())
		if d.interrupted() {
			// 被中断的阶段没有做完，但也没有失败：不能凭空生成失败的门禁（退出码 130）。
			t.Status = string(report.StageInterrupted)
			d.recordInterrupted(rec.Scenario, st, err)
		} else {
			t.Status = string(report.StageFailed)
			d.recordError(rec.Scenario, st, err)
		}
	}
	d.mark(rec, t)
	d.log.Info("stage finished", "scenario", rec.Scenario, "stage", st, "status", t.Status, "seconds", fmt.Sprintf("%.2f", t.Duration))
	return err != nil || d.stageRed(rec.Scenario, st)
}

// mark 把阶段结果同时记进 deployment.json（rec）与报告的阶段状态（summary.json）。
func (d *driver) mark(rec *deploymentRecord, t stageTiming) {
	rec.Stages = append(rec.Stages, t)
	d.recordStage(rec.Scenario, report.StageResult{Stage: t.Stage, Status: report.StageStatus(t.Status), Started: t.Started, Duration: t.Duration, Reason: t.Error})
}

// stageRed 报告阶段虽然完成但结论为失败（功能用例失败、精度低于阈值），
// 供 on_failure 判断是否继续。
func (d *driver) stageRed(scenario string, st report.Stage) bool {
	for _, sc := range d.run.Result().Scenarios {
		if sc.Name != scenario {
			continue
		}
		switch st {
		case report.StageFunctional:
			rep, err := functionalreport.Report(sc)
			return err != nil || rep != nil && rep.Count(functional.StatusFail)+rep.Count(functional.StatusCancelled) > 0
		case report.StageAccuracy:
			rs, err := accuracyreport.Results(sc)
			return err != nil || accuracyRed(rs)
		}
	}
	return false
}

// accuracyRed 报告精度结果中是否有门禁不通过的数据集。判断只走 accuracy.Gate（与报告里的
// 精度门禁同一个函数）：门禁指标（如 drop 的 f1_score）、max_error_rate、部分运行都算在内，
// 驱动不另写一套比较。
func accuracyRed(results []accuracyreport.Result) bool {
	for _, a := range results {
		if !a.Verdict().Pass {
			return true
		}
	}
	return false
}

// finishRecord 写出场景的运行清单（阶段耗时、清理结果）。
func (d *driver) finishRecord(rec *deploymentRecord) {
	rec.Finished = d.now().UTC()
	if err := d.run.WriteJSON(path.Join(rec.Scenario, string(report.StageDeploy), "deployment.json"), rec); err != nil {
		d.log.Warn("write deployment record failed", "scenario", rec.Scenario, "err", err)
	}
}

// teardown 先归档日志再清理部署；两者的失败都记入报告。
func (d *driver) teardown(ctx context.Context, scenario string, dep deploy.Deployment, rec *deploymentRecord) {
	start := d.now()
	if dir, err := d.run.ScenarioDir(scenario, report.StageLogs); err != nil {
		d.recordError(scenario, report.StageLogs, err)
	} else if err := dep.ArchiveLogs(ctx, dir); err != nil {
		d.recordError(scenario, report.StageLogs, fmt.Errorf("archive logs: %w", err))
	}
	rec.Teardown = "ok"
	if err := dep.Teardown(ctx); err != nil {
		rec.Teardown = d.red.Redact(err.Error())
		d.recordError(scenario, report.StageDeploy, fmt.Errorf("teardown: %w", err))
	}
	d.mark(rec, stageTiming{Stage: "teardown", Status: map[bool]string{true: "ok", false: "failed"}[rec.Teardown == "ok"], Started: start.UTC(), Duration: d.now().Sub(start).Seconds()})
	d.log.Info("scenario finished", "scenario", scenario, "teardown", rec.Teardown)
}

// deploy 按场景（或 -base-url 覆盖）构造部署器并部署到健康状态。
func (d *driver) deploy(ctx context.Context, sc *matrix.Scenario) (deploy.Deployment, error) {
	var (
		dep deploy.Deployer
		err error
	)
	switch {
	case d.o.BaseURL != "":
		dep, err = deploy.NewExternal(deploy.ExternalConfig{
			BaseURL: d.o.BaseURL, Model: d.o.Model, APIKey: d.keys[sc.Name],
			HealthPath: sc.Health.Path, StartupTimeout: sc.Health.Timeout,
		})
	default:
		dep, err = d.deployerFor(sc)
	}
	if err != nil {
		return nil, err
	}
	// -base-url 未给 -model 时 deploy.External 自己向服务询问模型名（GET /v1/models）。
	return dep.Deploy(ctx)
}

// deployerFor 按场景的部署方式构造部署器：加载配置时部署方式的登记项已把场景的配置块校验成
// Plan（matrix.Scenario.Deploy），这里只补上运行时才知道的密钥、日志目录与日志器。
func (d *driver) deployerFor(sc *matrix.Scenario) (deploy.Deployer, error) {
	if sc.Deploy == nil {
		return nil, fmt.Errorf("pipeline: scenario %s: mode %q has no deploy plan", sc.Name, sc.Mode)
	}
	dir, err := d.run.ScenarioDir(sc.Name, report.StageLogs)
	if err != nil {
		return nil, err
	}
	return sc.Deploy.Deployer(deploy.Runtime{APIKey: d.keys[sc.Name], LogDir: dir, Logger: d.log})
}

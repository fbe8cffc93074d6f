package report

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/runtype"
)

// ArtifactBaselines 从产物根目录（fsys 的根即 artifacts/）读取每次运行的 summary.json
// （以及各场景的 perf/samples.json），交给 gate.Select 选出基线：同一场景、同一组合
// 最近一次已完成的每日运行。读取在这里（产物格式是 report 的），选取规则在 gate 里。
// 没有任何每日运行时返回空表。返回值同时提供性能与功能（pass → skip 漂移）基线。
//
// rs 是把各阶段分节变成门禁输入的渲染器（通常与 WithRenderers 相同）。
func ArtifactBaselines(fsys fs.FS, rs ...Renderer) (gate.Baselines, error) {
	runs, err := dailyRuns(fsys, rs, true)
	if err != nil {
		return gate.Baselines{}, fmt.Errorf("report: artifact baselines: %w", err)
	}
	return gate.Select(runs), nil
}

// DailyTrend 读取产物根目录中的每日运行，加上 current（本次运行，尚未写出 summary.json
// 也可以），交给 gate.DailyTrend 做变点检测。
// rs 同 ArtifactBaselines。
func DailyTrend(fsys fs.FS, current Result, opt gate.TrendOptions, rs ...Renderer) (*gate.Trend, error) {
	runs, err := dailyRuns(fsys, rs, false)
	if err != nil {
		return nil, fmt.Errorf("report: daily trend: %w", err)
	}
	cur, err := current.GateRun(rs...)
	if err != nil {
		return nil, fmt.Errorf("report: daily trend: %w", err)
	}
	return gate.DailyTrend(runs, cur, opt)
}

// dailyRuns 读取 daily/<run_id>/summary.json 中的每日运行；incomplete 为 false 时只返回已完成的
// （趋势只看完成的运行），为 true 时也返回没跑完的（gate.Select 从中取完整的组合）。选取规则
// 本身在 gate 里。没有 daily 目录时返回空。
func dailyRuns(fsys fs.FS, rs []Renderer, incomplete bool) ([]gate.Run, error) {
	entries, err := fs.ReadDir(fsys, string(runtype.Daily))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var runs []gate.Run
	for _, e := range entries {
		if !e.IsDir() || checkName("run id", e.Name()) != nil {
			continue
		}
		var r Result
		err := readJSON(fsys, path.Join(string(runtype.Daily), e.Name(), fileSummary), &r)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if (!r.Complete && !incomplete) || r.RunType != runtype.Daily {
			continue
		}
		// Detail 分节（例如逐请求样本）不在 summary.json 里（体积），按各场景的分节索引补上。
		for i := range r.Scenarios {
			sc := &r.Scenarios[i]
			if checkName("scenario", sc.Name) != nil {
				continue
			}
			if err := loadSections(fsys, path.Join(string(runtype.Daily), e.Name()), sc, true); err != nil {
				return nil, err
			}
		}
		gr, err := r.GateRun(rs...)
		if err != nil {
			return nil, fmt.Errorf("daily run %s: %w", e.Name(), err)
		}
		runs = append(runs, gr)
	}
	return runs, nil
}

// SetThresholds 记录计算门禁所用的阈值与统计设置（在 Finish 之前调用），随 summary.json 写出；
// 之后比较这次运行的程序（report/compare）据此用同样的口径。
func (r *Run) SetThresholds(th gate.Thresholds) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return ErrFinished
	}
	r.res.Thresholds = &th
	return r.writeJSONLocked(fileSummary, r.res)
}

// SetTrend 记录每日趋势（在 Finish 之前调用），它随 summary.json 与 HTML 报告写出。
func (r *Run) SetTrend(t *gate.Trend) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return ErrFinished
	}
	r.res.Trend = t
	return r.writeJSONLocked(fileSummary, r.res)
}

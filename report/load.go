package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/runtype"
)

// Load 从运行目录（fsys 的根即 <root>/<run_type>/<run_id>）重新装配 Result：
// 读取 run.json 与每个场景的 scenario.json、各阶段结果文件和错误记录。
// 它不依赖 summary.json，所以分阶段 CI job 的产物合并后（各自的
// summary.json 互相覆盖）仍能得到完整结果。已完成运行的门禁从 summary.json
// 读取（仅当其 complete 为 true）。目录中没有 run.json 时返回 fs.ErrNotExist。
func Load(fsys fs.FS) (Result, error) {
	var res Result
	if err := readJSON(fsys, fileRun, &res); err != nil {
		return Result{}, err
	}
	if res.Schema != SchemaVersion {
		return Result{}, fmt.Errorf("report: load %s: schema %q, want %q", fileRun, res.Schema, SchemaVersion)
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return Result{}, fmt.Errorf("report: load: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == dirConfig || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		var sc Scenario
		err := readJSON(fsys, path.Join(e.Name(), fileScenario), &sc)
		if errors.Is(err, fs.ErrNotExist) {
			continue // 不是场景目录（例如驱动自己的附加目录）
		}
		if err != nil {
			return Result{}, err
		}
		sc.Name = e.Name()
		if err := loadSections(fsys, ".", &sc, false); err != nil {
			return Result{}, err
		}
		errFiles, err := fs.Glob(fsys, path.Join(sc.Name, "errors-*.json"))
		if err != nil {
			return Result{}, fmt.Errorf("report: load: %w", err)
		}
		sort.Slice(errFiles, func(i, j int) bool { return stageRank(errFiles[i]) < stageRank(errFiles[j]) })
		for _, f := range errFiles {
			var errs []StageError
			if err := readJSON(fsys, f, &errs); err != nil {
				return Result{}, err
			}
			sc.Errors = append(sc.Errors, errs...)
		}
		stageFiles, err := fs.Glob(fsys, path.Join(sc.Name, "stage-*.json"))
		if err != nil {
			return Result{}, fmt.Errorf("report: load: %w", err)
		}
		sort.Slice(stageFiles, func(i, j int) bool { return stageRank(stageFiles[i]) < stageRank(stageFiles[j]) })
		for _, f := range stageFiles {
			var st StageResult
			if err := readJSON(fsys, f, &st); err != nil {
				return Result{}, err
			}
			sc.Stages = append(sc.Stages, st)
		}
		res.Scenarios = append(res.Scenarios, sc)
	}
	var sum Result
	if err := readOptional(fsys, fileSummary, &sum); err != nil {
		return Result{}, err
	}
	// 门禁设置是输入而不是结论：不完整的运行也沿用它。
	res.Thresholds = sum.Thresholds
	if sum.Complete {
		res.Gates, res.Verdict, res.ExitCode, res.Trend = sum.Gates, sum.Verdict, sum.ExitCode, sum.Trend
		res.Finished, res.Complete = sum.Finished, true
		res.Scenarios = orderLike(res.Scenarios, sum.Scenarios)
	}
	return res, nil
}

// loadSections 按场景目录 dir/<sc.Name> 下的分节索引（section-*.json）读回分节原文；
// onlyDetail 为 true 时只读 Detail 分节（summary.json 里已有其余分节时用）。索引本身不合法
// （键或文件名）是错误；索引指向的文件不存在时跳过该分节（写到一半被中断的运行）。
func loadSections(fsys fs.FS, dir string, sc *Scenario, onlyDetail bool) error {
	idx, err := fs.Glob(fsys, path.Join(dir, sc.Name, "section-*.json"))
	if err != nil {
		return fmt.Errorf("report: load: %w", err)
	}
	for _, f := range idx {
		var sec Section
		if err := readJSON(fsys, f, &sec); err != nil {
			return err
		}
		if err := sec.Validate(); err != nil {
			return fmt.Errorf("report: load %s: %w", f, err)
		}
		if onlyDetail && !sec.Detail {
			continue
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, sc.Name, sec.File))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("report: load %s: %w", sec.File, err)
		}
		if !json.Valid(b) {
			return fmt.Errorf("report: load %s: %w: not valid JSON", path.Join(dir, sc.Name, sec.File), ErrSection)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, b); err != nil {
			return fmt.Errorf("report: load %s: %w", sec.File, err)
		}
		sc.putSection(sec, c.Bytes())
	}
	return nil
}

// stageRank 给错误文件排序：已知阶段按执行顺序，其余阶段排在后面按名字。
func stageRank(file string) string {
	base := strings.TrimPrefix(strings.TrimPrefix(path.Base(file), "errors-"), "stage-")
	stage := strings.TrimSuffix(base, ".json")
	for i, s := range []Stage{StageDeploy, StageFunctional, StagePerf, StageAccuracy, StageLogs} {
		if Stage(stage) == s {
			return fmt.Sprintf("%d", i)
		}
	}
	return "9" + stage
}

// orderLike 按 ref 中的场景顺序（执行顺序）排列 got；ReadDir 只给出字母序。
func orderLike(got, ref []Scenario) []Scenario {
	pos := map[string]int{}
	for i, s := range ref {
		pos[s.Name] = i
	}
	sort.SliceStable(got, func(i, j int) bool {
		pi, oki := pos[got[i].Name]
		pj, okj := pos[got[j].Name]
		if oki != okj {
			return oki
		}
		return pi < pj
	})
	return got
}

// readJSON 读取并解码 fsys 中的 JSON 文件，错误带上文件名。
func readJSON(fsys fs.FS, name string, v any) error {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return fmt.Errorf("report: load %s: %w", name, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("report: load %s: %w", name, err)
	}
	return nil
}

// readOptional 与 readJSON 相同，但文件不存在时不算错误。
func readOptional(fsys fs.FS, name string, v any) error {
	err := readJSON(fsys, name, v)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// DefaultRetention 返回需求 §8（docs/requirements.md）的产物保留期：PR 14 天、每日 30 天；
// 其他运行类型按 PR 处理（较短者更安全）。
func DefaultRetention(runType runtype.Type) time.Duration {
	if runType == runtype.Daily {
		return 30 * 24 * time.Hour
	}
	return 14 * 24 * time.Hour
}

// Prune 删除 root/<runType>/ 下开始时间早于 now−retention 的运行目录，
// 返回被删除的运行 ID（升序）。开始时间取自 run.json，缺失时用目录修改时间。
// 只删除 root/<runType>/ 的直接子目录：符号链接、普通文件与名字不安全的
// 条目一律不动，所以永远不会删到 root 之外。retention ≤ 0 时不删除任何内容。
func Prune(root string, runType runtype.Type, retention time.Duration, now time.Time) ([]string, error) {
	if err := checkName("run type", string(runType)); err != nil {
		return nil, err
	}
	if root == "" {
		return nil, fmt.Errorf("%w: empty artifacts root", ErrInvalidName)
	}
	if retention <= 0 {
		return nil, nil
	}
	base := filepath.Join(root, string(runType))
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("report: prune: %w", err)
	}
	cutoff := now.Add(-retention)
	var removed []string
	var errs []error
	for _, e := range entries {
		// DirEntry.Type 来自 Lstat：符号链接不是目录，不会被跟随。
		if !e.Type().IsDir() || checkName("run id", e.Name()) != nil {
			continue
		}
		dir := filepath.Join(base, e.Name())
		started := time.Time{}
		var meta Result
		if err := readJSON(os.DirFS(dir), fileRun, &meta); err == nil {
			started = meta.Started
		} else if info, err := e.Info(); err == nil {
			started = info.ModTime()
		}
		if started.IsZero() || !started.Before(cutoff) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("report: prune %s: %w", dir, err))
			continue
		}
		removed = append(removed, e.Name())
	}
	sort.Strings(removed)
	return removed, errors.Join(errs...)
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/shard"
	"github.com/vllm-cibench/cibench/metrics"
)

// writeProviderFile 把解析好的 provider 写成 acs-bench 格式的 providers.yaml（只含这一项），权限 0600：
// 分片子进程（以及 Kubernetes 分片 Pod 挂载的 Secret）由它得到与单进程完全相同的目标——全部
// base_url、API key、id 与 name——而密钥不出现在任何命令行或 Job 定义里。
func writeProviderFile(path string, p loadgen.Provider) error {
	b, err := providerYAML(p)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("shard provider file: %w", err)
	}
	return nil
}

// providerYAML 把 provider 编码成 providers.yaml 的内容（base_url 写成列表，保留实例顺序）。
func providerYAML(p loadgen.Provider) ([]byte, error) {
	type item struct {
		ID            string   `yaml:"id"`
		Name          string   `yaml:"name"`
		APIKey        string   `yaml:"api_key"`
		BaseURL       []string `yaml:"base_url"`
		ModelName     string   `yaml:"model_name"`
		ModelCategory string   `yaml:"model_category"`
	}
	key := p.APIKey
	if key == "" {
		key = "EMPTY" // acs-bench 的惯例：不发送 Authorization
	}
	doc := struct {
		Providers []item `yaml:"providers"`
	}{[]item{{ID: p.ID, Name: p.Name, APIKey: key, BaseURL: p.BaseURLs, ModelName: p.ModelName, ModelCategory: p.ModelCategory}}}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("shard provider file: %w", err)
	}
	return b, nil
}

// mergeReport 是合并结果旁的 JSON（<汇总文件名去掉 .csv>.merge.json）：complete 为 false 时
// 逐组与逐分片写出缺了哪些分片、为什么缺。汇总 CSV 的表头是 acs-bench 的，一列也不能加，
// 所以不完整的标记放在这个同名旁文件（以及 .INCOMPLETE 标记文件）里。
type mergeReport struct {
	Complete bool                `json:"complete"`
	Summary  string              `json:"summary"` // 汇总 CSV 的文件名；没有任何一组的数据时为空
	Shards   int                 `json:"shards"`
	Missing  []loadgen.ShardLoss `json:"missing_shards"`
	Groups   []mergeReportGroup  `json:"groups"`
	// RecordsComplete 为 false 表示逐请求 CSV（requests_*、sessions_*）已知不完整或没有写出：没有任何
	// 分片的记录流，或 RecordGaps 非空。汇总行与 complete 不受它影响（汇总来自结果行，不来自记录）。
	RecordsComplete bool `json:"records_complete"`
	// RecordGaps 逐分片、逐组列出交回的记录少于分片测量的请求数的地方（--kube-shards：Pod 日志被
	// kubelet 轮转、读取上限、写了一半的行；--shards 与 bench merge --records：记录文件缺了或短了）。
	RecordGaps []shard.RecordGap `json:"record_gaps"`
}

// mergeReportGroup 是 mergeReport 的一组。
type mergeReportGroup struct {
	Group        int                 `json:"group"`
	InputLength  int                 `json:"input_length"`
	OutputLength int                 `json:"output_length"`
	Concurrency  int                 `json:"concurrency"`
	Round        int                 `json:"round"`
	NumPrompts   int                 `json:"num_prompts"`
	Complete     bool                `json:"complete"`
	Shards       []int               `json:"shards"`
	Missing      []loadgen.ShardLoss `json:"missing_shards"`
}

// writeMerged 把合并结果写成单进程的同一套产物：汇总 CSV（同名同列）、逐请求 CSV、时间线 CSV、
// 真实负载的 workload_/turns_/sessions_ 文件，外加旁文件 <汇总名>.merge.json（complete 与缺失的分片）；
// 不完整时另写一个 <汇总名>.INCOMPLETE 标记文件，读者在目录列表里就能看见。每组一行写到 stderr。
//
// 产物由与单进程相同的观察者写出：shard.Replay 把合并后的分组、各分片的逐请求记录（m.records，
// --shard-records 写的 JSON Lines）与合并的时间线按单进程的事件顺序交给它们——逐请求 CSV 的每个
// 文件内按发送时刻排列，会话 CSV 与单进程同样每个请求一行。chunkTimes 对应 --chunk-times。
func writeMerged(dir string, pd loadgen.Profile, provider string, m *merged, chunkTimes bool, stderr io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names := metrics.ArtifactNames{Provider: provider, DatasetType: pd.DatasetType, ControlMethod: pd.ControlMethod, Time: time.Now()}
	create := func(name string) (io.WriteCloser, error) { return os.Create(filepath.Join(dir, name)) }
	var ropts []metrics.RecordOption
	if chunkTimes {
		ropts = append(ropts, metrics.WithChunkTimes())
	}
	art, err := metrics.NewArtifactSink(names, create, ropts...)
	if err != nil {
		return err
	}
	obs := art.Observer()
	wsink := newWorkloadSink(names.SummaryFile(), pd.MultiTurn.On() || pd.DatasetType == loadgen.DatasetMooncakeTrace || pd.DatasetType == loadgen.DatasetAzureTrace, create)
	if ownLengths(pd.DatasetType) || pd.MultiTurn.On() {
		obs = loadgen.Tee(obs, wsink.Observer()) // 真实负载：另写 workload_/turns_/sessions_ 文件，与单进程相同
	}
	var srcs []shard.Records
	var closers []io.Closer
	var errs []error
	for _, f := range m.records {
		fh, err := os.Open(f)
		if errors.Is(err, os.ErrNotExist) {
			continue // 分片没能启动：它的记录就是没有，汇总里已点名
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		closers = append(closers, fh)
		srcs = append(srcs, shard.Records{Name: f, R: fh})
	}
	if len(srcs) == 0 {
		// 没有任何记录流（bench merge 没给 --records）：不写空的 requests_*.csv（那会被读成"零个请求"），
		// 汇总、时间线与 workload 行照常写；.merge.json 的 records_complete 为 false。
		obs = loadgen.Tee(&loadgen.Observer{OnGroupEnd: art.EndGroup, OnTimeline: art.WriteTimeline}, wsink.Observer())
		if !(ownLengths(pd.DatasetType) || pd.MultiTurn.On()) {
			obs = &loadgen.Observer{OnGroupEnd: art.EndGroup, OnTimeline: art.WriteTimeline}
		}
	}
	rerr := shard.Replay(obs, m.groups, m.timeline, srcs...)
	for _, c := range closers {
		_ = c.Close()
	}
	errs = append(errs, rerr, art.Close(), wsink.Close())
	files := append(art.Files(), wsink.files...)
	sums := m.summaries()
	sumName := names.SummaryFile()
	base := strings.TrimSuffix(sumName, ".csv")
	rep := mergeReport{Complete: true, Summary: sumName, Shards: m.count, Missing: m.lost, Groups: []mergeReportGroup{},
		RecordsComplete: len(srcs) > 0 && len(m.recordGaps) == 0, RecordGaps: m.recordGaps}
	if rep.RecordGaps == nil {
		rep.RecordGaps = []shard.RecordGap{}
	}
	if len(sums) == 0 {
		rep.Summary = "" // 没有一组有数据（例如全部分片连不上服务）：没有写出汇总 CSV
	}
	if rep.Missing == nil {
		rep.Missing = []loadgen.ShardLoss{}
	}
	for i, g := range m.groups {
		s := g.Summary
		mg := mergeReportGroup{Group: i, InputLength: s.InputLength, OutputLength: s.OutputLength, Concurrency: s.Concurrency, Round: s.Round,
			NumPrompts: s.NumPrompts, Complete: !s.Incomplete, Shards: g.Shards, Missing: g.Lost}
		if mg.Missing == nil {
			mg.Missing = []loadgen.ShardLoss{}
		}
		if mg.Shards == nil {
			mg.Shards = []int{}
		}
		rep.Complete = rep.Complete && mg.Complete
		rep.Groups = append(rep.Groups, mg)
	}
	rep.Complete = rep.Complete && len(m.lost) == 0
	b, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, base+".merge.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	files = append(files, base+".merge.json")
	if !rep.Complete {
		var t strings.Builder
		fmt.Fprintf(&t, "INCOMPLETE: %s merges %d shards but misses some of them; do not use it as a result or a baseline.\n", sumName, m.count)
		for _, l := range m.lost {
			fmt.Fprintln(&t, l)
		}
		if err := os.WriteFile(filepath.Join(dir, base+".INCOMPLETE"), []byte(t.String()), 0o644); err != nil {
			return err
		}
		files = append(files, base+".INCOMPLETE")
	}
	for _, g := range m.recordGaps {
		// 逐请求 CSV 少了行：汇总照常正确，但读逐请求 CSV 的人必须知道它不全、缺在哪里。
		fmt.Fprintf(stderr, "WARNING: per-request records incomplete: %s; the requests/sessions CSVs miss these rows (the summary is unaffected)\n", g)
	}
	for _, sm := range sums {
		printWorkload(stderr, sm)
	}
	for _, sm := range sums {
		fmt.Fprintf(stderr, "c=%d in=%d out=%d round=%d: %d req, fail %.4f%s, QPS %.2f, TTFT p99 %.4fs, E2E p99 %.4fs, out tok/s %.1f%s\n",
			sm.Concurrency, sm.InputLength, sm.OutputLength, sm.Round, sm.NumPrompts, sm.FailRate, failureClasses(sm), sm.QPS,
			sm.TTFT.P99.Seconds(), sm.E2E.P99.Seconds(), sm.OutputTokenThroughput, incomplete(sm))
	}
	for _, f := range files {
		fmt.Fprintln(stderr, "wrote", filepath.Join(dir, f))
	}
	return errors.Join(errs...)
}

// mergeSynopsis 是 merge 子命令的用法。
const mergeSynopsis = `bench merge [-s DIR] [--records FILE[,FILE...]] RESULT...

Merges the result files of shards started by hand (bench prof ... --shard-index I --shard-count N
--shard-start T > RESULT, optionally --shard-records FILE) into the artifacts one process writes:
the summary CSV, the per-request CSVs (from --records), <summary>.merge.json, and <summary>.INCOMPLETE
when shards are missing. Results of different runs (profile, shard count, start time) are refused.
The exit status is non-zero when the merge is incomplete.

  -s, --benchmark-save-path DIR   artifact directory (default ./benchmark_output)
  --records FILE[,FILE...]        the shards' --shard-records files (repeatable)
`

// runMerge 是 merge 子命令：读各分片的结果文件（每个文件取最后一个结果行），检查它们属于同一次
// 分片压测（不是时逐个点名文件），合并后写出与 --shards 相同的产物。缺分片时产物标为不完整、返回错误。
func runMerge(args []string, stderr io.Writer) error {
	dir := "./benchmark_output"
	var records, files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		switch name {
		case "-h", "--help", "-help":
			fmt.Fprint(stderr, "usage: "+mergeSynopsis)
			return errHelp
		case "-s", "--s", "-benchmark-save-path", "--benchmark-save-path", "--records", "-records":
			if !hasVal {
				if i+1 >= len(args) {
					return fmt.Errorf("merge: option %s needs a value", a)
				}
				i++
				val = args[i]
			}
			if strings.HasSuffix(name, "records") {
				records = append(records, strings.Split(val, ",")...)
			} else {
				dir = val
			}
		default:
			if strings.HasPrefix(a, "-") {
				return fmt.Errorf("merge: unknown option %s (see bench merge --help)", a)
			}
			files = append(files, a)
		}
	}
	if len(files) == 0 {
		return errors.New("merge: no result files (usage: bench merge [-s DIR] [--records FILE,...] RESULT...)")
	}
	results := make([]*shard.Result, len(files))
	for i, f := range files {
		res, err := readResultFile(f)
		if err != nil {
			return err
		}
		results[i] = res
	}
	if err := sameRun(files, results); err != nil {
		return err
	}
	m, err := mergeAndReport(results, nil, stderr)
	if m == nil {
		return fmt.Errorf("merge: %w", err)
	}
	m.records = records
	if len(records) > 0 {
		m.recordGaps = checkMergedRecords(results, records)
	}
	var pd loadgen.Profile
	provider := "merged"
	if len(m.groups) > 0 {
		c := m.groups[0].Summary
		pd.DatasetType, pd.ControlMethod = loadgen.DatasetType(c.DatasetType), loadgen.ControlMethod(c.ControlMethod)
		if c.Provider != "" {
			provider = c.Provider
		}
	}
	if werr := writeMerged(dir, pd, provider, m, false, stderr); werr != nil {
		return errors.Join(err, werr)
	}
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	return noSuccess(m.summaries(), stderr)
}

// readResultFile 读一个分片结果文件（分片进程的 stdout：日志行之后的最后一个结果行），错误点名文件。
func readResultFile(path string) (*shard.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	defer f.Close()
	res, err := shard.ReadResult(f)
	if err != nil {
		return nil, fmt.Errorf("merge: %s: %w", path, err)
	}
	return res, nil
}

// sameRun 检查各结果属于同一次分片压测：同一 Profile 指纹、分片数与约定开始时刻，序号不重复。
// 不符时点名两个文件与不同之处（shard.MergeGroups 也会拒绝，但它只知道分片序号，不知道文件名）。
func sameRun(files []string, rs []*shard.Result) error {
	first := rs[0]
	seen := map[int]string{}
	for i, r := range rs {
		what := ""
		switch {
		case r.Profile != first.Profile:
			what = fmt.Sprintf("profile %s vs %s (a different load profile or dataset)", r.Profile, first.Profile)
		case r.Count != first.Count:
			what = fmt.Sprintf("--shard-count %d vs %d", r.Count, first.Count)
		case !r.StartAt.Equal(first.StartAt):
			what = fmt.Sprintf("--shard-start %s vs %s", r.StartAt.Format(time.RFC3339Nano), first.StartAt.Format(time.RFC3339Nano))
		}
		if what != "" {
			return fmt.Errorf("merge: %w: %s and %s are different runs: %s", shard.ErrMismatch, files[i], files[0], what)
		}
		if prev, dup := seen[r.Index]; dup {
			return fmt.Errorf("merge: %w: %s and %s are both shard %d", shard.ErrMismatch, files[i], prev, r.Index)
		}
		seen[r.Index] = files[i]
	}
	return nil
}

// checkMergedRecords 为 bench merge 核对 --records 给的记录文件：文件与分片没有固定的对应（顺序由
// 使用者给出），所以对每个结果把全部文件接起来读，shard.CheckRecords 按 Record.Index mod 分片数
// 认领本片的记录。打不开的文件跳过（writeMerged 另行报告），它的记录因此计为缺口。
func checkMergedRecords(results []*shard.Result, files []string) []shard.RecordGap {
	var gaps []shard.RecordGap
	for _, res := range results {
		var rs []io.Reader
		var fs []*os.File
		for _, name := range files {
			f, err := os.Open(name)
			if err != nil {
				continue
			}
			fs = append(fs, f)
			rs = append(rs, f, strings.NewReader("\n")) // 文件末尾缺换行时不与下一个文件的首行粘连
		}
		g, err := shard.CheckRecords(io.MultiReader(rs...), res)
		for _, f := range fs {
			_ = f.Close()
		}
		if err != nil {
			for _, sg := range res.Groups {
				gaps = append(gaps, shard.RecordGap{Shard: res.Index, Group: sg.Group, Want: sg.Stats.Requests(), Detail: err.Error()})
			}
			continue
		}
		gaps = append(gaps, g...)
	}
	return gaps
}

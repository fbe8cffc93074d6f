package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vllm-cibench/cibench/deploy/kube"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/metrics"
)

// shardOptions 是分片相关的选项（docs/loadgen.md "Sharding"）。
type shardOptions struct {
	local, index, count, kube int
	start                     time.Time
	fromEnv, spread           bool
	url, model                string
	image, namespace, cpu     string
	memory                    string
}

// setStart 解析 --shard-start（RFC 3339）。
func (s *shardOptions) setStart(v string) error {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return fmt.Errorf("--shard-start %q: want an RFC 3339 time such as 2026-01-02T03:04:05Z", v)
	}
	s.start = t
	return nil
}

// setTarget 解析 --shard-target "BASE_URL|MODEL"。
func (s *shardOptions) setTarget(v string) error {
	u, m, ok := strings.Cut(v, "|")
	if !ok || m == "" || (!strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://")) {
		return fmt.Errorf("--shard-target %q: want BASE_URL|MODEL with an http(s) base URL", v)
	}
	s.url, s.model = u, m
	return nil
}

// check 检查分片选项之间、以及与 Profile 的相容性（在任何请求之前）。
func (s *shardOptions) check(p *loadgen.Profile) error {
	modes := 0
	for _, on := range []bool{s.local > 0, s.kube > 0, s.index >= 0 || s.fromEnv} {
		if on {
			modes++
		}
	}
	switch {
	case modes > 1:
		return errors.New("--shards, --kube-shards and --shard-index/--shard-from-env exclude each other")
	case s.index >= 0 && (s.count < 1 || s.index >= s.count):
		return fmt.Errorf("--shard-index %d: needs --shard-count greater than it (got %d)", s.index, s.count)
	case s.kube > 0 && s.image == "":
		return fmt.Errorf("--kube-shards %d: needs --kube-image (an image with this bench program)", s.kube)
	}
	n := max(s.local, s.kube, s.count)
	if n > 0 {
		if err := (loadgen.Shard{Index: 0, Count: n}).Check(p.Defaults()); err != nil {
			return fmt.Errorf("--shards/--kube-shards/--shard-count %d: %w", n, err)
		}
	}
	return nil
}

// fromEnvironment 从 Indexed Job 注入的环境变量取得分片序号、分片数与开始时刻。
func (s *shardOptions) fromEnvironment() (loadgen.Shard, error) {
	idx, err1 := strconv.Atoi(os.Getenv(kube.EnvShardIndex))
	cnt, err2 := strconv.Atoi(os.Getenv(kube.EnvShardCount))
	start, err3 := time.Parse(time.RFC3339Nano, os.Getenv(kube.EnvShardStart))
	if err := errors.Join(err1, err2, err3); err != nil {
		return loadgen.Shard{}, fmt.Errorf("--shard-from-env: %s=%q %s=%q %s=%q: %w", kube.EnvShardIndex, os.Getenv(kube.EnvShardIndex),
			kube.EnvShardCount, os.Getenv(kube.EnvShardCount), kube.EnvShardStart, os.Getenv(kube.EnvShardStart), err)
	}
	return loadgen.Shard{Index: idx, Count: cnt, StartAt: start}, nil
}

// runShardChild 跑一个分片，把结果行写到 stdout（Pod 日志的最后一行 / 父进程读取的输出）。
func runShardChild(ctx context.Context, o *options, tgt loadgen.Target, stdout io.Writer) error {
	sh := loadgen.Shard{Index: o.shard.index, Count: o.shard.count, StartAt: o.shard.start}
	if o.shard.fromEnv {
		var err error
		if sh, err = o.shard.fromEnvironment(); err != nil {
			return err
		}
	}
	res, err := loadgen.RunShard(ctx, tgt, o.p, sh, nil)
	if res != nil {
		if werr := loadgen.WriteShardResult(stdout, res); werr != nil {
			return werr
		}
	}
	return err
}

// childArgs 从原命令行去掉 --shards 及其值，供子进程复用其余全部选项。
func childArgs(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--shards" {
			i++
			continue
		}
		if strings.HasPrefix(a, "--shards=") {
			continue
		}
		out = append(out, a)
	}
	return out
}

// shardChildEnv 标记“本进程是 --shards 启动的分片子进程”：子进程不得再启动分片；
// 测试二进制看到它时直接扮演 bench 主程序（见 TestMain）。
const shardChildEnv = "CIBENCH_BENCH_SHARD_CHILD"

// runLocalShards 以 N 个本机子进程（本程序自身）跑各分片：约定 2 秒后同时开始，
// 收集每个子进程 stdout 的结果行后合并。子进程失败时照样合并其余分片，缺的分片被点名、
// 相应分组标为不完整。
func runLocalShards(ctx context.Context, o *options, args []string, tgt loadgen.Target, stderr io.Writer) ([]loadgen.Summary, error) {
	// 分片子进程再带 --shards 会无限地自我复制（测试二进制被当作 bench 重新执行时
	// 真的发生过：几分钟内上千个进程）。子进程的环境里有 shardChildEnv，这里拒绝嵌套。
	if os.Getenv(shardChildEnv) != "" {
		return nil, fmt.Errorf("--shards %d: this process is itself a shard (%s is set); shards never start shards", o.shard.local, shardChildEnv)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	n := o.shard.local
	start := time.Now().Add(2 * time.Second)
	base := append(childArgs(args), "--shard-count", strconv.Itoa(n), "--shard-start", start.Format(time.RFC3339Nano),
		"--shard-target", tgt.BaseURLs[0]+"|"+tgt.Model, "--quiet")
	results := make([]*loadgen.ShardResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, exe, append(append([]string{"prof"}, base...), "--shard-index", strconv.Itoa(i))...)
			cmd.Env = append(os.Environ(), shardChildEnv+"=1")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			runErr := cmd.Run()
			res, rerr := loadgen.ReadShardResultFor(&out, i)
			if rerr != nil {
				errs[i] = fmt.Errorf("shard %d: %w (%v) %s", i, rerr, runErr, strings.TrimSpace(errb.String()))
				return
			}
			results[i] = res
		})
	}
	wg.Wait()
	var got []*loadgen.ShardResult
	for i, r := range results {
		if r != nil {
			got = append(got, r)
		} else {
			fmt.Fprintln(stderr, "bench:", errs[i])
		}
	}
	if len(got) == 0 {
		return nil, errors.Join(errs...)
	}
	return mergeAndReport(got, stderr)
}

// runKubeShards 以 Indexed Job 跑各分片（镜像里的本程序带 --shard-from-env），收集并合并。
func runKubeShards(ctx context.Context, o *options, args []string, stderr io.Writer) ([]loadgen.Summary, error) {
	var cargs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasVal := strings.Cut(a, "=")
		if strings.HasPrefix(name, "--kube-") {
			if !hasVal && name != "--kube-spread" {
				i++
			}
			continue
		}
		cargs = append(cargs, a)
	}
	job := kube.ShardJob{Namespace: o.shard.namespace, Image: o.shard.image, Args: append(append([]string{"prof"}, cargs...), "--shard-from-env", "--quiet"),
		Shards: o.shard.kube, CPU: o.shard.cpu, Memory: o.shard.memory, SpreadShards: o.shard.spread}
	results, err := kube.RunShards(ctx, job)
	if len(results) == 0 {
		return nil, err
	}
	sums, merr := mergeAndReport(results, stderr)
	return sums, errors.Join(err, merr)
}

// mergeAndReport 合并分片结果并在 stderr 上报告每组的偏差与分位数来源。
func mergeAndReport(results []*loadgen.ShardResult, stderr io.Writer) ([]loadgen.Summary, error) {
	groups, err := loadgen.MergeGroups(loadgen.MergeOptions{}, results...)
	out := make([]loadgen.Summary, len(groups))
	for i, g := range groups {
		out[i] = g.Summary
		src := "exact samples"
		if len(g.HDR) > 0 {
			src = "HDR for " + strings.Join(g.HDR, ",")
		}
		fmt.Fprintf(stderr, "merged group %d from shards %v: start skew %s, percentiles from %s%s\n", i, g.Shards, g.Skew, src, missingNote(g.Missing))
	}
	return out, err
}

// missingNote 点名缺失的分片。
func missingNote(m []int) string {
	if len(m) == 0 {
		return ""
	}
	return fmt.Sprintf(" — INCOMPLETE, missing shards %v", m)
}

// writeMergedSummary 把合并后的汇总行写成 acs-bench 汇总 CSV（与单进程的文件同名同列），返回写出的文件。
func writeMergedSummary(o *options, provider string, sums []loadgen.Summary) ([]string, error) {
	pd := o.p.Defaults()
	art, err := metrics.NewArtifactSink(metrics.ArtifactNames{Provider: provider, DatasetType: pd.DatasetType, ControlMethod: pd.ControlMethod, Time: time.Now()},
		func(name string) (io.WriteCloser, error) { return os.Create(filepath.Join(o.savePath, name)) })
	if err != nil {
		return nil, err
	}
	for _, s := range sums {
		if err := art.EndGroup(s); err != nil {
			return nil, err
		}
	}
	return art.Files(), art.Close()
}

// runSharded 处理三种分片模式；handled 为 false 表示没有分片选项，按单进程运行。
func runSharded(ctx context.Context, o *options, args []string, stderr io.Writer) (handled bool, err error) {
	s := &o.shard
	if s.index < 0 && !s.fromEnv && s.local == 0 && s.kube == 0 {
		return false, nil
	}
	var tgt loadgen.Target
	if s.url != "" {
		tgt = loadgen.Target{BaseURLs: []string{s.url}, Model: s.model, Provider: "emulator"}
	} else if s.kube == 0 {
		t, teardown, err := target(ctx, o)
		if err != nil {
			return true, err
		}
		defer teardown()
		tgt = t
	}
	if s.index >= 0 || s.fromEnv {
		return true, runShardChild(ctx, o, tgt, os.Stdout)
	}
	var sums []loadgen.Summary
	var runErr error
	if s.local > 0 {
		sums, runErr = runLocalShards(ctx, o, args, tgt, stderr)
	} else {
		sums, runErr = runKubeShards(ctx, o, args, stderr)
		tgt.Provider = "kube"
	}
	if len(sums) > 0 {
		if err := os.MkdirAll(o.savePath, 0o755); err != nil {
			return true, err
		}
		files, err := writeMergedSummary(o, tgt.Provider, sums)
		if err != nil {
			return true, errors.Join(runErr, err)
		}
		for _, sm := range sums {
			fmt.Fprintf(stderr, "c=%d in=%d out=%d round=%d: %d req, fail %.4f%s, QPS %.2f, TTFT p99 %.4fs, E2E p99 %.4fs, out tok/s %.1f%s\n",
				sm.Concurrency, sm.InputLength, sm.OutputLength, sm.Round, sm.NumPrompts, sm.FailRate, failureClasses(sm), sm.QPS,
				sm.TTFT.P99.Seconds(), sm.E2E.P99.Seconds(), sm.OutputTokenThroughput, incomplete(sm))
		}
		for _, f := range files {
			fmt.Fprintln(stderr, "wrote", filepath.Join(o.savePath, f))
		}
	}
	if runErr != nil {
		return true, runErr
	}
	return true, noSuccess(sums, stderr)
}

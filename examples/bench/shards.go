package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vllm-cibench/cibench/internal/procgroup"
	"github.com/vllm-cibench/cibench/loadgen/shard/kubejob"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/shard"
)

// shardOptions 是分片相关的选项（docs/loadgen.md "Sharding"）。
type shardOptions struct {
	local, index, count, kube int
	start                     time.Time
	fromEnv, spread           bool
	records                   string // --shard-records：本分片的逐请求记录（JSON Lines）写到这里
	image, namespace, cpu     string
	memory                    string
	// startDelay 是 --kube-start-delay：从创建 Job 到约定开始时刻的提前量（kubejob.ShardJob.StartDelay）。
	startDelay time.Duration
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
		if err := (loadgen.Shard{Index: 0, Count: n}).Check(p.WithDefaults()); err != nil {
			return fmt.Errorf("--shards/--kube-shards/--shard-count %d: %w", n, err)
		}
	}
	return nil
}

// fromEnvironment 从 Indexed Job 注入的环境变量取得分片序号、分片数与开始时刻。
func (s *shardOptions) fromEnvironment() (loadgen.Shard, error) {
	idx, err1 := strconv.Atoi(os.Getenv(kubejob.EnvShardIndex))
	cnt, err2 := strconv.Atoi(os.Getenv(kubejob.EnvShardCount))
	start, err3 := time.Parse(time.RFC3339Nano, os.Getenv(kubejob.EnvShardStart))
	if err := errors.Join(err1, err2, err3); err != nil {
		return loadgen.Shard{}, fmt.Errorf("--shard-from-env: %s=%q %s=%q %s=%q: %w", kubejob.EnvShardIndex, os.Getenv(kubejob.EnvShardIndex),
			kubejob.EnvShardCount, os.Getenv(kubejob.EnvShardCount), kubejob.EnvShardStart, os.Getenv(kubejob.EnvShardStart), err)
	}
	sh := loadgen.Shard{Index: idx, Count: cnt, StartAt: start}
	if v, ok := os.LookupEnv(kubejob.EnvShardGroup); ok {
		g, err := strconv.Atoi(v)
		if err != nil {
			return loadgen.Shard{}, fmt.Errorf("--shard-from-env: %s=%q: %w", kubejob.EnvShardGroup, v, err)
		}
		sh.Groups = []int{g} // 每组一个 Job：本 Pod 只跑这一组
	}
	return sh, nil
}

// runShardChild 跑一个分片，把结果行写到 stdout（Pod 日志的最后一行 / 父进程读取的输出）。
// --shards 启动的子进程（环境里有 shardChildEnv）在第一组之后的每组前经 stdin/stdout 与父进程
// 握手（stdioBarrier），各分片因此同时开始后面的分组。
//
// 逐请求记录（完整的 loadgen.Record，JSON Lines）写到 --shard-records 给的文件；Pod 里的分片
// （--shard-from-env）没有给 --shard-records 时写到 stdout、在结果行之前：Pod 日志是 Pod 交回东西的
// 唯一通道，结果行保持最后一行，kubelet 轮转日志时丢掉的是最早的记录而不是结果行（收集方核对条数，
// 把缺口报告出来，见 kubejob.ShardRun.RecordGaps）。
func runShardChild(ctx context.Context, o *options, tgt loadgen.Target, stdin io.Reader, stdout io.Writer) error {
	sh := loadgen.Shard{Index: o.shard.index, Count: o.shard.count, StartAt: o.shard.start}
	if o.shard.fromEnv {
		var err error
		if sh, err = o.shard.fromEnvironment(); err != nil {
			return err
		}
	} else if os.Getenv(shardChildEnv) != "" {
		sh.Barrier = stdioBarrier(stdin, stdout, o.p.WithDefaults().Timeout+barrierSlack)
	}
	var obs *loadgen.Observer
	var flush func() error // 结果行之前把缓冲的记录写出（记录写到 stdout 时）
	switch {
	case o.shard.records == "" && o.shard.fromEnv:
		rw := shard.NewRecordWriter(stdout)
		obs, flush = rw.Observer(), rw.Flush
	case o.shard.records != "":
		// 逐请求记录（完整的 loadgen.Record，JSON Lines）写进 --shard-records：父进程或 bench merge
		// 用 shard.Replay 把它们按发送时刻交给与单进程相同的观察者（requests_*.csv、sessions_*.csv……）。
		// 0600：记录里没有密钥，但与 provider 文件同在一个私有临时目录里，一并收紧。
		f, err := os.OpenFile(o.shard.records, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return fmt.Errorf("--shard-records: %w", err)
		}
		rw := shard.NewRecordWriter(f)
		defer func() {
			if ferr := errors.Join(rw.Flush(), f.Close()); ferr != nil {
				fmt.Fprintln(os.Stderr, "bench: --shard-records:", ferr)
			}
		}()
		obs = rw.Observer()
	}
	res, err := shard.Run(ctx, tgt, o.p, sh, obs)
	if flush != nil {
		if ferr := flush(); ferr != nil {
			return errors.Join(err, ferr)
		}
	}
	if res != nil {
		if werr := shard.WriteResult(stdout, res); werr != nil {
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

// 本机分片的组间屏障协议（docs/loadgen.md "Start alignment"）：子进程跑完一组、下一组开始之前
// 在 stdout 上写一行 "cibench-shard-ready <组序号>"，然后等 stdin 上的 "go <组序号>"。父进程
// 在所有还活着的子进程都报告就绪后一起放行。结果行是以 "{" 开头的 JSON，不会被当成就绪行。
const (
	shardReadyPrefix = "cibench-shard-ready "
	shardGoPrefix    = "go "
	// barrierSlack 是子进程等待放行的时限在 Profile 超时之外的余量：最慢的分片跑完上一组
	// 最多比别的分片晚一个请求的超时，再加上组间的 /metrics 抓取。
	barrierSlack = time.Minute
)

// errBarrier 是组间屏障失败（父进程消失、超时、协议错）的哨兵。
var errBarrier = errors.New("bench: shard barrier")

// stdioBarrier 返回经 in/out 与父进程握手的 loadgen.Shard.Barrier：报告就绪后等父进程放行，
// 最多等 timeout；父进程消失时 stdin 被关闭，子进程因此干净地失败，而不是永远等下去。
func stdioBarrier(in io.Reader, out io.Writer, timeout time.Duration) func(context.Context, int) error {
	lines := make(chan string, 1)
	var once sync.Once
	return func(ctx context.Context, group int) error {
		once.Do(func() {
			go func() {
				sc := bufio.NewScanner(in)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
		})
		if _, err := fmt.Fprintf(out, "%s%d\n", shardReadyPrefix, group); err != nil {
			return fmt.Errorf("%w: report ready for group %d: %v", errBarrier, group, err)
		}
		t := time.NewTimer(timeout)
		defer t.Stop()
		want := shardGoPrefix + strconv.Itoa(group)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return fmt.Errorf("%w: no %q from the parent within %s", errBarrier, want, timeout)
		case l, ok := <-lines:
			switch {
			case !ok:
				return fmt.Errorf("%w: the parent closed stdin before %q (parent gone)", errBarrier, want)
			case l != want:
				return fmt.Errorf("%w: the parent sent %q, want %q", errBarrier, l, want)
			}
			return nil
		}
	}
}

// parseReady 识别子进程的就绪行，返回它等待的组序号；其它行（结果行、日志）返回 false。
func parseReady(line string) (int, bool) {
	rest, ok := strings.CutPrefix(line, shardReadyPrefix)
	if !ok {
		return 0, false
	}
	k, err := strconv.Atoi(rest)
	return k, err == nil && k >= 0 && strconv.Itoa(k) == rest
}

// localBarrier 是父进程一侧的组间屏障：所有还活着的子进程都报告就绪时，一起放行各自等待的组。
// 已退出的子进程不再参与（它的分片照常被报告为缺失）。
type localBarrier struct {
	mu      sync.Mutex
	alive   []bool
	waiting []int // 正在等待放行的组序号，-1 表示在运行
	in      []io.Writer
}

// newLocalBarrier 为 n 个子进程创建屏障；in[i] 是子进程 i 的 stdin。
func newLocalBarrier(in []io.Writer) *localBarrier {
	b := &localBarrier{alive: make([]bool, len(in)), waiting: make([]int, len(in)), in: in}
	for i := range in {
		b.alive[i], b.waiting[i] = true, -1
	}
	return b
}

// ready 记下子进程 i 在等待第 group 组，并在条件满足时放行。
func (b *localBarrier) ready(i, group int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiting[i] = group
	b.releaseLocked()
}

// exit 把退出的子进程 i 移出屏障：别的子进程不再等它。
func (b *localBarrier) exit(i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.alive[i] = false
	b.releaseLocked()
}

// releaseLocked 在所有活着的子进程都在等待时放行它们。写 stdin 失败说明子进程已经退出，
// 它的 exit 随后会到，这里不必处理。
func (b *localBarrier) releaseLocked() {
	any := false
	for i, a := range b.alive {
		if a {
			if b.waiting[i] < 0 {
				return
			}
			any = true
		}
	}
	if !any {
		return
	}
	for i, a := range b.alive {
		if a {
			_, _ = fmt.Fprintf(b.in[i], "%s%d\n", shardGoPrefix, b.waiting[i])
			b.waiting[i] = -1
		}
	}
}

// splitShardOutput 逐行读子进程的 stdout：就绪行交给 onReady，其余行（结果行与别的输出）
// 保留下来交给 shard.ReadResultFor，保留量与它的上限相同。读到末尾（或出错后排空）才返回，
// 子进程因此不会因为 stdout 写满而卡住。
func splitShardOutput(r io.Reader, onReady func(group int)) (*bytes.Buffer, error) {
	var kept bytes.Buffer
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), shard.MaxResultBytes)
	for sc.Scan() {
		line := sc.Bytes()
		if k, ok := parseReady(string(line)); ok {
			onReady(k)
			continue
		}
		if kept.Len()+len(line) < shard.MaxResultBytes {
			kept.Write(line)
			kept.WriteByte('\n')
		}
	}
	err := sc.Err()
	if err != nil {
		_, _ = io.Copy(io.Discard, r)
	}
	return &kept, err
}

// runLocalShards 以 N 个本机子进程（本程序自身）跑各分片：每一组都在所有子进程就绪（建好池、
// 跑完上一组）后由本进程经 stdin 同时放行（localBarrier）；收集每个子进程
// stdout 的结果行后合并。子进程失败时照样合并其余分片，缺的分片连同原因（被杀、连不上、
// 被取消……）被点名、相应分组标为不完整。
//
// 子进程拿到的目标与单进程完全相同：父进程把解析好的 provider（全部 base_url、API key、id 与 name）
// 写进私有临时目录里 0600 的 provider 文件，子进程以 -p 读它——密钥不上命令行。各子进程的逐请求
// 记录写进同一目录（--shard-records），合并时由 shard.Replay 按发送时刻交给与单进程相同的观察者。
//
// tmp 是调用方建好的私有（0700）临时目录：provider 文件与各分片的记录文件都在里面，
// 调用方写完合并产物后删除它。
func runLocalShards(ctx context.Context, o *options, args []string, prov loadgen.Provider, tmp string, stderr io.Writer) (*merged, error) {
	// 分片子进程再带 --shards 会无限地自我复制（测试二进制被当作 bench 重新执行时
	// 真的发生过：几分钟内上千个进程）。子进程的环境里有 shardChildEnv，这里拒绝嵌套。
	if os.Getenv(shardChildEnv) != "" {
		return nil, fmt.Errorf("--shards %d: this process is itself a shard (%s is set); shards never start shards", o.shard.local, shardChildEnv)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	provFile := filepath.Join(tmp, "providers.yaml")
	if err := writeProviderFile(provFile, prov); err != nil {
		return nil, err
	}
	n := o.shard.local
	// 不约定 --shard-start：每一组（含第一组）都由 localBarrier 在全部子进程就绪后放行——固定的
	// 提前量在忙碌的机器上不够子进程建好 prompt 池（-race 下第一组曾相差 2 秒）。
	// -p/-pid 追加在最后：标量选项以最后一次出现为准，覆盖原命令行里的 -p（或模拟器）。
	base := append(childArgs(args), "--shard-count", strconv.Itoa(n), "-p", provFile, "-pid", prov.ID, "--quiet")
	results := make([]*shard.Result, n)
	lost := make([]*loadgen.ShardLoss, n)
	records := make([]string, n)
	cmds := make([]*exec.Cmd, n)
	stdins := make([]io.Writer, n)
	for i := range n {
		records[i] = filepath.Join(tmp, fmt.Sprintf("records-%d.jsonl", i))
		cmds[i] = exec.CommandContext(ctx, exe, append(append([]string{"prof"}, base...),
			"--shard-index", strconv.Itoa(i), "--shard-records", records[i])...)
		cmds[i].Env = append(os.Environ(), shardChildEnv+"=1")
		// 运行被取消（Ctrl-C、SIGTERM）时先给子进程 SIGINT 而不是 SIGKILL：子进程像单进程一样
		// 收尾，交回已完成的分组与标为不完整的当前组，合并因此仍有产物，缺失原因是 cancelled；
		// 子进程 childCancelGrace 内不退出才被 SIGKILL。
		cmd := cmds[i]
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = childCancelGrace
		w, err := cmds[i].StdinPipe()
		if err != nil {
			return nil, err
		}
		stdins[i] = w
	}
	bar := newLocalBarrier(stdins)
	var wg sync.WaitGroup
	for i, cmd := range cmds {
		wg.Go(func() {
			defer bar.exit(i)
			errb := &tailBuffer{max: 4 << 10}
			cmd.Stderr = errb
			stdout, err := cmd.StdoutPipe()
			if err == nil {
				err = cmd.Start()
			}
			if err != nil {
				if ctx.Err() != nil {
					// 运行在子进程启动前就被取消：这个分片是被取消的，不是自己启动失败的。
					l := childLoss(ctx, i, err, "")
					lost[i] = &l
					return
				}
				lost[i] = &loadgen.ShardLoss{Shard: i, Reason: loadgen.LossFailed, Detail: "start: " + err.Error()}
				return
			}
			out, serr := splitShardOutput(stdout, func(k int) { bar.ready(i, k) })
			runErr := errors.Join(cmd.Wait(), serr)
			res, rerr := shard.ReadResultFor(out, i)
			if rerr != nil {
				l := childLoss(ctx, i, runErr, strings.TrimSpace(errb.String()))
				lost[i] = &l
				return
			}
			results[i] = res
		})
	}
	wg.Wait()
	var got []*shard.Result
	var known []loadgen.ShardLoss
	for i, r := range results {
		if r != nil {
			got = append(got, r)
		} else if lost[i] != nil {
			known = append(known, *lost[i])
			fmt.Fprintln(stderr, "bench:", lost[i])
		}
	}
	if len(got) == 0 {
		// 没有任何分片交回结果（全部连不上、被杀或在取消宽限内没有收尾）：仍然写出 .merge.json
		// 与 .INCOMPLETE，点名每个分片与原因，而不是只在 stderr 上说一句、不留产物。
		return &merged{count: n, lost: known, records: records},
			fmt.Errorf("--shards %d: no shard returned a result: %w", n, &shard.MissingError{Count: n, Lost: known})
	}
	m, err := mergeAndReport(got, known, stderr)
	if m != nil {
		m.records = records
		m.recordGaps = checkRecordFiles(results, records)
	}
	return m, err
}

// checkRecordFiles 逐个核对交回了结果的子进程的记录文件与它的结果行（shard.CheckRecords）：子进程写
// 记录失败（磁盘满）时只在自己的 stderr 上留一句、结果行照样交回，不核对的话逐请求 CSV 会悄悄少行。
// 文件打不开或读不了时该分片每组都记为缺口（Detail 写明原因）。
func checkRecordFiles(results []*shard.Result, files []string) []shard.RecordGap {
	var gaps []shard.RecordGap
	for i, res := range results {
		if res == nil {
			continue // 缺失的分片已被点名，它的记录就是没有
		}
		g, err := func() ([]shard.RecordGap, error) {
			f, err := os.Open(files[i])
			if err != nil {
				return nil, err
			}
			defer f.Close()
			return shard.CheckRecords(f, res)
		}()
		if err != nil {
			for _, sg := range res.Groups {
				gaps = append(gaps, shard.RecordGap{Shard: i, Group: sg.Group, Want: sg.Stats.Requests(), Detail: err.Error()})
			}
			continue
		}
		gaps = append(gaps, g...)
	}
	return gaps
}

// childCancelGrace 是运行被取消后子进程收尾（取消在途请求、写出结果行）的时限，过后 SIGKILL。
const childCancelGrace = 30 * time.Second

// childLoss 归类一个没有交回结果的子进程：整个运行被取消时是 cancelled（父进程的 ctx 杀掉了它），
// 被信号杀死（SIGKILL、OOM killer……）时是 killed 并写出信号，否则是 failed 并附上退出状态与
// stderr 的末尾（子进程自己的错误；其中没有密钥——密钥只在 provider 文件里）。
func childLoss(ctx context.Context, i int, runErr error, stderrTail string) loadgen.ShardLoss {
	if ctx.Err() != nil {
		return loadgen.ShardLoss{Shard: i, Reason: loadgen.LossCancelled, Detail: context.Cause(ctx).Error()}
	}
	if sig, ok := procgroup.KilledBy(runErr); ok {
		return loadgen.ShardLoss{Shard: i, Reason: loadgen.LossKilled, Detail: "signal: " + sig}
	}
	detail := fmt.Sprint(runErr)
	if stderrTail != "" {
		detail += ": " + stderrTail
	}
	reason := loadgen.LossFailed
	if strings.Contains(stderrTail, loadgen.ErrUnreachable.Error()) {
		reason = loadgen.LossUnreachable // 子进程在能力探测时就连不上服务，没有写出结果行
	}
	return loadgen.ShardLoss{Shard: i, Reason: reason, Detail: detail}
}

// tailBuffer 只保留写入内容的最后 max 个字节（子进程的 stderr 可能很长，报告只需要末尾的错误）。
type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

// Write 追加并截掉超出 max 的开头部分。
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

// String 返回保留的末尾。
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// merged 是一次分片合并的结果：合并后的分组、分片总数、各缺失分片的原因，以及各分片的逐请求记录文件。
type merged struct {
	groups   []shard.MergedGroup
	count    int
	lost     []loadgen.ShardLoss
	records  []string
	timeline []loadgen.Timeline // 各分片时间线的合并（shard.MergeTimeline），写进时间线 CSV
	// recordGaps 是已知的逐请求记录缺口：交回的记录少于分片测量的请求数（--kube-shards：Pod 日志被
	// 轮转或截断；--shards：子进程写记录文件失败）。
	recordGaps []shard.RecordGap
}

// summaries 返回合并后的汇总行。
func (m *merged) summaries() []loadgen.Summary {
	out := make([]loadgen.Summary, len(m.groups))
	for i, g := range m.groups {
		out[i] = g.Summary
	}
	return out
}

// mergeAndReport 合并分片结果并在 stderr 上报告每组的偏差、分位数来源与缺失的分片。
// known 是调用方知道原因的缺失分片（子进程被杀、Pod 被 OOMKilled……）。
func mergeAndReport(results []*shard.Result, known []loadgen.ShardLoss, stderr io.Writer) (*merged, error) {
	groups, err := shard.MergeGroups(shard.MergeOptions{Lost: known}, results...)
	if groups == nil && err != nil {
		return nil, err
	}
	m := &merged{groups: groups, count: results[0].Count, timeline: shard.MergeTimeline(results...)}
	var me *shard.MissingError
	if errors.As(err, &me) {
		m.lost = me.Lost
	}
	for i, g := range groups {
		src := "exact samples"
		if len(g.HDR) > 0 {
			src = "HDR for " + strings.Join(g.HDR, ",")
		}
		fmt.Fprintf(stderr, "merged group %d from shards %v: start skew %s, percentiles from %s%s\n", i, g.Shards, g.Skew, src, missingNote(g.Lost))
	}
	return m, err
}

// missingNote 点名缺失的分片与原因。
func missingNote(lost []loadgen.ShardLoss) string {
	if len(lost) == 0 {
		return ""
	}
	parts := make([]string, len(lost))
	for i, l := range lost {
		parts[i] = l.String()
	}
	return " — INCOMPLETE, missing " + strings.Join(parts, "; ")
}

// runKubeShards 以 Indexed Job 跑各分片（镜像里的本程序带 --shard-from-env），收集并合并。
// 多组的档位每组一个 Job、依次运行（kubejob.ShardJob.Groups），每组都对齐到自己 Job 的开始时刻。
// 各 Pod 写在结果行之前的逐请求记录由 kubejob.RunShards 存进 tmp（私有临时目录，调用方写完产物后
// 删除），合并时与本机分片一样经 shard.Replay 写出逐请求与会话 CSV；Pod 日志里的记录少于分片测量的
// 请求数时（日志轮转、读取上限），缺口随 merged 交给 writeMerged 报告。
//
// 镜像是普通的 bench 镜像：解析好的 provider（含 API key）写成 providers.yaml 放进随 Job 创建的
// Secret，-i 的数据集文件放进 ConfigMap，两者挂载进每个分片 Pod、随 Job 删除；Pod 的命令行
// 只带挂载路径（-p、-i 追加在最后，覆盖原命令行的同名选项），密钥不在 Job 或 Pod 定义里。
func runKubeShards(ctx context.Context, o *options, args []string, tmp string, stderr io.Writer) (*merged, error) {
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
	job := kubejob.ShardJob{Namespace: o.shard.namespace, Image: o.shard.image,
		Shards: o.shard.kube, Groups: loadgen.GroupCount(o.p.WithDefaults()), CPU: o.shard.cpu, Memory: o.shard.memory, SpreadShards: o.shard.spread,
		RecordsDir: tmp, StartDelay: o.shard.startDelay}
	if o.provider != "" {
		prov, _, err := resolveProvider(ctx, o)
		if err != nil {
			return nil, err
		}
		b, err := providerYAML(prov)
		if err != nil {
			return nil, err
		}
		job.Secret = map[string][]byte{"providers.yaml": b}
		cargs = append(cargs, "-p", kubejob.SecretMountPath+"/providers.yaml", "-pid", prov.ID)
	}
	if o.inputPath != "" {
		data, err := datasetFiles(o.inputPath)
		if err != nil {
			return nil, err
		}
		job.Data = data
		cargs = append(cargs, "-i", kubejob.DataMountPath)
	}
	job.Args = append(append([]string{"prof"}, cargs...), "--shard-from-env", "--quiet")
	run, err := kubejob.RunShards(ctx, job)
	if run == nil || len(run.Results) == 0 {
		return nil, err
	}
	lost := kubejob.ShardLosses(err)
	if ctx.Err() != nil {
		// 运行被取消（Ctrl-C、SIGTERM）：没有交回结果的分片是被取消的，不是自己失败的。
		for i := range lost {
			lost[i].Reason = loadgen.LossCancelled
		}
	}
	m, merr := mergeAndReport(run.Results, lost, stderr)
	if m != nil {
		m.records, m.recordGaps = run.Records, run.RecordGaps
	}
	return m, errors.Join(err, merr)
}

// datasetFiles 读 -i（一个 JSONL 文件，或目录里全部 .jsonl 文件，与 readDataset 同样的顺序），
// 按顺序命名为 0000.jsonl、0001.jsonl……：分片 Pod 以 -i <挂载目录> 读回时顺序不变，prompt 的
// 全局序号因此与单进程相同。
func datasetFiles(path string) (map[string][]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("-i/--input-path: %w", err)
	}
	files := []string{path}
	if st.IsDir() {
		if files, err = filepath.Glob(filepath.Join(path, "*.jsonl")); err != nil {
			return nil, fmt.Errorf("-i/--input-path %s: %w", path, err)
		}
		sort.Strings(files)
	}
	out := map[string][]byte{}
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("-i/--input-path: %w", err)
		}
		out[fmt.Sprintf("%04d.jsonl", i)] = b
	}
	return out, nil
}

// runSharded 处理三种分片模式；handled 为 false 表示没有分片选项，按单进程运行。
func runSharded(ctx context.Context, o *options, args []string, stderr io.Writer) (handled bool, err error) {
	s := &o.shard
	if s.index < 0 && !s.fromEnv && s.local == 0 && s.kube == 0 {
		return false, nil
	}
	if s.index >= 0 || s.fromEnv {
		tgt, teardown, err := target(ctx, o)
		if err != nil {
			return true, err
		}
		defer teardown()
		return true, runShardChild(ctx, o, tgt, os.Stdin, os.Stdout)
	}
	var m *merged
	var runErr error
	var provider string
	if s.local > 0 {
		prov, teardown, err := resolveProvider(ctx, o)
		if err != nil {
			return true, err
		}
		defer teardown()
		provider = prov.ID
		tmp, err := os.MkdirTemp("", "cibench-shards-")
		if err != nil {
			return true, err
		}
		defer os.RemoveAll(tmp)
		m, runErr = runLocalShards(ctx, o, args, prov, tmp, stderr)
	} else {
		provider = "kube"
		// 私有临时目录（0700）：各 Pod 交回的逐请求记录存在这里，写完产物后删除。
		tmp, err := os.MkdirTemp("", "cibench-kube-shards-")
		if err != nil {
			return true, err
		}
		defer os.RemoveAll(tmp)
		m, runErr = runKubeShards(ctx, o, args, tmp, stderr)
	}
	if m == nil {
		return true, runErr
	}
	if len(m.groups) > 0 && m.groups[0].Summary.Provider != "" {
		provider = m.groups[0].Summary.Provider
	}
	if err := writeMerged(o.savePath, o.p.WithDefaults(), provider, m, o.chunkTimes, stderr); err != nil {
		return true, errors.Join(runErr, err)
	}
	if runErr != nil {
		return true, runErr
	}
	return true, noSuccess(m.summaries(), stderr)
}

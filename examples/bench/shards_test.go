package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/shard"
	"github.com/vllm-cibench/cibench/loadgen/shard/kubejob"
)

// slowProvider 启动每个请求首 token 前固定等待 ttft 的模拟器，返回指向它的 providers.yaml。
// 固定延迟让各分片完成一组的时刻按各自的请求数确定地错开，不依赖机器忙闲。
func slowProvider(t *testing.T, ttft time.Duration) string {
	t.Helper()
	em, err := emulator.New(emulator.Config{Model: "m", TTFT: ttft})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(em.Handler())
	t.Cleanup(srv.Close)
	prov := filepath.Join(t.TempDir(), "providers.yaml")
	yml := "providers:\n  - id: 'slow'\n    name: 'slow'\n    api_key: 'EMPTY'\n    base_url: '" + srv.URL + "/v1'\n    model_name: 'm'\n    model_category: 'm'\n"
	if err := os.WriteFile(prov, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	return prov
}

// TestLocalShardsAlignLaterGroups 复现 issue 16：两组的本机分片运行里，第一组三个请求分给两个
// 分片（分片 0 两个、分片 1 一个，每个 1.2 秒），分片 1 早 1.2 秒跑完第一组。没有组间屏障时它
// 立刻开始第二组，合并以 "shard start skew too large: group 1" 拒绝；有屏障时第二组在两个分片
// 都就绪后同时开始，合并成功且偏差远小于 1 秒。分片子进程是测试二进制自身（见 TestMain）。
func TestLocalShardsAlignLaterGroups(t *testing.T) {
	prov := slowProvider(t, 1200*time.Millisecond)
	dir := t.TempDir()
	var stderr bytes.Buffer
	err := run([]string{"prof", "-p", prov, "-c", "2,4", "-il", "16", "-ol", "2", "-n", "3,4", "--shards", "2", "-s", dir, "--quiet"}, &stderr)
	if err != nil {
		t.Fatalf("sharded two-group run: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"merged group 0 from shards [0 1]", "merged group 1 from shards [0 1]"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if _, rest, ok := strings.Cut(line, "start skew "); ok {
			d, err := time.ParseDuration(strings.TrimSuffix(strings.Fields(rest)[0], ","))
			if err != nil || d > 500*time.Millisecond {
				t.Errorf("skew in %q: %v (%v), want < 500ms", line, d, err)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "summary_slow_*.csv"))
	if len(files) != 1 {
		t.Fatalf("summary files %v", files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("summary rows %d (want header + 2): %v", len(rows), err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	c, ok := col["Concurrency"]
	if !ok {
		t.Fatalf("no Concurrency column in %v", rows[0])
	}
	if rows[1][c] != "2" || rows[2][c] != "4" {
		t.Fatalf("concurrency column %q %q, want 2 and 4", rows[1][c], rows[2][c])
	}
}

// TestKubeShardsManyGroupsAccepted 验证多组的 --kube-shards 档位不再被拒绝（每组一个 Job），
// 而 Pod 一侧 --shard-from-env 从 CIBENCH_SHARD_GROUP 得知只跑哪一组；取值不是整数时点名变量与取值。
func TestKubeShardsManyGroupsAccepted(t *testing.T) {
	for _, args := range [][]string{
		{"--kube-shards", "2", "--kube-image", "i", "-c", "4", "-il", "16", "-ol", "8"},
		{"--kube-shards", "4", "--kube-image", "i", "-c", "4", "--epochs", "2", "-ol", "8,16"},
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err != nil {
			t.Fatalf("%v refused: %v", args, err)
		}
	}
	t.Setenv(kubejob.EnvShardIndex, "1")
	t.Setenv(kubejob.EnvShardCount, "2")
	t.Setenv(kubejob.EnvShardStart, "2026-01-02T03:04:05Z")
	var o shardOptions
	sh, err := o.fromEnvironment()
	if err != nil || sh.Index != 1 || sh.Count != 2 || sh.Groups != nil {
		t.Fatalf("without a group: %+v, %v", sh, err)
	}
	t.Setenv(kubejob.EnvShardGroup, "3")
	if sh, err = o.fromEnvironment(); err != nil || !slices.Equal(sh.Groups, []int{3}) {
		t.Fatalf("with %s=3: %+v, %v", kubejob.EnvShardGroup, sh, err)
	}
	t.Setenv(kubejob.EnvShardGroup, "x")
	if _, err = o.fromEnvironment(); err == nil || !strings.Contains(err.Error(), `CIBENCH_SHARD_GROUP="x"`) {
		t.Fatalf("bad group: %v", err)
	}
}

// TestSplitShardOutput 验证父进程把就绪行与结果行分开：就绪行按顺序交给回调、不进入保留的输出；
// 结果行（以及形似就绪行但不合规的行）原样保留，ReadShardResultFor 照样读得出结果。
func TestSplitShardOutput(t *testing.T) {
	res := &shard.Result{Format: shard.Format, Index: 1, Count: 2, Groups: []loadgen.ShardGroup{}}
	var in bytes.Buffer
	in.WriteString("cibench-shard-ready 1\nlog line\ncibench-shard-ready 2\ncibench-shard-ready x\ncibench-shard-ready 03\n")
	if err := shard.WriteResult(&in, res); err != nil {
		t.Fatal(err)
	}
	var got []int
	out, err := splitShardOutput(&in, func(k int) { got = append(got, k) })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("ready groups %v, want [1 2]", got)
	}
	text := out.String()
	if strings.Contains(text, "cibench-shard-ready 1") || !strings.Contains(text, "log line\ncibench-shard-ready x\ncibench-shard-ready 03\n{") {
		t.Fatalf("kept output:\n%s", text)
	}
	back, err := shard.ReadResultFor(out, 1)
	if err != nil || back.Index != 1 || back.Count != 2 {
		t.Fatalf("result from kept output: %+v, %v", back, err)
	}
}

// recorder 是记下写入内容的子进程 stdin 替身（加锁：屏障在各子进程的读 goroutine 里放行）。
type recorder struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write 追加写入的内容。
func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.Write(p)
}

// String 返回到目前为止写入的内容。
func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.String()
}

// TestLocalBarrierReleasesWhenAllLiveReady 验证父进程一侧的屏障：只有全部活着的子进程都就绪才放行，
// 且一起放行；退出的子进程被移出屏障，不再拖住其余子进程。
func TestLocalBarrierReleasesWhenAllLiveReady(t *testing.T) {
	ins := []*recorder{{}, {}, {}}
	b := newLocalBarrier([]io.Writer{ins[0], ins[1], ins[2]})
	b.ready(0, 1)
	b.ready(2, 1)
	for i, in := range ins {
		if in.String() != "" {
			t.Fatalf("child %d released (%q) before child 1 was ready", i, in.String())
		}
	}
	b.ready(1, 1)
	for i, in := range ins {
		if in.String() != "go 1\n" {
			t.Fatalf("child %d got %q, want \"go 1\\n\"", i, in.String())
		}
	}
	b.ready(0, 2)
	b.ready(2, 2)
	b.exit(1) // 子进程 1 在第 1 组失败退出：它的分片缺失，其余分片照常进入第 2 组
	if ins[0].String() != "go 1\ngo 2\n" || ins[2].String() != "go 1\ngo 2\n" || ins[1].String() != "go 1\n" {
		t.Fatalf("after child 1 exited: %q %q %q", ins[0].String(), ins[1].String(), ins[2].String())
	}
	b.exit(0)
	b.exit(2) // 没有活着的子进程：不写任何东西
	if ins[0].String() != "go 1\ngo 2\n" {
		t.Fatalf("wrote after every child exited: %q", ins[0].String())
	}
}

// TestStdioBarrierFailsCleanly 验证子进程一侧的屏障：报告就绪行、收到匹配的 go 行时放行；
// 父进程消失（stdin 关闭）、发来不匹配的行、超时与 ctx 取消都是 errBarrier 或 ctx 的错误，不会永远等待。
func TestStdioBarrierFailsCleanly(t *testing.T) {
	pr, pw := io.Pipe()
	var out recorder
	bar := stdioBarrier(pr, &out, time.Minute)
	go func() { _, _ = io.WriteString(pw, "go 1\ngo 3\n") }()
	if err := bar(context.Background(), 1); err != nil {
		t.Fatalf("released barrier: %v", err)
	}
	if err := bar(context.Background(), 2); !errors.Is(err, errBarrier) || !strings.Contains(err.Error(), `sent "go 3", want "go 2"`) {
		t.Fatalf("mismatched go line: %v", err)
	}
	if out.String() != "cibench-shard-ready 1\ncibench-shard-ready 2\n" {
		t.Fatalf("ready lines %q", out.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := bar(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	pw.Close() // 父进程消失
	if err := bar(context.Background(), 4); !errors.Is(err, errBarrier) || !strings.Contains(err.Error(), "parent gone") {
		t.Fatalf("closed stdin: %v", err)
	}

	quiet, qw := io.Pipe()
	defer qw.Close()
	if err := stdioBarrier(quiet, io.Discard, 20*time.Millisecond)(context.Background(), 1); !errors.Is(err, errBarrier) || !strings.Contains(err.Error(), "within 20ms") {
		t.Fatalf("silent parent: %v", err)
	}
	if err := stdioBarrier(quiet, failWriter{}, time.Minute)(context.Background(), 1); !errors.Is(err, errBarrier) || !strings.Contains(err.Error(), "report ready") {
		t.Fatalf("broken stdout: %v", err)
	}
}

// failWriter 是总是失败的 stdout 替身（父进程已关闭读端）。
type failWriter struct{}

// Write 总是返回 io.ErrClosedPipe。
func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

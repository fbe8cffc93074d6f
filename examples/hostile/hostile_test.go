package hostile_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/internal/hostile"
)

// 工具名（examples/ 下的目录名）；benchProbe 是 bench 的变体：故障从第一个请求
// （压测前的探测请求）就开始，而不是只落在被测量的请求上。
const (
	toolBench      = "bench"
	toolBenchProbe = "bench-probe"
	toolFunctional = "functional"
	toolAccuracy   = "accuracy"
	toolCI         = "ci"
)

// 运行参数：尽量小的超时，使卡住的故障也在几秒内被工具自己截断。
const (
	model         = hostile.DefaultModel
	benchTimeout  = 3 * time.Second // bench --timeout 与 ci 档位的 timeout
	benchIdle     = time.Second     // 档位 idle_timeout（只给 stall 行，见 benchProfile）
	benchRequests = 2
	benchEventCap = 1 << 20 // 档位 max_event_bytes（只给 huge 行）
	funcTimeout   = 2 * time.Second
	// sizeRowTimeout 是 big 与 huge 两行在每个工具上的请求超时（functional 的 -timeout、accuracy 的 --timeout、bench 与
	// ci 档位的 timeout、ci 功能与精度阶段的请求超时）：这两行考的是大小（16 MiB 的事件照常读完、1 GiB 的按上限放弃），
	// 不是时间。-race 下的服务端生成 16 MiB 在冷启动的测试里（两个核上挤着五个测试二进制）曾超过 2 s，结果记成 timeout
	// 而不是 pass / too_large（functional/big、huge，后来 ci/huge）；期限放宽到不可能先到，判定只由大小决定。
	// ci 的阶段与作业超时随之放宽（ciSizeStageTimeout、ciSizeJobTimeout），免得阶段期限抢在请求期限之前。
	sizeRowTimeout = 20 * time.Second
	funcRetries    = 1
	accTimeout     = 3 * time.Second
	accRetries     = 1
	accExamples    = 2
	ciJobTimeout   = 90 * time.Second
	ciStageTimeout = 15 * time.Second
	// ciSizeStageTimeout、ciSizeJobTimeout 是 ci 在 big、huge 两行的阶段与作业超时：阶段要容得下一个
	// sizeRowTimeout 的请求加一次重试，作业容得下三个阶段。
	ciSizeStageTimeout = 45 * time.Second
	ciSizeJobTimeout   = 150 * time.Second
	// slack 是进程启动、编译好的二进制加载与忙碌机器上调度的余量。
	slack = 20 * time.Second
	// maxRSS 是任何一个工具进程允许的峰值 RSS：把 1 GiB 事件或响应体读进内存的工具
	// 至少要 1 GiB，一定超过它；而按默认上限（每个响应 64 MiB，读入时缓冲区倍增可达
	// 两倍）工作的 ci 进程同时有功能阶段的 4 个并行用例与精度阶段的多个线程在读，
	// 峰值可以到 512 MiB 上下（实测 394–516 MiB），所以界限取 900 MiB 而不是 512 MiB。
	maxRSS = 900 << 20
	// parallel 是同时运行的子进程数（机器只有两个忙碌的核）。
	parallel = 6
)

// functionalCases 是 functional 与 ci 功能阶段选中的用例：非流式（openai-go）、流式、
// 会被 4xx 误判为"不支持"的参数用例，以及走 /tokenize 的上下文边界用例。
var functionalCases = []string{"chat_core/basic", "chat_core/stream", "params_boundary/top_k=1", "errors/context_boundary"}

// want 是一行（工具×故障）的期望。
type want struct {
	// ok 为 true：工具必须成功（退出码 0、没有失败的请求/用例/样本）。
	ok bool
	// any 为 true：这个故障对该工具不一定是错误（例如非流式请求看到两个 index 0 的
	// choice），只断言不卡住、内存有界、不泄露密钥。
	any bool
	// classes 是该工具词汇里可接受的失败类别（bench 的 Error_Class、accuracy 的 error_class）。
	classes []string
	// status 非 0 时，bench 的逐请求 Status 列必须等于它。
	status int
	// reason 匹配失败说明（functional 的 reason、探测失败时的 stderr、ci 的阶段错误）。
	reason string
	// mustFail 是 functional 中必须失败的用例（nil 表示全部），mustPass 是必须通过的用例。
	mustFail, mustPass []string
	// fclass 是 functional 必须失败的用例可接受的故障类别（report.json 的 class，见
	// functional.Class）；空表示不检查。
	fclass []string
}

// 常用的失败说明模式。
const (
	reTimeout = `(?i)timeout|deadline|timed out`
	reEOF     = `(?i)eof|truncat|unexpected end|closed`
	reReset   = `(?i)reset|eof|connection|transport`
	reTooBig  = `(?i)too.?large|exceed|limit|too big|size`
	reDecode  = `(?i)json|invalid|decode|parse|unexpected|bad.?response`
)

// expectations 返回 工具×故障 的期望表。bench 的类别见 loadgen.ErrClass*，accuracy 的
// 类别见 accuracy.ErrorClass；functional 没有类别列，用失败说明匹配。
func expectations() map[string]map[hostile.Fault]want {
	ok := want{ok: true}
	bench := map[hostile.Fault]want{
		hostile.FaultNone:           ok,
		hostile.FaultTruncate:       {classes: []string{"truncated"}, reason: reEOF},
		hostile.FaultReset:          {classes: []string{"transport", "truncated"}, reason: reReset},
		hostile.FaultErrorEvent:     {classes: []string{"stream_error"}, reason: `engine failed`},
		hostile.Fault429:            {classes: []string{"http"}, status: 429, reason: `429`},
		hostile.Fault500:            {classes: []string{"http"}, status: 500, reason: `500`},
		hostile.FaultSilence:        {classes: []string{"timeout"}, reason: reTimeout},
		hostile.FaultStall:          {classes: []string{"idle_timeout"}, reason: reTimeout},
		hostile.FaultTokenizeSilent: ok,
		hostile.FaultMetricsSilent:  ok,
		hostile.FaultBig:            ok,
		hostile.FaultHuge:           {classes: []string{"too_large"}, reason: reTooBig},
		hostile.FaultInvalidJSON:    {classes: []string{"bad_response"}, reason: reDecode},
		hostile.FaultZeroTokens:     {classes: []string{"no_tokens"}, reason: `(?i)no (output )?tokens`},
		hostile.FaultDupFinish:      {classes: []string{"protocol"}, reason: `(?i)finish`},
		hostile.FaultGarbage:        {classes: []string{"bad_response", "truncated"}, reason: reDecode},
		hostile.FaultError200:       {classes: []string{"stream_error"}, reason: `error in a 200 body`},
		hostile.FaultEchoAuth:       {classes: []string{"http"}, status: 401, reason: `401`},
	}
	probe := map[hostile.Fault]want{}
	for _, f := range []hostile.Fault{hostile.FaultSilence, hostile.FaultStall, hostile.FaultReset, hostile.FaultHuge, hostile.FaultTruncate} {
		probe[f] = bench[f]
	}
	all := []string(nil)
	fn := map[hostile.Fault]want{
		hostile.FaultNone:           ok,
		hostile.FaultTruncate:       {reason: reEOF, fclass: []string{"transport"}},
		hostile.FaultReset:          {reason: reReset, fclass: []string{"transport"}},
		hostile.FaultErrorEvent:     {reason: `engine failed`, fclass: []string{"server_error"}},
		hostile.Fault429:            {reason: `429`, fclass: []string{"http_429"}},
		hostile.Fault500:            {reason: `500`, fclass: []string{"http_5xx"}},
		hostile.FaultSilence:        {reason: reTimeout, fclass: []string{"timeout", "unresponsive"}},
		hostile.FaultStall:          {reason: reTimeout, fclass: []string{"timeout", "unresponsive"}},
		hostile.FaultTokenizeSilent: {reason: reTimeout, fclass: []string{"timeout"}, mustFail: []string{"errors/context_boundary"}, mustPass: []string{"chat_core/basic", "chat_core/stream", "params_boundary/top_k=1"}},
		hostile.FaultMetricsSilent:  ok,
		hostile.FaultBig:            ok,
		hostile.FaultHuge:           {reason: reTooBig, fclass: []string{"too_large"}},
		hostile.FaultInvalidJSON:    {reason: reDecode, fclass: []string{"bad_json"}},
		hostile.FaultZeroTokens:     {reason: `(?i)empty|no (content|output|tokens)|completion_tokens|token`, fclass: []string{"assertion"}},
		hostile.FaultDupFinish:      {reason: `(?i)finish`, fclass: []string{"protocol"}, mustFail: []string{"chat_core/stream"}, mustPass: []string{}},
		hostile.FaultGarbage:        {reason: `(?i)json|invalid|decode|parse|event|utf|content.type|eof|character`, fclass: []string{"bad_json", "protocol"}},
		hostile.FaultError200:       {reason: `error in a 200 body`, fclass: []string{"server_error"}},
		hostile.FaultEchoAuth:       {reason: `401`, fclass: []string{"http_auth"}},
	}
	// errors/context_boundary 只断言状态码（边界上 200、多一个 token 400），所以响应体
	// 层面的故障（200 但体是坏的）对它不一定是失败；其余三个用例读响应体，必须失败。
	bodyOnly := []string{"chat_core/basic", "chat_core/stream", "params_boundary/top_k=1"}
	for _, f := range []hostile.Fault{hostile.FaultInvalidJSON, hostile.FaultZeroTokens, hostile.FaultGarbage, hostile.FaultError200} {
		w := fn[f]
		w.mustFail = bodyOnly
		fn[f] = w
	}
	for f, w := range fn {
		if !w.ok && w.mustFail == nil {
			w.mustFail = all
			fn[f] = w
		}
	}
	acc := map[hostile.Fault]want{
		hostile.FaultNone:           ok,
		hostile.FaultTruncate:       {classes: []string{"transport", "decode"}},
		hostile.FaultReset:          {classes: []string{"transport"}},
		hostile.FaultErrorEvent:     {classes: []string{"server_error"}, reason: `engine failed`},
		hostile.Fault429:            {classes: []string{"http_429"}},
		hostile.Fault500:            {classes: []string{"http_500"}},
		hostile.FaultSilence:        {classes: []string{"timeout", "unresponsive"}}, // 接连几个样本得不到回答时其余记为 unresponsive
		hostile.FaultStall:          {classes: []string{"timeout", "unresponsive"}},
		hostile.FaultTokenizeSilent: ok,
		hostile.FaultMetricsSilent:  ok,
		hostile.FaultBig:            ok,
		hostile.FaultHuge:           {classes: []string{"body_too_large"}},
		hostile.FaultInvalidJSON:    {classes: []string{"decode"}},
		hostile.FaultZeroTokens:     {classes: []string{"empty_content"}},
		hostile.FaultDupFinish:      {any: true},
		hostile.FaultGarbage:        {classes: []string{"decode"}},
		hostile.FaultError200:       {classes: []string{"server_error"}, reason: `error in a 200 body`},
		hostile.FaultEchoAuth:       {classes: []string{"http_401"}},
	}
	ci := map[hostile.Fault]want{}
	for _, f := range hostile.Faults() {
		// ci 的期望由三个阶段各自的期望组合而成（见 checkCI）；这里只记录整体是否成功。
		w := want{ok: fn[f].ok && bench[f].ok && acc[f].ok}
		if f == hostile.FaultTokenizeSilent {
			w.ok = false
		}
		ci[f] = w
	}
	return map[string]map[hostile.Fault]want{toolBench: bench, toolBenchProbe: probe, toolFunctional: fn, toolAccuracy: acc, toolCI: ci}
}

// canaries 是一行使用的金丝雀密钥：API Key 与 Pushgateway 的 basic auth。
type canaries struct {
	key, user, password string
}

// newCanaries 生成随机的金丝雀；刻意不带 "sk-" 之类前缀，使只认格式的脱敏规则抓不到它们，
// 只有真正登记了所配密钥的脱敏器才行。
func newCanaries() canaries {
	r := func() string {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	}
	return canaries{key: "hostileKey" + r(), user: "hostileUser", password: "hostilePw" + r()}
}

// forms 返回金丝雀在输出中可能出现的全部形式：原文，以及我们发出的 Basic 凭据对的 base64。
func (c canaries) forms() map[string][]byte {
	pair := c.user + ":" + c.password
	return map[string][]byte{
		"api key":                 []byte(c.key),
		"push password":           []byte(c.password),
		"basic pair base64":       []byte(base64.StdEncoding.EncodeToString([]byte(pair))),
		"basic pair base64 (raw)": []byte(base64.RawStdEncoding.EncodeToString([]byte(pair))),
		"basic pair base64 (url)": []byte(base64.RawURLEncoding.EncodeToString([]byte(pair))),
	}
}

// repoRoot 返回模块根目录（本包在 examples/hostile）。
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// TestMain 在全部测试之后删除编译出的二进制。
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binaries 把四个示例程序编译进一个临时目录（整个测试进程只编译一次）。
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "cibench-hostile-bin-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+string(os.PathSeparator),
			"./examples/bench", "./examples/functional", "./examples/accuracy", "./examples/ci")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// capped 是有上限的输出缓冲：超过上限的部分丢弃但计数，工具的失控输出不会撑爆测试进程。
type capped struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	total int64
	limit int
}

// Write 实现 io.Writer。
func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if room := c.limit - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// String 返回缓冲的内容。
func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// run 是一次子进程运行的观察结果。
type run struct {
	tool, fault    string
	args           []string
	exit           int
	killed         bool
	oomKilled      int64 // 看门狗杀掉进程时的 RSS（字节），0 表示没有
	elapsed, bound time.Duration
	maxRSS         int64
	stdout, stderr *capped
	out            string // 工具的输出目录（也是工作目录与 TMPDIR 的上级）
}

// problems 收集一行的全部断言失败，最后一起报告，矩阵里写第一条。
type problems []string

// add 记一条失败。
func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// execTool 运行一个子进程，超过 bound 就杀掉它（并记为卡住）。
func execTool(t *testing.T, bin string, args, env []string, dir string, bound time.Duration) run {
	t.Helper()
	r := run{args: args, bound: bound, out: dir, stdout: &capped{limit: 16 << 20}, stderr: &capped{limit: 16 << 20}}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = r.stdout, r.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	// 内存看门狗：RSS 一超过上限就杀掉，不等它把 1 GiB 读完——没有上限的工具在 ci
	// 里能涨到 8 GB，会拖垮共用的 CI 机器。
	watch := time.NewTicker(20 * time.Millisecond)
	defer watch.Stop()
wait:
	for {
		select {
		case <-done:
			break wait
		case <-timer.C:
			r.killed = true
			// 杀掉整个进程组（工具可能启动了 python3 等子进程）；只杀自己启动的那一组。
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			break wait
		case <-watch.C:
			if rss := currentRSS(cmd.Process.Pid); rss > maxRSS {
				r.oomKilled = rss
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
				break wait
			}
		}
	}
	r.elapsed = time.Since(start)
	r.exit = cmd.ProcessState.ExitCode()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = ru.Maxrss * 1024 // Linux 上以 KiB 计
	}
	return r
}

// currentRSS 读 /proc/<pid>/statm 的常驻页数（Linux）；读不到时为 0。
func currentRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	var pages int64
	_, _ = fmt.Sscan(f[1], &pages)
	return pages * int64(os.Getpagesize())
}

// baseEnv 返回子进程的最小环境：不继承测试进程的环境，免得外部的
// PROM_PUSHGATEWAY_URL、OPENAI_API_KEY 之类混进来。
func baseEnv(dir string) []string {
	tmp := filepath.Join(dir, "tmp")
	_ = os.MkdirAll(tmp, 0o755)
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "TMPDIR=" + tmp, "LANG=C.UTF-8"}
}

// TestHostile 对每个 工具×故障 运行真实的示例程序并断言 issue 14 的"Done when"。
func TestHostile(t *testing.T) {
	bins := binaries(t)
	exp := expectations()
	tools := []string{toolBench, toolBenchProbe, toolFunctional, toolAccuracy, toolCI}
	if testing.Short() {
		tools = []string{toolBench, toolFunctional, toolAccuracy}
	}
	data := gpqaData(t)
	sem := make(chan struct{}, parallel)
	var mu sync.Mutex
	matrix := map[string]map[string]string{}
	record := func(tool string, f hostile.Fault, verdict string) {
		mu.Lock()
		defer mu.Unlock()
		if matrix[tool] == nil {
			matrix[tool] = map[string]string{}
		}
		matrix[tool][string(f)] = verdict
	}
	t.Run("matrix", func(t *testing.T) {
		for _, tool := range tools {
			for _, f := range hostile.Faults() {
				w, ok := exp[tool][f]
				if !ok {
					continue
				}
				t.Run(tool+"/"+string(f), func(t *testing.T) {
					t.Parallel()
					sem <- struct{}{}
					defer func() { <-sem }()
					r, ps := runRow(t, bins, data, tool, f, w)
					verdict := fmt.Sprintf("PASS (%s, exit %d, %d MiB)", r.elapsed.Round(100*time.Millisecond), r.exit, r.maxRSS>>20)
					if len(ps) > 0 {
						verdict = fmt.Sprintf("FAIL (%s, exit %d, %d MiB): %s", r.elapsed.Round(100*time.Millisecond), r.exit, r.maxRSS>>20, ps[0])
						for _, p := range ps {
							t.Error(p)
						}
						t.Logf("args: %q\nstdout (%d bytes):\n%s\nstderr (%d bytes):\n%s", r.args, r.stdout.total, tail(r.stdout.String()), r.stderr.total, tail(r.stderr.String()))
					}
					record(tool, f, verdict)
				})
			}
		}
	})
	var b strings.Builder
	b.WriteString("fault × tool matrix:\n")
	for _, tool := range tools {
		for _, f := range hostile.Faults() {
			if v, ok := matrix[tool][string(f)]; ok {
				fmt.Fprintf(&b, "  %-12s %-16s %s\n", tool, f, v)
			}
		}
	}
	t.Log(b.String())
}

// tail 返回输出的最后 4 KiB（失败时打印）。
func tail(s string) string {
	if len(s) > 4<<10 {
		return "…" + s[len(s)-4<<10:]
	}
	return s
}

// runRow 准备一行的服务与输入、运行工具并检查全部断言。
func runRow(t *testing.T, bins, data, tool string, f hostile.Fault, w want) (run, problems) {
	can := newCanaries()
	srv, err := hostile.New(hostile.Config{APIKey: can.key, Answer: gpqaAnswer})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := t.TempDir()
	in, out := filepath.Join(root, "in"), filepath.Join(root, "out")
	for _, d := range []string{in, out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var r run
	switch tool {
	case toolBench, toolBenchProbe:
		r = runBench(t, bins, srv, can, f, tool == toolBenchProbe, in, out)
	case toolFunctional:
		r = runFunctional(t, bins, srv, can, f, out)
	case toolAccuracy:
		r = runAccuracy(t, bins, srv, can, f, data, in, out)
	case toolCI:
		r = runCI(t, bins, srv, can, f, data, in, out)
	}
	r.tool, r.fault = tool, string(f)
	var ps problems
	if r.killed {
		ps.add("hang: still running after %v (bound from the configured timeouts), killed", r.bound)
	}
	if r.oomKilled > 0 {
		ps.add("memory: RSS reached %d MiB > %d MiB during the run, killed", r.oomKilled>>20, maxRSS>>20)
	} else if r.maxRSS > maxRSS {
		ps.add("memory: peak RSS %d MiB > %d MiB", r.maxRSS>>20, maxRSS>>20)
	}
	switch {
	case w.any:
	case w.ok && r.exit != 0:
		ps.add("exit %d, want 0 on fault %s", r.exit, f)
	case !w.ok && r.exit == 0:
		ps.add("exit 0, want non-zero: the fault %s must fail the run", f)
	}
	switch tool {
	case toolBench, toolBenchProbe:
		checkBench(&ps, r, out, w, tool == toolBenchProbe)
	case toolFunctional:
		checkFunctional(&ps, filepath.Join(out, "functional", "report.json"), w)
	case toolAccuracy:
		checkAccuracy(&ps, r, filepath.Join(out, "accuracy"), w)
	case toolCI:
		checkCI(&ps, r, out, f)
	}
	checkCanaries(&ps, r, out, can)
	if st := srv.Stats(); !slices.Contains(st.Authorization, "Bearer "+can.key) {
		ps.add("the server never saw the API key (Authorization values %q): the canary check would prove nothing", st.Authorization)
	}
	if tool == toolCI && srv.Stats().Pushes == 0 && r.exit != 2 {
		ps.add("ci pushed nothing to the Pushgateway: the basic-auth canary was never sent")
	}
	return r, ps
}

// gpqaData 写一份两题的 gpqa_diamond.csv：正确选项带 "right" 标记，服务的
// gpqaAnswer 据此总答对，所以健康运行能过 0.5 的门限、而故障运行一定不过。
func gpqaData(t *testing.T) string {
	dir := t.TempDir()
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	_ = cw.Write([]string{"Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3"})
	for i := range accExamples {
		_ = cw.Write([]string{fmt.Sprintf("Which option is marked right? (%d)", i), fmt.Sprintf("right %d", i), "wrong a", "wrong b", "wrong c"})
	}
	cw.Flush()
	if err := os.WriteFile(filepath.Join(dir, "gpqa_diamond.csv"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// gpqaLine 匹配多选题 prompt 中的选项行。
var gpqaLine = regexp.MustCompile(`(?m)^([A-D])\) (.*)$`)

// gpqaAnswer 是服务的健康回复：选出带 "right" 的选项；不是多选题时返回空串，
// 服务退回按 max_tokens 生成（功能用例检查 token 数）。
func gpqaAnswer(prompt string) string {
	for _, m := range gpqaLine.FindAllStringSubmatch(prompt, -1) {
		if strings.HasPrefix(m[2], "right") {
			return "The marked option.\nAnswer: " + m[1]
		}
	}
	return ""
}

// benchProfile 写 bench 的 YAML 档位：stall 行加 idle_timeout（卡住的流由事件间隔截断），
// huge 行加 max_event_bytes（1 GiB 事件只读 1 MiB）；big 行保持默认上限，证明 16 MiB 事件照常可用。
func benchProfile(f hostile.Fault) string {
	var b strings.Builder
	fmt.Fprintf(&b, "backend: openai-chat\nconcurrency: [1]\ninput_length: [16]\noutput_length: [4]\nrequests_per_concurrency: %d\nwarmup: 0\nepochs: 1\ncontrol_method: normal\ntimeout: %s\n", benchRequests, sizeTimeout(f, benchTimeout))
	switch f {
	case hostile.FaultStall:
		fmt.Fprintf(&b, "idle_timeout: %s\n", benchIdle)
	case hostile.FaultHuge:
		fmt.Fprintf(&b, "max_event_bytes: %d\n", benchEventCap)
	}
	return b.String()
}

// runBench 运行 examples/bench。probe 为 false 时第一个生成请求（探测）健康，
// 故障落在被测量的请求上。期限：探测与每个请求各一个 --timeout，外加 /tokenize 与
// 两次 /metrics 抓取各一个（工具对它们用 min(timeout, idle, 10s)）。
func runBench(t *testing.T, bins string, srv *hostile.Server, can canaries, f hostile.Fault, probe bool, in, out string) run {
	base := srv.BaseURLAfter(f, 1)
	if probe {
		base = srv.BaseURL(f)
	}
	prov := fmt.Sprintf("providers:\n  - id: hostile\n    name: hostile\n    api_key: '%s'\n    base_url: '%s'\n    model_name: '%s'\n", can.key, base, model)
	mustWrite(t, filepath.Join(in, "providers.yaml"), prov)
	mustWrite(t, filepath.Join(in, "profile.yaml"), benchProfile(f))
	timeout := sizeTimeout(f, benchTimeout)
	args := []string{"--provider", filepath.Join(in, "providers.yaml"), "--provider-id", "hostile",
		"--perf-profile", filepath.Join(in, "profile.yaml"), "--quiet",
		"--timeout", fmt.Sprint(timeout.Seconds()), "--benchmark-save-path", filepath.Join(out, "bench")}
	bound := slack + time.Duration(1+benchRequests+3)*timeout
	return execTool(t, filepath.Join(bins, "bench"), args, baseEnv(out), out, bound)
}

// sizeRow 报告 f 是否是考大小的行（big、huge）。
func sizeRow(f hostile.Fault) bool { return f == hostile.FaultBig || f == hostile.FaultHuge }

// sizeTimeout 返回工具行的请求超时：big 与 huge 两行用 sizeRowTimeout（它们考大小，期限不能先到），其余用 normal。
func sizeTimeout(f hostile.Fault, normal time.Duration) time.Duration {
	if sizeRow(f) {
		return sizeRowTimeout
	}
	return normal
}

// runFunctional 运行 examples/functional。期限：每个用例最多 6 个请求，每个请求
// (1+retries) 次尝试，各一个 -timeout 外加 Retry-After；用例并行执行。
func runFunctional(t *testing.T, bins string, srv *hostile.Server, can canaries, f hostile.Fault, out string) run {
	timeout := sizeTimeout(f, funcTimeout)
	args := []string{"-base-url", srv.BaseURL(f), "-model", model, "-api-key", can.key,
		"-suites", strings.Join(functionalCases, ","), "-out", filepath.Join(out, "functional"),
		"-timeout", timeout.String(), "-retries", fmt.Sprint(funcRetries), "-parallel", fmt.Sprint(len(functionalCases))}
	bound := slack + 6*time.Duration(1+funcRetries)*(timeout+time.Second)
	return execTool(t, filepath.Join(bins, "functional"), args, baseEnv(out), out, bound)
}

// runAccuracy 运行 examples/accuracy（密钥经 OPENAI_API_KEY 传入）。期限：每个样本
// (1+retries) 次尝试，各一个 --timeout；两个线程并行。
func runAccuracy(t *testing.T, bins string, srv *hostile.Server, can canaries, f hostile.Fault, data, in, out string) run {
	mustWrite(t, filepath.Join(in, "accuracy.yaml"), "datasets:\n  - name: gpqa\n    threshold: 0.5\n")
	args := []string{"--dataset", "gpqa", "--dataset-path", data, "--examples", fmt.Sprint(accExamples), "--n-repeats", "1",
		"--url", srv.BaseURL(f), "--served-model-name", model, "--max-tokens", "16", "--temperature", "0",
		"--num-threads", "2", "--timeout", sizeTimeout(f, accTimeout).String(), "--retries", fmt.Sprint(accRetries),
		"--out", filepath.Join(out, "accuracy"), "--config", filepath.Join(in, "accuracy.yaml")}
	env := append(baseEnv(out), "OPENAI_API_KEY="+can.key)
	bound := slack + time.Duration(accExamples*(1+accRetries))*(sizeTimeout(f, accTimeout)+time.Second)
	return execTool(t, filepath.Join(bins, "accuracy"), args, env, out, bound)
}

// runCI 运行 examples/ci 的每日运行（会推送，所以 Pushgateway 的 basic auth 金丝雀
// 真的发出去）：一个 external 场景指向故障地址，阶段超时很小。期限是作业超时。
func runCI(t *testing.T, bins string, srv *hostile.Server, can canaries, f hostile.Fault, data, in, out string) run {
	cfg := filepath.Join(in, "configs")
	src := filepath.Join(repoRoot(t), "configs", "tests", "functional")
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(cfg, "tests", "functional", e.Name()), string(b))
	}
	// 功能阶段的单请求超时与工具行相同（默认 120s 会被阶段超时抢先）。
	mustWrite(t, filepath.Join(cfg, "tests", "functional", "request.yaml"), fmt.Sprintf("request:\n  timeout: %s\n", sizeTimeout(f, funcTimeout)))
	st, job := ciStageTimeout.String(), ciJobTimeout
	if sizeRow(f) {
		st, job = ciSizeStageTimeout.String(), ciSizeJobTimeout
	}
	mustWrite(t, filepath.Join(cfg, "matrix.yaml"), fmt.Sprintf(`defaults:
  on_failure: continue
  timeouts:
    pr:    {job: %[1]s, functional: %[2]s, perf: %[2]s, accuracy: %[2]s}
    daily: {job: %[1]s, functional: %[2]s, perf: %[2]s, accuracy: %[2]s}
scenarios:
  hostile:
    daily:
      functional: {cases: [%[3]s]}
`, job, st, strings.Join(functionalCases, ", ")))
	mustWrite(t, filepath.Join(cfg, "scenarios", "hostile.yaml"), fmt.Sprintf(`mode: external
served_model_name: %s
base_url: %s
api_key_env: HOSTILE_API_KEY
health: {timeout: 10s}
`, model, srv.BaseURL(f)))
	mustWrite(t, filepath.Join(cfg, "tests", "perf", "profiles", "daily.yaml"), benchProfile(f))
	mustWrite(t, filepath.Join(cfg, "tests", "accuracy", "daily.yaml"), fmt.Sprintf(`evaluator: simple-evals
max_tokens: 16
temperature: 0
num_threads: 2
request_timeout: %s
retries: %d
timeout: %s
dataset_path: %s
datasets:
  - name: gpqa
    threshold: 0.5
    examples: %d
    n_repeats: 1
`, sizeTimeout(f, accTimeout), accRetries, st, data, accExamples))
	args := []string{"-config", cfg, "-run-type", "daily", "-scenario", "hostile", "-artifacts", filepath.Join(out, "artifacts"),
		"-run-id", "hostile-run", "-retention", "-1s"}
	env := append(baseEnv(out), "HOSTILE_API_KEY="+can.key, "PROM_PUSHGATEWAY_URL="+srv.Root(f),
		"PROM_PUSHGATEWAY_USERNAME="+can.user, "PROM_PUSHGATEWAY_PASSWORD="+can.password)
	return execTool(t, filepath.Join(bins, "ci"), args, env, out, job+slack)
}

// mustWrite 写文件（必要时建目录）。
func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// requestRows 读出 dir 下全部逐请求 CSV（表头含 Error_Class 的文件）的行，以列名为键。
func requestRows(dir string) ([]map[string]string, error) {
	var rows []map[string]string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".csv") {
			return err
		}
		fh, err := os.Open(p)
		if err != nil {
			return err
		}
		defer fh.Close()
		recs, err := csv.NewReader(fh).ReadAll()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if len(recs) == 0 || !slices.Contains(recs[0], "Error_Class") {
			return nil
		}
		for _, rec := range recs[1:] {
			m := map[string]string{}
			for i, h := range recs[0] {
				if i < len(rec) {
					m[h] = rec[i]
				}
			}
			rows = append(rows, m)
		}
		return nil
	})
	if os.IsNotExist(err) {
		err = nil
	}
	return rows, err
}

// checkRequestRows 检查逐请求 CSV：成功的行必须全部成功；故障行必须全部失败、类别在
// 可接受集合内（Status 给定时也相等）。noRowsOK 时没有 CSV 行可以接受（运行在探测时
// 就已失败），但此时 alt 必须以 w.reason 说明原因。
func checkRequestRows(ps *problems, dir string, w want, wantRows int, noRowsOK bool, alt string) {
	rows, err := requestRows(dir)
	if err != nil {
		ps.add("per-request CSV unreadable (corrupt?): %v", err)
		return
	}
	if w.any {
		return
	}
	if len(rows) == 0 {
		if noRowsOK && !w.ok && w.reason != "" && regexp.MustCompile(w.reason).MatchString(alt) {
			return
		}
		ps.add("no per-request CSV rows under %s (and no /%s/ in: %.300s)", filepath.Base(dir), w.reason, lastLine(alt))
		return
	}
	if wantRows > 0 && len(rows) != wantRows {
		ps.add("%d per-request CSV rows, want %d", len(rows), wantRows)
	}
	for i, r := range rows {
		okRow := strings.EqualFold(r["Success"], "true")
		switch {
		case w.ok && !okRow:
			ps.add("CSV row %d failed (class %q, error %q), want success", i, r["Error_Class"], r["Error"])
		case !w.ok && okRow:
			ps.add("CSV row %d counted as success (finish %q), want a failure of class %v", i, r["Finish_Reason"], w.classes)
		case !w.ok && !slices.Contains(w.classes, r["Error_Class"]):
			ps.add("CSV row %d: Error_Class %q (error %q), want one of %v", i, r["Error_Class"], r["Error"], w.classes)
		case !w.ok && w.status != 0 && r["Status"] != fmt.Sprint(w.status):
			ps.add("CSV row %d: Status %q, want %d", i, r["Status"], w.status)
		case !w.ok && w.reason != "" && !regexp.MustCompile(w.reason).MatchString(r["Error"]):
			ps.add("CSV row %d: Error %q does not name the fault (want /%s/)", i, r["Error"], w.reason)
		}
		if i > 0 && len(*ps) > 0 {
			return
		}
	}
}

// checkBench 检查 bench 的逐请求 CSV；故障行还要求 stderr 点名失败类别。
func checkBench(ps *problems, r run, out string, w want, probe bool) {
	checkRequestRows(ps, filepath.Join(out, "bench"), w, benchRequests, probe, r.stderr.String())
	if !w.ok && !w.any && !probe {
		named := false
		for _, c := range w.classes {
			named = named || strings.Contains(r.stderr.String(), c)
		}
		if !named {
			ps.add("stderr names none of the failure classes %v", w.classes)
		}
	}
}

// funcReport 是 functional 的 report.json 中用到的部分。
type funcReport struct {
	Results []struct {
		CaseID string `json:"case_id"`
		Status string `json:"status"`
		Class  string `json:"class"`
		Reason string `json:"reason"`
	} `json:"results"`
}

// checkFunctional 检查 functional 的 report.json（ci 功能阶段的 result.json 同形）：必须失败的
// 用例状态是 fail（不是 skip、unsupported、cancelled 或 pass），故障类别（class）在可接受的
// 集合内，说明匹配故障；必须通过的用例通过。ci 的功能阶段从 tests/functional/request.yaml
// 取单请求超时，所以卡住的故障同样由请求超时（而不是阶段超时的取消）判为失败。
func checkFunctional(ps *problems, path string, w want) {
	b, err := os.ReadFile(path)
	if err != nil {
		ps.add("no functional report: %v", err)
		return
	}
	var rep funcReport
	if err := json.Unmarshal(b, &rep); err != nil {
		ps.add("functional report is not JSON: %v", err)
		return
	}
	got := map[string]int{}
	for _, res := range rep.Results {
		got[res.CaseID]++
		must := w.mustFail == nil || slices.Contains(w.mustFail, res.CaseID)
		pass := w.ok || slices.Contains(w.mustPass, res.CaseID)
		switch {
		case w.any:
		case pass && res.Status != "pass":
			ps.add("functional %s: %s (%s), want pass", res.CaseID, res.Status, res.Reason)
		case !pass && must && res.Status != "fail":
			ps.add("functional %s: %s (%s), want fail", res.CaseID, res.Status, res.Reason)
		case !pass && must && len(w.fclass) > 0 && !slices.Contains(w.fclass, res.Class):
			ps.add("functional %s: class %q (%s), want one of %v", res.CaseID, res.Class, res.Reason, w.fclass)
		case !pass && must && !regexp.MustCompile(w.reason).MatchString(res.Reason):
			ps.add("functional %s: reason %q does not name the fault (want /%s/)", res.CaseID, res.Reason, w.reason)
		}
	}
	for _, id := range functionalCases {
		if got[id] != 1 {
			ps.add("functional report has %d results for %s, want 1", got[id], id)
		}
	}
}

// accRecord 是 accuracy 逐样本 JSONL 中用到的字段。
type accRecord struct {
	Index      int    `json:"index"`
	Error      string `json:"error"`
	ErrorClass string `json:"error_class"`
}

// checkAccuracy 检查 accuracy 的逐样本 JSONL：故障行的每个样本都以可接受的类别失败
// （错误文本保留服务端的原话时也匹配 reason），健康行没有失败的样本。
func checkAccuracy(ps *problems, r run, dir string, w want) {
	var recs []accRecord
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var rec accRecord
			if err := json.Unmarshal(line, &rec); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			recs = append(recs, rec)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		ps.add("accuracy JSONL unreadable: %v", err)
		return
	}
	if w.any {
		return
	}
	if len(recs) != accExamples {
		ps.add("%d accuracy records, want %d (stderr: %.200s)", len(recs), accExamples, lastLine(r.stderr.String()))
		return
	}
	for _, rec := range recs {
		switch {
		case w.ok && rec.Error != "":
			ps.add("accuracy example %d failed (%s: %s), want success", rec.Index, rec.ErrorClass, rec.Error)
		case !w.ok && rec.Error == "":
			ps.add("accuracy example %d has no error, want a failure of class %v", rec.Index, w.classes)
		case !w.ok && !slices.Contains(w.classes, rec.ErrorClass):
			ps.add("accuracy example %d: error_class %q (error %q), want one of %v", rec.Index, rec.ErrorClass, rec.Error, w.classes)
		case !w.ok && w.reason != "" && !regexp.MustCompile(w.reason).MatchString(rec.Error):
			ps.add("accuracy example %d: error %q lost the server's message (want /%s/)", rec.Index, rec.Error, w.reason)
		}
	}
}

// lastLine 返回输出的最后一个非空行。
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// ciSummary 是 summary.json 中用到的部分。
type ciSummary struct {
	ExitCode  int `json:"exit_code"`
	Scenarios []struct {
		Name   string `json:"name"`
		Errors []struct {
			Stage   string `json:"stage"`
			Message string `json:"message"`
		} `json:"errors"`
	} `json:"scenarios"`
	Gates []struct {
		Kind    string `json:"kind"`
		Name    string `json:"name"`
		Verdict string `json:"verdict"`
		Reason  string `json:"reason"`
	} `json:"gates"`
}

// checkCI 检查 ci 驱动：summary.json 的退出码与进程一致；每个受故障影响的阶段既有
// 失败的门禁，其产物（功能 result.json、性能逐请求 CSV、精度 JSONL）也按该阶段工具的
// 期望把故障记为带类别的失败。
func checkCI(ps *problems, r run, out string, f hostile.Fault) {
	exp := expectations()
	runDir := filepath.Join(out, "artifacts", "daily", "hostile-run")
	b, err := os.ReadFile(filepath.Join(runDir, "summary.json"))
	if err != nil {
		ps.add("no summary.json (%v); stderr: %.300s", err, lastLine(r.stderr.String()))
		return
	}
	var sum ciSummary
	if err := json.Unmarshal(b, &sum); err != nil {
		ps.add("summary.json: %v", err)
		return
	}
	if sum.ExitCode != r.exit {
		ps.add("summary.json exit_code %d, process exited %d", sum.ExitCode, r.exit)
	}
	failing := func(stage string) bool {
		for _, g := range sum.Gates {
			if g.Verdict == "fail" && (strings.Contains(g.Name, stage) || strings.Contains(g.Kind, stage)) {
				return true
			}
		}
		return false
	}
	stageErrs := ""
	for _, sc := range sum.Scenarios {
		for _, e := range sc.Errors {
			stageErrs += e.Stage + ": " + e.Message + "\n"
		}
	}
	scDir := filepath.Join(runDir, "hostile")
	fw := exp[toolFunctional][f]
	if !fw.ok && !fw.any && !failing("functional") {
		ps.add("no failing functional gate in summary.json")
	}
	var fps problems
	checkFunctional(&fps, filepath.Join(scDir, "functional", "result.json"), fw)
	for _, p := range fps {
		ps.add("functional stage: %s", p)
	}
	bw := exp[toolBench][f]
	if !bw.ok && !bw.any && !failing("perf") {
		ps.add("no failing perf gate in summary.json (every request failed)")
	}
	// 性能阶段没有健康的探测请求：故障可能在探测时就让阶段失败，此时阶段错误必须说明原因。
	var bps problems
	checkRequestRows(&bps, filepath.Join(scDir, "perf"), bw, benchRequests, true, stageErrs)
	for _, p := range bps {
		ps.add("perf stage: %s", p)
	}
	aw := exp[toolAccuracy][f]
	if !aw.ok && !aw.any && !failing("accuracy") {
		ps.add("no failing accuracy gate in summary.json")
	}
	var aps problems
	checkAccuracy(&aps, r, filepath.Join(scDir, "accuracy"), aw)
	for _, p := range aps {
		ps.add("accuracy stage: %s", p)
	}
}

// checkCanaries 在 stdout、stderr 与输出目录下的每个文件中查找金丝雀的每种形式。
func checkCanaries(ps *problems, r run, out string, can canaries) {
	forms := can.forms()
	names := make([]string, 0, len(forms))
	for n := range forms {
		names = append(names, n)
	}
	sort.Strings(names)
	scan := func(where string, rd io.Reader) {
		if hit := findAny(rd, forms, names); hit != "" {
			ps.add("secret leak: %s found in %s", hit, where)
		}
	}
	scan("stdout", strings.NewReader(r.stdout.String()))
	scan("stderr", strings.NewReader(r.stderr.String()))
	_ = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		fh, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer fh.Close()
		rel, _ := filepath.Rel(out, p)
		scan(rel, fh)
		return nil
	})
}

// findAny 流式地在 rd 中查找任一形式（块之间保留重叠，跨块的出现也能找到），返回第一个命中的名字。
func findAny(rd io.Reader, forms map[string][]byte, names []string) string {
	overlap := 0
	for _, f := range forms {
		overlap = max(overlap, len(f))
	}
	buf := make([]byte, 0, 1<<20+overlap)
	chunk := make([]byte, 1<<20)
	for {
		n, err := rd.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for _, name := range names {
			if bytes.Contains(buf, forms[name]) {
				return name
			}
		}
		if len(buf) > overlap {
			buf = append(buf[:0], buf[len(buf)-overlap:]...)
		}
		if err != nil {
			return ""
		}
	}
}

// TestFindAny 检查跨块边界的金丝雀也能找到（否则大文件里的泄露会漏掉）。
func TestFindAny(t *testing.T) {
	secret := []byte("hostileKeyabc")
	data := append(bytes.Repeat([]byte("x"), 1<<20-5), secret...)
	forms := map[string][]byte{"k": secret}
	if got := findAny(bytes.NewReader(data), forms, []string{"k"}); got != "k" {
		t.Errorf("secret across the 1 MiB boundary not found: %q", got)
	}
	if got := findAny(bytes.NewReader(data[:len(data)-1]), forms, []string{"k"}); got != "" {
		t.Errorf("found %q in data without the secret", got)
	}
}

// TestGPQAAnswer 检查健康回复选中带 "right" 的选项（健康行能通过门限的前提）。
func TestGPQAAnswer(t *testing.T) {
	p := "Q?\n\nA) wrong a\nB) right 1\nC) wrong b\nD) wrong c"
	if got := gpqaAnswer(p); !strings.HasSuffix(got, "Answer: B") {
		t.Errorf("%q", got)
	}
	if got := gpqaAnswer("hello"); got != "" {
		t.Errorf("%q", got)
	}
}

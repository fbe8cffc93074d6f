//go:build unix

package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
)

// helperEnv 为真时，测试二进制本身扮演被 Local 启动的“服务”（os/exec 测试的重入模式），
// 这样测试不依赖任何外部二进制，也不依赖其他人的 examples/emulator。
const helperEnv = "CIBENCH_LOCAL_HELPER"

// TestHelperProcess 不是真正的测试：仅在 helperEnv 被设置时作为子进程运行一个
// 迷你 HTTP 服务。行为由 HELPER_MODE 控制：
// serve（默认）、exit（写 stderr 后退出码 3）、ignore-term（忽略 SIGTERM）、
// child（再派生一个孙进程并把其 pid 写到 HELPER_PIDFILE）、sleep（只睡不服务）。
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process only")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	mode := os.Getenv("HELPER_MODE")
	fmt.Println("helper starting mode=" + mode + " args=" + strings.Join(args, " "))
	switch mode {
	case "exit":
		fmt.Fprintln(os.Stderr, "loading model weights")
		fmt.Fprintln(os.Stderr, "RuntimeError: NPU out of memory")
		os.Exit(3)
	case "sleep":
		time.Sleep(time.Hour)
		os.Exit(0)
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
	case "child":
		c := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "--")
		c.Env = append(os.Environ(), "HELPER_MODE=sleep")
		if err := c.Start(); err != nil {
			os.Exit(4)
		}
		_ = os.WriteFile(os.Getenv("HELPER_PIDFILE"), []byte(strconv.Itoa(c.Process.Pid)), 0o644)
	}
	port := "0"
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--port" {
			port = args[i+1]
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(5)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"data":[{"id":%q,"device":%q}]}`, os.Getenv("SERVED"), os.Getenv("DEVICE"))
	})
	fmt.Fprintln(os.Stderr, "INFO: Uvicorn running on http://127.0.0.1:"+port)
	_ = http.Serve(ln, mux)
	os.Exit(0)
}

// deployLocal 用 cfg 构造并部署 Local，任何一步失败即终止测试；测试结束时拆除
// （显式 Teardown 过也无妨，Teardown 是幂等的）。
func deployLocal(t *testing.T, cfg deploy.LocalConfig) deploy.Deployment {
	t.Helper()
	l, err := deploy.NewLocal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dep, err := l.Deploy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dep.Teardown(context.Background()) })
	return dep
}

// helperConfig 返回一个以测试二进制自身为命令的 LocalConfig。
func helperConfig(t *testing.T, mode string) deploy.LocalConfig {
	t.Helper()
	return deploy.LocalConfig{
		Command:         os.Args[0],
		Args:            []string{"-test.run=^TestHelperProcess$", "--", "--port", "{port}"},
		Env:             map[string]string{helperEnv: "1", "HELPER_MODE": mode, "SERVED": "m-{index}"},
		Model:           "m",
		StartupTimeout:  30 * time.Second,
		StopGracePeriod: 5 * time.Second,
		LogDir:          t.TempDir(),
	}
}

// freePort 向内核要一个空闲端口后立即释放。
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// get 读取 URL 的响应体。
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestLocalMultiInstance 启动两个真实子进程（每“卡”一个、端口不同），检查
// Endpoint 含两个地址、每实例环境变量生效、日志归档与幂等 Teardown。
func TestLocalMultiInstance(t *testing.T) {
	p0, p1 := freePort(t), freePort(t)
	cfg := helperConfig(t, "serve")
	cfg.Instances = []deploy.LocalInstance{
		{Port: p0, Env: map[string]string{"DEVICE": "npu0"}},
		{Port: p1, Env: map[string]string{"DEVICE": "npu1"}},
	}
	dep := deployLocal(t, cfg)
	ep := dep.Endpoint()
	want := []string{fmt.Sprintf("http://127.0.0.1:%d/v1", p0), fmt.Sprintf("http://127.0.0.1:%d/v1", p1)}
	if strings.Join(ep.BaseURLs, ",") != strings.Join(want, ",") || ep.Model != "m" {
		t.Fatalf("endpoint = %v", ep.BaseURLs)
	}
	if got := get(t, want[1]+"/models"); got != `{"data":[{"id":"m-1","device":"npu1"}]}` {
		t.Fatalf("instance 1 models = %s", got)
	}
	if got := get(t, want[0]+"/models"); got != `{"data":[{"id":"m-0","device":"npu0"}]}` {
		t.Fatalf("instance 0 models = %s", got)
	}
	arch := filepath.Join(t.TempDir(), "arch")
	if err := dep.ArchiveLogs(context.Background(), arch); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(filepath.Join(arch, "local-1.stdout.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), fmt.Sprintf("--port %d", p1)) {
		t.Fatalf("stdout log = %q", out)
	}
	errLog, _ := os.ReadFile(filepath.Join(arch, "local-0.stderr.log"))
	if !strings.Contains(string(errLog), fmt.Sprintf("Uvicorn running on http://127.0.0.1:%d", p0)) {
		t.Fatalf("stderr log = %q", errLog)
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal("second teardown:", err)
	}
	for _, p := range []int{p0, p1} {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			c.Close()
			t.Fatalf("port %d still served after teardown", p)
		}
	}
}

// TestLocalExitEarly 验证进程在健康前退出时立即失败，错误带有日志尾部。
func TestLocalExitEarly(t *testing.T) {
	cfg := helperConfig(t, "exit")
	cfg.Port = freePort(t)
	cfg.StartupTimeout = time.Minute
	l, err := deploy.NewLocal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = l.Deploy(context.Background())
	var exit *deploy.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("err = %v, want *ExitError", err)
	}
	if !errors.Is(err, deploy.ErrNotReady) {
		t.Fatalf("err = %v, want ErrNotReady", err)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit code: %v", err)
	}
	if exit.Tail != "loading model weights\nRuntimeError: NPU out of memory" {
		t.Fatalf("tail = %q", exit.Tail)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatal("did not fail fast")
	}
}

// TestLocalPortInUse 验证端口被占用时在启动前给出明确错误。
func TestLocalPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := helperConfig(t, "serve")
	cfg.Port = ln.Addr().(*net.TCPAddr).Port
	l, err := deploy.NewLocal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Deploy(context.Background()); !errors.Is(err, deploy.ErrPortInUse) {
		t.Fatalf("err = %v, want ErrPortInUse", err)
	}
	if entries, _ := os.ReadDir(cfg.LogDir); len(entries) != 0 {
		t.Fatalf("process was launched despite busy port: %v", entries)
	}
}

// TestLocalSigkillAfterGrace 验证忽略 SIGTERM 的进程在宽限期后被 SIGKILL，
// 且同一进程组里派生的孙进程也被结束。
func TestLocalSigkillAfterGrace(t *testing.T) {
	for _, mode := range []string{"ignore-term", "child"} {
		t.Run(mode, func(t *testing.T) {
			cfg := helperConfig(t, mode)
			cfg.Port = freePort(t)
			cfg.StopGracePeriod = 200 * time.Millisecond
			pidFile := filepath.Join(t.TempDir(), "pid")
			cfg.Env["HELPER_PIDFILE"] = pidFile
			cfg.LogDir = "" // 使用临时目录，Teardown 删除它
			l, err := deploy.NewLocal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			dep, err := l.Deploy(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := dep.Teardown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", cfg.Port)); err == nil {
				c.Close()
				t.Fatal("still serving after teardown")
			}
			if mode == "child" {
				b, err := os.ReadFile(pidFile)
				if err != nil {
					t.Fatal(err)
				}
				pid, _ := strconv.Atoi(string(b))
				// 孙进程已被杀死，但它的父进程（helper）也已死，孙进程由 init 回收；
				// 轮询直到它消失（kill 0 返回 ESRCH），以 ctx 限时。
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				for syscall.Kill(pid, 0) == nil && !zombie(pid) {
					select {
					case <-ctx.Done():
						t.Fatalf("grandchild %d survived teardown", pid)
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
		})
	}
}

// zombie 报告进程是否已退出但尚未被回收（状态 Z），这对“被杀死”已经足够。
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndex(s, ")")
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// TestLocalTimeoutIncludesTail 验证超时错误附带日志尾部并包装 ErrNotReady。
//
// 日志尾部里要有助手进程打印的第一行，前提是它在超时之前打印了：忙的机器上 -race 的助手进程 300 ms
// 内还没起来，尾部如实写着 "(no output)"（两个忙循环下的一次 CI 运行里这样失败过）。所以尾部为空时
// 把启动超时加倍再试（300 ms 起，最多到 9.6 s）；每次都必须是 ErrNotReady，助手打印过就必须出现在尾部。
func TestLocalTimeoutIncludesTail(t *testing.T) {
	var err error
	for timeout := 300 * time.Millisecond; timeout <= 10*time.Second; timeout *= 2 {
		cfg := helperConfig(t, "sleep")
		cfg.Port = freePort(t)
		cfg.StartupTimeout = timeout
		cfg.StopGracePeriod = 100 * time.Millisecond
		l, nerr := deploy.NewLocal(cfg)
		if nerr != nil {
			t.Fatal(nerr)
		}
		_, err = l.Deploy(context.Background())
		if !errors.Is(err, deploy.ErrNotReady) {
			t.Fatalf("startup timeout %v: err = %v, want ErrNotReady", timeout, err)
		}
		if strings.Contains(err.Error(), "helper starting mode=sleep") {
			return
		}
		if !strings.Contains(err.Error(), "(no output)") {
			t.Fatalf("startup timeout %v: the log tail has output but not the helper's first line: %v", timeout, err)
		}
		t.Logf("startup timeout %v: the helper had printed nothing yet; trying a longer one", timeout)
	}
	t.Fatalf("the log tail never showed the helper's first line: %v", err)
}

// TestNewLocalValidates 检查缺命令、端口越界、端口重复与负时长均被拒绝。
func TestNewLocalValidates(t *testing.T) {
	bad := []deploy.LocalConfig{
		{},
		{Command: "x", Instances: []deploy.LocalInstance{{Port: 70000}}},
		{Command: "x", Instances: []deploy.LocalInstance{{Port: 9000}, {Port: 9000}}},
		{Command: "x", StopGracePeriod: -1},
		{Command: "x", BaseURL: "ftp://h:1/v1"},
		{Instances: []deploy.LocalInstance{{Port: 1, Command: "x"}, {Port: 2}}},
		{Command: "x", Instances: []deploy.LocalInstance{{Port: 1, Internal: true}}},
	}
	for i, c := range bad {
		if _, err := deploy.NewLocal(c); !errors.Is(err, deploy.ErrConfig) {
			t.Errorf("case %d: err = %v", i, err)
		}
	}
}

// TestLocalBaseURL 验证只给 base_url 时端口取自地址，并用它启动与访问。
func TestLocalBaseURL(t *testing.T) {
	cfg := helperConfig(t, "serve")
	port := freePort(t)
	cfg.BaseURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	dep := deployLocal(t, cfg)
	if got, want := dep.Endpoint().BaseURL(), cfg.BaseURL+"/v1"; got != want {
		t.Fatalf("base url = %s, want %s", got, want)
	}
}

// TestLocalPDOnOneHost 模拟同机 PD 分离：prefill、decode 两个内部实例与一个 proxy，
// 全部等待健康，但 Endpoint 只含 proxy；每个实例可以是不同的命令。
func TestLocalPDOnOneHost(t *testing.T) {
	base := helperConfig(t, "serve")
	pre, dec, proxy := freePort(t), freePort(t), freePort(t)
	cfg := base
	cfg.Command, cfg.Args = "", nil
	helperArgs := []string{"-test.run=^TestHelperProcess$", "--", "--port", "{port}"}
	cfg.Instances = []deploy.LocalInstance{
		{Port: pre, Command: os.Args[0], Args: helperArgs, Internal: true, Env: map[string]string{"DEVICE": "prefill"}},
		{Port: dec, Command: os.Args[0], Args: helperArgs, Internal: true, Env: map[string]string{"DEVICE": "decode"}},
		{Port: proxy, Command: os.Args[0], Args: helperArgs, Env: map[string]string{"DEVICE": "proxy"}},
	}
	dep := deployLocal(t, cfg)
	want := fmt.Sprintf("http://127.0.0.1:%d/v1", proxy)
	if got := dep.Endpoint().BaseURLs; len(got) != 1 || got[0] != want {
		t.Fatalf("endpoint = %v, want [%s]", got, want)
	}
	if got := get(t, fmt.Sprintf("http://127.0.0.1:%d/v1/models", dec)); !strings.Contains(got, `"device":"decode"`) {
		t.Fatalf("decode instance = %s", got)
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{pre, dec, proxy} {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			c.Close()
			t.Fatalf("port %d still served after teardown", p)
		}
	}
}

// TestLocalStartFailure 验证命令不存在时返回启动错误而非等待超时。
func TestLocalStartFailure(t *testing.T) {
	l, err := deploy.NewLocal(deploy.LocalConfig{Command: "/nonexistent/vllm", Port: freePort(t), Host: "0.0.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Deploy(context.Background())
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want ErrNotExist", err)
	}
}

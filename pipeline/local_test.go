//go:build unix

package pipeline_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/runtype"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/pipeline"
)

// serveEnv 非空时，测试二进制不跑测试，而是作为一个独立进程在该地址上提供模拟器，
// 供 local 方式的场景当作“vllm serve”启动。
const serveEnv = "CIBENCH_DRIVER_TEST_SERVE"

// TestMain 在 serveEnv 设置时把测试二进制变成一个独立的模拟器服务进程
// （收到 SIGTERM 后优雅退出），否则正常运行测试。
func TestMain(m *testing.M) {
	if addr := os.Getenv(serveEnv); addr != "" {
		os.Exit(serveEmulator(addr))
	}
	os.Exit(m.Run())
}

// serveEmulator 在 addr 上运行模拟器直到收到 SIGTERM/SIGINT，返回进程退出码。
func serveEmulator(addr string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	em, err := emulator.New(emulator.Config{Addr: addr, Model: "local-model", TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	dep, err := em.Deploy(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("local emulator serving on", addr)
	<-ctx.Done()
	_ = dep.Teardown(context.Background())
	return 0
}

// freePort 返回一个当前空闲的回环端口。
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestLocalScenarioEndToEnd 让驱动以 local 方式部署一个真实子进程（独立进程组、
// 占位符 {host}:{port}、日志捕获），在其上跑完功能、性能、精度阶段，
// 然后确认进程的日志被归档、进程已被停止、端口已释放。
func TestLocalScenarioEndToEnd(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	fsys := treeAcc(realDataAcc(t))
	fsys["scenarios/loc.yaml"] = &fstest.MapFile{Data: []byte(fmt.Sprintf(`mode: local
served_model_name: local-model
base_url: http://127.0.0.1:%d/v1
local:
  command: %q
  args: ["-test.run=^$"]
  env: {%s: "{host}:{port}"}
  host: 127.0.0.1
  port: %d
  startup_timeout: 1m
  stop_grace_period: 5s
`, port, exe, serveEnv, port))}
	fsys["matrix.yaml"] = &fstest.MapFile{Data: []byte("scenarios:\n  loc:\n    pr: {functional: {suites: [chat_core]}}\n")}

	root := t.TempDir()
	o := options(t, fsys, runtype.PR, root)
	o.RunID = "local"
	out, err := pipeline.Run(context.Background(), o)
	if err != nil || out.ExitCode != gate.ExitOK {
		t.Fatalf("exit %d err %v: %s", out.ExitCode, err, o.Out)
	}
	sc := scenario(t, summary(t, out.Dir), "loc")
	if sc.Functional == nil || sc.Functional.Suites[0].Passed == 0 || sc.Functional.Suites[0].Failed != 0 {
		t.Fatalf("functional on the local process: %+v", sc.Functional)
	}
	if len(sc.Perf) == 0 {
		t.Fatal("no perf rows from the local process")
	}
	var logs []string
	_ = filepath.WalkDir(filepath.Join(out.Dir, "loc", "logs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			logs = append(logs, string(b))
		}
		return nil
	})
	if !strings.Contains(strings.Join(logs, "\n"), fmt.Sprintf("local emulator serving on 127.0.0.1:%d", port)) {
		t.Fatalf("the process's stdout was not archived; logs: %q", logs)
	}
	// 拆除后进程已退出、端口可再次监听。
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("port %d still in use after teardown: %v", port, err)
	}
	l.Close()
}

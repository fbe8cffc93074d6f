//go:build unix

package procgroup_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/internal/procgroup"
)

// TestKillReachesGrandchild 证明 Kill 结束的是整个进程组：sh 派生一个 sleep 孙进程，
// 只杀组长的实现会留下这个孙进程（测试随后用 kill -0 检查它已不存在）。
func TestKillReachesGrandchild(t *testing.T) {
	if !procgroup.Supported {
		t.Fatal("unix build must support process groups")
	}
	cmd := exec.Command("sh", "-c", "sleep 30 & echo $!; wait")
	procgroup.Setup(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, err := out.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("grandchild pid %q: %v", buf[:n], err)
	}
	if pgid, _ := syscall.Getpgid(cmd.Process.Pid); pgid != cmd.Process.Pid {
		t.Fatalf("leader pgid = %d, want its own pid %d", pgid, cmd.Process.Pid)
	}
	if err := procgroup.Terminate(cmd.Process.Pid); err != nil {
		t.Fatalf("Terminate: %v", err)
	}
	if err := procgroup.Kill(cmd.Process.Pid); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(child, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d survived the group kill", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// 组已不存在：再发信号不算错误（调用方常在组长退出后补一枪）。
	if err := procgroup.Kill(cmd.Process.Pid); err != nil {
		t.Fatalf("Kill after exit: %v", err)
	}
}

// TestInvalidPid 确认非法 pid 被拒绝，而不是向 -0（自己的进程组）发信号。
func TestInvalidPid(t *testing.T) {
	if err := procgroup.Kill(0); err == nil {
		t.Fatal("Kill(0) must fail: it would signal our own process group")
	}
	if err := procgroup.Terminate(-1); err == nil {
		t.Fatal("Terminate(-1) must fail")
	}
}

// TestSetupKeepsAttrs 确认 Setup 只打开 Setpgid，不覆盖调用方已设的其它属性。
func TestSetupKeepsAttrs(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.SysProcAttr = &syscall.SysProcAttr{Noctty: true}
	procgroup.Setup(cmd)
	if !cmd.SysProcAttr.Setpgid || !cmd.SysProcAttr.Noctty {
		t.Fatalf("SysProcAttr = %+v, want Setpgid and Noctty", cmd.SysProcAttr)
	}
}

// TestKilledBy 区分被信号杀死的子进程与以非零退出码正常退出的子进程：bench 把前者归为 killed
// （SIGKILL、OOM），后者归为 failed。
func TestKilledBy(t *testing.T) {
	killed := exec.Command("sh", "-c", "kill -KILL $$")
	sig, ok := procgroup.KilledBy(killed.Run())
	if !ok || sig != syscall.SIGKILL.String() {
		t.Errorf("child killed by SIGKILL: KilledBy = %q, %v; want %q, true", sig, ok, syscall.SIGKILL.String())
	}
	exited := exec.Command("sh", "-c", "exit 3")
	if sig, ok := procgroup.KilledBy(exited.Run()); ok {
		t.Errorf("child exiting with status 3: KilledBy = %q, true; want false", sig)
	}
	missing := exec.Command(filepath.Join(t.TempDir(), "no-such-program"))
	if sig, ok := procgroup.KilledBy(missing.Run()); ok {
		t.Errorf("child that never started: KilledBy = %q, true; want false", sig)
	}
	if _, ok := procgroup.KilledBy(nil); ok {
		t.Error("KilledBy(nil) = true; want false")
	}
}

// TestShutdownSignals 锁定命令据以体面退出的两个信号：Ctrl-C 与 SIGTERM（Kubernetes 删除 Pod 时发出）。
func TestShutdownSignals(t *testing.T) {
	want := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !slices.Equal(procgroup.ShutdownSignals, want) {
		t.Errorf("ShutdownSignals = %v, want %v", procgroup.ShutdownSignals, want)
	}
}

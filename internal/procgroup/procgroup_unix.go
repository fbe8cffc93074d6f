//go:build unix

package procgroup

import (
	"errors"
	"os/exec"
	"syscall"
)

// Supported 表示本平台支持进程组：Terminate/Kill 能结束组内全部进程。
const Supported = true

// Setup 让 cmd 启动后成为新进程组的组长（Setpgid），须在 cmd.Start 之前调用。
// 已有的 SysProcAttr 字段保持不变。
func Setup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// Terminate 向 pid 所在进程组发送 SIGTERM，请求整组体面退出。
// 组已不存在（ESRCH）不算错误：调用方多半是在组长退出之后补发信号。
func Terminate(pid int) error { return signal(pid, syscall.SIGTERM) }

// Kill 向 pid 所在进程组发送 SIGKILL；组已不存在不算错误。
func Kill(pid int) error { return signal(pid, syscall.SIGKILL) }

// signal 向以 pid 为组长的进程组（-pid）发送 sig，吞掉 ESRCH。
func signal(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return errors.New("procgroup: invalid pid")
	}
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// KilledBy 报告 err（exec.Cmd 的 Run/Wait 返回的错误）是否表示子进程被信号杀死（SIGKILL、OOM killer……），
// 是时返回信号的名字（如 "killed"）。正常退出（包括非零退出码）、没有启动成功或 err 为 nil 时返回 false。
func KilledBy(err error) (string, bool) {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return "", false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return "", false
	}
	return ws.Signal().String(), true
}

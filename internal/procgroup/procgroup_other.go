//go:build !unix

package procgroup

import (
	"errors"
	"os"
	"os/exec"
)

// Supported 表示本平台支持进程组；这里（如 Windows）没有，只能结束组长本身。
const Supported = false

// Setup 在没有进程组的平台上什么也不做。
func Setup(cmd *exec.Cmd) {}

// Terminate 在没有进程组的平台上无法“请求”退出（Windows 不支持向进程发 SIGTERM），
// 因此直接结束组长本身；已退出不算错误。
func Terminate(pid int) error { return Kill(pid) }

// Kill 结束 pid 本身（无法触及它派生的子进程）；已退出不算错误。
func Kill(pid int) error {
	if pid <= 0 {
		return errors.New("procgroup: invalid pid")
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// KilledBy 在没有 Unix 信号的平台上总是返回 false：进程被结束时只有退出码可看。
func KilledBy(err error) (string, bool) { return "", false }

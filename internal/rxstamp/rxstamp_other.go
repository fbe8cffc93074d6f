//go:build !linux

package rxstamp

import (
	"net"
	"syscall"
)

// enable 在非 Linux 平台上不做任何事：没有可移植的 TCP 接收时间戳。
func enable(syscall.RawConn) bool { return false }

// Wrap 在非 Linux 平台上原样返回 c（调用方退回 time.Now()）。
func Wrap(c net.Conn) net.Conn { return c }

//go:build unix

package loadgen

import (
	"syscall"
	"time"
)

// aliveCheckAfter 是复用前做存活检查的最短空闲时长：刚放回池中的连接（压测中的常态）
// 不检查，省一次系统调用；空闲更久的连接（分组之间、/metrics 抓取期间）可能已被服务端按
// keep-alive 超时关闭。检查不到的情形由 h1RoundTrip 的一次重发兜底。
const aliveCheckAfter = 100 * time.Millisecond

// alive 在复用空闲连接前做一次非阻塞的 MSG_PEEK：对端已关闭（读到 EOF 或错误）或发来了
// 不请自来的数据时返回 false（net/http 的后台读循环会在这两种情况下丢弃连接）。
func (c *h1Conn) alive() bool {
	if time.Since(c.idleSince) < aliveCheckAfter {
		return true
	}
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := true
	var one [1]byte
	cerr := raw.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return cerr == nil && alive
}

//go:build unix

package h1

import "syscall"

// alive 在复用空闲连接前做一次非阻塞的 MSG_PEEK：对端已关闭（读到 EOF 或错误）或发来了
// 不请自来的数据时返回 false。net/http 的后台读循环在连接空闲时发现这两种情况就丢弃连接；
// 这里每次复用都查（一次不阻塞、不拷贝的系统调用），不请自来的字节因此不会被当成下一个请求的
// 响应。查过之后才关闭的竞态由 Session.RoundTrip 的一次重发兜底。
func (c *Conn) alive() bool {
	if c.raw == nil {
		sc, ok := c.nc.(syscall.Conn)
		if !ok {
			return true
		}
		raw, err := sc.SyscallConn()
		if err != nil {
			return false
		}
		c.raw, c.peekFn = raw, c.peek // 每条连接只建一次，热路径上不分配
	}
	c.peekOK = false
	return c.raw.Read(c.peekFn) == nil && c.peekOK
}

// peek 是 alive 在 RawConn.Read 里执行的非阻塞 MSG_PEEK；总是返回 true（不等待可读）。
func (c *Conn) peek(fd uintptr) bool {
	_, _, err := syscall.Recvfrom(int(fd), c.peekBuf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	c.peekOK = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
	return true
}

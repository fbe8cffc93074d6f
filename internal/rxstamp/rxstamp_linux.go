package rxstamp

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// oobSize 是控制消息缓冲的大小：一个 SCM_TIMESTAMPNS（cmsghdr + timespec）绰绰有余。
const oobSize = 64

// enable 在原始套接字上开启 SO_TIMESTAMPNS；返回是否成功。
func enable(c syscall.RawConn) bool {
	ok := false
	_ = c.Control(func(fd uintptr) {
		ok = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1) == nil
	})
	return ok
}

// Wrap 让 c 带接收时间戳：c 是 *net.TCPConn 且能开启 SO_TIMESTAMPNS 时返回包装后的
// 连接，否则原样返回 c。
func Wrap(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil || !enable(raw) {
		return c
	}
	x := &conn{tc: tc, raw: raw}
	x.readFn = x.recv // 方法值只分配一次，热路径上的 Read 不再分配
	return x
}

// conn 是带接收时间戳的 TCP 连接。读取用 recvmsg（经由 RawConn.Read，与 netpoll
// 集成，读超时照常生效），写与其余方法直接转给底层连接。
type conn struct {
	stampState
	tc  *net.TCPConn
	raw syscall.RawConn

	mu     sync.Mutex // 串行化 Read：下面的字段是 Read 与 recv 之间传递参数用的
	p      []byte
	n      int
	rerr   error
	oob    [oobSize]byte
	readFn func(fd uintptr) bool
}

// Read 读取数据，同时记录这批数据的内核接收时刻。
func (c *conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.p, c.n, c.rerr = p, 0, nil
	err := c.raw.Read(c.readFn)
	c.p = nil
	if err != nil { // 超时、连接已关闭等：RawConn 已包装成 *net.OpError
		return 0, err
	}
	if c.rerr != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.tc.LocalAddr(), Addr: c.tc.RemoteAddr(),
			Err: os.NewSyscallError("recvmsg", c.rerr)}
	}
	if c.n == 0 {
		return 0, io.EOF
	}
	return c.n, nil
}

// recv 在 RawConn.Read 的回调里执行一次非阻塞 recvmsg；返回 false 表示暂无数据、
// 需要等待可读。
func (c *conn) recv(fd uintptr) bool {
	for {
		n, oobn, _, _, err := syscall.Recvmsg(int(fd), c.p, c.oob[:], 0)
		switch err {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		case nil:
			c.n = n
			if n > 0 {
				var ns int64
				if oobn > 0 {
					ns = parseStamp(c.oob[:oobn])
				}
				c.record(ns)
			}
			if raceEnabled {
				// 竞态检测器把“一次 syscall.Write 之后的 syscall.Read”视为同步（syscall 包里的
				// ioSync 注解），普通 net.Conn 的读写因此在 -race 下建立 happens-before；
				// syscall.Recvmsg 没有这个注解。补一次零长度 read（对套接字是无副作用的空操作）
				// 得到同样的注解，让使用方的 -race 测试与用普通连接时表现一致。
				_, _ = syscall.Read(int(fd), nil)
			}
		default:
			c.rerr = err
		}
		return true
	}
}

// parseStamp 在控制消息里找 SCM_TIMESTAMPNS，返回 Unix 纳秒；没有时返回 0。
// 手工遍历 cmsghdr 而不用 syscall.ParseSocketControlMessage，避免每次读取分配。
func parseStamp(b []byte) int64 {
	for len(b) >= syscall.SizeofCmsghdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&b[0]))
		l := int(h.Len)
		if l < syscall.SizeofCmsghdr || l > len(b) {
			return 0
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS &&
			l >= syscall.SizeofCmsghdr+int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&b[syscall.SizeofCmsghdr]))
			return ts.Nano()
		}
		next := cmsgAlign(l)
		if next >= len(b) {
			return 0
		}
		b = b[next:]
	}
	return 0
}

// cmsgAlign 按平台字长对齐控制消息长度（CMSG_ALIGN）。
func cmsgAlign(n int) int {
	const a = int(unsafe.Sizeof(uintptr(0)))
	return (n + a - 1) &^ (a - 1)
}

// SyscallConn 返回底层套接字的 RawConn（实现 syscall.Conn），让使用方做非阻塞的存活检查等
// 不经过 Read 的操作；经它读走的数据不带时间戳。
func (c *conn) SyscallConn() (syscall.RawConn, error) { return c.raw, nil }

// Write 写数据（不涉及时间戳）。
func (c *conn) Write(p []byte) (int, error) { return c.tc.Write(p) }

// Close 关闭连接。
func (c *conn) Close() error { return c.tc.Close() }

// CloseWrite 关闭写方向（net/http 服务端优雅关闭时使用）。
func (c *conn) CloseWrite() error { return c.tc.CloseWrite() }

// CloseRead 关闭读方向。
func (c *conn) CloseRead() error { return c.tc.CloseRead() }

// LocalAddr 返回本端地址。
func (c *conn) LocalAddr() net.Addr { return c.tc.LocalAddr() }

// RemoteAddr 返回对端地址。
func (c *conn) RemoteAddr() net.Addr { return c.tc.RemoteAddr() }

// SetDeadline 设置读写截止时刻。
func (c *conn) SetDeadline(t time.Time) error { return c.tc.SetDeadline(t) }

// SetReadDeadline 设置读截止时刻；对 recvmsg 同样生效（RawConn.Read 遵守它）。
func (c *conn) SetReadDeadline(t time.Time) error { return c.tc.SetReadDeadline(t) }

// SetWriteDeadline 设置写截止时刻。
func (c *conn) SetWriteDeadline(t time.Time) error { return c.tc.SetWriteDeadline(t) }

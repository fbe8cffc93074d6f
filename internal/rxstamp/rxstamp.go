package rxstamp

import (
	"context"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// Stamper 是能报告最近一次读取的数据何时到达的连接。
type Stamper interface {
	// LastRx 返回最近一次读取的数据到达套接字的时刻 t，以及它是否是内核接收时间戳（kernel）。
	// 内核没给时间戳的读取（见包文档）t 是那次读取返回的时刻：到达时刻的上界，kernel 为 false。
	// 还没读到过数据时 t 为零值。
	LastRx() (t time.Time, kernel bool)
}

// stampState 是两种实现共享的时间戳存储：Unix 纳秒，正数是内核时间戳，负数是取反后的读取时刻
// （内核没给时间戳时），0 表示还没读到过数据。时刻与来源放在同一个原子量里，并发的 LastRx
// 不会读到一次读取的时刻配另一次读取的来源。
type stampState struct{ last atomic.Int64 }

// LastRx 实现 Stamper。
func (s *stampState) LastRx() (time.Time, bool) {
	ns := s.last.Load()
	switch {
	case ns == 0:
		return time.Time{}, false
	case ns < 0:
		return time.Unix(0, -ns), false
	}
	return time.Unix(0, ns), true
}

// record 记下一次读取的时刻：kernelNs 是内核时间戳（Unix 纳秒），为 0 时（内核没给）改记
// 此刻的墙上时钟，并标为非内核来源。不记录的话 LastRx 会停在上一次读取的旧时间戳（新数据
// 显得早到了），或者停在零值（调用方只能退回自己更晚的 time.Now()）。
func (s *stampState) record(kernelNs int64) {
	if kernelNs != 0 {
		s.last.Store(kernelNs)
		return
	}
	s.last.Store(-time.Now().UnixNano())
}

// Of 返回 c（或它包着的底层连接，例如 *tls.Conn 的 NetConn）上的 Stamper；
// c 不支持接收时间戳时返回 nil。
func Of(c net.Conn) Stamper {
	for range 4 { // 防御性地限制解包层数
		if s, ok := c.(Stamper); ok {
			return s
		}
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		c = u.NetConn()
	}
	return nil
}

// Lag 返回 now 与接收时刻 t（某个 Stamper.LastRx 返回的时刻）之差，即读取方的滞后，以及
// 它是否可信：t 为零值（未知）、晚于 now 或早于 now 超过 maxAge（陈旧，或时钟被大幅
// 调整）时不可信。
//
// 内核时间戳是墙上时钟（CLOCK_REALTIME），没有单调读数；这里只在“接收 → 读取”这一小段
// 上比较墙上时钟，调用方再用 now 的单调读数减去滞后（见 Arrival），整段时延因此仍在
// 单调时钟上计量，不受墙上时钟跳变影响。
func Lag(t, now time.Time, maxAge time.Duration) (time.Duration, bool) {
	if t.IsZero() {
		return 0, false
	}
	lag := now.Round(0).Sub(t) // Round(0) 去掉单调读数：两边都按墙上时钟比较
	if lag < 0 || lag > maxAge {
		return 0, false
	}
	return lag, true
}

// Arrival 返回 s 报告的到达时刻，表示为 now 减去读取滞后（保留 now 的单调读数，
// 可与其他 time.Now() 得到的时刻直接相减）；s 为 nil 或滞后不可信时（见 Lag）返回 now。
func Arrival(s Stamper, now time.Time, maxAge time.Duration) time.Time {
	if s == nil {
		return now
	}
	t, _ := s.LastRx() // 非内核来源的是读取时刻，仍比调用方此刻的 now 更接近到达时刻
	if lag, ok := Lag(t, now, maxAge); ok {
		return now.Add(-lag)
	}
	return now
}

// Listener 包装 ln：Accept 得到的 TCP 连接都带接收时间戳（平台支持时）。
func Listener(ln net.Listener) net.Listener { return &listener{Listener: ln} }

// listener 是 Listener 的实现。
type listener struct{ net.Listener }

// Listen 在 network/address 上监听（同 net.ListenConfig.Listen），并在监听套接字上
// 开启接收时间戳：新连接从内核继承这一设置，连接上的第一批数据也带时间戳。
func Listen(ctx context.Context, lc *net.ListenConfig, network, address string) (net.Listener, error) {
	var cfg net.ListenConfig
	if lc != nil {
		cfg = *lc
	}
	cfg.Control = withEnable(cfg.Control)
	ln, err := cfg.Listen(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return Listener(ln), nil
}

// withEnable 返回一个套接字 Control 钩子：先调用 prev（可为 nil，错误原样返回），
// 再开启接收时间戳。开启失败不算错误——只是拿不到时间戳。
func withEnable(prev func(network, address string, c syscall.RawConn) error) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		if prev != nil {
			if err := prev(network, address, c); err != nil {
				return err
			}
		}
		enable(c)
		return nil
	}
}

// Accept 接受连接并尝试开启接收时间戳；开启失败时原样返回连接。
func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	return Wrap(c), nil
}

// DialContext 返回一个拨号函数（可直接用作 http.Transport.DialContext）：用 d 拨号，
// 在 connect 之前开启接收时间戳，得到的 TCP 连接实现 Stamper（平台支持时）。
// d 为 nil 时用零值 Dialer；d 自己的 ControlContext 或 Control 仍会先被调用。
func DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var dd net.Dialer
	if d != nil {
		dd = *d
	}
	if cc := dd.ControlContext; cc != nil { // Dialer 优先用 ControlContext
		dd.ControlContext = func(ctx context.Context, network, address string, c syscall.RawConn) error {
			if err := cc(ctx, network, address, c); err != nil {
				return err
			}
			enable(c)
			return nil
		}
	} else {
		dd.Control = withEnable(dd.Control)
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dd.DialContext(ctx, network, addr)
		if err != nil {
			return c, err
		}
		return Wrap(c), nil
	}
}

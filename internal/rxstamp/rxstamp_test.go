package rxstamp

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// pair 在回环上建立一对连接：server 端经 Listen 接受，client 端经 DialContext 拨号。
func pair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	ln, err := Listen(context.Background(), nil, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	acc := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(acc)
			return
		}
		acc <- c
	}()
	client, err = DialContext(&net.Dialer{Timeout: 5 * time.Second})(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, ok := <-acc
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// warmUp 在 w → r 上来回发单字节，直到 st 报告出时间戳（最多 5 秒）。
//
// Linux 在整机第一次有套接字开启接收时间戳时，把“收包打时间戳”的开关交给工作队列异步
// 打开（net_enable_timestamp 的 netstamp_work）；开关打开之前到达的数据不带时间戳，
// recvmsg 也就不返回 SCM_TIMESTAMPNS。繁忙的机器上这段延迟更长。生产代码在拿不到时间戳
// 时退回读取时刻（见 Arrival）；测试要检查的是“拿到的时间戳是到达时刻”，所以先等开关打开。
func warmUp(t *testing.T, w, r net.Conn, st Stamper) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	buf := make([]byte, 1)
	for {
		if _, err := w.Write([]byte{'w'}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(r, buf); err != nil {
			t.Fatal(err)
		}
		if _, kernel := st.LastRx(); kernel {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no receive timestamp after 5s of traffic: the kernel never enabled receive timestamping")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStampBracketsArrival 检查时间戳落在“写出之前”与“读到之后”之间，并且反映的是
// 到达时刻而不是读取时刻：数据写出后故意晚 30ms 才读，时间戳仍应接近写出时刻。
func TestStampBracketsArrival(t *testing.T) {
	c, s := pair(t)
	for _, dir := range []struct {
		name string
		w, r net.Conn
	}{{"client->server", c, s}, {"server->client", s, c}} {
		t.Run(dir.name, func(t *testing.T) {
			st := Of(dir.r)
			if runtime.GOOS != "linux" {
				if st != nil {
					t.Fatalf("non-linux Of = %v, want nil", st)
				}
				t.Skip("kernel receive timestamps are Linux-only")
			}
			if st == nil {
				t.Fatal("Of(wrapped conn) = nil")
			}
			warmUp(t, dir.w, dir.r, st)
			before := time.Now()
			if _, err := dir.w.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(30 * time.Millisecond)
			buf := make([]byte, 16)
			n, err := dir.r.Read(buf)
			after := time.Now()
			if err != nil || string(buf[:n]) != "hello" {
				t.Fatalf("read %q, %v", buf[:n], err)
			}
			ts, kernel := st.LastRx()
			if !kernel {
				t.Fatalf("stamp %v not from the kernel after warm-up", ts)
			}
			if ts.Before(before.Add(-time.Millisecond)) || ts.After(after) {
				t.Fatalf("stamp %v outside [%v, %v]", ts, before, after)
			}
			if lag := after.Sub(ts); lag < 25*time.Millisecond {
				t.Fatalf("stamp %v only %v before the read: it is the read time, not the arrival time", ts, lag)
			}
			if got := Arrival(st, after, time.Minute); !got.Equal(ts) {
				t.Fatalf("Arrival = %v, want %v", got, ts)
			}
			// Arrival 保留 after 的单调读数：与其他 time.Now() 相减走单调时钟。
			if got := Arrival(st, after, time.Minute); got.Sub(before) != after.Sub(before)-after.Round(0).Sub(ts) {
				t.Fatalf("Arrival lost the monotonic reading: %v", got)
			}
			if lag, ok := Lag(ts, after, time.Minute); !ok || lag != after.Round(0).Sub(ts) {
				t.Fatalf("Lag = %v, %v", lag, ok)
			}
		})
	}
}

// TestReadSemantics 检查包装后的连接保持 net.Conn 语义：EOF、读超时、关闭后读、
// CloseWrite、零长度读。
func TestReadSemantics(t *testing.T) {
	c, s := pair(t)
	if n, err := s.Read(nil); n != 0 || err != nil {
		t.Fatalf("zero-length read = %d, %v", n, err)
	}
	// 读超时：net/http 依赖 Timeout() 为真的 net.Error。
	if err := s.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err := s.Read(make([]byte, 8))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past deadline: %v, want a timeout net.Error", err)
	}
	_ = s.SetReadDeadline(time.Time{})
	// 对端半关闭 → EOF。
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok {
		t.Fatalf("%T has no CloseWrite", c)
	}
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(s)
	if err != nil || string(got) != "x" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
	// 关闭后读 → net.ErrClosed。
	s.Close()
	if _, err := s.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read after close: %v, want net.ErrClosed", err)
	}
	if s.LocalAddr() == nil || s.RemoteAddr() == nil {
		t.Fatal("nil address")
	}
	if err := c.SetDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := c.SetWriteDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	// CloseRead 之后本端读到 EOF。
	c2, _ := pair(t)
	cr, ok := c2.(interface{ CloseRead() error })
	if !ok {
		t.Fatalf("%T has no CloseRead", c2)
	}
	if err := cr.CloseRead(); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read after CloseRead: %v, want io.EOF", err)
	}
}

// TestArrivalFallback 检查不可信的时间戳被拒绝：nil、零值、晚于 now、过旧。
func TestArrivalFallback(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name string
		st   Stamper
	}{
		{"nil", nil},
		{"zero", fixed{}},
		{"future", fixed{now.Add(time.Second)}},
		{"stale", fixed{now.Add(-time.Hour)}},
	}
	for _, tc := range cases {
		if got := Arrival(tc.st, now, time.Minute); !got.Equal(now) {
			t.Errorf("%s: Arrival = %v, want now", tc.name, got)
		}
	}
	var z stampState
	if ts, kernel := z.LastRx(); !ts.IsZero() || kernel {
		t.Fatalf("empty stampState = %v, %v; want zero, false", ts, kernel)
	}
}

// fixed 是返回固定时刻的 Stamper。
type fixed struct{ t time.Time }

// LastRx 实现 Stamper。
func (f fixed) LastRx() (time.Time, bool) { return f.t, true }

// TestOfUnwrapsAndRejects 检查 Of 能穿过 NetConn() 包装层，并对普通连接返回 nil。
func TestOfUnwrapsAndRejects(t *testing.T) {
	c, _ := pair(t)
	if runtime.GOOS == "linux" && Of(wrapper{c}) == nil {
		t.Fatal("Of did not unwrap NetConn()")
	}
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	if Of(p1) != nil {
		t.Fatal("Of(net.Pipe) != nil")
	}
	if Wrap(p1) != p1 {
		t.Fatal("Wrap(non-TCP) should return the conn unchanged")
	}
}

// wrapper 模拟 *tls.Conn：通过 NetConn 暴露底层连接。
type wrapper struct{ net.Conn }

// NetConn 返回底层连接。
func (w wrapper) NetConn() net.Conn { return w.Conn }

// TestHookErrorsPropagate 检查调用方自己的 Control 钩子先被调用，其错误原样返回。
func TestHookErrorsPropagate(t *testing.T) {
	boom := errors.New("boom")
	hook := func(string, string, syscallRawConn) error { return boom }
	if _, err := Listen(context.Background(), &net.ListenConfig{Control: hook}, "tcp", "127.0.0.1:0"); !errors.Is(err, boom) {
		t.Fatalf("Listen with failing Control: %v", err)
	}
	if _, err := DialContext(&net.Dialer{Control: hook})(context.Background(), "tcp", "127.0.0.1:1"); !errors.Is(err, boom) {
		t.Fatalf("Dial with failing Control: %v", err)
	}
	ctxHook := func(context.Context, string, string, syscallRawConn) error { return boom }
	if _, err := DialContext(&net.Dialer{ControlContext: ctxHook})(context.Background(), "tcp", "127.0.0.1:1"); !errors.Is(err, boom) {
		t.Fatalf("Dial with failing ControlContext: %v", err)
	}
	if _, err := DialContext(nil)(context.Background(), "tcp", "127.0.0.1:1"); err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
	if _, err := Listen(context.Background(), nil, "tcp", "256.0.0.1:0"); err == nil {
		t.Fatal("listen on a bad address succeeded")
	}
}

// syscallRawConn 是 syscall.RawConn 的别名，让上面的钩子签名保持简短。
type syscallRawConn = syscall.RawConn

// TestDialerControlContextKept 检查调用方的 ControlContext 被调用，连接仍带时间戳。
func TestDialerControlContextKept(t *testing.T) {
	ln, err := Listen(context.Background(), nil, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			_, _ = c.Write([]byte("hi"))
			c.Close()
		}
	}()
	called := false
	d := &net.Dialer{ControlContext: func(context.Context, string, string, syscallRawConn) error { called = true; return nil }}
	c, err := DialContext(d)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.ReadAll(c); err != nil {
		t.Fatal(err)
	}
	if !called {
		t.Fatal("caller's ControlContext was not called")
	}
	if runtime.GOOS == "linux" && (Of(c) == nil || lastRxZero(Of(c))) {
		t.Fatal("dialled conn carries no receive timestamp")
	}
}

// TestRaceDetectorSeesIOSync 检查在 -race 下，经包装连接的“写 → 读”与普通连接一样建立
// happens-before：写方在写之前改的变量，读方读到数据后再读它，不算竞态（否则使用方在
// -race 下会看到普通 net.Conn 不会出现的报告）。不开 -race 时这个测试恒过。
func TestRaceDetectorSeesIOSync(t *testing.T) {
	c, s := pair(t)
	for i := range 20 {
		shared := 0
		go func() {
			shared = i + 1
			_, _ = c.Write([]byte{byte(i)})
		}()
		buf := make([]byte, 1)
		if _, err := io.ReadFull(s, buf); err != nil {
			t.Fatal(err)
		}
		if shared != i+1 {
			t.Fatalf("round %d: shared=%d", i, shared)
		}
	}
}

// lastRxZero 报告 st 是否还没记录过任何读取。
func lastRxZero(st Stamper) bool {
	t, _ := st.LastRx()
	return t.IsZero()
}

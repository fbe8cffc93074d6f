package rxstamp

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// 本文件的测试用到只有 Linux 上才有的包装类型 conn 与 SO_TIMESTAMPNS，其余平台不编译它们。

// TestReadAfterReset 检查对端重置连接时 Read 返回带 ECONNRESET 的 *net.OpError。
func TestReadAfterReset(t *testing.T) {
	c, s := pair(t)
	tc := c.(*conn).tc
	_ = tc.SetLinger(0) // 关闭时发 RST
	if _, err := c.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	time.Sleep(20 * time.Millisecond)
	buf := make([]byte, 8)
	var err error
	for range 3 {
		if _, err = s.Read(buf); err != nil {
			break
		}
	}
	var oe *net.OpError
	if !errors.As(err, &oe) {
		t.Fatalf("read after RST: %v (%T), want *net.OpError", err, err)
	}
}

// setStamping 在 c 的套接字上打开或关闭 SO_TIMESTAMPNS，用来确定地制造“内核没给时间戳”的读取
// （生产中出现在整机第一次开启接收时间戳、内核异步打开收包打时间戳开关之前，见 warmUp）。
func setStamping(t *testing.T, c net.Conn, on bool) {
	t.Helper()
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	v := 0
	if on {
		v = 1
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, v)
	}); err != nil || serr != nil {
		t.Fatalf("setsockopt SO_TIMESTAMPNS=%d: %v %v", v, err, serr)
	}
}

// TestReadWithoutKernelStamp 检查内核没给时间戳的读取：LastRx 取这次读取返回的时刻（到达时刻的
// 上界），既不是零值（调用方只能退回自己更晚的 time.Now()：流水线上跟在后面、早已读进缓冲的
// 请求因此被当成“现在才到”，模拟器给它再算一个完整的 TTFT），也不是上一次读取的旧时间戳
// （陈旧的到达时刻会让新数据显得早到了）。
func TestReadWithoutKernelStamp(t *testing.T) {
	buf := make([]byte, 8)
	readAt := func(t *testing.T, w, r net.Conn) (before, after time.Time) {
		t.Helper()
		if _, err := w.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Millisecond) // 数据早已到达；旧时间戳或写出时刻都早于 before
		before = time.Now()
		if _, err := r.Read(buf); err != nil {
			t.Fatal(err)
		}
		return before, time.Now()
	}
	t.Run("first read", func(t *testing.T) {
		c, s := pair(t)
		setStamping(t, s, false)
		before, after := readAt(t, c, s)
		got, kernel := Of(s).LastRx()
		if kernel || got.Before(before.Round(0)) || got.After(after.Round(0)) {
			t.Fatalf("LastRx = %v, kernel=%v; want the read time in [%v, %v], not from the kernel", got, kernel, before, after)
		}
		// 调用方（模拟器的到达时刻）用它，而不是自己此刻的时钟。
		if now := time.Now(); !Arrival(Of(s), now, time.Minute).Before(now) {
			t.Fatal("Arrival fell back to now despite a read time")
		}
	})
	t.Run("after a stamped read", func(t *testing.T) {
		c, s := pair(t)
		warmUp(t, c, s, Of(s))
		stamped, _ := Of(s).LastRx()
		setStamping(t, s, false)
		before, after := readAt(t, c, s)
		got, kernel := Of(s).LastRx()
		if kernel || got.Equal(stamped) || got.Before(before.Round(0)) || got.After(after.Round(0)) {
			t.Fatalf("LastRx = %v, kernel=%v (previous stamp %v); want the read time in [%v, %v], not from the kernel",
				got, kernel, stamped, before, after)
		}
		// 再打开：下一次读取又是内核时间戳。
		setStamping(t, s, true)
		if _, err := c.Write([]byte("y")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Read(buf); err != nil {
			t.Fatal(err)
		}
		if _, kernel := Of(s).LastRx(); !kernel {
			t.Fatal("stamping switched back on, but the read is not kernel-stamped")
		}
	})
}

// BenchmarkRead 比较带时间戳的读取与普通 TCP 读取的开销（每次 64 字节往返）。
func BenchmarkRead(b *testing.B) {
	for _, mode := range []string{"stamped", "plain"} {
		b.Run(mode, func(b *testing.B) {
			c, s := pair(b)
			if mode == "plain" {
				c, s = c.(*conn).tc, s.(*conn).tc
			}
			msg := make([]byte, 64)
			buf := make([]byte, 4096)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(s, buf[:64]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

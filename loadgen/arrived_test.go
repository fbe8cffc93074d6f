package loadgen

import (
	"testing"
	"time"
)

// stamp 是返回固定时刻的 rxstamp.Stamper；readTime 为 true 时表示内核没给时间戳、t 是读取时刻。
type stamp struct {
	t        time.Time
	readTime bool
}

// LastRx 实现 rxstamp.Stamper。
func (s stamp) LastRx() (time.Time, bool) { return s.t, !s.readTime }

// TestArrivedUsesKernelStamp 检查 arrived：可信的内核时间戳决定到达时刻，读取滞后
// 单独返回；时间戳缺失、早于本请求发出、晚于此刻时退回 now，滞后为 -1。
func TestArrivedUsesKernelStamp(t *testing.T) {
	intended := time.Now().Add(-100 * time.Millisecond)
	x := newExchange()
	x.rec.Sent = intended.Add(time.Millisecond)

	// 数据在 30ms 前到达、现在才读：到达时刻取 30ms 前，滞后约 30ms。
	// 内核时间戳没有单调读数（Round(0) 模拟）；结果按 now − 滞后在单调时钟上计算，
	// 与墙上时钟的差只有两次读时钟之间的纳秒级抖动。
	arrival := time.Now().Add(-30 * time.Millisecond)
	x.conn = stamp{t: arrival.Round(0)}
	at, lag := x.arrived(intended, true)
	if want := arrival.Sub(intended); (at - want).Abs() > time.Microsecond {
		t.Fatalf("at = %v, want %v", at, want)
	}
	if lag < 30*time.Millisecond || lag > time.Second {
		t.Fatalf("lag = %v, want about 30ms", lag)
	}
	// 同一个时间戳（一次读取交出的下一个事件）得到完全相同的到达时刻，滞后随读取变大。
	if at2, lag2 := x.arrived(intended, true); at2 != at || lag2 < lag {
		t.Fatalf("same stamp: at %v → %v, lag %v → %v", at, at2, lag, lag2)
	}
	// 不要滞后时，同一个时间戳直接复用上一次的到达时刻（不读时钟），滞后为 -1。
	if at2, lag2 := x.arrived(intended, false); at2 != at || lag2 != -1 {
		t.Fatalf("same stamp, no lag wanted: at %v → %v, lag %v", at, at2, lag2)
	}
	// 更晚的时间戳不会让到达时刻倒退。
	x.conn = stamp{t: arrival.Round(0).Add(time.Nanosecond)}
	if at3, _ := x.arrived(intended, true); at3 < at {
		t.Fatalf("later stamp went back in time: %v < %v", at3, at)
	}
	// 不要滞后、但时间戳变了（新的一次读取）：照常读时钟算到达时刻。
	later := time.Now().Add(-10 * time.Millisecond)
	x.conn = stamp{t: later.Round(0)}
	if at4, lag4 := x.arrived(intended, false); (at4-later.Sub(intended)).Abs() > time.Microsecond || lag4 < 10*time.Millisecond {
		t.Fatalf("new stamp, no lag wanted: at %v want %v, lag %v", at4, later.Sub(intended), lag4)
	}
	x.lastStamp, x.lastAt = time.Time{}, 0

	for name, c := range map[string]stamp{
		"zero":          {},
		"before send":   {t: x.rec.Sent.Add(-time.Microsecond)},
		"in the future": {t: time.Now().Add(time.Hour)},
	} {
		x.conn = c
		before := time.Since(intended)
		at, lag := x.arrived(intended, true)
		if lag != -1 || at < before || at > time.Since(intended) {
			t.Fatalf("%s: at=%v lag=%v, want now and -1", name, at, lag)
		}
	}
	x.conn = nil
	if _, lag := x.arrived(intended, true); lag != -1 {
		t.Fatalf("no stamper: lag %v", lag)
	}

	// 内核没给时间戳、连接报告的是读取时刻：到达时刻用它（而不是更晚的 now），但不报告滞后。
	x.lastStamp, x.lastAt = time.Time{}, 0
	read := time.Now().Add(-20 * time.Millisecond)
	x.conn = stamp{read.Round(0), true}
	if at, lag := x.arrived(intended, true); (at-read.Sub(intended)).Abs() > time.Microsecond || lag != -1 {
		t.Fatalf("read-time stamp: at %v want %v, lag %v want -1", at, read.Sub(intended), lag)
	}
}

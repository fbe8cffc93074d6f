package loadgen

import (
	"testing"
	"time"
)

// stamp 是返回固定时刻的 rxstamp.Stamper。
type stamp struct{ t time.Time }

// LastRx 实现 rxstamp.Stamper。
func (s stamp) LastRx() time.Time { return s.t }

// TestArrivedUsesKernelStamp 检查 arrived：可信的内核时间戳决定到达时刻，读取滞后
// 单独返回；时间戳缺失、早于本请求发出、晚于此刻时退回 now，滞后为 -1。
func TestArrivedUsesKernelStamp(t *testing.T) {
	intended := time.Now().Add(-100 * time.Millisecond)
	x := newExchange()
	x.rec.Sent = intended.Add(time.Millisecond)

	// 数据在 30ms 前到达、现在才读：到达时刻取 30ms 前，滞后约 30ms。
	arrival := time.Now().Add(-30 * time.Millisecond)
	x.conn = stamp{arrival}
	at, lag := x.arrived(intended)
	if want := arrival.Sub(intended); at != want {
		t.Fatalf("at = %v, want %v", at, want)
	}
	if lag < 30*time.Millisecond || lag > time.Second {
		t.Fatalf("lag = %v, want about 30ms", lag)
	}

	for name, c := range map[string]stamp{
		"zero":          {},
		"before send":   {x.rec.Sent.Add(-time.Microsecond)},
		"in the future": {time.Now().Add(time.Hour)},
	} {
		x.conn = c
		before := time.Since(intended)
		at, lag := x.arrived(intended)
		if lag != -1 || at < before || at > time.Since(intended) {
			t.Fatalf("%s: at=%v lag=%v, want now and -1", name, at, lag)
		}
	}
	x.conn = nil
	if _, lag := x.arrived(intended); lag != -1 {
		t.Fatalf("no stamper: lag %v", lag)
	}
}

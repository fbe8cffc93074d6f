package procstat

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestCPUTimeGrows 检查忙等之后 CPU 时间确实增长。
// 忙等的长度按 CPU 时间而不是墙钟计：机器繁忙时 50ms 墙钟可能只分到十几毫秒 CPU，
// 按墙钟断言会偶发失败（CI 上见过 11.9ms）。这里一直转到 CPUTime 增加 20ms，
// 墙钟上限 30 秒只是防止 CPUTime 坏掉（永不增长）时测试挂住。
func TestCPUTimeGrows(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no getrusage")
	}
	c0 := CPUTime()
	if c0 <= 0 {
		t.Fatalf("CPUTime = %v", c0)
	}
	deadline := time.Now().Add(30 * time.Second)
	x := 0
	for CPUTime()-c0 < 20*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("30s of busy looping added only %v CPU", CPUTime()-c0)
		}
		for i := 0; i < 100000; i++ {
			x += i
		}
	}
	_ = x
}

// TestPeakRSSParsesStatus 用伪造的 status 文件检查解析：kB 换算成字节，缺行、坏值、
// 缺文件都是 0。
func TestPeakRSSParsesStatus(t *testing.T) {
	old := statusPath
	defer func() { statusPath = old }()
	dir := t.TempDir()
	cases := map[string]int64{
		"Name:\tx\nVmPeak:\t  9999 kB\nVmHWM:\t   2048 kB\nVmRSS:\t 1024 kB\n": 2048 << 10,
		"Name:\tx\n":          0,
		"VmHWM:\t  lots kB\n": 0,
	}
	i := 0
	for body, want := range cases {
		i++
		statusPath = filepath.Join(dir, "status"+string(rune('0'+i)))
		if err := os.WriteFile(statusPath, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := PeakRSS(); got != want {
			t.Errorf("%q: PeakRSS = %d, want %d", body, got, want)
		}
	}
	statusPath = filepath.Join(dir, "missing")
	if got := PeakRSS(); got != 0 {
		t.Errorf("missing file: %d", got)
	}
}

// TestLivePeakRSSAndReset 在 Linux 上读真实的 VmHWM：分配并触碰 64 MiB 后峰值至少涨了
// 这么多；重置后峰值回落到接近当前常驻内存。
func TestLivePeakRSSAndReset(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	before := PeakRSS()
	buf := make([]byte, 64<<20)
	for i := range buf {
		if i%4096 == 0 {
			buf[i] = 1
		}
	}
	after := PeakRSS()
	if after < before || after < 64<<20 {
		t.Fatalf("peak RSS %d → %d after touching 64 MiB", before, after)
	}
	runtime.KeepAlive(buf)
	buf = nil
	runtime.GC()
	debug.FreeOSMemory()
	if err := ResetPeakRSS(); err != nil {
		t.Fatal(err)
	}
	if reset := PeakRSS(); reset >= after {
		t.Fatalf("peak RSS %d not lowered by reset (was %d)", reset, after)
	}
	clearRefsPath = filepath.Join(t.TempDir(), "no", "such")
	defer func() { clearRefsPath = "/proc/self/clear_refs" }()
	if err := ResetPeakRSS(); err == nil {
		t.Fatal("reset through a missing file succeeded")
	}
}

// TestTimerSlip 检查 TimerSlip 返回非负的最大滑移，且 n=0 时为 0。
func TestTimerSlip(t *testing.T) {
	if s := TimerSlip(0, time.Millisecond); s != 0 {
		t.Fatalf("TimerSlip(0) = %v, want 0", s)
	}
	if s := TimerSlip(3, time.Millisecond); s < 0 {
		t.Fatalf("TimerSlip = %v, want >= 0", s)
	}
}

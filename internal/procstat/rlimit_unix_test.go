//go:build unix

package procstat

import (
	"syscall"
	"testing"
)

// TestRaiseNoFile 先把软限制降到硬限制以下（不需要特权），检查调用之后软限制回到硬限制、返回值就是新的
// 软限制；再调用一次（已经相等）不改变任何东西。
func TestRaiseNoFile(t *testing.T) {
	var before syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &before); err != nil {
		t.Fatal(err)
	}
	if before.Max < 64 {
		t.Skipf("hard RLIMIT_NOFILE is %d: too low to lower the soft limit safely", before.Max)
	}
	lowered := syscall.Rlimit{Cur: before.Max - 1, Max: before.Max}
	if before.Cur < lowered.Cur {
		lowered.Cur = before.Cur
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
		t.Fatal(err)
	}
	got, err := RaiseNoFile()
	if err != nil {
		t.Fatal(err)
	}
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		t.Fatal(err)
	}
	if l.Cur != l.Max || got != l.Cur {
		t.Errorf("after RaiseNoFile: soft %d, hard %d, returned %d; want soft = hard = returned", l.Cur, l.Max, got)
	}
	again, err := RaiseNoFile()
	if err != nil || again != got {
		t.Errorf("second RaiseNoFile = %d, %v; want %d, nil", again, err, got)
	}
}

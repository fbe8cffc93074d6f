//go:build unix

package procstat

import (
	"syscall"
	"time"
)

// CPUTime 返回进程累计的用户态 + 内核态 CPU 时间（全部线程）；不可得时为 0。
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

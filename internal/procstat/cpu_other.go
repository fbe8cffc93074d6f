//go:build !unix

package procstat

import "time"

// CPUTime 在没有 getrusage 的平台上返回 0（未测得）。
func CPUTime() time.Duration { return 0 }

// RaiseNoFile 在没有 RLIMIT_NOFILE 的平台（如 Windows）上什么也不做，返回 0 与 nil：
// 那里的句柄上限不是自检的瓶颈。
func RaiseNoFile() (uint64, error) { return 0, nil }

//go:build !unix

package procstat

import "time"

// CPUTime 在没有 getrusage 的平台上返回 0（未测得）。
func CPUTime() time.Duration { return 0 }

// Package procstat 读取本进程的资源用量：累计 CPU 时间与峰值常驻内存。基准测试与
// examples/bench 的自测用它把吞吐换算成“每 CPU 秒”，并核对内存目标；以前这几行在
// 四个地方各写一份。
//
// 平台：CPUTime 在类 Unix 系统上可用（getrusage）；PeakRSS / ResetPeakRSS 依赖
// Linux 的 /proc。不可得时分别返回 0 与错误，调用方据此注明“未测得”。
package procstat

import (
	"fmt"
	"os"
	"strings"
)

// 可替换的 /proc 路径，测试用。
var (
	statusPath    = "/proc/self/status"
	clearRefsPath = "/proc/self/clear_refs"
)

// PeakRSS 返回 /proc/self/status 中的 VmHWM（峰值常驻内存），单位字节；不可得时为 0。
func PeakRSS() int64 {
	b, err := os.ReadFile(statusPath)
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d", &kb); err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// ResetPeakRSS 把内核记录的峰值常驻内存重置为当前值：向 /proc/self/clear_refs 写 "5"
// （Linux 4.0 起支持）。分阶段测内存时先调用它，得到的就是这一阶段自己的峰值。
func ResetPeakRSS() error {
	if err := os.WriteFile(clearRefsPath, []byte("5"), 0); err != nil {
		return fmt.Errorf("procstat: reset peak RSS: %w", err)
	}
	return nil
}

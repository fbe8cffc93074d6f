// Package procstat 读取本进程的资源用量：累计 CPU 时间与峰值常驻内存。基准测试与
// examples/bench 的自测用它把吞吐换算成“每 CPU 秒”，并核对内存目标；以前这几行在
// 四个地方各写一份。RaiseNoFile 调整打开文件数的限制（自测的高并发需要）。
//
// 平台：CPUTime 与 RaiseNoFile 在类 Unix 系统上可用（getrusage、setrlimit）；PeakRSS / ResetPeakRSS 依赖
// Linux 的 /proc。不可得时分别返回 0 与错误，调用方据此注明“未测得”。
//
// 平台相关的调用都收在根模块的这类小包里（另见 internal/procgroup）：依赖 Kubernetes 的嵌套模块
// （examples/bench 等）自己不导入 syscall，scripts/test.sh 因此不必为检查它们能否在 macOS/Windows 上
// 编译而把整棵 Kubernetes 依赖树交叉编译一遍（见那里的"跨平台"一步）。
package procstat

import (
	"fmt"
	"os"
	"strings"
	"time"
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

// TimerSlip 连续 n 次睡眠 d，返回实际醒来比预定晚了多少的最大值。
//
// 依赖定时精度的测试（如容量扫描要在几十毫秒的 SLO 余量内分辨“撑得住”与“撑不住”）
// 先用它量一下机器此刻的调度延迟：几百个进程争抢两个核时，模拟器注入的 120ms
// 首 token 时延会变成两百多毫秒，此时测出来的容量只反映机器，不反映被测逻辑。
// 这类测试应在滑移超过自己的余量时明确跳过并写出测得的滑移，而不是随机变红。
func TimerSlip(n int, d time.Duration) time.Duration {
	var worst time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		time.Sleep(d)
		if late := time.Since(start) - d; late > worst {
			worst = late
		}
	}
	return worst
}

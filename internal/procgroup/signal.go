package procgroup

import (
	"os"
	"syscall"
)

// ShutdownSignals 是长时间运行的命令（examples/ci、examples/bench）据以体面退出的信号：
// Ctrl-C（os.Interrupt）与 SIGTERM（Kubernetes 删除 Pod、CI 取消作业时发出）。Windows 上 Go 把
// 关闭控制台、注销与关机事件也报告为 syscall.SIGTERM，所以这份列表在每个平台上都一样。
// 调用方把它原样交给 signal.NotifyContext / signal.Notify；不要修改这个切片。
var ShutdownSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

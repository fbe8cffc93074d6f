// Package procgroup 把“子进程放进自己的进程组、按组发信号”这一平台相关的细节
// 收在一处，使 deploy、accuracy 与测试控制面在 Windows/macOS 上同样能编译。
//
// 在 Unix（Linux、macOS、*BSD）上，Setup 让子进程成为新进程组的组长，
// Terminate/Kill 向整个组发送 SIGTERM/SIGKILL，这样 vLLM 派生的 worker、
// HumanEval harness fork 出的执行子进程都随组长一起结束，不留孤儿。
//
// 其它系统没有进程组：Supported 为 false，Setup 不做任何事，Terminate/Kill
// 只能结束组长本身。需要“整组结束”才能保证正确性的调用方（deploy.Local、
// HumanEval 执行器）应在 Supported 为 false 时明确报错，而不是悄悄留下孤儿进程。
package procgroup

// Package rxstamp 给 TCP 连接加上内核接收时间戳：每次读到数据时，同时取得这批数据
// 到达本机套接字的时刻（Linux 的 SO_TIMESTAMPNS，由内核在收包时记录）。
//
// 为什么需要它：在 2 核的 CI 机器上，压测客户端与被测服务（或内嵌的模拟器）共享 CPU，
// 一个 SSE chunk 从到达套接字到读取它的 goroutine 被调度运行，中间可能隔着数毫秒的
// 调度排队——这段时间是测量者自己的开销，却会被 time.Now() 原样记进 TTFT / ITL。
// Python 工具（asyncio 事件循环）在负载高时的 TTFT 偏大，多半就是这个原因。用内核接收
// 时间戳作为“数据到达时刻”，测到的就是服务端真正交付数据的时刻；读取方自己的滞后
// 另行报告（见 loadgen 的 ClientLag）。
//
// 语义：[Conn.LastRx] 返回最近一次成功读取所消费的最后一个 skb 的接收时刻（TCP 的
// recvmsg 语义）。一次读取若跨越多个数据段，得到的是最晚的那个，因此它只会高估、
// 不会低估到达时刻。拿不到时间戳（非 Linux、内核不支持、对端是 Unix 套接字等）时
// 返回零值，调用方应退回 time.Now()。
//
// 并发约定：Conn 的读写方法与 net.Conn 相同；LastRx 可以在任意 goroutine 中并发调用。
package rxstamp

// Package h1 是 loadgen 生成请求热路径上专用的 HTTP/1.1 客户端传输。
//
// 为什么不用 net/http：每个请求 net/http 要经过 readLoop / writeLoop 两个 goroutine 的交接、
// 逐请求的头部 map、chunked 读取器与 bufio 的多层拷贝；在 c=256、每个流 32 个 chunk 的零时延
// 压测里，这些占到客户端 CPU 的三成以上。这里 worker goroutine 自己在自己取到的 keep-alive
// 连接上一次 write 发出请求，自己解析状态行、头部与 chunked 分帧（在连接的读缓冲区里就地解析，
// SSE 读取器经 Peek/Discard 直接在缓冲区里找行）。
//
// 它只在与 net/http 完全等价时使用（NewPool 返回 nil 时调用方走 net/http）：明文 http://、
// 环境变量不要求代理、地址里没有用户信息、主机名不会被 net/http 改写。分帧、连接复用、错误的
// 文字与 net/http 相同（见 h1.go 的文件头），loadgen 的 transport_test.go 在手写的刁钻响应与
// internal/hostile 的每种故障上逐项比较两条路径的记录。
//
// 用法（loadgen 的 exchange）：每个 worker 一个 Session（Pool 指向运行共享的连接池）；每个请求
// Begin → RoundTrip → 读 Conn（io.Reader，chunked 时可 Peek/Discard）→ End；总超时与静默超时由
// 调用方的定时器到点时调用 Abort，运行取消由 Begin 登记的 context.AfterFunc 负责；worker 退出时
// Release，运行结束时 Pool.Close。
//
// 它是 loadgen 的实现细节（internal）：只做 loadgen 需要的 POST + JSON 请求，不是通用的 HTTP 客户端。
package h1

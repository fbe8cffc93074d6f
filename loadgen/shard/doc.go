// Package shard 是 loadgen 分片运行的父进程一侧：把一个压测档位拆给多个进程（本机子进程、
// Kubernetes Indexed Job 的 Pod）执行之后，把各分片交回的东西还原成单进程运行会交给调用方的
// 同一组事件。
//
// 分片的划分与执行本身在 loadgen 里（loadgen.RunShard、loadgen.Shard：执行路径上的按序号取模），
// 合并汇总行在 loadgen.MergeGroups；本包补上逐请求的那一半：
//   - RecordWriter / RecordReader：分片进程把逐请求记录（完整的 loadgen.Record，比逐请求 CSV 的列
//     多而不少）写成 JSON Lines，父进程读回；
//   - Replay：把合并后的分组、各分片的记录与合并的时间线按单进程的事件顺序交给调用方的
//     *loadgen.Observer（OnGroupStart → 按发送时刻排好的 OnRecord → OnGroupEnd，最后 OnTimeline）。
//
// 为什么要这样做：团队的导出器（driver.Options.PerfExporters、examples/bench 的会话 CSV）只挂在
// 父进程的观察者上。进程内的 loadgen.RunLocalShards 能把各分片的记录实时转给它；子进程与 Pod 里
// 的记录却只留在子进程里，父进程只拿到合并后的汇总行，OnRecord 一次也不会被调用。Replay 让这些
// 记录在合并时到达——不是实时的，而是在全部分片结束之后；缺失分片的记录就是没有（见 Replay）。
// Kubernetes 分片目前只交回结果行（Pod 日志的最后一行），没有记录流：Replay 对它们只交出分组与
// 汇总、时间线事件。
package shard

// Package shard 是 loadgen 分片运行的打包、交回与合并：一台压测机不够时，一个档位拆给多个进程
// （本机 goroutine、本机子进程、Kubernetes Indexed Job 的 Pod）执行，再还原成单进程运行会得到的
// 汇总行与事件。
//
// 分工：按全局序号取模划分请求、worker 与到达，以及逐组的原始测量（分布、计数、/metrics 快照）
// 属于执行路径，在 loadgen 里（loadgen.Shard、loadgen.RunShard、loadgen.ShardGroup、
// loadgen.MergeShardGroups；分布的内部表示不出 loadgen）。本包在它之上：
//   - Run、Result、WriteResult / ReadResult*：一个分片的自包含结果，编码成一行 JSON，可以作为
//     Pod 日志的最后一行或一个文件交回；
//   - MergeGroups、Merge、MergeTimeline：检查各结果属于同一次压测、各分片开始时刻相差不超过
//     MaxSkew，逐组合并，缺失或失败的分片按序号与原因点名（MissingError），相应分组标为不完整；
//   - RunLocal、LocalBarrier：本进程内 n 个分片，每组在全部分片就绪后同时开始；
//   - RecordWriter / RecordReader、Replay：分片进程把逐请求记录（完整的 loadgen.Record，JSON
//     Lines）交回，父进程在合并时把合并后的分组、记录与时间线按单进程的事件顺序交给调用方的
//     *loadgen.Observer；
//   - ReadOutput：从一个分片进程的完整输出（Pod 日志：记录行在前、结果行最后）里分出本片的记录与
//     结果行，并逐组核对记录条数与结果行测量的请求数，不符处写成 RecordGap；CheckRecords 对单独
//     交回的记录流（--shard-records 的文件）做同样的核对。
//
// 观察者在分片运行里收到什么：RunLocal 实时、串行地转发各分片的 OnRecord，每组一次 OnGroupStart，
// 全部分片结束后是合并后的 OnGroupEnd 与 OnTimeline。子进程与 Pod 的记录留在它们自己的进程里，
// 父进程用 Replay 在合并时交出——记录在合并时到达，不是实时的；缺失分片的记录就是没有。
// Kubernetes 分片的记录经 Pod 日志交回（写在结果行之前，deploy/kube 的 RunShards 用 ReadOutput 分出），
// kubelet 轮转日志时最早的记录先丢，缺口逐分片逐组报告（RecordGap），从不被当作完整。
// 任何分片运行都没有 OnProgress。
//
// loadgen 从不导入本包（执行路径不依赖合并）。
package shard

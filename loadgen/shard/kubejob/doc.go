// Package kubejob 在 Kubernetes 集群里把一次压测分成若干片并行运行：RunShards 创建一个
// Indexed Job（completions = parallelism = 分片数，序号 i 的 Pod 跑第 i 片，每组一个 Job 时
// 每个 Job 只跑一组），连同随运行创建的 Secret（密钥）与 ConfigMap（数据集、分词器等文件），
// 等待全部 Pod 结束，从每个分片容器（ShardContainer）的日志里读回结果行与逐请求记录，交给
// loadgen/shard 合并；缺失或失败的分片写进 ShardJobError（ShardLosses 取出每一片的原因），
// 合并结果据此标注不完整，永远不当作完整的运行。
//
// 它从 deploy/kube 拆出（issue #30）：只做部署的程序链接 deploy/kube 而不链接压测，
// 需要在集群里分片压测的程序（examples/bench --shards）才导入本包。读取 Pod 日志有字节上限
// （ShardJob.LogBytes，默认 DefaultShardLogBytes）与时限（LogTimeout），Secret 与 ConfigMap 的
// 内容在创建任何对象之前按 MaxShardFilesBytes 检查。分片 Pod 经环境变量
// （EnvShardIndex、EnvShardCount、EnvShardStart、EnvShardGroup）得知自己是哪一片。
package kubejob

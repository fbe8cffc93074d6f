package pipeline

import (
	"context"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/shard"
)

// runShardedPerf 把一个档位拆成 n 片在本进程并发运行（shard.RunLocal：每片独立的 worker 与
// 连接池，每组在所有分片就绪后同时开始），合并出单进程的汇总行。obs 的 OnRecord 串行地收到各分片的
// 逐请求记录（写进逐请求 CSV），合并后的行逐组交给 OnGroupEnd（写进汇总 CSV）。
// 缺失或失败的分片使相应分组标为不完整，并在错误中按序号点名。
func runShardedPerf(ctx context.Context, target loadgen.Target, prof loadgen.Profile, n int, obs *loadgen.Observer) ([]loadgen.Summary, error) {
	res, err := shard.RunLocal(ctx, target, prof, n, obs)
	return res.Summaries(), err
}

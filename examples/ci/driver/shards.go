package driver

import (
	"context"

	"github.com/vllm-cibench/cibench/loadgen"
)

// runShardedPerf 把一个档位拆成 n 片在本进程并发运行（loadgen.RunLocalShards：每片独立的 worker 与
// 连接池，每组在所有分片就绪后同时开始），合并出单进程的汇总行。sink 是 RecordSink 时（产物写入器）
// 各分片的逐请求记录被串行地写进逐请求 CSV；合并后的行逐组交给它的 EndGroup 写进汇总 CSV。
// 缺失或失败的分片使相应分组标为不完整，并在错误中按序号点名。
func runShardedPerf(ctx context.Context, target loadgen.Target, prof loadgen.Profile, n int, sink loadgen.GroupSink) ([]loadgen.Summary, error) {
	rs, _ := sink.(loadgen.RecordSink)
	if rs == nil {
		rs = groupOnly{sink}
	}
	res, err := loadgen.RunLocalShards(ctx, target, prof, n, rs)
	return res.Summaries(), err
}

// groupOnly 让只收汇总行的 GroupSink 充当 RecordSink（逐请求记录丢弃）。
type groupOnly struct{ loadgen.GroupSink }

// WriteRecord 丢弃记录。
func (groupOnly) WriteRecord(*loadgen.Record) error { return nil }

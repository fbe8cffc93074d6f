package driver

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
)

// runShardedPerf 把一个档位拆成 n 片在本进程并发运行（每片一个独立的 loadgen 运行与连接池），
// 再用 loadgen.Merge 合成单进程的汇总行，逐行交给 sink 写进汇总 CSV。逐请求 CSV 不写：
// 各分片的记录并发到达，而产物写入器是串行的。缺失或失败的分片使相应分组标为不完整，并在
// 错误中按序号点名。
func runShardedPerf(ctx context.Context, target loadgen.Target, prof loadgen.Profile, n int, sink loadgen.GroupSink) ([]loadgen.Summary, error) {
	start := time.Now().Add(time.Second)
	results := make([]*loadgen.ShardResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			results[i], errs[i] = loadgen.RunShard(ctx, target, prof, loadgen.Shard{Index: i, Count: n, StartAt: start}, nil)
		})
	}
	wg.Wait()
	var got []*loadgen.ShardResult
	for _, r := range results {
		if r != nil {
			got = append(got, r)
		}
	}
	if len(got) == 0 {
		return nil, errors.Join(errs...)
	}
	rows, err := loadgen.Merge(got...)
	for _, r := range rows {
		if werr := sink.EndGroup(r); werr != nil {
			return rows, errors.Join(err, werr)
		}
	}
	return rows, err
}

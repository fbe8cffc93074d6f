package loadgen

import (
	"context"
	"time"

	"github.com/vllm-cibench/cibench/loadgen/dataset"
)

// buildPool 为输入长度 inputLen 建立第 n 个请求以内的 prompt 池：按 Profile 的数据集类型把参数
// 交给 loadgen/dataset 的生成器（轨迹、集合、custom、random）。池在分组开始之前建好，热路径
// 只按序号读 Pool 的字段。counter 只用于 random 数据集的长度校准。
func buildPool(ctx context.Context, p *Profile, inputLen, n int, counter dataset.TokenCounter) (*dataset.Pool, error) {
	switch p.DatasetType {
	case DatasetMooncakeTrace, DatasetAzureTrace:
		return dataset.TracePool(p.TraceRequests, p.Trace), nil
	case DatasetSharedPrefix:
		return dataset.SharedPrefixPool(p.SharedPrefix, p.Seed)
	case DatasetPrefixRepetition:
		return dataset.PrefixRepetitionPool(p.PrefixRepetition, p.Seed, n)
	case DatasetShareGPT:
		return dataset.ShareGPTPool(p.Prompts, p.ShareGPT, p.Seed)
	case DatasetCustom:
		return dataset.CustomPool(p.Prompts, inputLen, n), nil
	}
	return dataset.RandomPool(ctx, dataset.Random{Seed: p.Seed, PrefixLength: p.PrefixLength,
		RangeRatioAbove: p.RangeRatioAbove, RangeRatioBelow: p.RangeRatioBelow}, inputLen, n, counter)
}

// dispatchSchedule 按轨迹时刻表产生到达：第 i 个请求的意图时刻是回放开始时刻加 sched[i]，
// 到点交给 emit（emit 返回 false 时停止）。与 dispatch 一样，意图时刻按时刻表计算、不受 worker
// 是否空闲影响；发出时刻与意图时刻之差（Record.SlotWait，汇总里的 Workload.DispatchLag）如实
// 反映客户端是否跟上了时刻表。
func (r *runner) dispatchSchedule(ctx context.Context, gr *groupRun, ts *dataset.Trace, emit func(job) bool) {
	start := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i := range gr.global {
		if !r.sh.mine(i) {
			continue
		}
		intended := start.Add(ts.At(i))
		if d := time.Until(intended); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			}
		}
		if ctx.Err() != nil || !emit(job{idx: i, intended: intended}) {
			return
		}
	}
}

package shard_test

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/shard"
)

// ExampleRunLocal 把一个档位拆成 2 片在本进程运行：调用方的观察者实时收到每个分片的逐请求记录，
// 合并后的汇总行与单进程的请求数相同。
func ExampleRunLocal() {
	em, _ := emulator.New(emulator.Config{Model: "demo"})
	dep, err := em.Deploy(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dep.Teardown(context.Background())
	tgt := loadgen.Target{Endpoint: dep.Endpoint(), Provider: "demo"}
	profile := loadgen.Profile{Concurrency: []int{2}, InputLength: []int{32}, OutputLength: []int{4}, NumRequests: []int{6}}
	records := 0
	res, err := shard.RunLocal(context.Background(), tgt, profile, 2, &loadgen.Observer{OnRecord: func(*loadgen.Record) error { records++; return nil }})
	if err != nil {
		fmt.Println(err)
		return
	}
	row := res.Groups[0]
	fmt.Println("requests:", row.Summary.NumPrompts, "from shards", row.Shards, "records seen:", records)
	// Output: requests: 6 from shards [0 1] records seen: 6
}

// ExampleReplay 是子进程分片的父进程一侧：每个分片把逐请求记录写进 RecordWriter、把结果写成一行 JSON，
// 父进程合并结果后用 Replay 把分组、记录与汇总按单进程的顺序交给自己的观察者。
func ExampleReplay() {
	em, _ := emulator.New(emulator.Config{Model: "demo"})
	dep, err := em.Deploy(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dep.Teardown(context.Background())
	tgt := loadgen.Target{Endpoint: dep.Endpoint(), Provider: "demo"}
	profile := loadgen.Profile{Concurrency: []int{2}, InputLength: []int{32}, OutputLength: []int{4}, NumRequests: []int{5}}
	var results []*shard.Result
	var streams []shard.Records
	for i := range 2 { // 这里依次运行；真实的分片是同时运行的进程或 Pod
		var recs, line bytes.Buffer
		w := shard.NewRecordWriter(&recs)
		res, err := shard.Run(context.Background(), tgt, profile, loadgen.Shard{Index: i, Count: 2}, w.Observer())
		if err == nil {
			err = shard.WriteResult(&line, res)
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		back, err := shard.ReadResultFor(&line, i)
		if err != nil {
			fmt.Println(err)
			return
		}
		results = append(results, back)
		streams = append(streams, shard.Records{Name: fmt.Sprintf("shard-%d", i), R: &recs})
	}
	// 依次运行的分片开始时刻相差很远，放宽偏差界；同时运行的分片用默认的 1 秒。
	groups, err := shard.MergeGroups(shard.MergeOptions{MaxSkew: time.Hour}, results...)
	if err != nil {
		fmt.Println(err)
		return
	}
	var events []string
	obs := &loadgen.Observer{
		OnGroupStart: func(g loadgen.Group) error { events = append(events, "start"); return nil },
		OnRecord:     func(r *loadgen.Record) error { events = append(events, fmt.Sprint(r.Index)); return nil },
		OnGroupEnd:   func(s loadgen.Summary) error { events = append(events, fmt.Sprint("end:", s.NumPrompts)); return nil },
	}
	if err := shard.Replay(obs, groups, nil, streams...); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(events), events[0], events[len(events)-1])
	// Output: 7 start end:5
}

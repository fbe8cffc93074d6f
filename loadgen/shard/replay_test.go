package shard_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/shard"
)

// events 记下 Observer 收到的事件顺序，用来检查 Replay 的顺序与内容。
type events struct {
	seq     []string
	records []loadgen.Record
	groups  []loadgen.Group
	sums    []loadgen.Summary
	tl      int
}

// observer 返回记录全部钩子的观察者（OnProgress 出现即是错误）。
func (e *events) observer(t *testing.T) *loadgen.Observer {
	return &loadgen.Observer{
		OnGroupStart: func(g loadgen.Group) error {
			e.seq = append(e.seq, "start")
			e.groups = append(e.groups, g)
			return nil
		},
		OnRecord: func(r *loadgen.Record) error {
			e.seq = append(e.seq, "rec")
			e.records = append(e.records, *r)
			return nil
		},
		OnGroupEnd: func(s loadgen.Summary) error { e.seq = append(e.seq, "end"); e.sums = append(e.sums, s); return nil },
		OnTimeline: func(loadgen.Timeline) error { e.tl++; return nil },
		OnProgress: func(loadgen.Progress) { t.Error("Replay called OnProgress") },
	}
}

// TestReplayShardRecords 以真实的 RunShard 对模拟器跑两片（两个并发档，各两轮），各片的逐请求记录
// 经 RecordWriter 写成 JSON Lines，合并后 Replay 交给一个观察者：记录条数等于汇总的请求数之和，
// 每组一次 OnGroupStart、其后是该组的记录（按发送时刻）、再是合并后的 OnGroupEnd；每条记录与分片
// 自己交出的记录逐字段相同（JSON 往返不丢字段，含逐 chunk 的时刻与 token 数）。
func TestReplayShardRecords(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: ep.BaseURLs, Model: "m"}, Provider: "emu"}
	prof := loadgen.Profile{Concurrency: []int{2, 4}, InputLength: []int{16}, OutputLength: []int{4}, NumRequests: []int{6, 8},
		Epochs: 2, BucketInterval: 20 * time.Millisecond}
	bar := shard.NewLocalBarrier(2)
	var bufs [2]bytes.Buffer
	var direct [2][]loadgen.Record
	results := make([]*shard.Result, 2)
	errs := make(chan error, 2)
	for i := range 2 {
		go func() {
			defer bar.Leave(i)
			rw := shard.NewRecordWriter(&bufs[i])
			keep := &loadgen.Observer{OnRecord: func(r *loadgen.Record) error {
				c := *r
				c.ChunkTimes, c.ChunkTokens = append([]time.Duration(nil), r.ChunkTimes...), append([]int32(nil), r.ChunkTokens...)
				direct[i] = append(direct[i], c)
				return nil
			}}
			res, err := shard.Run(context.Background(), tgt, prof, loadgen.Shard{Index: i, Count: 2, Barrier: bar.For(i)}, loadgen.Tee(rw.Observer(), keep))
			results[i] = res
			errs <- errors.Join(err, rw.Flush())
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	groups, err := shard.MergeGroups(shard.MergeOptions{MaxSkew: time.Minute}, results...)
	if err != nil {
		t.Fatal(err)
	}
	var ev events
	err = shard.Replay(ev.observer(t), groups, shard.MergeTimeline(results...),
		shard.Records{Name: "r0", R: &bufs[0]}, shard.Records{Name: "r1", R: &bufs[1]})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, g := range groups {
		want += g.Summary.NumPrompts
	}
	if want != 2*(6+8) || len(ev.records) != want || len(ev.groups) != 4 || len(ev.sums) != 4 || ev.tl == 0 {
		t.Fatalf("replayed %d records, %d starts, %d ends, %d timeline rows; want %d records in 4 groups", len(ev.records), len(ev.groups), len(ev.sums), ev.tl, want)
	}
	// 顺序：start rec… end，逐组；组内按发送时刻。
	k := 0
	for gi, g := range ev.groups {
		if g.Index != gi || g.Concurrency != groups[gi].Summary.Concurrency || !g.Start.Equal(groups[gi].Summary.ExecutionTime) {
			t.Errorf("group %d start %+v, merged row %+v", gi, g, groups[gi].Summary)
		}
		if ev.seq[k] != "start" {
			t.Fatalf("event %d is %s, want start of group %d (%v)", k, ev.seq[k], gi, ev.seq)
		}
		k++
		n := 0
		var last time.Time
		for ; ev.seq[k] == "rec"; k++ {
			r := ev.records[k-2*gi-1]
			if r.Group.Index != gi || r.Sent.Before(last) {
				t.Fatalf("record %+v in group %d out of order (last sent %s)", r, gi, last)
			}
			last = r.Sent
			n++
		}
		if ev.seq[k] != "end" || n != groups[gi].Summary.NumPrompts {
			t.Fatalf("group %d: %d records then %s, want %d then end", gi, n, ev.seq[k], groups[gi].Summary.NumPrompts)
		}
		k++
	}
	// 每条重放的记录与分片直接交出的记录逐字段相同。
	byKey := map[[2]int]loadgen.Record{}
	for _, rs := range direct {
		for _, r := range rs {
			byKey[[2]int{r.Group.Index, r.Index}] = r
		}
	}
	for _, r := range ev.records {
		d, ok := byKey[[2]int{r.Group.Index, r.Index}]
		if !ok {
			t.Fatalf("replayed a record no shard produced: %+v", r)
		}
		if len(d.ChunkTimes) == 0 || d.PromptTokens == 0 || d.Sent.IsZero() {
			t.Fatalf("shard record lacks data: %+v", d)
		}
		if !d.Sent.Equal(r.Sent) || !d.Intended.Equal(r.Intended) || !d.Group.Start.Equal(r.Group.Start) {
			t.Fatalf("times differ: %+v vs %+v", d, r)
		}
		d.Sent, d.Intended, d.Group.Start = r.Sent, r.Intended, r.Group.Start // 单调时钟读数不经 JSON
		if !reflect.DeepEqual(d, r) {
			t.Fatalf("replayed record differs:\n got %+v\nwant %+v", r, d)
		}
	}
}

// rec 造一条属于第 g 组、在 sent 时刻发出的记录。
func rec(g, idx int, sent time.Time) loadgen.Record {
	return loadgen.Record{Group: loadgen.Group{Index: g, Concurrency: 2, InputLength: 8, OutputLength: 2, Round: 1}, Index: idx,
		Intended: sent.Add(-time.Millisecond), Sent: sent, TTFT: time.Millisecond, E2E: 2 * time.Millisecond, PromptTokens: 8,
		CachedTokens: -1, CompletionTokens: 2, OK: true, TokenSource: loadgen.TokenSourceUsage, ChunkTimes: []time.Duration{1, 2}, ChunkTokens: []int32{1, 1}}
}

// stream 把记录写成一个记录流。
func stream(t *testing.T, rs ...loadgen.Record) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	w := shard.NewRecordWriter(&b)
	for i := range rs {
		if err := w.WriteRecord(&rs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return &b
}

// TestReplayMissingAndTornShards 检查缺失与被杀的分片：被杀分片写了一半的最后一行使它的流停在那里
// （前面的记录照常交出，错误点名流与行号，errors.Is ErrBadRecords），没有汇总行的分组的记录在最后
// 交出（有 OnGroupStart、没有 OnGroupEnd），失败请求（没有发送时刻）按意图时刻排序。
func TestReplayMissingAndTornShards(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	failed := rec(0, 3, time.Time{})
	failed.Intended, failed.OK, failed.ErrorClass = t0.Add(15*time.Millisecond), false, loadgen.ErrClassTransport
	a := stream(t, rec(0, 0, t0.Add(10*time.Millisecond)), rec(0, 2, t0.Add(30*time.Millisecond)), rec(1, 0, t0.Add(time.Second)))
	b := stream(t, rec(0, 1, t0.Add(20*time.Millisecond)), failed)
	b.WriteString(`{"Group":{"Index":0},"Index":5,"Sent":"2027-`) // 被杀时写了一半
	groups := []shard.MergedGroup{{Summary: loadgen.Summary{Concurrency: 2, InputLength: 8, OutputLength: 2, Round: 1, NumPrompts: 5, Incomplete: true}}}
	var ev events
	err := shard.Replay(ev.observer(t), groups, nil, shard.Records{Name: "a.jsonl", R: a}, shard.Records{Name: "b.jsonl", R: b})
	if !errors.Is(err, shard.ErrBadRecords) || !strings.Contains(err.Error(), "b.jsonl:3") {
		t.Fatalf("err = %v, want ErrBadRecords naming b.jsonl:3", err)
	}
	var order []int
	for _, r := range ev.records {
		order = append(order, r.Group.Index*10+r.Index)
	}
	if got := strings.Join(ev.seq, ","); got != "start,rec,rec,rec,rec,end,start,rec" || !reflect.DeepEqual(order, []int{0, 3, 1, 2, 10}) {
		t.Fatalf("events %s, records (group*10+index) %v", got, order)
	}
	if len(ev.groups) != 2 || ev.groups[1].Index != 1 || ev.groups[1].Concurrency != 2 || len(ev.sums) != 1 || !ev.sums[0].Incomplete {
		t.Fatalf("groups %+v, sums %+v", ev.groups, ev.sums)
	}
}

// TestReplayObserverErrors 检查钩子的错误终止重放并以 "shard: observer:" 开头，nil 观察者只检查流。
func TestReplayObserverErrors(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	groups := []shard.MergedGroup{{Summary: loadgen.Summary{Concurrency: 2}}}
	boom := errors.New("boom")
	cases := map[string]*loadgen.Observer{
		"group start": {OnGroupStart: func(loadgen.Group) error { return boom }},
		"record":      {OnRecord: func(*loadgen.Record) error { return boom }},
		"group end":   {OnGroupEnd: func(loadgen.Summary) error { return boom }},
		"timeline":    {OnTimeline: func(loadgen.Timeline) error { return boom }},
	}
	for name, obs := range cases {
		err := shard.Replay(obs, groups, []loadgen.Timeline{{}}, shard.Records{Name: "x", R: stream(t, rec(0, 0, t0))})
		if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "shard: observer: "+name) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	// 没有汇总行的分组里钩子出错同样终止。
	err := shard.Replay(cases["record"], nil, nil, shard.Records{Name: "x", R: stream(t, rec(0, 0, t0))})
	if !errors.Is(err, boom) {
		t.Errorf("leftover group: err = %v", err)
	}
	if err := shard.Replay(nil, groups, nil, shard.Records{Name: "x", R: stream(t, rec(0, 0, t0))}); err != nil {
		t.Errorf("nil observer: %v", err)
	}
}

// TestRecordReaderBounds 检查读取器：空行跳过，超长的行报 ErrBadRecords 而不是耗尽内存，流尽时 io.EOF。
func TestRecordReaderBounds(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	b := stream(t, rec(0, 0, t0))
	b.WriteString("\n\n")
	rr := shard.NewRecordReader(b, "ok")
	if r, err := rr.Next(); err != nil || r.Index != 0 || !r.Sent.Equal(t0) {
		t.Fatalf("first: %+v %v", r, err)
	}
	if _, err := rr.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}
	big := io.MultiReader(strings.NewReader(`{"Error":"`), io.LimitReader(zeros{}, shard.MaxRecordLineBytes+10))
	if _, err := shard.NewRecordReader(big, "big").Next(); !errors.Is(err, shard.ErrBadRecords) || !strings.Contains(err.Error(), "big:1") {
		t.Fatalf("oversized line: %v", err)
	}
}

// zeros 是无穷的 'a' 字节流（造一条超长的行）。
type zeros struct{}

// Read 填满 p。
func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// errWriter 的写入总是失败。
type errWriter struct{}

// Write 返回错误。
func (errWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestRecordWriterErrors 检查写入失败在刷出时报出（OnGroupEnd 即刷出）。
func TestRecordWriterErrors(t *testing.T) {
	w := shard.NewRecordWriter(errWriter{})
	r := rec(0, 0, time.Unix(1_800_000_000, 0))
	if err := w.WriteRecord(&r); err != nil {
		t.Fatal(err) // 还在缓冲里
	}
	if err := w.Observer().OnGroupEnd(loadgen.Summary{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("flush: %v", err)
	}
}

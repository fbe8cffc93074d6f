package shard

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
)

// TestMergeRefusesAndReports 检查合并的拒绝与报告：分片数或 Profile 不同、重复序号、开始时刻
// 相差超过界限都被拒绝；缺一个分片时返回不完整的行与点名该分片的错误；结果行能往返编码。
func TestMergeRefusesAndReports(t *testing.T) {
	em := startShardEmulator(t)
	p := loadgen.Profile{Concurrency: []int{2}, InputLength: []int{8}, OutputLength: []int{4}, NumRequests: []int{9}, BucketInterval: 20 * time.Millisecond}
	start := time.Now().Add(200 * time.Millisecond)
	var res [3]*Result
	tl := &tlCollect{}
	for i := range res {
		var sink *loadgen.Observer
		if i == 0 {
			sink = tl.observer()
		}
		r, err := Run(context.Background(), em, loadgen.Profile{Concurrency: []int{3}, InputLength: p.InputLength, OutputLength: p.OutputLength,
			NumRequests: p.NumRequests, BucketInterval: p.BucketInterval}, loadgen.Shard{Index: i, Count: 3, StartAt: start}, sink)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteResult(&buf, r); err != nil {
			t.Fatal(err)
		}
		if res[i], err = ReadResultFor(strings.NewReader("noise\n"+buf.String()+"PASS\n"), i); err != nil {
			t.Fatal(err)
		}
	}
	// 分片 0 的调用方钩子照样收到它的 3 条记录、1 次分组开始与时间线行（分片自己也保留了时间线）。
	if tl.recs != 3 || tl.groups != 1 || tl.rows == 0 || tl.rows != len(res[0].Timeline) {
		t.Fatalf("shard 0 observer got %d records, %d group starts, %d timeline rows (result has %d)", tl.recs, tl.groups, tl.rows, len(res[0].Timeline))
	}
	rows, err := Merge(res[0], res[2])
	var me *MissingError
	if !errors.As(err, &me) || !errors.Is(err, ErrMissing) || !reflect.DeepEqual(me.Groups[0], []int{1}) || !strings.Contains(err.Error(), "group 0 misses shards [1]") {
		t.Fatalf("missing shard: %v", err)
	}
	if len(rows) != 1 || !rows[0].Incomplete || rows[0].NumPrompts != 6 {
		t.Fatalf("rows %+v", rows)
	}
	full, err := Merge(res[:]...)
	if err != nil || full[0].NumPrompts != 9 || full[0].Incomplete {
		t.Fatalf("full merge %v %+v", err, full)
	}
	if tl := MergeTimeline(res[:]...); len(tl) == 0 {
		t.Fatal("no merged timeline rows")
	} else {
		done := 0
		for _, r := range tl {
			done += r.Completed
		}
		if done != 9 {
			t.Fatalf("timeline completed %d, want 9", done)
		}
	}
	other := *res[1]
	other.Profile = "x"
	dup := *res[1]
	late := *res[1]
	late.Groups = append([]loadgen.ShardGroup(nil), res[1].Groups...)
	late.Groups[0].Config.ExecutionTime = late.Groups[0].Config.ExecutionTime.Add(5 * time.Second)
	for _, tc := range []struct {
		in   []*Result
		want error
		msg  string
	}{
		{[]*Result{res[0], &other}, ErrMismatch, "ran profile x"},
		{[]*Result{res[0], res[1], &dup}, ErrMismatch, "shard 1 given twice"},
		{[]*Result{res[0], &late, res[2]}, ErrSkew, "started 5."},
		{nil, ErrMismatch, "no shard results"},
	} {
		if _, err := Merge(tc.in...); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v, want %v %q", err, tc.want, tc.msg)
		}
	}
	if _, err := ReadResult(strings.NewReader("just logs\n")); !errors.Is(err, loadgen.ErrBadShardResult) {
		t.Fatalf("no result line: %v", err)
	}
}

// observer 把 tlCollect 的方法接成全部钩子。
func (c *tlCollect) observer() *loadgen.Observer {
	return &loadgen.Observer{OnRecord: c.WriteRecord, OnGroupStart: c.BeginGroup, OnGroupEnd: c.EndGroup, OnProgress: c.Progress, OnTimeline: c.WriteTimeline}
}

// tlCollect 是接上了全部钩子的接收器，检查分片运行照样转发给调用方。
type tlCollect struct{ recs, groups, rows int }

// WriteRecord 计数。
func (c *tlCollect) WriteRecord(*loadgen.Record) error { c.recs++; return nil }

// BeginGroup 计数。
func (c *tlCollect) BeginGroup(loadgen.Group) error { c.groups++; return nil }

// EndGroup 不做事。
func (c *tlCollect) EndGroup(loadgen.Summary) error { return nil }

// Progress 不做事。
func (c *tlCollect) Progress(loadgen.Progress) {}

// WriteTimeline 计数。
func (c *tlCollect) WriteTimeline(loadgen.Timeline) error { c.rows++; return nil }

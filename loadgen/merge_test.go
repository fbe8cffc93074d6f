package loadgen

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestMergeHDRMatchesSingleDist 检查 HDR 路径：一个分片超出精确样本预算（改用 HDR）时，合并的
// 分位数与把全部样本记进同一个分布（同样超出预算）的结果逐位相同，并且 HDR 列出了该分布。
func TestMergeHDRMatchesSingleDist(t *testing.T) {
	single := newDist(1000, newBudget(10))
	parts := [2]*dist{newDist(1000, newBudget(10)), newDist(1000, newBudget(100))}
	for i := range 40 {
		v := int64(1000 + i*i*997)
		single.add(v, 1)
		parts[i%2].add(v, 1)
	}
	mk := func(d *dist) *ShardGroup {
		s := newStats(nil)
		s.e2e = d
		return &ShardGroup{Stats: encodeStats(s)}
	}
	tot, hdr, err := mergeStats([]*ShardGroup{mk(parts[0]), mk(parts[1])})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(hdr, []string{"e2e"}) {
		t.Fatalf("hdr %v", hdr)
	}
	all := newDist(1000, nil)
	all.merge(single)
	if got, want := tot.e2e.latency(), all.latency(); got != want {
		t.Fatalf("merged %+v\nsingle %+v", got, want)
	}
}

// TestMergeRefusesAndReports 检查合并的拒绝与报告：分片数或 Profile 不同、重复序号、开始时刻
// 相差超过界限都被拒绝；缺一个分片时返回不完整的行与点名该分片的错误；结果行能往返编码。
func TestMergeRefusesAndReports(t *testing.T) {
	em := startShardEmulator(t)
	p := Profile{Concurrency: []int{2}, InputLength: []int{8}, OutputLength: []int{4}, NumRequests: []int{9}, BucketInterval: 20 * time.Millisecond}
	start := time.Now().Add(200 * time.Millisecond)
	var res [3]*ShardResult
	for i := range res {
		var sink RecordSink
		if i == 0 {
			sink = &tlCollect{}
		}
		r, err := RunShard(context.Background(), em, Profile{Concurrency: []int{3}, InputLength: p.InputLength, OutputLength: p.OutputLength,
			NumRequests: p.NumRequests, BucketInterval: p.BucketInterval}, Shard{Index: i, Count: 3, StartAt: start}, sink)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteShardResult(&buf, r); err != nil {
			t.Fatal(err)
		}
		if res[i], err = ReadShardResultFor(strings.NewReader("noise\n"+buf.String()+"PASS\n"), i); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := Merge(res[0], res[2])
	var me *MissingShardsError
	if !errors.As(err, &me) || !errors.Is(err, ErrShardMissing) || !reflect.DeepEqual(me.Groups[0], []int{1}) || !strings.Contains(err.Error(), "group 0 misses shards [1]") {
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
	late.Groups = append([]ShardGroup(nil), res[1].Groups...)
	late.Groups[0].Config.ExecutionTime = late.Groups[0].Config.ExecutionTime.Add(5 * time.Second)
	for _, tc := range []struct {
		in   []*ShardResult
		want error
		msg  string
	}{
		{[]*ShardResult{res[0], &other}, ErrShardMismatch, "ran profile x"},
		{[]*ShardResult{res[0], res[1], &dup}, ErrShardMismatch, "shard 1 given twice"},
		{[]*ShardResult{res[0], &late, res[2]}, ErrShardSkew, "started 5."},
		{nil, ErrShardMismatch, "no shard results"},
	} {
		if _, err := Merge(tc.in...); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v, want %v %q", err, tc.want, tc.msg)
		}
	}
	if _, err := ReadShardResult(strings.NewReader("just logs\n")); !errors.Is(err, ErrBadShardResult) {
		t.Fatalf("no result line: %v", err)
	}
}

// tlCollect 是实现了全部可选能力的接收器，检查分片运行照样转发给调用方。
type tlCollect struct{ recs, groups, rows int }

// WriteRecord 计数。
func (c *tlCollect) WriteRecord(*Record) error { c.recs++; return nil }

// BeginGroup 计数。
func (c *tlCollect) BeginGroup(Group) error { c.groups++; return nil }

// EndGroup 不做事。
func (c *tlCollect) EndGroup(Summary) error { return nil }

// Progress 不做事。
func (c *tlCollect) Progress(Progress) {}

// WriteTimeline 计数。
func (c *tlCollect) WriteTimeline(Timeline) error { c.rows++; return nil }

package shard_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/shard"
)

// podOutput 以真实的 shard.Run 对模拟器跑 count 片中的第 i 片（两组：c=2 与 c=4，每组 8 个请求），
// 像 bench 的 --shard-from-env 子进程那样写出 stdout：一行日志、逐请求记录（RecordWriter）、结果行。
// 返回输出、结果与记录行。
func podOutput(t *testing.T, tgt loadgen.Target, count, i int, groups []int) (string, *shard.Result, []string) {
	t.Helper()
	prof := loadgen.Profile{Concurrency: []int{2, 4}, InputLength: []int{16}, OutputLength: []int{4}, NumRequests: []int{8}}
	var recs bytes.Buffer
	rw := shard.NewRecordWriter(&recs)
	res, err := shard.Run(context.Background(), tgt, prof, loadgen.Shard{Index: i, Count: count, Groups: groups}, rw.Observer())
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.Flush(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	out.WriteString("INFO: a log line\n")
	out.Write(recs.Bytes())
	if err := shard.WriteResult(&out, res); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(recs.String(), "\n")
	return out.String(), res, lines[:len(lines)-1] // SplitAfter 在最后的换行之后留下一个空串
}

// TestReadOutput 读分片进程的完整输出（Pod 日志）：本片的记录行原样写出、结果行读出、记录完整时
// 没有缺口；别的分片的记录与结果行（共享的日志）不被认领；像 kubelet 轮转那样只剩最后几条记录、
// 夹着写了一半的行时，逐组点名缺口（分片、分组、条数与原因），结果行照样读到；没有结果行时报错。
func TestReadOutput(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", TTFT: time.Millisecond})
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: ep.BaseURLs, Model: "m"}, Provider: "emu"}
	out0, res0, recs0 := podOutput(t, tgt, 2, 0, nil)
	out1, _, recs1 := podOutput(t, tgt, 2, 1, nil)
	if len(recs0) != 8 || len(recs1) != 8 {
		t.Fatalf("%d and %d records, want 8 each (4 per group)", len(recs0), len(recs1))
	}
	t.Run("complete", func(t *testing.T) {
		var w bytes.Buffer
		o, err := shard.ReadOutput(strings.NewReader(out1+out0), shard.Source{Index: 0, Count: 2}, &w)
		if err != nil {
			t.Fatal(err)
		}
		if o.Result.Index != 0 || len(o.Result.Groups) != 2 || o.Records != 8 || len(o.Gaps) != 0 {
			t.Fatalf("result shard %d, %d groups, %d records, gaps %v; want shard 0, 2 groups, 8 records, no gaps", o.Result.Index, len(o.Result.Groups), o.Records, o.Gaps)
		}
		if w.String() != strings.Join(recs0, "") {
			t.Fatalf("records written:\n%s\nwant shard 0's lines:\n%s", w.String(), strings.Join(recs0, ""))
		}
		if o.Result.Profile != res0.Profile {
			t.Fatal("another result line was taken")
		}
	})
	t.Run("rotated", func(t *testing.T) {
		// 较早的 6 条记录被轮转掉（第 0 组 4 条全没了，第 1 组剩 2 条），外加一行写了一半的记录。
		log := strings.Join(recs0[6:], "") + `{"Group":{"Index":1,"Input` + "\n" + out0[strings.LastIndex(strings.TrimSuffix(out0, "\n"), "\n")+1:]
		o, err := shard.ReadOutput(strings.NewReader(log), shard.Source{Index: 0, Count: 2}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := []shard.RecordGap{{Shard: 0, Group: 0, Want: 4, Have: 0, Detail: "1 torn record lines"}, {Shard: 0, Group: 1, Want: 4, Have: 2, Detail: "1 torn record lines"}}
		if len(o.Gaps) != 2 || o.Gaps[0] != want[0] || o.Gaps[1] != want[1] || o.Records != 2 {
			t.Fatalf("gaps %v, %d records; want %v, 2 records", o.Gaps, o.Records, want)
		}
		if s := o.Gaps[1].String(); s != "shard 0 group 1: 2 of 4 per-request records (1 torn record lines)" {
			t.Fatalf("gap text %q", s)
		}
	})
	t.Run("per-group", func(t *testing.T) {
		// 每组一个 Job 时同一份日志（kwok 给每个容器同一个文件）里有第 1 片在两个 Job 里的输出：
		// 只认 only 为 [1] 的结果行与第 1 组的记录。
		outA, _, _ := podOutput(t, tgt, 2, 1, []int{0})
		outB, _, recsB := podOutput(t, tgt, 2, 1, []int{1})
		var w bytes.Buffer
		o, err := shard.ReadOutput(strings.NewReader(outB+outA), shard.Source{Index: 1, Count: 2, Groups: []int{1}}, &w)
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Result.Groups) != 1 || o.Result.Groups[0].Group != 1 || len(o.Gaps) != 0 || o.Records != 4 {
			t.Fatalf("groups %d, gaps %v, %d records; want group 1 only, no gaps, 4 records", len(o.Result.Groups), o.Gaps, o.Records)
		}
		if w.String() != strings.Join(recsB, "") {
			t.Fatalf("records written:\n%s\nwant group 1's:\n%s", w.String(), strings.Join(recsB, ""))
		}
	})
	t.Run("no-result", func(t *testing.T) {
		o, err := shard.ReadOutput(strings.NewReader(strings.Join(recs0, "")), shard.Source{Index: 0, Count: 2}, nil)
		if !errors.Is(err, loadgen.ErrBadShardResult) || o.Records != 8 {
			t.Fatalf("err %v, %d records; want ErrBadShardResult after counting 8 records", err, o.Records)
		}
	})
	t.Run("write-error", func(t *testing.T) {
		_, err := shard.ReadOutput(strings.NewReader(out0), shard.Source{Index: 0, Count: 2}, failWriter{})
		if err == nil || !strings.Contains(err.Error(), "shard: write records") {
			t.Fatalf("err %v, want the write error", err)
		}
	})
}

// failWriter 的写入总是失败。
type failWriter struct{}

// Write 返回错误。
func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestCheckRecords 核对单独交回的记录流（--shard-records 的文件）：完整时没有缺口；像写记录失败
// （磁盘满）那样少了最后两条时，点名第 1 组 2 of 4。
func TestCheckRecords(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", TTFT: time.Millisecond})
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: ep.BaseURLs, Model: "m"}, Provider: "emu"}
	_, res, recs := podOutput(t, tgt, 2, 1, nil)
	gaps, err := shard.CheckRecords(strings.NewReader(strings.Join(recs, "")), res)
	if err != nil || len(gaps) != 0 {
		t.Fatalf("complete stream: gaps %v, %v", gaps, err)
	}
	gaps, err = shard.CheckRecords(strings.NewReader(strings.Join(recs[:len(recs)-2], "")), res)
	want := shard.RecordGap{Shard: 1, Group: 1, Want: 4, Have: 2}
	if err != nil || len(gaps) != 1 || gaps[0] != want {
		t.Fatalf("short stream: gaps %v, %v; want [%v]", gaps, err, want)
	}
}

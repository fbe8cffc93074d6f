package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/shard"
)

// TestShardsDeliverRecordsToObservers 复现 issue 24 的遗留点"分片运行里导出器收不到逐请求事件"：
// 单进程回放 Mooncake 轨迹时，bench 自己的 workload 观察者（OnRecord）写出 sessions_*.csv，
// 每个请求一行；--shards 2 时子进程的记录只被当作 CSV 文本拼接成 requests_*.csv，父进程的观察者
// 一条 OnRecord 也收不到，sessions_ 与 workload_ 文件根本不存在。现在分片的逐请求记录在合并时
// 按发送时刻交给父进程的同一组观察者：两种运行写出的文件与行数相同。
func TestShardsDeliverRecordsToObservers(t *testing.T) {
	const n = 12
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"timestamp":%d,"input_length":8,"output_length":2,"hash_ids":[%d],"session_id":"s%d"}`+"\n", i*5, i%3, i)
	}
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(trace, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sessions := map[string][][]string{}
	for _, shards := range []string{"0", "2"} {
		dir := t.TempDir()
		var stderr bytes.Buffer
		err := run([]string{"prof", "-dt", "mooncake_trace", "-i", trace, "--trace-block-size", "8", "-c", "2",
			"--shards", shards, "-s", dir, "--quiet"}, &stderr)
		if err != nil {
			t.Fatalf("--shards %s: %v\n%s", shards, err, stderr.String())
		}
		ss := filesWithPrefix(t, dir, "sessions_")
		ws := filesWithPrefix(t, dir, "workload_")
		if len(ss) != 1 || len(ws) != 1 {
			t.Fatalf("--shards %s: sessions files %v, workload files %v (want one each)", shards, ss, ws)
		}
		rows := readCSV(t, ss[0])
		if len(rows) != n+1 {
			t.Fatalf("--shards %s: %d session rows, want %d", shards, len(rows)-1, n)
		}
		sessions[shards] = rows
		if shards != "0" {
			// 本机分片的记录文件逐个与结果行核对过：完整的运行没有缺口。
			ms, _ := filepath.Glob(filepath.Join(dir, "*.merge.json"))
			if len(ms) != 1 {
				t.Fatalf("merge files %v", ms)
			}
			b, _ := os.ReadFile(ms[0])
			var rep mergeReport
			if err := json.Unmarshal(b, &rep); err != nil || !rep.RecordsComplete || len(rep.RecordGaps) != 0 {
				t.Fatalf("--shards %s: merge report %s (%v), want records_complete and no gaps", shards, b, err)
			}
		}
		if w := readCSV(t, ws[0]); len(w) != 2 || w[1][5] != fmt.Sprint(n) {
			t.Fatalf("--shards %s: workload csv %v, want one row with Num_Prompts %d", shards, w, n)
		}
	}
	// 每个会话 id 恰好一行，两种运行的会话集合相同。
	ids := func(rows [][]string) map[string]int {
		m := map[string]int{}
		for _, r := range rows[1:] {
			m[r[5]]++
		}
		return m
	}
	one, two := ids(sessions["0"]), ids(sessions["2"])
	if len(two) != n || fmt.Sprint(one) != fmt.Sprint(two) {
		t.Fatalf("session ids: one process %v, --shards 2 %v", one, two)
	}
}

// TestCheckRecordFiles 核对本机分片的记录文件：两片真实的 shard.Run 各写自己的记录文件，完整时没有
// 缺口；第 1 片的文件丢了（子进程没能写它）时点名第 1 片第 0 组 0 of 3，并写明原因——逐请求 CSV
// 不会悄悄少行。
func TestCheckRecordFiles(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", TTFT: time.Millisecond})
	tgt := loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: ep.BaseURLs, Model: "m"}, Provider: "emu"}
	p := loadgen.Profile{Concurrency: []int{2}, InputLength: []int{16}, OutputLength: []int{4}, NumRequests: []int{6}}
	dir := t.TempDir()
	results := make([]*shard.Result, 2)
	files := make([]string, 2)
	for i := range 2 {
		files[i] = filepath.Join(dir, fmt.Sprintf("records-%d.jsonl", i))
		f, err := os.Create(files[i])
		if err != nil {
			t.Fatal(err)
		}
		rw := shard.NewRecordWriter(f)
		if results[i], err = shard.Run(context.Background(), tgt, p, loadgen.Shard{Index: i, Count: 2}, rw.Observer()); err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(rw.Flush(), f.Close()); err != nil {
			t.Fatal(err)
		}
	}
	if gaps := checkRecordFiles(results, files); len(gaps) != 0 {
		t.Fatalf("complete record files: gaps %v", gaps)
	}
	if err := os.Remove(files[1]); err != nil {
		t.Fatal(err)
	}
	gaps := checkRecordFiles(results, files)
	if len(gaps) != 1 || gaps[0].Shard != 1 || gaps[0].Group != 0 || gaps[0].Want != 3 || gaps[0].Have != 0 || !strings.Contains(gaps[0].Detail, "no such file") {
		t.Fatalf("gaps %v, want shard 1 group 0: 0 of 3 naming the missing file", gaps)
	}
}

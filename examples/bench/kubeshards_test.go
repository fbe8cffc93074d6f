package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/internal/kubetest"
	"github.com/vllm-cibench/cibench/loadgen/shard"
	"github.com/vllm-cibench/cibench/loadgen/shard/kubejob"
)

// kubeProfile 是 --kube-shards 测试的档位：两组（c=2、c=4），每组 8 个请求，所以每组一个 Job。
var kubeProfile = []string{"-c", "2,4", "-il", "16", "-ol", "4", "-n", "8", "--quiet"}

// childStdout 像 Indexed Job 的 Pod 那样运行 bench 的分片子进程（--shard-from-env，环境变量给出序号、
// 分片数、开始时刻与分组），返回它写到 stdout 的全部内容——也就是 Pod 日志。os.Stdout 临时换成一个
// 文件（子进程路径写的就是 os.Stdout），测试因此不能并行。
func childStdout(t *testing.T, index, count, group int, start time.Time) string {
	t.Helper()
	t.Setenv(kubejob.EnvShardIndex, strconv.Itoa(index))
	t.Setenv(kubejob.EnvShardCount, strconv.Itoa(count))
	t.Setenv(kubejob.EnvShardStart, start.UTC().Format(time.RFC3339Nano))
	t.Setenv(kubejob.EnvShardGroup, strconv.Itoa(group))
	f, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved := os.Stdout
	os.Stdout = f
	var stderr bytes.Buffer
	err = run(append([]string{"prof", "--shard-from-env"}, kubeProfile...), &stderr)
	os.Stdout = saved
	if err != nil {
		t.Fatalf("shard child %d group %d: %v\n%s", index, group, err, stderr.String())
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestKubeShardsWriteRequestCSV 复现 issue 24 的遗留点"Kubernetes 分片运行里导出器收不到逐请求事件"：
// --kube-shards 的 Pod 只交回结果行，父进程的观察者一条 OnRecord 也收不到，没有 requests_*.csv。
// 现在 Pod 里的分片子进程（--shard-from-env）把逐请求记录写在结果行之前，父进程从 Pod 日志里分出
// 它们，经 shard.Replay 写出逐请求 CSV：在真实的 kube-apiserver + kube-controller-manager + kwok 上，
// 两组、两片（每组一个 Job）的运行写出两个 requests_ 文件，各 8 行、序号 0..7 各一次，.merge.json 的
// records_complete 为 true。日志像被 kubelet 轮转过、分片 0 第 0 组只剩最后一条记录时，
// .merge.json 的 record_gaps 点名分片 0 第 0 组（1 of 4），records_complete 为 false，stderr 有 WARNING，
// 汇总仍完整（退出码 0）。
func TestKubeShardsWriteRequestCSV(t *testing.T) {
	c := kubetest.Start(t)
	t.Setenv("KUBECONFIG", c.Kubeconfig)
	start := time.Now()
	// 日志：各 (分片, 分组) 的子进程输出依次拼接（kwok 给每个容器同一个文件，收集方按序号与分组挑选）。
	var outs [2][2]string
	for g := range 2 {
		for i := range 2 {
			outs[i][g] = childStdout(t, i, 2, g, start)
		}
	}
	for _, tc := range []struct {
		name string
		keep int // ≥ 0 时分片 0 第 0 组只保留结果行之前的最后 keep 条记录
	}{{"complete", -1}, {"rotated", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			var log strings.Builder
			for g := range 2 {
				for i := range 2 {
					out := outs[i][g]
					if i == 0 && g == 0 && tc.keep >= 0 {
						lines := strings.SplitAfter(out, "\n")
						lines = lines[:len(lines)-1]
						recs, last := lines[:len(lines)-1], lines[len(lines)-1]
						out = strings.Join(recs[len(recs)-tc.keep:], "") + last
					}
					log.WriteString(out)
				}
			}
			c.SetPodLog(t, log.String())
			dir := t.TempDir()
			var stderr bytes.Buffer
			// 假集群（kwok）的 Pod 立即"运行"：不需要默认 60 秒的开始提前量（每组一个 Job，曾让这个测试等上 4 分钟）。
			args := append([]string{"prof", "--kube-shards", "2", "--kube-image", "cibench/bench:test", "--kube-start-delay", "2s", "-s", dir}, kubeProfile...)
			if err := run(args, &stderr); err != nil {
				t.Fatalf("--kube-shards: %v\n%s", err, stderr.String())
			}
			reqs := filesWithPrefix(t, dir, "requests_")
			if len(reqs) != 2 {
				t.Fatalf("requests files %v, want one per group\n%s", reqs, stderr.String())
			}
			rows := 0
			for g, f := range reqs {
				seen := map[string]int{}
				all := readCSV(t, f)
				if len(all) == 0 {
					t.Fatalf("%s is empty (no header, no rows)", f)
				}
				for _, r := range all[1:] {
					seen[r[0]]++
					rows++
				}
				want := 8
				if g == 0 && tc.keep >= 0 {
					want = 4 + tc.keep // 分片 1 的 4 条，加上分片 0 留下的
				}
				if len(seen) != want {
					t.Errorf("%s: %d distinct requests %v, want %d", f, len(seen), seen, want)
				}
			}
			ms, _ := filepath.Glob(filepath.Join(dir, "*.merge.json"))
			if len(ms) != 1 {
				t.Fatalf("merge files %v", ms)
			}
			b, err := os.ReadFile(ms[0])
			if err != nil {
				t.Fatal(err)
			}
			var rep mergeReport
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			if !rep.Complete {
				t.Fatalf("merge %s not complete", b)
			}
			if tc.keep < 0 {
				if !rep.RecordsComplete || len(rep.RecordGaps) != 0 || rows != 16 {
					t.Fatalf("records_complete %v, gaps %v, %d rows; want true, none, 16\n%s", rep.RecordsComplete, rep.RecordGaps, rows, stderr.String())
				}
				return
			}
			want := shard.RecordGap{Shard: 0, Group: 0, Want: 4, Have: tc.keep}
			if rep.RecordsComplete || len(rep.RecordGaps) != 1 || rep.RecordGaps[0] != want {
				t.Fatalf("records_complete %v, gaps %v; want false, [%v]", rep.RecordsComplete, rep.RecordGaps, want)
			}
			if !strings.Contains(stderr.String(), "WARNING: per-request records incomplete: shard 0 group 0: 1 of 4 per-request records") {
				t.Fatalf("stderr does not warn about the gap:\n%s", stderr.String())
			}
		})
	}
}

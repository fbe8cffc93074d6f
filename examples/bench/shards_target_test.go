package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/shard"
	"github.com/vllm-cibench/cibench/metrics"
)

// probeBody 认出 loadgen 的能力探测请求（max_tokens 或 max_completion_tokens 为 1）。
var probeBody = regexp.MustCompile(`"max_(completion_)?tokens":1[,}]`)

// countingEmulator 启动一个模拟器实例，外面包一层计数：只数压测请求（max_tokens 不是 1 的
// /v1/*completions 请求），每个进程开头那一个 max_tokens=1 的能力探测请求不算——它不是负载，
// 一个进程一个。返回实例的 base URL 与计数器。
func countingEmulator(t *testing.T, cfg emulator.Config) (string, *atomic.Int64) {
	t.Helper()
	em, err := emulator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	h := em.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "completions") && r.Method == http.MethodPost {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			r.Body = io.NopCloser(bytes.NewReader(body))
			if !probeBody.Match(body) {
				n.Add(1)
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", &n
}

// writeProvider 写一个 providers.yaml（acs-bench 格式），base_url 是列表。
func writeProvider(t *testing.T, id, key string, urls ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("providers:\n  - id: '" + id + "'\n    name: 'name-of-" + id + "'\n    api_key: '" + key + "'\n    base_url:\n")
	for _, u := range urls {
		b.WriteString("      - '" + u + "'\n")
	}
	b.WriteString("    model_name: 'm'\n    model_category: 'm'\n")
	p := filepath.Join(t.TempDir(), "providers.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// globCSV 读出 dir 下唯一一个匹配 glob 的 CSV：表头 → 列号，以及数据行。
func globCSV(t *testing.T, dir, glob string) (map[string]int, [][]string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, glob))
	if len(files) != 1 {
		t.Fatalf("%s in %s: %v (want exactly one)", glob, dir, files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 1 {
		t.Fatalf("%s: %d rows, %v", files[0], len(rows), err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	return col, rows[1:]
}

// TestShardsKeepAPIKey 复现 issue 22：带 API key 的 provider 用 --shards 2 跑时，子进程拿到的是
// --shard-target "URL|MODEL"，key 丢了，40 个请求全部 http 失败（401）。修好后与单进程一样全部成功，
// 且 key 不出现在任何子进程的命令行里（它经 0600 的 provider 文件交给子进程）。
func TestShardsKeepAPIKey(t *testing.T) {
	const key = "sk-shard-secret-7781"
	url, _ := countingEmulator(t, emulator.Config{Model: "m", APIKey: key})
	prov := writeProvider(t, "keyed", key, url)
	for _, shards := range []string{"0", "2"} {
		dir := t.TempDir()
		var stderr bytes.Buffer
		err := run([]string{"prof", "-p", prov, "-c", "4", "-il", "16", "-ol", "4", "-n", "40", "--shards", shards, "-s", dir, "--quiet"}, &stderr)
		if err != nil {
			t.Fatalf("--shards %s against a keyed provider: %v\n%s", shards, err, stderr.String())
		}
		col, rows := globCSV(t, dir, "summary_keyed_*.csv")
		if len(rows) != 1 || rows[0][col["Fail_Rate"]] != "0.000000" || rows[0][col["Num_Prompts"]] != "40" {
			t.Fatalf("--shards %s: Num_Prompts %s Fail_Rate %s, want 40 and 0", shards, rows[0][col["Num_Prompts"]], rows[0][col["Fail_Rate"]])
		}
		if strings.Contains(stderr.String(), key) {
			t.Fatalf("--shards %s: the API key reached stderr", shards)
		}
	}
}

// TestShardsSpreadInstancesAndProvider 复现 issue 22：两个实例时单进程各收到一半请求，
// --shards 2 却只用第一个 base_url（42/0）；合并 CSV 的 Provider 列写成 "emulator" 而不是 provider id。
// 修好后两种运行的每实例计数完全相同，Provider 列都是 provider id，逐请求 CSV 的 Instance 列分布相同。
func TestShardsSpreadInstancesAndProvider(t *testing.T) {
	u0, n0 := countingEmulator(t, emulator.Config{Model: "m"})
	u1, n1 := countingEmulator(t, emulator.Config{Model: "m"})
	prov := writeProvider(t, "twin", "EMPTY", u0, u1)
	type spread struct{ a, b int64 }
	var got [2]spread
	var inst [2]map[string]int
	for k, shards := range []string{"0", "2"} {
		n0.Store(0)
		n1.Store(0)
		dir := t.TempDir()
		var stderr bytes.Buffer
		err := run([]string{"prof", "-p", prov, "-c", "4", "-il", "16", "-ol", "4", "-n", "41", "--shards", shards, "-s", dir, "--quiet"}, &stderr)
		if err != nil {
			t.Fatalf("--shards %s: %v\n%s", shards, err, stderr.String())
		}
		got[k] = spread{n0.Load(), n1.Load()}
		col, rows := globCSV(t, dir, "summary_twin_*.csv")
		if p := rows[0][col["Provider"]]; p != "twin" {
			t.Errorf("--shards %s: Provider column %q, want the provider id \"twin\"", shards, p)
		}
		rcol, recs := globCSV(t, dir, "requests_twin_*.csv")
		if len(recs) != 41 {
			t.Fatalf("--shards %s: %d per-request rows, want 41", shards, len(recs))
		}
		inst[k] = map[string]int{}
		for _, r := range recs {
			inst[k][r[rcol["Instance"]]]++
		}
	}
	if got[0] != got[1] || got[0].a+got[0].b != 41 {
		t.Fatalf("requests per instance: one process %d/%d, --shards 2 %d/%d (want equal, 41 in all)", got[0].a, got[0].b, got[1].a, got[1].b)
	}
	if inst[0]["0"] != inst[1]["0"] || inst[0]["1"] != inst[1]["1"] || inst[0]["0"] != 21 {
		t.Fatalf("Instance column: one process %v, --shards 2 %v (want 21/20 in both)", inst[0], inst[1])
	}
	t.Logf("per instance: one process %d/%d, --shards 2 %d/%d; Instance column %v vs %v", got[0].a, got[0].b, got[1].a, got[1].b, inst[0], inst[1])

}

// childPID 在 /proc 里找本测试进程的、命令行含 "--shard-index\x00<i>" 的子进程（--shards 启动的分片）。
func childPID(i int) int {
	ents, _ := os.ReadDir("/proc")
	want := []byte("--shard-index\x00" + strconv.Itoa(i) + "\x00")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// stat: "pid (comm) state ppid ..."；comm 可能含空格，从最后一个 ')' 之后取。
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		f := strings.Fields(string(rest))
		if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(cmd, want) {
			return pid
		}
	}
	return 0
}

// TestShardsKilledChildMarkedIncomplete 复现 issue 22：一个 --shards 子进程被 SIGKILL 后，合并的
// 汇总 CSV 看起来完整（Num_Prompts 少了、Fail_Rate 0），只有 stderr 说 "INCOMPLETE: interrupted"。
// 现在：退出码非零；stderr 点名 "shard 1: killed (signal: killed)"；旁文件 .merge.json 写着
// complete=false 与缺失的分片 1（原因 killed）；.INCOMPLETE 标记文件存在；汇总 CSV 的表头仍与
// acs-bench 逐字节相同。
func TestShardsKilledChildMarkedIncomplete(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to find the shard child")
	}
	url, served := countingEmulator(t, emulator.Config{Model: "m", TTFT: 150 * time.Millisecond})
	prov := writeProvider(t, "victim", "EMPTY", url)
	dir := t.TempDir()
	done := make(chan struct{})
	killed := make(chan int, 1)
	go func() {
		defer close(killed)
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if served.Load() < 4 {
				continue // 让两片都开始发请求之后再杀
			}
			if pid := childPID(1); pid > 0 {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					killed <- pid
					return
				}
			}
		}
	}()
	var stderr bytes.Buffer
	err := run([]string{"prof", "-p", prov, "-c", "4", "-il", "16", "-ol", "2", "-n", "40", "--shards", "2", "-s", dir, "--quiet"}, &stderr)
	close(done)
	if _, ok := <-killed; !ok {
		t.Fatalf("shard 1 was never found and killed (run: %v)\n%s", err, stderr.String())
	}
	if !errors.Is(err, shard.ErrMissing) {
		t.Fatalf("run with a SIGKILLed shard: err = %v, want ErrShardMissing (non-zero exit)\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "shard 1: killed (signal: killed)") || strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("stderr does not name shard 1 as killed (or says interrupted):\n%s", stderr.String())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "summary_victim_*.merge.json"))
	if len(files) != 1 {
		t.Fatalf("merge report files %v", files)
	}
	b, _ := os.ReadFile(files[0])
	var rep mergeReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Complete || len(rep.Missing) != 1 || rep.Missing[0].Shard != 1 || rep.Missing[0].Reason != loadgen.LossKilled ||
		len(rep.Groups) != 1 || rep.Groups[0].Complete || len(rep.Groups[0].Missing) != 1 || rep.Groups[0].Missing[0].Shard != 1 {
		t.Fatalf("merge report:\n%s", b)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "summary_victim_*.INCOMPLETE")); len(m) != 1 {
		t.Fatalf("no .INCOMPLETE marker: %v", m)
	}
	sums, _ := filepath.Glob(filepath.Join(dir, "summary_victim_*.csv"))
	head, _ := os.ReadFile(sums[0])
	if first, _, _ := strings.Cut(string(head), "\n"); first != metrics.SummaryHeader {
		t.Fatalf("summary header changed:\n%s", first)
	}
}

// TestBenchMergeManualShards 像用户一样手动启动两个分片进程（--shard-index/--shard-count/--shard-start，
// 结果行重定向到文件，--shard-records 写逐请求记录），再用 bench merge 合并：产物与单进程的只差时间列——
// 行数、请求数、Provider、每实例的分布相同。只给一个分片时合并标为不完整、返回错误；混入另一次
// 压测的结果时拒绝并点名两个文件。
func TestBenchMergeManualShards(t *testing.T) {
	u0, _ := countingEmulator(t, emulator.Config{Model: "m"})
	u1, _ := countingEmulator(t, emulator.Config{Model: "m"})
	prov := writeProvider(t, "manual", "EMPTY", u0, u1)
	common := []string{"prof", "-p", prov, "-c", "4", "-il", "16", "-ol", "4", "-n", "41", "--quiet"}

	one := t.TempDir()
	var stderr bytes.Buffer
	if err := run(append(slices.Clone(common), "-s", one), &stderr); err != nil {
		t.Fatalf("one process: %v\n%s", err, stderr.String())
	}

	work := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(4 * time.Second).UTC().Format(time.RFC3339Nano)
	var results, records []string
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		res := filepath.Join(work, fmt.Sprintf("shard%d.json", i))
		rec := filepath.Join(work, fmt.Sprintf("records%d.jsonl", i))
		results, records = append(results, res), append(records, rec)
		cmd := exec.Command(exe, append(slices.Clone(common), "--shard-index", strconv.Itoa(i), "--shard-count", "2", "--shard-start", start, "--shard-records", rec)...)
		cmd.Env = append(os.Environ(), asMainEnv+"=1")
		out, err := os.Create(res)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout = out
		var eb bytes.Buffer
		cmd.Stderr = &eb
		wg.Go(func() {
			defer out.Close()
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("shard %d: %v: %s", i, err, eb.String())
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	merged := t.TempDir()
	stderr.Reset()
	if err := run(append([]string{"merge", "-s", merged, "--records", strings.Join(records, ",")}, results...), &stderr); err != nil {
		t.Fatalf("bench merge: %v\n%s", err, stderr.String())
	}
	c1, r1 := globCSV(t, one, "summary_manual_*.csv")
	c2, r2 := globCSV(t, merged, "summary_manual_*.csv")
	for _, name := range []string{"Num_Prompts", "Provider", "Concurrency", "Input_Length", "Output_Length", "Fail_Rate", "Backend", "Rounds"} {
		if r1[0][c1[name]] != r2[0][c2[name]] {
			t.Errorf("%s: one process %q, merged %q", name, r1[0][c1[name]], r2[0][c2[name]])
		}
	}
	q1, rows1 := globCSV(t, one, "requests_manual_*.csv")
	q2, rows2 := globCSV(t, merged, "requests_manual_*.csv")
	spread := func(col map[string]int, rows [][]string) map[string]int {
		m := map[string]int{}
		for _, r := range rows {
			m[r[col["Instance"]]+"/"+r[col["Success"]]]++
		}
		return m
	}
	if s1, s2 := spread(q1, rows1), spread(q2, rows2); len(rows1) != 41 || len(rows2) != 41 || fmt.Sprint(s1) != fmt.Sprint(s2) {
		t.Fatalf("per-request rows: one process %d %v, merged %d %v", len(rows1), s1, len(rows2), s2)
	}
	for k := 1; k < len(rows2); k++ {
		if rows2[k][q2["Send_Time"]] < rows2[k-1][q2["Send_Time"]] {
			t.Fatalf("merged per-request CSV not ordered by send time at row %d", k)
		}
	}

	// 记录文件逐片核对过：完整。只给分片 0 的记录文件时，分片 1 的记录缺口被点名（0 of 20），
	// records_complete 为 false——逐请求 CSV 少了一半，不会被当成完整的。
	if rep := readMergeReport(t, merged); !rep.RecordsComplete || len(rep.RecordGaps) != 0 {
		t.Fatalf("merge with both record files: records_complete %v, gaps %v", rep.RecordsComplete, rep.RecordGaps)
	}
	short := t.TempDir()
	stderr.Reset()
	if err := run(append([]string{"merge", "-s", short, "--records", records[0]}, results...), &stderr); err != nil {
		t.Fatalf("bench merge: %v\n%s", err, stderr.String())
	}
	if rep := readMergeReport(t, short); rep.RecordsComplete || len(rep.RecordGaps) != 1 ||
		rep.RecordGaps[0] != (shard.RecordGap{Shard: 1, Group: 0, Want: 20, Have: 0}) || !strings.Contains(stderr.String(), "WARNING: per-request records incomplete: shard 1 group 0: 0 of 20") {
		t.Fatalf("merge with shard 0's records only: %+v\n%s", rep, stderr.String())
	}

	// 只有一个分片：不完整，退出码非零，分片 1 被点名（没有交回结果）。
	part := t.TempDir()
	stderr.Reset()
	err = run([]string{"merge", "-s", part, results[0]}, &stderr)
	if !errors.Is(err, shard.ErrMissing) || !strings.Contains(stderr.String(), "shard 1: no_result") {
		t.Fatalf("merge of one of two shards: %v\n%s", err, stderr.String())
	}
	if m, _ := filepath.Glob(filepath.Join(part, "summary_manual_*.INCOMPLETE")); len(m) != 1 {
		t.Fatalf("no .INCOMPLETE marker for a one-of-two merge: %v", m)
	}
	// 没有 --records：不写空的逐请求 CSV，免得被读成"零个请求"。
	if m, _ := filepath.Glob(filepath.Join(part, "requests_*")); len(m) != 0 {
		t.Fatalf("merge without --records wrote per-request files %v", m)
	}

	// 另一次压测（不同的 -n）的分片 1：拒绝，点名两个文件。
	other := filepath.Join(work, "other.json")
	cmd := exec.Command(exe, "prof", "-p", prov, "-c", "4", "-il", "16", "-ol", "4", "-n", "40", "--quiet", "--shard-index", "1", "--shard-count", "2", "--shard-start", start)
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("other run: %v", err)
	}
	if err := os.WriteFile(other, out, 0o644); err != nil {
		t.Fatal(err)
	}
	err = run([]string{"merge", "-s", t.TempDir(), results[0], other}, &bytes.Buffer{})
	if !errors.Is(err, shard.ErrMismatch) || !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), results[0]) {
		t.Fatalf("mismatched merge: %v, want ErrShardMismatch naming both files", err)
	}
}

// TestShardsUnreachableNamed 验证连不上服务的分片被如实归类为 unreachable（而不是笼统的失败或
// "interrupted"）：--shards 2 指向一个拒绝连接的端口，退出码非零，.merge.json 的 complete 为 false、
// 两个分片的原因都是 unreachable，没有任何一组数据时不引用不存在的汇总 CSV。
func TestShardsUnreachableNamed(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL + "/v1"
	dead.Close()
	prov := writeProvider(t, "dead", "EMPTY", url)
	dir := t.TempDir()
	var stderr bytes.Buffer
	err := run([]string{"prof", "-p", prov, "-c", "2", "-il", "16", "-ol", "4", "-n", "4", "--shards", "2", "--timeout", "5", "-s", dir, "--quiet"}, &stderr)
	if !errors.Is(err, shard.ErrMissing) {
		t.Fatalf("err = %v, want ErrShardMissing\n%s", err, stderr.String())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "summary_dead_*.merge.json"))
	if len(files) != 1 {
		t.Fatalf("merge reports %v", files)
	}
	b, _ := os.ReadFile(files[0])
	var rep mergeReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Complete || rep.Summary != "" || len(rep.Missing) != 2 || rep.Missing[0].Reason != loadgen.LossUnreachable || rep.Missing[1].Reason != loadgen.LossUnreachable {
		t.Fatalf("merge report:\n%s", b)
	}
}

// readMergeReport 读 dir 里唯一的 .merge.json。
func readMergeReport(t *testing.T, dir string) mergeReport {
	t.Helper()
	ms, _ := filepath.Glob(filepath.Join(dir, "*.merge.json"))
	if len(ms) != 1 {
		t.Fatalf("merge files in %s: %v", dir, ms)
	}
	b, err := os.ReadFile(ms[0])
	if err != nil {
		t.Fatal(err)
	}
	var rep mergeReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%s: %v", ms[0], err)
	}
	return rep
}

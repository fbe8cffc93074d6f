package main

import (
	"bytes"
	"encoding/csv"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vllm-cibench/cibench/deploy/emulator"
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

package main

import (
	"bytes"
	"encoding/csv"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
)

// slowProvider 启动每个请求首 token 前固定等待 ttft 的模拟器，返回指向它的 providers.yaml。
// 固定延迟让各分片完成一组的时刻按各自的请求数确定地错开，不依赖机器忙闲。
func slowProvider(t *testing.T, ttft time.Duration) string {
	t.Helper()
	em, err := deploy.NewEmulator(deploy.EmulatorConfig{Model: "m", TTFT: ttft})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(em.Handler())
	t.Cleanup(srv.Close)
	prov := filepath.Join(t.TempDir(), "providers.yaml")
	yml := "providers:\n  - id: 'slow'\n    name: 'slow'\n    api_key: 'EMPTY'\n    base_url: '" + srv.URL + "/v1'\n    model_name: 'm'\n    model_category: 'm'\n"
	if err := os.WriteFile(prov, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	return prov
}

// TestLocalShardsAlignLaterGroups 复现 issue 16：两组的本机分片运行里，第一组三个请求分给两个
// 分片（分片 0 两个、分片 1 一个，每个 1.2 秒），分片 1 早 1.2 秒跑完第一组。没有组间屏障时它
// 立刻开始第二组，合并以 "shard start skew too large: group 1" 拒绝；有屏障时第二组在两个分片
// 都就绪后同时开始，合并成功且偏差远小于 1 秒。分片子进程是测试二进制自身（见 TestMain）。
func TestLocalShardsAlignLaterGroups(t *testing.T) {
	prov := slowProvider(t, 1200*time.Millisecond)
	dir := t.TempDir()
	var stderr bytes.Buffer
	err := run([]string{"prof", "-p", prov, "-c", "2,4", "-il", "16", "-ol", "2", "-n", "3,4", "--shards", "2", "-s", dir, "--quiet"}, &stderr)
	if err != nil {
		t.Fatalf("sharded two-group run: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"merged group 0 from shards [0 1]", "merged group 1 from shards [0 1]"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if _, rest, ok := strings.Cut(line, "start skew "); ok {
			d, err := time.ParseDuration(strings.TrimSuffix(strings.Fields(rest)[0], ","))
			if err != nil || d > 500*time.Millisecond {
				t.Errorf("skew in %q: %v (%v), want < 500ms", line, d, err)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "summary_slow_*.csv"))
	if len(files) != 1 {
		t.Fatalf("summary files %v", files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("summary rows %d (want header + 2): %v", len(rows), err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	c, ok := col["Concurrency"]
	if !ok {
		t.Fatalf("no Concurrency column in %v", rows[0])
	}
	if rows[1][c] != "2" || rows[2][c] != "4" {
		t.Fatalf("concurrency column %q %q, want 2 and 4", rows[1][c], rows[2][c])
	}
}

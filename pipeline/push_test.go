package pipeline_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/runtype"

	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/metrics"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
)

// pushToken 是测试用的 Pushgateway bearer token；它不得出现在任何产物中。
const pushToken = "pgw-token-9f8e7d6c5b4a"

// TestDailyRunPushesWithBearerToken 用一个真实的回环 HTTP 服务记录推送请求：
// 每日运行带着 PushAuth 中的 bearer token 以 PUT 推送到 /metrics/job/…，
// 请求体含功能与性能指标；token 不出现在日志与产物中；PR 运行不发任何请求。
func TestDailyRunPushesWithBearerToken(t *testing.T) {
	var (
		mu     sync.Mutex
		auths  []string
		paths  []string
		bodies []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		paths = append(paths, r.Method+" "+r.URL.Path)
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	root := t.TempDir()
	// 与 examples/ci 的 main 相同：日志经过整次运行共用的脱敏器写出。
	var logs bytes.Buffer
	red := report.NewSecrets()
	logw := red.Writer(&logs)
	for _, rt := range []matrix.RunType{runtype.PR, runtype.Daily} {
		o := options(t, tree("emu"), rt, root)
		o.PushURL = srv.URL
		o.PushAuth = metrics.PushConfigFromEnv(func(k string) string {
			if k == metrics.EnvPushgatewayToken {
				return pushToken
			}
			return ""
		}, metrics.PushConfig{})
		o.Secrets = red
		o.Logger = slog.New(slog.NewTextHandler(logw, nil))
		out, err := pipeline.Run(context.Background(), o)
		if err != nil || out.ExitCode != gate.ExitOK {
			t.Fatalf("%s run: exit %d err %v: %s", rt, out.ExitCode, err, o.Out)
		}
		mu.Lock()
		n := len(paths)
		mu.Unlock()
		if rt == runtype.PR && n != 0 {
			t.Fatalf("PR run pushed %d requests: %v", n, paths)
		}
		if rt == runtype.Daily {
			assertNoToken(t, out.Dir)
		}
	}
	if err := logw.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "push") {
		t.Errorf("driver log does not mention the push:\n%s", logs.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) == 0 {
		t.Fatal("daily run pushed nothing")
	}
	for i, p := range paths {
		if !strings.HasPrefix(p, "PUT /metrics/job/") || !strings.Contains(p, "/scenario/emu") {
			t.Errorf("push %d: %s", i, p)
		}
		if auths[i] != "Bearer "+pushToken {
			t.Errorf("push %d: Authorization %q", i, auths[i])
		}
	}
	all := strings.Join(bodies, "\n")
	for _, want := range []string{"functional_pass_ratio", "functional_case_pass", "perf_requests_per_second"} {
		if !strings.Contains(all, want) {
			t.Errorf("pushed body lacks %s", want)
		}
	}
	if strings.Contains(logs.String(), pushToken) {
		t.Error("push token leaked into the driver log")
	}
}

// assertNoToken 确认运行目录下没有任何文件含有 pushToken。
func assertNoToken(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(pushToken)) {
			t.Errorf("push token found in %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

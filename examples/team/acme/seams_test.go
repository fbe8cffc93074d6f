package acme_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"example.com/team/acme"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/perfreport"
)

// runFleet 只运行场景 acme-fleet（ACME 自己的部署方式），返回 Run 的错误（配置错误时）或结果。
func runFleet(t *testing.T, cfg fs.FS, stages ...report.Stage) (run, error) {
	t.Helper()
	o := pipeline.Options{
		Selection: pipeline.Selection{Config: cfg, ConfigRoot: "configs", Scenarios: []string{"acme-fleet"}, Stages: stages},
		Outputs:   pipeline.Outputs{Artifacts: t.TempDir(), Retention: -1},
	}
	if err := acme.Apply(&o, acme.DefaultSettings()); err != nil {
		t.Fatal(err)
	}
	out, err := pipeline.Run(context.Background(), o)
	if err != nil {
		return run{}, err
	}
	r := run{out: out}
	b, err := os.ReadFile(filepath.Join(out.Dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r.summary); err != nil {
		t.Fatal(err)
	}
	return r, nil
}

// TestTeamDeployerLoadShapesAndParams 是 issue #30 的“完成”条件，在一个独立模块里只经公开 API：
// 团队的部署方式（场景 YAML 的 mode: acme-fleet 与 acme_fleet: 块）由参考流水线运行；团队的到达
// 过程（acme-burst：每 4 个请求同一时刻）与 embeddings 端点的压测（acme-embeddings）经 PerfShaper
// 进入性能阶段；用例 acme/greeting 读功能配置里的 params.acme/greeting。
func TestTeamDeployerLoadShapesAndParams(t *testing.T) {
	r, err := runFleet(t, tree(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if r.out.ExitCode != gate.ExitOK {
		t.Fatalf("exit %d, gates %+v", r.out.ExitCode, r.summary.Gates)
	}
	sc := r.summary.Scenarios[0]
	if sc.Name != "acme-fleet" || len(sc.Errors) != 0 {
		t.Fatalf("scenario %s errors %+v", sc.Name, sc.Errors)
	}
	// 部署方式：两份副本都在服务（日志由 ACME 的 ArchiveLogs 按副本归档，每份都收到了请求）。
	embeddingsHits := 0
	for _, rep := range []string{"replica-0", "replica-1"} {
		b, err := os.ReadFile(filepath.Join(r.out.Dir, "acme-fleet", "logs", rep, "emulator-access.log"))
		if err != nil {
			t.Fatalf("%s: %v", rep, err)
		}
		if !strings.Contains(string(b), "/v1/chat/completions") {
			t.Errorf("%s served no chat request", rep)
		}
		embeddingsHits += strings.Count(string(b), "/v1/embeddings")
	}
	// 到达过程：32 个请求、8 个计划到达时刻（每批 4 个）。
	exp := readExport(t, filepath.Join(r.out.Dir, "acme-fleet", "perf", acme.ProfileBurst, "acme_requests.json"))
	if exp.Requests != 32 || exp.Arrivals != 32/acme.BurstSize || exp.Failed != 0 {
		t.Fatalf("acme-burst export %+v, want 32 requests in %d arrivals", exp, 32/acme.BurstSize)
	}
	// embeddings：16 个请求全部成功，落在 /v1/embeddings；没有生成 token（TPOT 不可测）。
	rows, err := perfreport.Rows(sc)
	if err != nil {
		t.Fatal(err)
	}
	var emb *loadgen.Summary
	for i := range rows {
		if rows[i].InputLength == 16 {
			emb = &rows[i]
		}
	}
	if emb == nil || emb.Succeeded != 16 || emb.Failed != 0 || embeddingsHits != 16 {
		t.Fatalf("embeddings row %+v, %d requests in the access logs", emb, embeddingsHits)
	}
	// 用例参数：prompt 与 max_tokens 来自 tests/functional/acme.yaml。
	c := r.caseResult(t, "acme/greeting")
	if c.Status != functional.StatusPass || !strings.Contains(c.Reason, `prompt "Greet the ACME on-call engineer.", 5 tokens`) {
		t.Fatalf("acme/greeting = %s %q", c.Status, c.Reason)
	}
}

// readExport 读 ACME 导出器写出的计数文件。
func readExport(t *testing.T, p string) struct{ Requests, Failed, Arrivals int } {
	t.Helper()
	var e struct{ Requests, Failed, Arrivals int }
	b, err := os.ReadFile(p)
	if err == nil {
		err = json.Unmarshal(b, &e)
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestTeamSeamsBrokenVariants 是上面每个故事的坏版本，每个都必须变红或在运行前报错（带文件:行）：
// 部署块越界、拼错部署块的键、拼错用例参数的键、用例参数让断言失败。
func TestTeamSeamsBrokenVariants(t *testing.T) {
	fleet := func(block string) string {
		return "mode: acme-fleet\nserved_model_name: acme-model\nfeatures: [acme_lora]\nacme_fleet:\n" + block
	}
	for _, tc := range []struct {
		name, file, content string
		want                []string
	}{
		{"replicas out of range", "scenarios/acme-fleet.yaml", fleet("  replicas: 9\n"), []string{"scenarios/acme-fleet.yaml:5:", "replicas", "must be in [1, 4]"}},
		{"misspelt deploy key", "scenarios/acme-fleet.yaml", fleet("  replicaz: 2\n"), []string{"scenarios/acme-fleet.yaml:5:", "replicaz"}},
		{"misspelt case param", "tests/functional/acme.yaml", "params:\n  acme/greeting:\n    max_tokenz: 5\n", []string{"tests/functional/acme.yaml:3:", "max_tokenz"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runFleet(t, tree(t, map[string]string{tc.file: tc.content}))
			if !errors.Is(err, pipeline.ErrConfig) {
				t.Fatalf("err = %v, want ErrConfig before anything runs", err)
			}
			contains(t, "error", err.Error(), tc.want...)
		})
	}
	t.Run("param makes the case fail", func(t *testing.T) {
		r, err := runFleet(t, tree(t, map[string]string{"tests/functional/acme.yaml": "params:\n  acme/greeting:\n    must_contain: zebra-unlikely\n"}), report.StageFunctional)
		if err != nil {
			t.Fatal(err)
		}
		c := r.caseResult(t, "acme/greeting")
		if c.Status != functional.StatusFail || !strings.Contains(c.Reason, `does not contain "zebra-unlikely"`) || r.out.ExitCode != gate.ExitGateFailed {
			t.Fatalf("acme/greeting = %s %q, exit %d", c.Status, c.Reason, r.out.ExitCode)
		}
	})
}

// TestBurstPacer 核对成批到达的时刻表：每批 size 个同一时刻，批间隔 size/rate，平均速率 rate；
// rate 为 0 时不安排到达。
func TestBurstPacer(t *testing.T) {
	p := acme.BurstPacer(4, 100) // 每 40ms 一批
	var at time.Duration
	var times []time.Duration
	for hits := uint64(0); hits < 12; hits++ {
		wait, stop := p.Pace(at, hits)
		if stop {
			t.Fatal("stopped early")
		}
		at += wait
		times = append(times, at)
	}
	for i, got := range times {
		if want := time.Duration(i/4) * 40 * time.Millisecond; got != want {
			t.Fatalf("arrival %d at %v, want %v (all: %v)", i, got, want, times)
		}
	}
	if _, stop := acme.BurstPacer(4, 0).Pace(0, 0); !stop {
		t.Fatal("rate 0 should stop")
	}
}

package pipeline_test

import (
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/runtype"
)

// externalTree 复制出厂配置树，加一个 mode: external 的场景 ext_spec，指向 baseURL：PR 运行用
// 需求自己的 PR 档（pr: {}，即 tests/perf/profiles/pr.yaml 与出厂门禁），每日运行也用 pr 档
// （perf.profiles: [pr]）以便组合相同。只跑性能阶段，让基准专注于门禁。
func externalTree(b *testing.B, baseURL string) fs.FS {
	b.Helper()
	src := os.DirFS("../configs")
	tree := fstest.MapFS{}
	err := fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		tree[p] = &fstest.MapFile{Data: data}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	m := string(tree["matrix.yaml"].Data)
	m = strings.Replace(m, "\nscenarios:\n", `
scenarios:
  ext_spec:
    default: false
    pr:
      functional: {enabled: false}
      accuracy: {enabled: false}
    daily:
      functional: {enabled: false}
      accuracy: {enabled: false}
      perf: {profiles: [pr]}
`, 1)
	tree["matrix.yaml"] = &fstest.MapFile{Data: []byte(m)}
	tree["scenarios/ext_spec.yaml"] = &fstest.MapFile{Data: []byte("description: external server with the spec's PR profile\nmode: external\nserved_model_name: " +
		emulator.DefaultModel + "\nquant: none\nbase_url: " + baseURL + "\n")}
	return tree
}

// BenchmarkShippedGateDefaultsExternal 是 issue 29 第 1 部分的端到端核对：一个"真实"的外部服务
// （独立的模拟器：TTFT 中位数 200 ms、对数正态 σ=0.35 的右尾，ITL 30 ms、σ=0.1，时间整体缩小
// CIBENCH_GATE_SCALE 倍，默认 30，即 TTFT 6.7 ms、ITL 1 ms——TTFT 与解码时间之比与真实服务相同），出厂配置，
// 需求的 PR 档（每组合 16/32/64 个请求），两个 `yes >/dev/null` 忙循环在旁边。先跑一次每日运行
// 作为基线，再跑 N 次没有变化的 PR（误报 = 任何性能门禁失败）、N 次 TTFT +30% 的 PR（检出 =
// 有 ttft_p99_seconds 门禁失败）与 N 次 ITL +30% 的 PR（检出 = 有 e2e_p99_seconds 门禁失败）。
// N 默认 6（CIBENCH_GATE_RUNS）。目标：误报 0/N，两种回归各 N/N，且变红的是该变红的门禁。
//
//	go test -run '^$' -bench ShippedGateDefaultsExternal -benchtime 1x -timeout 2h ./pipeline
func BenchmarkShippedGateDefaultsExternal(b *testing.B) {
	runs := envPositive(b, "CIBENCH_GATE_RUNS", 6)
	scale := envPositive(b, "CIBENCH_GATE_SCALE", 30)
	base := emulator.Config{TTFT: 200 * time.Millisecond / time.Duration(scale), TTFTSigma: 0.35, ITL: 30 * time.Millisecond / time.Duration(scale),
		ITLSigma: 0.1, MaxModelLen: 65536, Seed: 3}
	start := func(c emulator.Config) fs.FS {
		_, ep := emulator.Start(b, c)
		return externalTree(b, ep.BaseURL())
	}
	same := start(base)
	slowTTFT := base
	slowTTFT.TTFT, slowTTFT.Seed = base.TTFT*13/10, 4
	slowITL := base
	slowITL.ITL, slowITL.Seed = base.ITL*13/10, 5
	ttftTree, itlTree := start(slowTTFT), start(slowITL)
	run := func(tree fs.FS, rt matrix.RunType, root string) []string {
		o := gateOptions(tree, rt, root)
		o.Scenarios = []string{"ext_spec"}
		out := gateRunOptions(b, o)
		if rt == runtype.Daily && out.ExitCode != gate.ExitOK {
			b.Fatalf("daily baseline: exit %d", out.ExitCode)
		}
		return perfGateFailures(b, out, "")
	}
	for range b.N {
		stop := busyLoops(b, 2)
		root := b.TempDir()
		run(same, runtype.Daily, root)
		falseAlarms, ttftHit, itlHit, wrong := 0, 0, 0, 0
		for i := range runs {
			if red := run(same, runtype.PR, root); len(red) > 0 {
				falseAlarms++
				b.Logf("unchanged PR run %d: false alarm %v", i+1, red)
			}
		}
		for i := range runs {
			red := run(ttftTree, runtype.PR, root)
			if has(red, gate.MetricTTFTP99) {
				ttftHit++
			} else {
				b.Logf("PR run %d with TTFT +30%%: not caught %v", i+1, red)
			}
			if has(red, gate.MetricE2EP99) {
				wrong++
				b.Logf("PR run %d with TTFT +30%%: E2E also red %v", i+1, red)
			}
		}
		for i := range runs {
			red := run(itlTree, runtype.PR, root)
			if has(red, gate.MetricE2EP99) {
				itlHit++
			} else {
				b.Logf("PR run %d with ITL +30%%: not caught %v", i+1, red)
			}
			if has(red, gate.MetricTTFTP99) {
				wrong++
				b.Logf("PR run %d with ITL +30%%: TTFT also red %v", i+1, red)
			}
		}
		stop()
		b.ReportMetric(float64(falseAlarms), "false_alarms")
		b.ReportMetric(float64(ttftHit), "ttft_detected")
		b.ReportMetric(float64(itlHit), "itl_detected")
		b.ReportMetric(float64(wrong), "wrong_gate")
		b.ReportMetric(float64(runs), "runs")
		if falseAlarms > 0 || ttftHit < runs || itlHit < runs {
			b.Errorf("external server, spec PR profile: %d false alarm(s) in %d unchanged PR runs (want 0); TTFT +30%% caught %d/%d, ITL +30%% caught %d/%d (want all)",
				falseAlarms, runs, ttftHit, runs, itlHit, runs)
		}
	}
}

// has 报告失败门禁名里是否有指标 metric 的门禁。
func has(red []string, metric string) bool {
	for _, r := range red {
		if strings.Contains(r, "/"+metric+" ") {
			return true
		}
	}
	return false
}

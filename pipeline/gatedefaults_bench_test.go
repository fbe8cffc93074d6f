package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/internal/kubestandin"
	"github.com/vllm-cibench/cibench/runtype"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
)

// BenchmarkShippedGateDefaults 检查出厂门禁默认值（configs/matrix.yaml 的 defaults.gates 与
// emulator 场景的档位）"不误报、真回归必报"：在两个 `yes >/dev/null` 忙循环旁边，先跑一次每日
// 运行作为基线，再跑 N 次没有任何变化的 PR 运行（误报 = 任何一项性能门禁失败）、N 次模拟器
// TTFT 慢 30% 的 PR 运行（检出 = 至少一项 ttft_p99_seconds 门禁失败）与 N 次 ITL 慢 30% 的
// PR 运行（检出 = e2e_p99_seconds 门禁失败，且 TTFT 门禁不红）。N 默认 6，可用环境
// 变量 CIBENCH_GATE_RUNS 改。目标：误报 0/N，检出 N/N；不满足时基准报错并给出每次的数字。
//
//	go test -run '^$' -bench ShippedGateDefaults -benchtime 1x ./pipeline
//
// 这是一个基准而不是单元测试：它量的是整条流水线在繁忙机器上的统计性质，耗时几分钟，
// 结果取决于机器的负载（报告里要写明测量时的 load average）。
func BenchmarkShippedGateDefaults(b *testing.B) {
	runs := envPositive(b, "CIBENCH_GATE_RUNS", 6)
	configs := os.DirFS("../configs")
	for range b.N {
		stop := busyLoops(b, 2)
		root := b.TempDir()
		out := gateRun(b, configs, runtype.Daily, root, nil)
		if out.ExitCode != gate.ExitOK {
			stop()
			b.Fatalf("daily baseline: exit %d", out.ExitCode)
		}
		falseAlarms, detected := 0, 0
		for i := range runs {
			red := perfGateFailures(b, gateRun(b, configs, runtype.PR, root, nil), "")
			if len(red) > 0 {
				falseAlarms++
				b.Logf("unchanged PR run %d: false alarm %v", i+1, red)
			}
		}
		slower := func(scale func(c *emulator.Config)) func(sc *matrix.Scenario) (deploy.Deployer, error) {
			return func(sc *matrix.Scenario) (deploy.Deployer, error) {
				cfg := sc.Deploy.(*emulator.Plan).Config
				scale(&cfg)
				return emulator.New(cfg)
			}
		}
		ttft := slower(func(c *emulator.Config) { c.TTFT = c.TTFT * 13 / 10 })
		itl := slower(func(c *emulator.Config) { c.ITL = c.ITL * 13 / 10 })
		itlDetected, wrong := 0, 0
		for i := range runs {
			red := perfGateFailures(b, gateRun(b, configs, runtype.PR, root, ttft), "")
			if has(red, gate.MetricTTFTP99) {
				detected++
			} else {
				b.Logf("PR run %d with TTFT +30%%: regression not caught %v", i+1, red)
			}
		}
		for i := range runs {
			red := perfGateFailures(b, gateRun(b, configs, runtype.PR, root, itl), "")
			if has(red, gate.MetricE2EP99) {
				itlDetected++
			} else {
				b.Logf("PR run %d with ITL +30%%: regression not caught %v", i+1, red)
			}
			if has(red, gate.MetricTTFTP99) {
				wrong++
				b.Logf("PR run %d with ITL +30%%: TTFT gate red too %v", i+1, red)
			}
		}
		b.ReportMetric(float64(itlDetected), "itl_detected")
		b.ReportMetric(float64(wrong), "wrong_gate")
		if itlDetected < runs || wrong > 0 {
			b.Errorf("ITL +30%%: caught %d of %d on E2E, TTFT gate red in %d", itlDetected, runs, wrong)
		}
		stop()
		b.ReportMetric(float64(falseAlarms), "false_alarms")
		b.ReportMetric(float64(detected), "detected")
		b.ReportMetric(float64(runs), "runs")
		if falseAlarms > 0 || detected < runs {
			b.Errorf("shipped gate defaults: %d false alarm(s) in %d unchanged PR runs (want 0), +30%% TTFT caught in %d of %d (want all)",
				falseAlarms, runs, detected, runs)
		}
	}
}

// gateRun 用给定配置树跑一次参考驱动（产物写进 root），返回结果。
func gateRun(b *testing.B, configs fs.FS, rt matrix.RunType, root string, nd func(*matrix.Scenario) (deploy.Deployer, error)) pipeline.Outcome {
	b.Helper()
	o := gateOptions(configs, rt, root)
	pipeline.SetDeployer(&o, nd)
	return gateRunOptions(b, o)
}

// gateOptions 是门禁基准的驱动选项：配置树、运行类型、产物根目录，环境变量全空。
func gateOptions(configs fs.FS, rt matrix.RunType, root string) pipeline.Options {
	// 出厂配置里有 k8s 场景：根模块的测试用替身认它们的名字（真实的 kube.Modes() 在 deploy/kube 模块）。
	return pipeline.Options{Selection: pipeline.Selection{Config: configs, ConfigRoot: "configs", RunType: rt}, Outputs: pipeline.Outputs{Artifacts: root},
		Extensions:  pipeline.Extensions{Modes: kubestandin.Modes()},
		Environment: pipeline.Environment{Getenv: func(string) string { return "" }}}
}

// gateRunOptions 用 o 跑一次参考驱动，出错时带上驱动的输出终止基准。
func gateRunOptions(b *testing.B, o pipeline.Options) pipeline.Outcome {
	b.Helper()
	var out bytes.Buffer
	o.Out = &out
	res, err := pipeline.Run(context.Background(), o)
	if err != nil {
		b.Fatalf("%s run: %v\n%s", o.RunType, err, out.String())
	}
	return res
}

// perfGateFailures 返回一次运行中失败的性能门禁名（metric 非空时只看该指标）。
func perfGateFailures(b *testing.B, out pipeline.Outcome, metric string) []string {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join(out.Dir, "summary.json"))
	if err != nil {
		b.Fatal(err)
	}
	var res report.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		b.Fatal(err)
	}
	var red []string
	for _, g := range res.Gates {
		if g.Verdict != gate.VerdictFail || g.Key == nil || (metric != "" && g.Metric != metric) {
			continue
		}
		d := 0.0
		if g.DeltaPct != nil {
			d = *g.DeltaPct
		}
		red = append(red, g.Name+" "+strconv.FormatFloat(d, 'f', 1, 64)+"%")
	}
	return red
}

// busyLoops 启动 n 个 `yes >/dev/null` 进程（与 issue 中"两个忙循环的 runner"相同），
// 返回停止它们的函数。
func busyLoops(b *testing.B, n int) func() {
	b.Helper()
	var cmds []*exec.Cmd
	for range n {
		c := exec.Command("yes")
		c.Stdout = io.Discard
		if err := c.Start(); err != nil {
			b.Fatalf("start busy loop: %v", err)
		}
		cmds = append(cmds, c)
	}
	return func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
}

// envPositive 读取正整数环境变量 name，未设置时返回 def；取值非法时终止基准。
func envPositive(b *testing.B, name string, def int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

package pipeline_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/runtype"
)

// scaleDurations 把 text 中 keys 列出的键的时长值（以及行内 {job: 60m, ...} 形式）除以 k。
func scaleDurations(b *testing.B, text string, k int, keys ...string) string {
	b.Helper()
	for _, key := range keys {
		re := regexp.MustCompile(`(` + regexp.QuoteMeta(key) + `:\s*)(\d[0-9hms]*)`)
		if !re.MatchString(text) {
			b.Fatalf("key %q not found", key)
		}
		text = re.ReplaceAllStringFunc(text, func(m string) string {
			sub := re.FindStringSubmatch(m)
			d, err := time.ParseDuration(sub[2])
			if err != nil {
				b.Fatalf("%s: %v", m, err)
			}
			return sub[1] + (d / time.Duration(k)).String()
		})
	}
	return text
}

// BenchmarkShippedTimeBudget 是 issue 29 第 4 部分的端到端核对：出厂配置（档位、预算、阶段与作业
// 超时）对着一个 TTFT 200 ms、30 ms/token 的外部服务，每日运行在作业时限内结束并成为基线，PR
// 运行在时限内结束并与它比较（性能门禁不是 no_baseline）。为了几分钟内跑完，时间整体缩小 K 倍
// （CIBENCH_TIME_SCALE，默认 100）：模拟器的 TTFT/ITL、作业与阶段超时、档位的 max_duration 与
// growth_interval 都除以 K；请求数、组合、并发不变。功能与精度阶段关闭（它们的时长不随 K 缩放，
// 估算见 docs/ci.md）。
//
//	go test -run '^$' -bench ShippedTimeBudget -benchtime 1x -timeout 1h ./pipeline
func BenchmarkShippedTimeBudget(b *testing.B) {
	k := envPositive(b, "CIBENCH_TIME_SCALE", 100)
	_, ep := emulator.Start(b, emulator.Config{TTFT: 200 * time.Millisecond / time.Duration(k), ITL: 30 * time.Millisecond / time.Duration(k),
		MaxModelLen: 65536, Seed: 9})
	tree := externalTree(b, ep.BaseURL()).(fstest.MapFS)
	m := string(tree["matrix.yaml"].Data)
	m = strings.Replace(m, "      perf: {profiles: [pr]}\n", "", 1) // 每日用出厂的 daily 档
	m = scaleDurations(b, m, k, "job", "functional", "perf", "accuracy")
	tree["matrix.yaml"] = &fstest.MapFile{Data: []byte(m)}
	for _, f := range []string{"tests/perf/profiles/pr.yaml", "tests/perf/profiles/daily.yaml"} {
		tree[f] = &fstest.MapFile{Data: []byte(scaleDurations(b, string(tree[f].Data), k, "max_duration", "growth_interval"))}
	}
	for range b.N {
		root := b.TempDir()
		start := time.Now()
		daily := gateRunOptions(b, withScenario(gateOptions(tree, runtype.Daily, root)))
		dailyTook := time.Since(start)
		start = time.Now()
		pr := gateRunOptions(b, withScenario(gateOptions(tree, runtype.PR, root)))
		prTook := time.Since(start)
		dres, pres := readResult(b, daily.Dir), readResult(b, pr.Dir)
		tm := matrixTimeouts(b, tree)
		compared, noBase := 0, 0
		for _, g := range pres.Gates {
			if g.Key == nil || g.Metric != gate.MetricTTFTP99 {
				continue
			}
			if g.Verdict == gate.VerdictNoBaseline {
				noBase++
			} else {
				compared++
			}
		}
		b.ReportMetric(dailyTook.Seconds()*float64(k)/3600, "daily_h_real")
		b.ReportMetric(prTook.Seconds()*float64(k)/60, "pr_min_real")
		b.ReportMetric(float64(compared), "pr_combos_gated")
		b.ReportMetric(float64(noBase), "pr_combos_no_baseline")
		b.Logf("scale 1/%d: daily %v (= %.2f h real, job limit %v, complete %v, exit %d); PR %v (= %.1f min real, job limit %v, exit %d); PR TTFT gates compared %d, no_baseline %d",
			k, dailyTook.Round(time.Second), dailyTook.Seconds()*float64(k)/3600, tm.daily*time.Duration(k), dres.Complete, daily.ExitCode,
			prTook.Round(time.Second), prTook.Seconds()*float64(k)/60, tm.pr*time.Duration(k), pr.ExitCode, compared, noBase)
		if red := perfGateFailures(b, pr, ""); len(red) > 0 {
			b.Logf("PR perf gates red (the same server as the daily): %v", red)
		}
		if !dres.Complete || dailyTook > tm.daily || prTook > tm.pr || noBase > 0 || compared == 0 {
			b.Errorf("shipped time budget missed: daily complete %v in %v (limit %v), PR in %v (limit %v), %d PR combinations without baseline",
				dres.Complete, dailyTook, tm.daily, prTook, tm.pr, noBase)
		}
	}
}

// withScenario 只运行 ext_spec 场景。
func withScenario(o pipeline.Options) pipeline.Options {
	o.Scenarios = []string{"ext_spec"}
	return o
}

// readResult 读取运行目录的 summary.json。
func readResult(b *testing.B, dir string) report.Result {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		b.Fatal(err)
	}
	var res report.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		b.Fatal(err)
	}
	return res
}

// jobLimits 是缩放后的两种作业超时。
type jobLimits struct{ pr, daily time.Duration }

// matrixTimeouts 读出配置树中的作业超时。
func matrixTimeouts(b *testing.B, tree fs.FS) jobLimits {
	b.Helper()
	m, err := matrix.Load(tree)
	if err != nil {
		b.Fatal(fmt.Errorf("load matrix: %w", err))
	}
	return jobLimits{pr: m.Timeouts(runtype.PR).Job, daily: m.Timeouts(runtype.Daily).Job}
}

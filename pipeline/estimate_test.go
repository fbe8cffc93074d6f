package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/runtype"
)

// TestPlanEstimatesFromThePreviousRun 检验 -plan 的时长估算：没有上一次运行时说不知道（性能阶段
// 开始前会校准）；跑过一次之后按它的阶段耗时与各组合的 E2E 估算；性能档位放不下阶段超时时写
// DOES NOT FIT 并给出放得下的 max_duration。
func TestPlanEstimatesFromThePreviousRun(t *testing.T) {
	root := t.TempDir()
	fsys := tree("emu")
	plan := func(fsys fstest.MapFS) string {
		t.Helper()
		var out bytes.Buffer
		if err := pipeline.PrintPlan(&out, options(t, fsys, runtype.PR, root)); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if p := plan(fsys); !strings.Contains(p, "estimate perf       unknown (no previous run of this scenario: calibrated when the perf stage starts)") {
		t.Fatalf("plan without a previous run:\n%s", p)
	}
	out, err := pipeline.Run(context.Background(), options(t, fsys, runtype.PR, root))
	if err != nil {
		t.Fatal(err)
	}
	// 没有上一次运行：性能阶段开始前校准（两个请求），估算写进驱动日志。
	log, err := os.ReadFile(filepath.Join(out.Dir, "driver.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`msg="perf stage estimate".*source="calibrated: TTFT \S+ \+ \S+/input token, ITL \S+"`).Match(log) {
		t.Errorf("driver.log lacks the calibrated estimate:\n%s", log)
	}
	p := plan(fsys)
	for _, re := range []string{`estimate functional \S+ of 30m0s timeout: fits \(run \S+\)`, `estimate perf +\S+ of 1h0m0s timeout: fits \(speed measured in run \S+\)`,
		`estimate total +\S+ of 1h0m0s job timeout: fits`} {
		if !regexp.MustCompile(re).MatchString(p) {
			t.Errorf("plan lacks %q:\n%s", re, p)
		}
	}
	// 同样的档位放大到放不下 2 秒的性能超时：给出放得下的预算。
	big := tree("emu")
	big["tests/perf/profiles/pr.yaml"] = &fstest.MapFile{Data: []byte("concurrency: [1, 2]\ninput_length: [16]\noutput_length: [8]\nrequests_per_concurrency: 4000\nwarmup: 0\n")}
	big["matrix.yaml"] = &fstest.MapFile{Data: []byte("defaults:\n  timeouts:\n    pr: {perf: 2s}\n" + string(big["matrix.yaml"].Data))}
	p = plan(big)
	if !strings.Contains(p, "DOES NOT FIT") || !regexp.MustCompile(`profile pr: max_duration \S+ would fit`).MatchString(p) {
		t.Errorf("oversized profile:\n%s", p)
	}
}

// TestNoChatCalibrationBeforeASourceProfile 复现 issue 36 的摩擦：性能阶段在一个只压 embeddings 的档位
// （团队的 PerfShaper 设了 Source）之前，先用一个 chat 请求校准服务端速度。现在校准看的是改写之后的档位，
// 设了 Source 或 Pacer 的档位不校准；汇总行的 Backend 写的是 /embeddings。
func TestNoChatCalibrationBeforeASourceProfile(t *testing.T) {
	fsys := tree("emu")
	fsys["scenarios/emu.yaml"].Data = []byte("mode: emulator\nserved_model_name: emu-model\nfeatures: [embeddings]\nemulator: {ttft: 10ms, itl: 1ms, enable_embeddings: true}\n")
	o := options(t, fsys, runtype.PR, t.TempDir())
	o.Stages = []report.Stage{report.StagePerf}
	o.PerfShapers = append(o.PerfShapers, func(run pipeline.PerfRun, p *loadgen.Profile) error {
		p.Source = &loadgen.Source{Path: "/embeddings", Body: func(dst []byte, _ loadgen.Group, i int) ([]byte, int) {
			return fmt.Appendf(dst, `{"model":%q,"input":"document %d"}`, run.Model, i), 0
		}}
		return nil
	})
	out, err := pipeline.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join(out.Dir, "driver.log"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), `msg="perf stage estimate"`) || strings.Contains(string(log), "perf calibration failed") {
		t.Errorf("the perf stage calibrated with a chat request before an embeddings-only profile:\n%s", log)
	}
	sc := scenario(t, summary(t, out.Dir), "emu")
	if len(sc.Perf) == 0 || sc.Perf[0].Backend != "/embeddings" || sc.Perf[0].Succeeded == 0 {
		t.Fatalf("perf rows %+v", sc.Perf)
	}
}

package pipeline_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/runtype"
)

// TestAllFailingPerfProfileIsAGateNotAStageError 复现 issue 36：一个档位的每个请求都失败（这里是提示
// 超过模拟器的上下文长度，每个请求都是 400）时，性能阶段除了正确的红色 fail_rate 门禁之外，还多报了一个
// 内部错误 "report: invalid section: section samples: nothing to record (nil value)"。全部失败是被测服务的
// 结论，不是 cibench 的故障：阶段本身是 ok，汇总行与失败分类都记下，门禁变红。
func TestAllFailingPerfProfileIsAGateNotAStageError(t *testing.T) {
	fsys := tree("emu")
	fsys["tests/perf/profiles/pr.yaml"] = &fstest.MapFile{Data: []byte("concurrency: [1]\ninput_length: [40000]\noutput_length: [8]\nrequests_per_concurrency: 4\nwarmup: 0\n")}
	o := options(t, fsys, runtype.PR, t.TempDir())
	o.Stages = []report.Stage{report.StagePerf}
	out, err := pipeline.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	sc := scenario(t, summary(t, out.Dir), "emu")
	for _, st := range sc.Stages {
		if st.Stage == report.StagePerf && (st.Status != report.StageOK || strings.Contains(st.Reason, "nothing to record")) {
			t.Errorf("perf stage %s: %s", st.Status, st.Reason)
		}
	}
	for _, e := range sc.Scenario.Errors {
		t.Errorf("stage error recorded: %+v", e)
	}
	if len(sc.Perf) != 1 || sc.Perf[0].Succeeded != 0 || sc.Perf[0].Failed != 4 {
		t.Fatalf("perf rows %+v", sc.Perf)
	}
	var failRate bool
	for _, g := range out.Result.Gates {
		if strings.Contains(g.Name, "fail_rate") && g.Verdict == gate.VerdictFail {
			failRate = true
		}
	}
	if !failRate || out.ExitCode != gate.ExitGateFailed {
		t.Fatalf("want a red fail_rate gate and exit 1, got exit %d gates %+v", out.ExitCode, out.Result.Gates)
	}
}

package pipeline_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/runtype"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
)

// TestFunctionalCapabilitiesAndDrift 走完整的驱动：每日运行（top_k 被接受）成为基线；
// 之后服务端开始拒绝 top_k——场景未声明时 top_k 用例失败并引用服务端的回答；场景把
// top_k 声明为 unsupported 时用例跳过，但基线中通过的用例变成 skip，功能门禁按用例 ID 失败。
func TestFunctionalCapabilitiesAndDrift(t *testing.T) {
	root := t.TempDir()
	fsys := tree("emu")
	fsys["matrix.yaml"] = &fstest.MapFile{Data: []byte("scenarios:\n  emu:\n" +
		"    pr: {functional: {suites: [chat_core/basic, \"params_boundary/top_k=*\"]}}\n" +
		"    daily: {functional: {suites: [chat_core/basic, \"params_boundary/top_k=*\"]}}\n")}
	scenarioYAML := "mode: emulator\nserved_model_name: emu-model\napi_key_env: TEST_KEY\n"
	fsys["scenarios/emu.yaml"] = &fstest.MapFile{Data: []byte(scenarioYAML + "emulator: {ttft: 10ms, itl: 1ms}\n")}
	out, err := pipeline.Run(context.Background(), options(t, fsys, runtype.Daily, root))
	if err != nil || out.ExitCode != gate.ExitOK {
		t.Fatalf("daily: exit %d err %v", out.ExitCode, err)
	}
	if rep := scenario(t, summary(t, out.Dir), "emu").Functional; rep == nil || rep.Count(functional.StatusPass) != 3 {
		t.Fatalf("daily functional report: %+v", rep)
	}

	// 服务端拒绝 top_k，场景没有声明（默认 supported）：失败，引用服务端原文。
	fsys["scenarios/emu.yaml"] = &fstest.MapFile{Data: []byte(scenarioYAML + "emulator: {ttft: 10ms, itl: 1ms, disable_top_k: true}\n")}
	out, err = pipeline.Run(context.Background(), options(t, fsys, runtype.PR, root))
	if err != nil || out.ExitCode != gate.ExitGateFailed {
		t.Fatalf("pr (undeclared): exit %d err %v", out.ExitCode, err)
	}
	res := summary(t, out.Dir)
	g := gateOf(t, res, "emu", "functional")
	if g.Verdict != gate.VerdictFail || !strings.Contains(g.Reason, "2 of 3 cases failed: params_boundary/top_k=1, params_boundary/top_k=50") {
		t.Errorf("undeclared rejection: %s %q", g.Verdict, g.Reason)
	}
	if r, _ := scenario(t, res, "emu").Functional.Result("params_boundary/top_k=50"); !strings.Contains(r.Reason, "top_k is not supported by this server") {
		t.Errorf("failure does not quote the server: %q", r.Reason)
	}

	// 场景声明 top_k 不支持：用例跳过，但与每日基线相比是 pass → skip 漂移。
	fsys["scenarios/emu.yaml"] = &fstest.MapFile{Data: []byte(scenarioYAML + "capabilities: {top_k: unsupported}\nemulator: {ttft: 10ms, itl: 1ms, disable_top_k: true}\n")}
	out, err = pipeline.Run(context.Background(), options(t, fsys, runtype.PR, root))
	if err != nil || out.ExitCode != gate.ExitGateFailed {
		t.Fatalf("pr (declared unsupported): exit %d err %v", out.ExitCode, err)
	}
	g = gateOf(t, summary(t, out.Dir), "emu", "functional")
	if g.Verdict != gate.VerdictFail || !strings.Contains(g.Reason, "params_boundary/top_k=1 (now skip), params_boundary/top_k=50 (now skip)") || g.BaselineRun == "" {
		t.Errorf("drift: %s %q baseline %q", g.Verdict, g.Reason, g.BaselineRun)
	}
}

// gateOf 返回场景的指定门禁，找不到时终止测试。
func gateOf(t *testing.T, res report.Result, sc, name string) gate.Gate {
	t.Helper()
	for _, g := range res.Gates {
		if g.Scenario == sc && g.Name == name {
			return g
		}
	}
	t.Fatalf("gate %s/%s not found in %+v", sc, name, res.Gates)
	return gate.Gate{}
}

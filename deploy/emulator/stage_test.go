package emulator_test

import (
	"context"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
)

// TestFunctionalTimingPerStage 检查 issue 38 的做法：部署实现 deploy.StageTuner，进入功能阶段时换上
// Config.FunctionalTiming（零值字段沿用原值），进入其它阶段时换回原来的时延；没有设置 FunctionalTiming
// 时什么也不变。负值在构造时被拒绝。
func TestFunctionalTimingPerStage(t *testing.T) {
	srv, err := emulator.New(emulator.Config{Model: "m", TTFT: 50 * time.Millisecond, ITL: 500 * time.Microsecond,
		FunctionalTiming: &emulator.Timing{ITL: 20 * time.Microsecond}})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := srv.Deploy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dep.Teardown(context.Background()) }()
	tu, ok := dep.(deploy.StageTuner)
	if !ok {
		t.Fatalf("%T does not implement deploy.StageTuner", dep)
	}
	for _, step := range []struct {
		stage     string
		ttft, itl time.Duration
	}{
		{"functional", 50 * time.Millisecond, 20 * time.Microsecond},
		{"functional", 50 * time.Millisecond, 20 * time.Microsecond}, // 重复进入不叠加
		{"perf", 50 * time.Millisecond, 500 * time.Microsecond},
		{"accuracy", 50 * time.Millisecond, 500 * time.Microsecond},
		{"functional", 50 * time.Millisecond, 20 * time.Microsecond},
		{"team-soak", 50 * time.Millisecond, 500 * time.Microsecond},
	} {
		if err := tu.TuneStage(context.Background(), step.stage); err != nil {
			t.Fatal(err)
		}
		if c := srv.Config(); c.TTFT != step.ttft || c.ITL != step.itl {
			t.Fatalf("after %s: ttft %v itl %v, want %v %v", step.stage, c.TTFT, c.ITL, step.ttft, step.itl)
		}
	}
	plain, err := emulator.New(emulator.Config{Model: "m", ITL: 500 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	pd, err := plain.Deploy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pd.Teardown(context.Background()) }()
	if err := pd.(deploy.StageTuner).TuneStage(context.Background(), "functional"); err != nil || plain.Config().ITL != 500*time.Microsecond {
		t.Fatalf("without FunctionalTiming: err %v itl %v", err, plain.Config().ITL)
	}
	if _, err := emulator.New(emulator.Config{Model: "m", FunctionalTiming: &emulator.Timing{ITL: -1}}); err == nil {
		t.Fatal("a negative functional ITL was accepted")
	}
}

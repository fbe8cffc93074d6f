package pipeline_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/runtype"
)

// tuned 包一个部署，记下流水线在每个阶段前调用 TuneStage 的顺序；fail 非空时对该阶段返回错误。
type tuned struct {
	deploy.Deployment
	mu     sync.Mutex
	stages []string
	fail   string
}

// TuneStage 实现 deploy.StageTuner。
func (d *tuned) TuneStage(_ context.Context, stage string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stages = append(d.stages, stage)
	if stage == d.fail {
		return errors.New("cannot tune")
	}
	return nil
}

// TestStageTunerCalledBeforeEachStage 检查可选能力 deploy.StageTuner：实现了它的部署在每个阶段之前
// 按顺序被调用（功能、性能、精度）；调整失败让该阶段失败（原因写明），其余阶段照常。
func TestStageTunerCalledBeforeEachStage(t *testing.T) {
	for _, fail := range []string{"", "perf"} {
		o := options(t, tree("emu"), runtype.PR, t.TempDir())
		var d *tuned
		pipeline.SetDeployer(&o, func(sc *matrix.Scenario) (deploy.Deployer, error) {
			srv, err := emulator.New(sc.Deploy.(*emulator.Plan).Config)
			if err != nil {
				return nil, err
			}
			return deployFunc(func(ctx context.Context) (deploy.Deployment, error) {
				dep, err := srv.Deploy(ctx)
				d = &tuned{Deployment: dep, fail: fail}
				return d, err
			}), nil
		})
		out, err := pipeline.Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if d == nil || !slices.Equal(d.stages, []string{"functional", "perf", "accuracy"}) {
			t.Fatalf("fail=%q: TuneStage calls %v", fail, d.stages)
		}
		sc := scenario(t, summary(t, out.Dir), "emu")
		for _, st := range sc.Stages {
			bad := st.Status != report.StageOK
			if want := st.Stage == report.Stage(fail); bad != want || want && !strings.Contains(st.Reason, "tune the deployment for stage perf: cannot tune") {
				t.Errorf("fail=%q: stage %s %s %q", fail, st.Stage, st.Status, st.Reason)
			}
		}
	}
}

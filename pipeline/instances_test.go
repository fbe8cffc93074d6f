package pipeline_test

import (
	"context"
	"testing"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/runtype"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
)

// instances 是一个多实例部署的替身：端点列出全部实例，清理由各模拟器的 t.Cleanup 负责。
type instances struct{ ep deploy.Endpoint }

// Endpoint 返回全部实例的端点。
func (d instances) Endpoint() deploy.Endpoint { return d.ep }

// ArchiveLogs 没有日志可归档。
func (instances) ArchiveLogs(context.Context, string) error { return nil }

// Teardown 什么也不做（模拟器随测试结束关闭）。
func (instances) Teardown(context.Context) error { return nil }

// successes 返回模拟器成功完成的请求数（vllm:request_success_total 各标签之和）。
func successes(t *testing.T, em *emulator.Server) int {
	t.Helper()
	mfs, err := em.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, mf := range mfs {
		if mf.GetName() == "vllm:request_success_total" {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return int(n)
}

// TestAccuracyUsesEveryInstance 是 issue 15 的驱动层验收：多实例部署的精度阶段打全部实例
// （旧驱动只把 ep.BaseURL() 交给精度阶段，第二个实例一个请求也收不到），请求按轮询均分。
func TestAccuracyUsesEveryInstance(t *testing.T) {
	em1, ep1 := emulator.Start(t, emulator.Config{Model: "emu-model", APIKey: secret})
	em2, ep2 := emulator.Start(t, emulator.Config{Model: "emu-model", APIKey: secret})
	o := options(t, tree("emu"), runtype.PR, t.TempDir())
	o.Stages = []report.Stage{report.StageAccuracy}
	pipeline.SetDeployer(&o, func(*matrix.Scenario) (deploy.Deployer, error) {
		return deployFunc(func(context.Context) (deploy.Deployment, error) {
			return instances{deploy.Endpoint{BaseURLs: []string{ep1.BaseURL(), ep2.BaseURL()}, Model: "emu-model"}}, nil
		}), nil
	})
	out, err := pipeline.Run(context.Background(), o)
	if err != nil || out.ExitCode != gate.ExitOK {
		t.Fatalf("exit %d err %v: %s", out.ExitCode, err, o.Out)
	}
	sc := scenario(t, summary(t, out.Dir), "emu")
	if len(sc.Accuracy) != 1 {
		t.Fatalf("accuracy results %+v", sc.Accuracy)
	}
	n := sc.Accuracy[0].Result.Requests
	if a, b := successes(t, em1), successes(t, em2); n < 2 || a != (n+1)/2 || b != n/2 {
		t.Fatalf("instance 1 served %d, instance 2 served %d of %d requests", a, b, n)
	}
	assertNoSecret(t, out.Dir)
}

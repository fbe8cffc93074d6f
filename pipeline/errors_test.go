package pipeline_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/runtype"
)

// TestLibraryErrorsNameOptionsNotFlags 复现 issue 36 的三处：pipeline.ErrConfig 的文本是
// "ci: invalid configuration"（库的错误用了驱动的名字）；库的错误说的是命令行参数（"-model needs
// -base-url"），而调用 pipeline.Run 的团队程序没有这些参数；加载配置的错误经 %v 包装，errors.Is 认不出
// 原因（这里是 deploy.ErrUnknownMode）。
func TestLibraryErrorsNameOptionsNotFlags(t *testing.T) {
	if got := pipeline.ErrConfig.Error(); got != "pipeline: invalid configuration" {
		t.Errorf("ErrConfig = %q", got)
	}
	o := options(t, tree("emu"), runtype.PR, t.TempDir())
	o.Model = "m"
	_, err := pipeline.Run(context.Background(), o)
	if !errors.Is(err, pipeline.ErrConfig) || strings.Contains(err.Error(), "-model") || !strings.Contains(err.Error(), "Selection.Model") {
		t.Errorf("Model without BaseURL: %v", err)
	}
	fsys := tree("emu")
	fsys["scenarios/emu.yaml"].Data = []byte("mode: slurm\nserved_model_name: m\n")
	_, err = pipeline.Run(context.Background(), options(t, fsys, runtype.PR, t.TempDir()))
	if !errors.Is(err, pipeline.ErrConfig) || !errors.Is(err, deploy.ErrUnknownMode) {
		t.Errorf("unknown mode: %v does not wrap both ErrConfig and deploy.ErrUnknownMode", err)
	}
}

// TestLogSaysNoKeyWhenNoneIsConfigured 复现 issue 37 的小缺陷：没有配置密钥时，驱动日志写的是
// api_key=[REDACTED]（脱敏器把 "api_key=none" 当成了密钥），读的人以为有一个密钥被藏起来了。
func TestLogSaysNoKeyWhenNoneIsConfigured(t *testing.T) {
	fsys := tree("emu")
	fsys["scenarios/emu.yaml"].Data = []byte("mode: emulator\nserved_model_name: emu-model\nemulator: {ttft: 1ms, itl: 1ms}\n")
	o := options(t, fsys, runtype.PR, t.TempDir())
	o.Stages = []report.Stage{report.StageFunctional}
	out, err := pipeline.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join(out.Dir, "driver.log"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), "api_key=[REDACTED]") || !strings.Contains(string(log), "no api_key") {
		t.Errorf("driver.log about a scenario without a key:\n%s", log)
	}
	// 门禁设置随 summary.json 记下（比较这次运行时用同一口径）。
	if res := summary(t, out.Dir); res.Thresholds == nil {
		t.Error("summary.json does not record the gate settings")
	}
}

package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/pipeline"
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

// Command operator 是一个平台团队的 Go 程序的样子：它和团队的 operator 一起钉在集群的 client-go
// 版本（v0.35.10）与 go 1.26.0 上，同时导入 cibench 的 functional、loadgen、accuracy、metrics、
// report、gate 与 pipeline（不登记 Kubernetes 部署方式）。examples 包的 TestTeamKeepsItsVersions 在
// 这个模块的副本上运行 go mod tidy，断言两个版本都没有被 cibench 改动，并用 GOTOOLCHAIN=local 构建。
//
// 程序本身做的事很小：用团队自己的 client-go 读 kubeconfig（-kubeconfig 为空时跳过），再用
// cibench 的流水线对一个已在运行的服务（-base-url）跑参考矩阵。
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/metrics"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/runtype"
)

// main 解析参数并运行；退出码沿用流水线的（0 通过、1 门禁失败、2 配置错误）。
func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the team's cluster (empty: skip the client-go part)")
	config := flag.String("config", "configs", "cibench configuration directory")
	baseURL := flag.String("base-url", "", "an already running OpenAI-compatible server (…/v1)")
	flag.Parse()

	if *kubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
		if err != nil {
			fmt.Fprintln(os.Stderr, "operator:", err)
			os.Exit(gate.ExitError)
		}
		if _, err := kubernetes.NewForConfig(rc); err != nil {
			fmt.Fprintln(os.Stderr, "operator:", err)
			os.Exit(gate.ExitError)
		}
	}

	feats := functional.DefaultFeatures()
	evals := accuracy.NewRegistry()
	o := pipeline.Options{
		Selection:  pipeline.Selection{Config: os.DirFS(*config), ConfigRoot: *config, RunType: runtype.PR, BaseURL: *baseURL},
		Outputs:    pipeline.Outputs{Artifacts: "artifacts", Out: os.Stdout, PushOptions: metrics.Options{Prefix: "team"}},
		Extensions: pipeline.Extensions{Features: feats, Evals: evals},
	}
	// 团队自己的导出器：每组结束时在标准输出打印一行（loadgen 的观察者）。
	o.PerfExporters = append(o.PerfExporters, func(run pipeline.PerfRun) (*loadgen.Observer, func() error, error) {
		return &loadgen.Observer{OnGroupEnd: func(s loadgen.Summary) error {
			fmt.Printf("team: %s concurrency %d done\n", run.Profile, s.Concurrency)
			return nil
		}}, nil, nil
	})
	o.Stages = []report.Stage{report.StageFunctional, report.StagePerf}
	out, err := pipeline.Run(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "operator:", err)
	}
	os.Exit(out.ExitCode)
}

// Command team 是一个团队自己的 CI 程序：在独立的 Go 模块里只用 cibench 的公开包，
// 运行参考流水线（pipeline），加上 ACME 的能力、用例、导出器、评测与门禁（见 acme）。
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"example.com/team/acme"
	"github.com/vllm-cibench/cibench/pipeline"
)

// main 解析配置目录与产物目录两个参数，把 ACME 团队的扩展（acme.Apply）加进参考流水线并运行，
// 退出码取流水线的结论。
func main() {
	configs := flag.String("config", "configs", "config tree (matrix.yaml, scenarios/, tests/)")
	artifacts := flag.String("artifacts", "artifacts", "artifact root")
	flag.Parse()
	o := pipeline.Options{
		Selection: pipeline.Selection{Config: os.DirFS(*configs), ConfigRoot: *configs},
		Outputs:   pipeline.Outputs{Artifacts: *artifacts, Out: os.Stdout, Args: os.Args},
	}
	if err := acme.Apply(&o, acme.DefaultSettings()); err != nil {
		fmt.Fprintln(os.Stderr, "team:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	out, err := pipeline.Run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "team:", err)
	}
	os.Exit(out.ExitCode)
}

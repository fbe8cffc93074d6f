// Command dashboard 生成 "vLLM CI Bench" Grafana 看板 JSON（可在 Grafana 中直接导入，
// 导入时选择 Prometheus 数据源）。
//
//	go run ./examples/dashboard                      # 写到标准输出
//	go run ./examples/dashboard -prefix cibench -o dashboards/vllm-ci-bench.json
//
// -prefix 是 metric_prefix 变量的默认值，应与推送时的前缀一致；未给出时读取
// 环境变量 CIBENCH_METRIC_PREFIX（可为空）。
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/vllm-cibench/cibench/metrics"
)

// main 解析参数后调用 run，出错时以非零状态退出。
func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}

// run 生成看板并写到 -o 指定的文件或 stdout；与 main 分开以便测试。
func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("dashboard", flag.ContinueOnError)
	prefix := fs.String("prefix", os.Getenv("CIBENCH_METRIC_PREFIX"), "metric name prefix used when pushing (empty = none)")
	out := fs.String("o", "", "output file (default: stdout)")
	title := fs.String("title", metrics.DefaultDashboardTitle, "dashboard title")
	uid := fs.String("uid", metrics.DefaultDashboardUID, "dashboard uid")
	if err := fs.Parse(args); err != nil {
		return err
	}
	d, err := metrics.NewDashboard(metrics.DashboardOptions{Prefix: *prefix, Title: *title, UID: *uid})
	if err != nil {
		return err
	}
	if *out == "" {
		return d.WriteJSON(stdout)
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := d.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

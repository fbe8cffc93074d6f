// Command compare 比较任意两次运行（两个 vLLM 版本、两种加速卡、两套配置），B 相对 A：
//
//	go run ./examples/compare artifacts/daily/RUN_A artifacts/pr/RUN_B
//	go run ./examples/compare -html compare.html -json compare.json -pair new=old DIR_A DIR_B
//
// 两个参数是参考驱动写出的运行目录（含 summary.json；可以从不同机器拷来）。文本表写到标准
// 输出：两侧各自的场景、模型、量化、硬件、部署方式与提交，每个组合每项指标的 A、B、变化、
// 区间与按 PR 门禁阈值的判定，以及时间花在哪个阶段。-html、-json 另写 HTML 报告（带阶段
// 堆叠图）与机器可读的结果。-pair b=a 把 B 的场景 b 与 A 的场景 a 配对（名字不同时）；两侧
// 各只有一个场景时自动配对。退出码：0 比较完成；1 有指标越过阈值（-fail-on-regression 时）；
// 2 参数或读取错误。
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/report/compare"
)

// main 调用 run 并以其返回的退出码退出。
func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) }

// pairs 是可重复的 -pair b=a 参数。
type pairs map[string]string

// String 实现 flag.Value。
func (p pairs) String() string { return fmt.Sprint(map[string]string(p)) }

// Set 解析一个 b=a。
func (p pairs) Set(v string) error {
	b, a, ok := strings.Cut(v, "=")
	if !ok || b == "" || a == "" {
		return fmt.Errorf("want B_SCENARIO=A_SCENARIO, got %q", v)
	}
	p[b] = a
	return nil
}

// run 解析参数、比较、写出结果，返回退出码；与 main 分开以便测试。
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	htmlOut := fs.String("html", "", "also write an HTML report to this file (- for standard output)")
	jsonOut := fs.String("json", "", "also write the comparison as JSON to this file (- for standard output)")
	failOn := fs.Bool("fail-on-regression", false, "exit 1 when a metric crosses the PR gate threshold")
	pr := pairs{}
	fs.Var(pr, "pair", "pair B's scenario with A's: B_SCENARIO=A_SCENARIO (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: compare [flags] RUN_DIR_A RUN_DIR_B")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return 2
	}
	c, err := compare.Dirs(ctx, fs.Arg(0), fs.Arg(1), compare.Options{Pairs: pr})
	if err != nil {
		printErr(stderr, err)
		return 2
	}
	// "-" 表示标准输出（惯例）：那时标准输出只有那一份机器可读的内容，文本表改写到标准错误。
	text := stdout
	if *htmlOut == "-" || *jsonOut == "-" {
		text = stderr
	}
	if *htmlOut == "-" && *jsonOut == "-" {
		fmt.Fprintln(stderr, "compare: -html and -json cannot both write to standard output (-)")
		return 2
	}
	if err := c.WriteText(text); err != nil {
		printErr(stderr, err)
		return 2
	}
	for _, out := range []struct {
		path  string
		write func(io.Writer) error
	}{{*htmlOut, c.WriteHTML}, {*jsonOut, c.WriteJSON}} {
		var err error
		switch out.path {
		case "":
			continue
		case "-":
			err = out.write(stdout)
		default:
			err = writeFile(out.path, out.write)
		}
		if err != nil {
			printErr(stderr, err)
			return 2
		}
	}
	if *failOn {
		for _, r := range c.Rows {
			if r.Verdict == gate.VerdictFail {
				return 1
			}
		}
	}
	return 0
}

// printErr 写出一行 "compare: 原因"：库的错误已经以 "compare: " 开头时不再重复前缀。
func printErr(w io.Writer, err error) {
	msg := err.Error()
	if !strings.HasPrefix(msg, "compare: ") {
		msg = "compare: " + msg
	}
	fmt.Fprintln(w, msg)
}

// writeFile 用 write 写出 path（先写临时文件再改名，中途失败不留下半个文件）。
func writeFile(path string, write func(io.Writer) error) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	werr := write(f)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

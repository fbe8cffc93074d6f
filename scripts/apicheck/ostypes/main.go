// Command ostypes 为另一个操作系统对包做类型检查：包与它的全部依赖（包括标准库）都从源码检查，
// 不编译、不链接。scripts/test.sh 的跨平台一步用它检查平台相关的小包（internal/procgroup、
// internal/procstat、internal/rxstamp、loadgen/internal/h1）在 darwin 与 windows 上能通过。
//
// 为什么不编译：为另一个系统编译这几个小包要先为它编译它们的整个依赖闭包（loadgen/internal/h1 带进
// net/http 与 crypto/tls，procgroup 带进 golang.org/x/sys/windows……），冷启动时两个系统共约 70 CPU 秒；
// 从源码做类型检查只要几秒。“在那个系统上能编译”里能因为平台而出错的部分——某个系统上没有的文件、
// 函数、常量、类型不符——都是类型错误，类型检查一样报出；它不检查汇编文件与链接（这几个包没有汇编，
// 依赖里的汇编由上游在各平台构建）。
//
// 用法：
//
//	ostypes -goos windows [-goarch amd64] [-C dir] 包模式...
//
// 退出码：0 全部通过；1 有类型错误（逐条列出：包、文件:行:列与信息）；2 用法或加载错误。
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"golang.org/x/tools/go/packages"
)

// main 把参数交给 run 并以它的返回值退出。
func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run 解析参数、做类型检查并报告，返回退出码（见包文档）。
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ostypes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	goos := fs.String("goos", "", "target operating system (GOOS), e.g. darwin or windows")
	goarch := fs.String("goarch", "amd64", "target architecture (GOARCH)")
	dir := fs.String("C", ".", "directory to run in (a module or workspace)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *goos == "" || fs.NArg() == 0 {
		fmt.Fprintln(stderr, "ostypes: usage: ostypes -goos GOOS [-goarch GOARCH] [-C dir] packages...")
		return 2
	}
	roots, all, errs, err := check(*dir, *goos, *goarch, fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "ostypes: %s/%s: %v\n", *goos, *goarch, err)
		return 2
	}
	if len(errs) > 0 {
		fmt.Fprintf(stderr, "ostypes: %s/%s: %d type errors:\n", *goos, *goarch, len(errs))
		for _, e := range errs {
			fmt.Fprintln(stderr, "  "+e)
		}
		return 1
	}
	fmt.Fprintf(stdout, "ostypes: %s/%s: %d packages and their %d dependencies type-check\n", *goos, *goarch, roots, all-roots)
	return 0
}

// check 在 dir 里按 GOOS=goos、GOARCH=goarch、CGO_ENABLED=0（交叉编译时 go 命令的默认）加载 patterns
// 与全部依赖的源码并做类型检查；返回命令行上的包数、包括依赖在内的包数与每条错误（"包: 位置: 信息"）。
// 包找不到、模式不匹配任何包也算错误（go list 报告的错误挂在包上）。
func check(dir, goos, goarch string, patterns []string) (roots, all int, errs []string, err error) {
	cfg := &packages.Config{
		// NeedDeps 与 NeedSyntax 一起：每个依赖也从源码类型检查，不向 go 命令要导出数据（那要编译）。
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps |
			packages.NeedTypes | packages.NeedSyntax,
		Dir: dir,
		Env: append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0"),
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return 0, 0, nil, err
	}
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		all++
		for _, e := range p.Errors {
			errs = append(errs, p.PkgPath+": "+e.Error())
		}
	})
	return len(pkgs), all, errs, nil
}

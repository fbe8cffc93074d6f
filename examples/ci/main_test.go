package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// env 是测试用的环境：全部变量未设置。
func env(string) string { return "" }

// TestDefaultMatrixEndToEnd 以 README 中的方式运行仓库自带的 configs/（只改了产物目录）：
// 默认矩阵在模拟器上完整跑通，退出码 0，报告写出。
func TestDefaultMatrixEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("full default run skipped in -short mode")
	}
	root := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"-config", "../../configs", "-artifacts", root, "-run-id", "readme"}, &out, &errb, env)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, f := range []string{"summary.json", "report.html", "junit.xml", "emulator/functional/junit.xml", "emulator/deploy/deployment.json"} {
		if _, err := os.Stat(filepath.Join(root, "pr", "readme", f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	if !strings.Contains(out.String(), "emulator") || !strings.Contains(out.String(), "(exit code 0)") {
		t.Errorf("summary output:\n%s", out.String())
	}
	if !strings.Contains(errb.String(), `msg="stage finished" scenario=emulator stage=accuracy status=ok`) {
		t.Errorf("log does not show the accuracy stage finishing:\n%s", errb.String())
	}
}

// TestFlagErrors 确认参数错误返回退出码 2 并说明原因。
func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-run-type", "weekly"}, `run type "weekly"`},
		{[]string{"extra"}, "unexpected arguments: extra"},
		{[]string{"-no-such-flag"}, "flag provided but not defined"},
		{[]string{"-config", "does-not-exist", "-artifacts", t.TempDir()}, "does-not-exist/matrix.yaml: cannot read"},
		{[]string{"-config", "../../configs", "-scenario", "nope", "-plan"}, `unknown scenario "nope"`},
	} {
		var out, errb bytes.Buffer
		if code := run(tc.args, &out, &errb, env); code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: stderr %q does not contain %q", tc.args, errb.String(), tc.want)
		}
		assertSinglePrefix(t, tc.args, errb.String())
	}
}

// assertSinglePrefix 检查错误输出的每一行都没有重复的 "包名: " 前缀（"ci: ci:"、
// "matrix: matrix:"），且以 ci: 开头的错误只有一个 ci: 前缀。
func assertSinglePrefix(t *testing.T, args []string, stderr string) {
	t.Helper()
	for _, line := range strings.Split(stderr, "\n") {
		parts := strings.Split(line, ": ")
		for i := 1; i < len(parts); i++ {
			if parts[i] == parts[i-1] && parts[i] != "" && !strings.ContainsAny(parts[i], " /") {
				t.Errorf("%v: doubled prefix %q in %q", args, parts[i]+": "+parts[i]+":", line)
			}
		}
		if strings.Count(line, "ci: ") > 1 {
			t.Errorf("%v: more than one ci: prefix in %q", args, line)
		}
	}
}

// TestErrorPrefixes：-plan 与正常运行路径的每一种驱动错误都只带一个 "ci:" 前缀
// （-plan 曾打印 "ci: ci: invalid configuration"）。
func TestErrorPrefixes(t *testing.T) {
	cfg := t.TempDir()
	writeTree(t, cfg)
	for _, args := range [][]string{
		{"-config", cfg, "-run-type", "daily", "-scenario", "nope", "-plan"},
		{"-config", cfg, "-run-type", "daily", "-scenario", "nope", "-artifacts", t.TempDir()},
		{"-config", cfg, "-run-type", "daily", "-stages", "lint", "-plan"},
		{"-config", cfg, "-model", "m", "-plan"},
		{"-config", filepath.Join(cfg, "missing"), "-plan"},
		{"-config", cfg, "-push", "-plan"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb, env); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errb.String())
		}
		if !strings.HasPrefix(errb.String(), "ci: ") {
			t.Errorf("%v: stderr does not start with ci: %q", args, errb.String())
		}
		assertSinglePrefix(t, args, errb.String())
	}
}

// TestPlanFlag 打印仓库配置的每日计划，显式选择需要集群的场景。
func TestPlanFlag(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"-config", "../../configs", "-run-type", "daily", "-scenario", "k8s_pd_deepseek-r1_2p1d_reasoning_w8a8", "-plan"}, &out, &errb, env)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, w := range []string{"run type daily, job timeout 6h0m0s", "k8s_pd_deepseek-r1_2p1d_reasoning_w8a8 (k8s-pd, model deepseek-r1, quant w8a8)", "accuracy   true  timeout 3h0m0s"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("plan output lacks %q:\n%s", w, out.String())
		}
	}
	if splitList(" a, ,b,") == nil || strings.Join(splitList(" a, ,b,"), "|") != "a|b" {
		t.Error("splitList")
	}
}

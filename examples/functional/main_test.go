package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunAgainstEmulator 运行不带 -base-url 的命令：启动模拟器、打印表格、写出产物。
func TestRunAgainstEmulator(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	code, err := run(context.Background(), []string{"-suites", "chat_core,streaming,errors/auth", "-config", "../../configs/tests/functional", "-out", dir}, &out)
	if err != nil || code != 0 {
		t.Fatalf("code %d err %v\n%s", code, err, out.String())
	}
	for _, want := range []string{"chat_core  9      9", "streaming  10     10", "errors", "20 cases"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "sk-emulator") {
		t.Error("API key printed")
	}
	for _, f := range []string{"report.json", "junit.xml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || len(b) == 0 || bytes.Contains(b, []byte("sk-emulator")) {
			t.Errorf("%s: %v (len %d)", f, err, len(b))
		}
	}
}

// TestRunErrors 检查参数错误与失败时的退出码。
func TestRunErrors(t *testing.T) {
	var out bytes.Buffer
	if code, err := run(context.Background(), []string{"-suites", "nope"}, &out); code != 2 || err == nil {
		t.Fatalf("unknown suite: code %d err %v", code, err)
	}
	if code, err := run(context.Background(), []string{"-base-url", "http://127.0.0.1:1/v1"}, &out); code != 2 || err == nil {
		t.Fatalf("missing model: code %d err %v", code, err)
	}
	if code, _ := run(context.Background(), []string{"-base-url", "http://127.0.0.1:1/v1", "-model", "m", "-suites", "chat_core/models", "-retries", "0"}, &out); code != 1 {
		t.Fatalf("unreachable server: code %d, want 1", code)
	}
	if code, err := run(context.Background(), []string{"-bogus"}, &out); code != 2 || err == nil {
		t.Fatalf("bad flag: code %d", code)
	}
}

// TestConfigAndCapabilityErrors 复现问题：-config 指向不存在的目录时悄悄使用内置默认值并
// 运行。现在它与错误的取值、错误的能力声明一样，在运行任何用例之前以退出码 2 报错并写明路径、
// 文件:行与取值。
func TestConfigAndCapabilityErrors(t *testing.T) {
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "params_boundary.yaml"), []byte("params_boundary:\n  top_k: [1, 0]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-config", "/nonexistent"}, "/nonexistent"},
		{[]string{"-config", t.TempDir()}, "holds no *.yaml file"},
		{[]string{"-config", bad}, "functional: invalid config: " + filepath.Join(bad, "params_boundary.yaml") + `:2:14: params_boundary.top_k[1]: must be >= 1 (got "0")`},
		{[]string{"-capabilities", "top_k=maybe"}, `top_k="maybe"`},
		{[]string{"-capabilities", "topk=probe"}, `unknown capability "topk"`},
		// issue 23：-parallel 0 曾悄悄取库默认值 8 运行；负数只得到库的错误而不点名参数。
		{[]string{"-parallel", "0"}, "-parallel 0: must be >= 1"},
		{[]string{"-parallel", "-2"}, "-parallel -2: must be >= 1"},
		// 负的重试次数曾悄悄等同于不重试（帮助只说 0 表示不重试）。
		{[]string{"-retries", "-1"}, "-retries -1: must be >= 0"},
		{[]string{"-timeout", "0s"}, "-timeout 0s: must be > 0"},
		{[]string{"-max-response-bytes", "0"}, "-max-response-bytes 0: must be > 0"},
	} {
		var out bytes.Buffer
		code, err := run(context.Background(), tc.args, &out)
		if code != 2 || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: code %d err %v, want 2 and an error containing %q", tc.args, code, err, tc.want)
		}
		if strings.Contains(out.String(), "cases in") {
			t.Errorf("%v: cases ran despite the bad input:\n%s", tc.args, out.String())
		}
	}
}

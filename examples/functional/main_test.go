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
	for _, want := range []string{"chat_core  9      9", "streaming  9      9", "errors", "19 cases"} {
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

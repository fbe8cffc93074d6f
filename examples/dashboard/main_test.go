package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestRunWritesFileAndStdout 确认 -o 写出的文件与 stdout 输出逐字节相同，且非法前缀报错。
func TestRunWritesFileAndStdout(t *testing.T) {
	var stdout bytes.Buffer
	if err := run([]string{"-prefix", "cibench"}, &stdout); err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title string                `json:"title"`
		Time  struct{ From string } `json:"time"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &d); err != nil || d.Title != "vLLM CI Bench" || d.Time.From != "now-7d" {
		t.Fatalf("stdout: %v %+v", err, d)
	}
	path := filepath.Join(t.TempDir(), "dash.json")
	if err := run([]string{"-prefix", "cibench", "-o", path}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, stdout.Bytes()) {
		t.Error("file output differs from stdout output")
	}
	if err := run([]string{"-prefix", "Bad-Prefix"}, &bytes.Buffer{}); err == nil {
		t.Error("bad prefix accepted")
	}
}

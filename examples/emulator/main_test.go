package main

import (
	"bytes"
	"context"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
)

// syncBuffer 是并发安全的 bytes.Buffer（run 在另一个 goroutine 写 stdout）。
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write 实现 io.Writer。
func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String 返回已写入内容。
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunServesAndStops 验证独立服务器启动、读取环境变量中的密钥且不打印它、收到取消后退出。
func TestRunServesAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	env := func(k string) string {
		if k == "CIBENCH_EMULATOR_API_KEY" {
			return "envkey"
		}
		return ""
	}
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-model", "demo", "-itl", "1ms", "-defects", "NoDone", "-failure-kinds", "500"}, &out, env)
	}()
	re := regexp.MustCompile(`at (http://\S+/v1) \(auth: true\)`)
	deadline := time.Now().Add(10 * time.Second)
	var base string
	for base == "" {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no address printed: %q", out.String())
		} else {
			time.Sleep(5 * time.Millisecond)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/models", nil)
	req.Header.Set("Authorization", "Bearer envkey")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("models: %v %v", err, resp)
	}
	resp.Body.Close()
	if strings.Contains(out.String(), "envkey") {
		t.Fatal("API key printed")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestParseConfigErrors 验证参数错误与配置错误被报告。
func TestParseConfigErrors(t *testing.T) {
	env := func(string) string { return "" }
	var sink bytes.Buffer
	for _, args := range [][]string{{"-defects", "NoSuchDefect"}, {"extra"}, {"-itl", "abc"}} {
		if _, err := parseConfig(args, env, &sink); err == nil {
			t.Errorf("%v: expected error", args)
		}
	}
	if err := run(context.Background(), []string{"-failure-kinds", "boom"}, &sink, env); err == nil || !strings.Contains(err.Error(), "FailureKinds=boom") {
		t.Fatalf("invalid config: %v", err)
	}
	// 0 在库里表示"取默认值"：命令行上明确写 0 曾悄悄变成默认的 1 token、32768 上下文、1024 维。
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-tokens-per-chunk", "0"}, "-tokens-per-chunk 0: must be >= 1"},
		{[]string{"-max-model-len", "0"}, "-max-model-len 0: must be >= 1"},
		{[]string{"-embedding-dim", "0"}, "-embedding-dim 0: must be >= 1"},
		{[]string{"-max-num-seqs", "-1"}, "-max-num-seqs -1: must be >= 0"},
		{[]string{"-block-size", "0"}, "-block-size 0: must be >= 1"},
		{[]string{"-num-kv-blocks", "-3"}, "-num-kv-blocks -3: must be >= 0"},
	} {
		if _, err := parseConfig(tc.args, env, &sink); err == nil || err.Error() != tc.want {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
	if err := run(context.Background(), []string{"-h"}, &sink, env); err != nil {
		t.Fatalf("-h: %v", err)
	}
	c, err := parseConfig([]string{"-defects", "NoDone,NoAuth", "-reasoning", "-embeddings"}, env, &sink)
	if err != nil || !c.Defects.NoDone || !c.Defects.NoAuth || !c.Reasoning || !c.EnableEmbeddings || c.Addr != "127.0.0.1:8000" {
		t.Fatalf("%+v %v", c, err)
	}
}

// TestDefectsFlagAcceptsEveryField 证明 -defects 按字段名映射：emulator.Defects 的
// 每个字段（包括以后新增的）都能从命令行打开，且只打开这一个。
func TestDefectsFlagAcceptsEveryField(t *testing.T) {
	var sink bytes.Buffer
	env := func(string) string { return "" }
	typ := reflect.TypeFor[emulator.Defects]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		c, err := parseConfig([]string{"-defects", name}, env, &sink)
		if err != nil {
			t.Fatalf("-defects %s: %v", name, err)
		}
		v := reflect.ValueOf(c.Defects)
		for k := range typ.NumField() {
			if v.Field(k).Bool() != (k == i) {
				t.Fatalf("-defects %s: field %s = %v", name, typ.Field(k).Name, v.Field(k).Bool())
			}
		}
	}
}

// TestPerfFlags 验证性能模型与 PD 参数进入配置，PD 专用参数不带 -pd 时报错并点名参数。
func TestPerfFlags(t *testing.T) {
	env := func(string) string { return "" }
	var sink bytes.Buffer
	o, err := parseConfig([]string{"-enable-prefix-caching", "-block-size", "32", "-num-kv-blocks", "2048", "-batch-factor", "2.5",
		"-max-num-seqs", "8", "-enable-prompt-tokens-details"}, env, &sink)
	if err != nil || !o.EnablePrefixCaching || o.BlockSize != 32 || o.NumKVBlocks != 2048 || o.BatchFactor != 2.5 ||
		!o.EnablePromptTokensDetails || o.pd {
		t.Fatalf("%+v %v", o, err)
	}
	if _, err := parseConfig([]string{"-decode-ttft", "1ms"}, env, &sink); err == nil || !strings.Contains(err.Error(), "-decode-ttft: only used with -pd") {
		t.Fatalf("PD flag without -pd: %v", err)
	}
	o, err = parseConfig([]string{"-pd", "-addr", "127.0.0.1:0", "-ttft", "3ms", "-max-num-seqs", "4", "-decode-max-num-seqs", "16",
		"-decode-num-kv-blocks", "4096", "-num-kv-blocks", "2048", "-decode-ttft", "1ms", "-kv-transfer-per-token", "10us"}, env, &sink)
	if err != nil {
		t.Fatal(err)
	}
	pc := o.pdConfig()
	if pc.Prefill.TTFT != 3*time.Millisecond || pc.Decode.TTFT != time.Millisecond || pc.Prefill.MaxNumSeqs != 4 ||
		pc.Decode.MaxNumSeqs != 16 || pc.Prefill.NumKVBlocks != 2048 || pc.Decode.NumKVBlocks != 4096 ||
		pc.Decode.KVTransferPerToken != 10*time.Microsecond || pc.Prefill.KVTransferPerToken != 0 || pc.Addr != "127.0.0.1:0" {
		t.Fatalf("pd config %+v", pc)
	}
	if err := run(context.Background(), []string{"-batch-factor", "3"}, &sink, env); err == nil || !strings.Contains(err.Error(), "BatchFactor=3") {
		t.Fatalf("invalid perf config: %v", err)
	}
}

// TestRunPD 验证 -pd 启动两个实例与代理：打印三个地址，经代理的请求成功。
func TestRunPD(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-pd", "-addr", "127.0.0.1:0", "-model", "demo", "-kv-transfer-per-token", "10us"}, &out, func(string) string { return "" })
	}()
	re := regexp.MustCompile(`(?s)prefill at (http://\S+/v1), decode at (http://\S+/v1).*serving model "demo" at (http://\S+/v1)`)
	deadline := time.Now().Add(10 * time.Second)
	var m []string
	for m == nil {
		if m = re.FindStringSubmatch(out.String()); m == nil {
			if time.Now().After(deadline) {
				t.Fatalf("no addresses printed: %q", out.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if m[1] == m[2] || m[2] == m[3] {
		t.Fatalf("distinct ports expected: %v", m[1:])
	}
	resp, err := http.Post(m[3]+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"demo","max_tokens":3,"ignore_eos":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("via proxy: %v %v", err, resp)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

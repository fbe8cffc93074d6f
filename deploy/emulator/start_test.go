package emulator_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vllm-cibench/cibench/deploy/emulator"
)

// recordTB 记录 Start 对 testing.TB 的调用：Fatalf 像 testing.T 一样以 runtime.Goexit
// 结束当前 goroutine，因此 Start 必须在单独的 goroutine 里调用（见 startWith）。
type recordTB struct {
	testing.TB
	mu     sync.Mutex
	fatal  string
	errs   []string
	clean  []func()
	helper int
}

// Helper 计数，用来确认 Start 把自己标成了辅助函数（失败行号指向调用方）。
func (r *recordTB) Helper() { r.mu.Lock(); r.helper++; r.mu.Unlock() }

// Fatalf 记录消息后结束 goroutine，与 testing.T.Fatalf 相同。
func (r *recordTB) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatal = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

// Errorf 记录消息并继续。
func (r *recordTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// Cleanup 登记 f，由 runCleanup 逆序执行。
func (r *recordTB) Cleanup(f func()) { r.mu.Lock(); r.clean = append(r.clean, f); r.mu.Unlock() }

// runCleanup 逆序执行登记的清理函数。
func (r *recordTB) runCleanup() {
	for i := len(r.clean) - 1; i >= 0; i-- {
		r.clean[i]()
	}
}

// startWith 在新 goroutine 里调用 Start（Fatalf 会 Goexit），返回它是否正常返回及结果。
func startWith(tb *recordTB, cfg emulator.Config) (ok bool, srv *emulator.Server, base string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s, ep := emulator.Start(tb, cfg)
		ok, srv, base = true, s, ep.BaseURL()
	}()
	<-done
	return ok, srv, base
}

// TestStartServesAndCleansUp 确认 Start 返回的地址可用、Endpoint 带上模型与密钥，
// 并且登记的清理真的关闭了服务（清理后同一地址连不上）。
func TestStartServesAndCleansUp(t *testing.T) {
	tb := &recordTB{}
	ok, srv, base := startWith(tb, emulator.Config{Model: "m", APIKey: "sk-x"})
	if !ok || tb.fatal != "" || srv == nil {
		t.Fatalf("Start failed: ok=%v fatal=%q", ok, tb.fatal)
	}
	if tb.helper == 0 || len(tb.clean) != 1 {
		t.Fatalf("Start must call Helper and register exactly one cleanup: helper=%d cleanups=%d", tb.helper, len(tb.clean))
	}
	if got := srv.Config().Model; got != "m" {
		t.Fatalf("model %q, want m", got)
	}
	resp, err := http.Get(strings.TrimSuffix(base, "/v1") + "/health")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("health before cleanup: %v %v", resp, err)
	}
	resp.Body.Close()
	tb.runCleanup()
	if len(tb.errs) != 0 {
		t.Fatalf("teardown reported errors: %q", tb.errs)
	}
	if resp, err := http.Get(strings.TrimSuffix(base, "/v1") + "/health"); err == nil {
		resp.Body.Close()
		t.Fatalf("server still answers after cleanup: %d", resp.StatusCode)
	}
}

// TestStartFailsTBOnBadConfig 确认无效配置让 tb 失败（而不是返回一个不可用的 Endpoint），
// 消息带前缀并点名字段与取值。
func TestStartFailsTBOnBadConfig(t *testing.T) {
	tb := &recordTB{}
	ok, _, _ := startWith(tb, emulator.Config{MaxModelLen: -1})
	if ok {
		t.Fatal("Start returned normally on an invalid config")
	}
	for _, want := range []string{"emulator: start:", "MaxModelLen=-1", "must be >= 0"} {
		if !strings.Contains(tb.fatal, want) {
			t.Errorf("fatal message %q lacks %q", tb.fatal, want)
		}
	}
	if len(tb.clean) != 0 {
		t.Errorf("nothing was started, yet %d cleanups were registered", len(tb.clean))
	}
}

// TestStartFailsTBWhenAddrBusy 确认监听失败（端口已被占用）同样让 tb 失败，并点名地址。
func TestStartFailsTBWhenAddrBusy(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tb := &recordTB{}
	ok, _, _ := startWith(tb, emulator.Config{Addr: l.Addr().String()})
	if ok {
		t.Fatal("Start returned normally although the address is in use")
	}
	if !strings.Contains(tb.fatal, "emulator: start:") || !strings.Contains(tb.fatal, l.Addr().String()) {
		t.Fatalf("fatal message %q does not name the busy address %s", tb.fatal, l.Addr())
	}
}

// TestFailureKindsReturnsCopy 确认 FailureKinds 返回副本：改动返回值不会改变校验接受的取值。
func TestFailureKindsReturnsCopy(t *testing.T) {
	want := []string{"429", "500", "503", "stream_error", "drop", "truncate"}
	got := emulator.FailureKinds()
	if !slices.Equal(got, want) {
		t.Fatalf("FailureKinds() = %q, want %q", got, want)
	}
	got[0] = "bogus"
	if again := emulator.FailureKinds(); !slices.Equal(again, want) {
		t.Fatalf("mutating the result changed the package list: %q", again)
	}
	if _, err := emulator.New(emulator.Config{FailureRate: 0.5, FailureKinds: []string{"429"}}); err != nil {
		t.Fatalf("429 rejected after mutating a copy: %v", err)
	}
	_, err := emulator.New(emulator.Config{FailureRate: 0.5, FailureKinds: []string{"bogus"}})
	if !errors.Is(err, emulator.ErrConfig) || !strings.Contains(err.Error(), "must be one of 429,500,503,stream_error,drop,truncate") {
		t.Fatalf("bogus kind: %v", err)
	}
}

// testing.TB 的每个实现（*testing.T、*testing.B、*testing.F）都满足 emulator.TB，
// 所以 Start(t, cfg) 的写法不变，而本包不必导入 testing。
var _ emulator.TB = testing.TB(nil)

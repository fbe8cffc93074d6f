package emulator_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/deploy/emulator"
)

// ExampleStart 演示测试里的典型用法：Start 返回的 Endpoint 直接交给被测代码，
// 测试结束时服务自动关闭。真实测试里把 *testing.T 传给 Start；示例函数拿不到
// *testing.T，所以这里用 exampleTB 代替，并在结尾手动执行登记的清理。
func ExampleStart() {
	t := &exampleTB{}
	defer t.cleanup()

	srv, ep := emulator.Start(t, emulator.Config{Model: "demo"})
	fmt.Println(ep.Model, strings.HasPrefix(ep.BaseURL(), "http://127.0.0.1:"), strings.HasSuffix(ep.BaseURL(), "/v1"))

	resp, err := http.Get(ep.BaseURL() + "/models")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, strings.Contains(string(body), `"id":"demo"`))

	// 运行中打开一个缺陷开关，证明你的用例能发现它。
	_ = srv.Update(func(c *emulator.Config) { c.Defects.ModelMissingFromList = true })
	resp, err = http.Get(ep.BaseURL() + "/models")
	if err != nil {
		panic(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, strings.Contains(string(body), `"id":"demo"`))
	// Output:
	// demo true true
	// 200 true
	// 200 false
}

// exampleTB 是示例用的最小 testing.TB：Fatalf 直接 panic，Cleanup 登记的函数由
// cleanup 逆序执行。未覆盖的方法来自嵌入的 nil 接口，Start 不会调用它们。
type exampleTB struct {
	testing.TB
	fns []func()
}

// Helper 在示例里无事可做。
func (t *exampleTB) Helper() {}

// Fatalf 让示例以 panic 失败，示例框架会把它报告出来。
func (t *exampleTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// Errorf 同 Fatalf：示例没有“记录错误后继续”的地方。
func (t *exampleTB) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// Cleanup 登记 f，由 cleanup 执行。
func (t *exampleTB) Cleanup(f func()) { t.fns = append(t.fns, f) }

// cleanup 按登记的逆序执行清理函数，与 testing.T 的顺序相同。
func (t *exampleTB) cleanup() {
	for i := len(t.fns) - 1; i >= 0; i-- {
		t.fns[i]()
	}
}

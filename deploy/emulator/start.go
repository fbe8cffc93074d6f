package emulator

import (
	"context"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
)

// startTimeout 是 Start 等待服务健康的上限；回环上的模拟器通常几毫秒就绪，
// 给足余量是为了在 -race 与满载 CI 上也不误报。
const startTimeout = 10 * time.Second

// TB 是 Start 需要的 testing.TB 子集：*testing.T、*testing.B、*testing.F 与任何
// testing.TB 都满足它。Start 不直接接收 testing.TB，是为了本包不导入 testing：
// 生产程序（examples/emulator、examples/ci 等）链接模拟器时不把 testing 及其标志
// 带进二进制——与 net/http/httptest 不导入 testing 的做法相同。
type TB interface {
	// Helper 把调用方标成辅助函数，失败行号指向测试代码。
	Helper()
	// Cleanup 登记测试结束时执行的清理。
	Cleanup(func())
	// Errorf 记录失败并继续（清理中的关闭错误）。
	Errorf(format string, args ...any)
	// Fatalf 记录失败并结束当前测试 goroutine（配置无效或启动失败）。
	Fatalf(format string, args ...any)
}

// Start 按 cfg 启动一个模拟器（默认监听 127.0.0.1 的随机端口），等它健康后返回
// Server 与可直接交给被测代码的 deploy.Endpoint，并用 tb.Cleanup 在测试结束时关闭。
// 配置无效或启动失败时 tb.Fatal，所以调用方无需处理错误——与 httptest.NewServer 的
// 用法相同；需要在运行中改配置（缺陷开关、时延）时用返回的 Server.Update。
func Start(tb TB, cfg Config) (*Server, deploy.Endpoint) {
	tb.Helper()
	srv, err := New(cfg)
	if err != nil {
		tb.Fatalf("emulator: start: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	dep, err := srv.Deploy(ctx)
	if err != nil {
		tb.Fatalf("emulator: start: %v", err)
	}
	tb.Cleanup(func() {
		if err := dep.Teardown(context.Background()); err != nil {
			tb.Errorf("emulator: teardown: %v", err)
		}
	})
	return srv, dep.Endpoint()
}

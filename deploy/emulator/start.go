package emulator

import (
	"context"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
)

// startTimeout 是 Start 等待服务健康的上限；回环上的模拟器通常几毫秒就绪，
// 给足余量是为了在 -race 与满载 CI 上也不误报。
const startTimeout = 10 * time.Second

// Start 按 cfg 启动一个模拟器（默认监听 127.0.0.1 的随机端口），等它健康后返回
// Server 与可直接交给被测代码的 deploy.Endpoint，并用 tb.Cleanup 在测试结束时关闭。
// 配置无效或启动失败时 tb.Fatal，所以调用方无需处理错误——与 httptest.NewServer 的
// 用法相同；需要在运行中改配置（缺陷开关、时延）时用返回的 Server.Update。
func Start(tb testing.TB, cfg Config) (*Server, deploy.Endpoint) {
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

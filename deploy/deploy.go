package deploy

import (
	"context"
	"errors"

	"github.com/vllm-cibench/cibench/endpoint"
)

// Endpoint 描述一个已就绪、可被测试的 OpenAI 兼容服务。它是 endpoint.Endpoint 的
// 别名：部署返回的端点原样交给 loadgen、functional、accuracy 的 Target（它们都嵌入
// endpoint.Endpoint），字段约定见 endpoint 包文档。
//
// APIKey 永远不会出现在 String/Format 的输出、日志或产物中；需要持久化
// Endpoint 时请使用 Redacted。
type Endpoint = endpoint.Endpoint

// MetricsInstance 是 endpoint.MetricsInstance 的别名：Endpoint.Metrics 的一项。
type MetricsInstance = endpoint.MetricsInstance

// redactURL 把 scheme://user:pass@host 中的用户信息替换为 "***"（见 endpoint.RedactURL）。
func redactURL(u string) string { return endpoint.RedactURL(u) }

// Deployer 把一个服务拉起到健康状态。Deploy 仅在服务健康（或失败）后返回；
// 失败时已启动的资源由 Deploy 自己清理，调用方拿到 error 时无需再 Teardown。
type Deployer interface {
	Deploy(ctx context.Context) (Deployment, error)
}

// Deployment 是一个正在运行的部署。
//
// 约定：Teardown 必须可重复调用（第二次起直接返回 nil），并且无论部署
// 处于何种状态都会尽力释放资源；ArchiveLogs 把日志写入 dir（不存在则创建）。
type Deployment interface {
	// Endpoint 返回可访问的服务地址。
	Endpoint() Endpoint
	// ArchiveLogs 把该部署的日志归档到目录 dir。
	ArchiveLogs(ctx context.Context, dir string) error
	// Teardown 停止并清理部署，幂等。
	Teardown(ctx context.Context) error
}

// StageTuner 是 Deployment 的可选能力（流水线经类型断言发现，形状同 http.Flusher 之于
// http.ResponseWriter）：每个阶段开始前，流水线调用 TuneStage(ctx, stage)（"functional"、"perf"、
// "accuracy" 或团队阶段名），部署可以据此按阶段调整自己。进程内模拟器用它在功能阶段换上更短的注入
// 时延（emulator.Config.FunctionalTiming）：功能用例核对的是行为，不必为性能门禁设的时延买单。
// 真实服务的部署不实现它。返回的错误让该阶段失败。
type StageTuner interface {
	TuneStage(ctx context.Context, stage string) error
}

// ErrNotReady 表示在超时或 ctx 结束前服务未达到健康状态。
var ErrNotReady = errors.New("deploy: server not ready")

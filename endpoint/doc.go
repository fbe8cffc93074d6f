// Package endpoint 描述一个被测的 OpenAI 兼容服务：一个或多个实例的基础地址、
// 模型名、密钥与发请求用的 HTTP 客户端。
//
// 它是各包之间交接被测服务的唯一形状：deploy 的部署返回它（deploy.Endpoint 是
// 它的别名），loadgen、functional、accuracy 的 Target 都嵌入它，所以部署得到的
// 端点原样交给任何一个阶段，不需要逐字段转换：
//
//	ep := dep.Endpoint()
//	loadgen.Run(ctx, loadgen.Target{Endpoint: ep, Provider: "vllm"}, profile, sink)
//	functional.NewRunner(functional.Target{Endpoint: ep, Features: features}, opts)
//	accuracy.RunStage(ctx, cfg, accuracy.Target{Endpoint: ep}, stageOptions)
//
// 本包只依赖标准库，使 loadgen、functional、accuracy 仍然互不依赖、也不依赖 deploy。
//
// # 约定（每个阶段包相同）
//
//   - BaseURLs：一个或多个 http(s) 地址，通常以 "/v1" 结尾（请求路径直接接在后面）；
//     第一个是主地址（BaseURL）。多实例部署（每卡一个实例、PD 入口……）列出全部实例。
//     loadgen 与 accuracy 把请求按轮询分发到全部地址（accuracy 的重试换到下一个实例）；
//     functional 的用例只打主地址——用例检查的是一个服务的协议行为，不是负载分布。
//   - Model：请求里的 model 字段（served-model-name），必填。
//   - APIKey：非空时以 "Authorization: Bearer <key>" 发送，空表示服务不需要密钥。
//     它从不出现在 String、错误、日志、记录与产物中，也不参与 JSON/YAML 序列化。
//   - HTTPClient：发往 BaseURLs 的全部请求都经它发送；nil 时由阶段自己建一个适合它的
//     客户端（loadgen：按最大并发调优连接池的新客户端；functional 与 accuracy：基于
//     http.DefaultTransport 的新客户端）。单个请求的时限由阶段的配置经 ctx 施加，
//     客户端自己的 Timeout 应保持为 0。不参与序列化。
//
// 各阶段在开始任何请求之前调用 Validate，同一个写错的地址在每个入口读起来都一样。
package endpoint

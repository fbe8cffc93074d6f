// Package functional 是 OpenAI 兼容接口（vLLM 优先）的功能用例目录及其执行器。
//
// 用例（Case）是普通的值：ID、所属套件、所需能力（Feature）和一个 Run 函数。
// NewCatalog 按 Config（来自 configs/tests/functional/*.yaml，每个套件一个文件）
// 生成需求 §4（docs/requirements.md）要求的全部用例；DefaultCatalog 每次返回一个新的目录，调用方
// 可以用 Catalog.Add 加入自己的用例。Runner 对一个 Target（嵌入的 endpoint.Endpoint——
// 基础地址、模型名、API Key、*http.Client，约定见 endpoint 包文档——加上场景开启的能力、
// 推理字段备选键名与能力声明）并发执行用例：
//
//   - 能力探测：场景未开启的能力、或服务端以 4xx 拒绝的可选参数，使用例被
//     “跳过并写明原因”，既不判失败也不会悄悄通过；
//   - 每个请求默认 120 秒超时，传输错误与 5xx 默认重试 2 次（可配置）；
//     openai-go 自身的重试始终关闭，错误用例因此看到的是服务端的第一次回答；
//   - 需要看字节的用例（SSE 帧、[DONE]、错误体）走原始 HTTP；
//   - ctx 取消时所有进行中的请求一起结束，进行中与未开始的用例都记为 cancelled（不是跳过：
//     没有结论不等于通过，门禁把它算作失败）。
//
// 结果是 Report（每个用例的状态、耗时、原因，失败时附带已脱敏的请求与截断的
// 响应；每个套件的合计与通过率），可由 WriteJSON 与 WriteJUnit 写入任意
// io.Writer。
//
// 本包不导入 cibench 的其他顶层包；测试（package functional_test）使用
// deploy/emulator 的模拟器作为被测服务，并用模拟器的缺陷开关证明每个用例都能失败。
package functional

// Package chunk 是 loadgen 热路径上的 OpenAI 流式 chunk 扫描器。
//
// 每个 SSE data 事件（chat.completion.chunk、completion 或非流式的整体响应）都要取出正文、
// 推理、tool_calls、finish_reason、usage 与错误；gjson 逐路径从头扫描，在每秒数十万 chunk
// 时占到客户端 CPU 的四分之一。Scanner 单遍扫描、只识别需要的键，无转义的字符串直接引用
// 输入（零拷贝），转义解码的缓冲跨调用复用，稳态下不分配内存。
//
// 它是 loadgen 的实现细节（internal）：字段与协议检查的需要一一对应，不是通用的 JSON 解析器。
// 解析不了的输入返回 ErrSyntax，由调用方记为 bad_response；协议层面的判断（重复的
// finish_reason、finish 之后的输出）由调用方根据 Fields.Choices 做。
package chunk

// Package dataset 是压测的输入：数据集的读取、生成与 prompt 池。它不导入 loadgen——压测核心
// （loadgen.Run）在每组开始之前按 Profile 的数据集类型调用这里的生成器建好池，热路径只按序号读
// Pool 的字段；loadgen.Profile 直接使用这里的类型（Prompt、TraceRequest、TraceConfig、
// SharedPrefixConfig、PrefixRepetitionConfig、ShareGPTConfig），没有第二份定义。
//
// 内容：
//   - 随机文本与 random 数据集：RandomText、RandomPool（可选按服务端分词器 TokenCounter 校准，
//     最多 TokenizeWorkers 条并发，每次有期限）、Spec 与 Generate（acs-bench "generate dataset"）；
//   - custom 数据集：ReadPrompts（JSONL）、CustomPool（按输入长度分组）；
//   - 轨迹回放：ReadMooncakeTrace、ReadAzureTrace、Window、NewTrace / TracePool（块文本按 hash_id
//     由种子生成，公共前缀逐字相同）；
//   - 集合类数据集：SharedPrefixPool（inference-perf shared_prefix）、PrefixRepetitionPool（vLLM bench
//     prefix_repetition）、ReadShareGPT 与 ShareGPTPool；
//   - image-text 的图片（ImageDataURL）与输出长度抖动（Jitter）。
//
// 文本只由种子与序号决定，所以同样的参数在任何进程里（包括分片）生成同样的 prompt。
// 读取器对坏输入报错时点名文件与行号；各上限（MaxTokens、MaxRequests、MaxTraceRequests、
// MaxSetPrompts、MaxSetTokens）让拼错的参数在建池之前就报错而不是耗尽内存。
// 多轮会话（服务端的实时回答进入下一轮的历史）是运行逻辑，留在 loadgen。
package dataset

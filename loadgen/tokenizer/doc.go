// Package tokenizer 是 HuggingFace tokenizer.json 中字节级 BPE 模型的纯 Go 计数器。
//
// 用途只有一个：被测服务端没有 POST /tokenize 时（非 vLLM 的 OpenAI 兼容服务、网关之后的
// 部署），loadgen 用它把数据集的提示长度校准到真实模型的 token 数。*BPE 满足 loadgen 的
// TokenCounter 接口，赋给 loadgen.Target.Tokenizer 即可；bench 命令行的 --tokenizer
// 读取的就是这里的 Load。
//
// 它从 loadgen 拆出来，因为它与压测本身无关：不依赖 loadgen 的任何类型，单独可测，也可以
// 被别的工具拿去数 token。只做计数，不产生 id；支持 GPT-2、Qwen2/3、Llama-3、DeepSeek
// 等字节级 BPE（ByteLevel 预分词，可带一个 Split 正则），不支持 SentencePiece（Metaspace）、
// Unigram、WordPiece 与归一化器（见 BPE 的说明），遇到时返回 ErrUnsupported，而不是给出
// 错误的计数。
package tokenizer

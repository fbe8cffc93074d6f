// Package tokenizer 是 HuggingFace tokenizer.json 中字节级 BPE 模型的纯 Go 计数器。
//
// 用途只有一个：被测服务端没有 POST /tokenize 时（非 vLLM 的 OpenAI 兼容服务、网关之后的
// 部署），loadgen 用它把数据集的提示长度校准到真实模型的 token 数。*BPE 满足 loadgen 的
// TokenCounter 接口，赋给 loadgen.Target.Tokenizer 即可；bench 命令行的 --tokenizer
// 读取的就是这里的 Load。
//
// 它从 loadgen 拆出来，因为它与压测本身无关：不依赖 loadgen 的任何类型，单独可测，也可以
// 被别的工具拿去数 token。只做计数，不产生 id。
//
// 承诺：对字节级 BPE 的 tokenizer.json（Qwen2/2.5/3、Llama-3.x、DeepSeek-V3/R1、GPT-2 等），
// 计数与 Hugging Face tokenizers 的 len(encode(text, add_special_tokens=False)) 逐段相同；
// 不能精确复现的配置（SentencePiece/Metaspace、Unigram、WordPiece、Lowercase 等归一化器、
// 语义与 Go 不同的正则构造……）在 Load 时返回 ErrUnsupported，而不是给出错误的计数。
// 参考测试 TestCountsMatchHuggingFace 用参考库本身给真实文件产生标准答案，见 docs/loadgen.md
// 的 "The token counter" 一节。
package tokenizer

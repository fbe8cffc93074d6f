// Package accuracy 提供与 OpenAI simple-evals 逐字节兼容的在线精度评测：
// GPQA（默认 diamond）、MMLU、MGSM、DROP、HumanEval。
//
// 与 Python 原版一致的部分：提示词模板逐字节相同；答案抽取使用相同的正则
// （Python 的 \s \d \w 是 Unicode 语义，这里经 internal/pycompat 翻译）；
// MMLU 的 normalize_response/normalize_extracted_answer 与多语言正则表；
// MGSM 取最后一个数字；DROP 的 EM/F1 归一化；样本选择使用逐位复刻的
// Python random.Random（internal/pyrandom）；聚合用 numpy 的成对求和
// 计算均值与总体标准差，结果 JSON 与 json.dumps(indent=2) 逐字节相同。
//
// 用法分三层：Eval 描述一个数据集（样本 + 评分），Sampler 是被测模型
// （ChatSampler 走任意 OpenAI 兼容的 /v1/chat/completions），Run 以
// 固定并发把二者连起来并聚合；WriteJSON/WriteHTML/WriteJSONL 输出结果，
// Config.Gate 按阈值给出通过/失败。OpenCompass、MME 等外部评测通过
// Evaluator 接口与 Subprocess 适配器接入。
//
// 被测服务（Target、ChatConfig）嵌入 endpoint.Endpoint，约定见 endpoint 包文档；
// 多实例部署的全部 BaseURLs 都被评测（轮询，重试换到下一个实例，见 ChatSampler）。
//
// 本包不读取环境变量或命令行参数，不向 stderr 写任何东西；数据集经
// Source（fs.FS 目录或带磁盘缓存的 HTTP）读取。
package accuracy

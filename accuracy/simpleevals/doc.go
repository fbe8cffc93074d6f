// Package simpleevals 是与 OpenAI simple-evals 逐字节兼容的五个精度数据集：
// GPQA（默认 diamond）、MMLU、MGSM、DROP、HumanEval。它们实现 accuracy.Eval，由
// accuracy.Run / accuracy.RunStage 运行；Registry 返回登记了这五个评测的 accuracy.Registry，
// 默认数据来源是 simple-evals 自己读取的上游公共地址（DefaultBaseURL、DefaultURLs），
// dataset: builtin-sample 读内嵌的合成样例（SampleData）。
//
// 与 Python 原版一致的部分：提示词模板逐字节相同；答案抽取使用相同的正则
// （Python 的 \s \d \w 是 Unicode 语义，这里经 internal/pycompat 翻译）；
// MMLU 的 normalize_response/normalize_extracted_answer 与多语言正则表；
// MGSM 取最后一个数字；DROP 的 EM/F1 归一化；样本选择使用逐位复刻的
// Python random.Random（internal/pyrandom）；HumanEval 的补全在常驻的 python3 执行器
// （humaneval_harness.py）里按上游 check_correctness 的方式判定。聚合与结果 JSON
// 在 accuracy 包（numpy 的成对求和、json.dumps(indent=2) 的格式）。testdata/golden 下的
// 金标准文件与 testdata/reference 下上游的提示词、判定结果锁定这些行为。
//
// 本包导入 accuracy，accuracy 不导入本包：只跑自己评测的程序不链接这些数据集。
// 在内置评测旁边加自己的评测：evals := simpleevals.Registry(); evals.Register(name, factory)。
//
// 本包不读取环境变量或命令行参数，不向 stderr 写任何东西；数据经 accuracy.Source 读取。
package simpleevals
